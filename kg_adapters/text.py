"""Text normalisation shared by label search, mention linking and relation verbalisation."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import TypeVar

_TOKEN_RE = re.compile(r"\w+|[^\w\s]", re.UNICODE)
_CAMEL_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_MENTION_RE = re.compile(r"\[([^\[\]]{1,300})\]")
T = TypeVar("T")


def tokens(text: str) -> list[str]:
    """Case-folded word and punctuation tokens; ``_`` counts as a space (``anna_of_x`` ≡ ``anna of
    x``)."""
    return _TOKEN_RE.findall(text.replace("_", " ").casefold())


def key(text: str) -> str:
    """The lookup key two spellings of one name share."""
    return " ".join(tokens(text))


def humanize(name: str) -> str:
    """``directed_by`` → ``directed by``; ``__people__person__place_of_birth`` → ``people person
    place of birth``; ``placeOfBirth`` → ``place of birth``. Used as the label of a relation that
    has none."""
    name = name.rsplit("#", 1)[-1].rsplit("/", 1)[-1]
    name = _CAMEL_RE.sub(" ", name)
    words = re.split(r"[_\s]+", name)
    return (
        " ".join(w.lower() if w[:1].isupper() and w[1:].islower() else w for w in words if w)
        or name
    )


def bracketed_mentions(query: str) -> list[str]:
    """Spans the user marked as entity mentions with ``[...]`` (the MetaQA convention)."""
    return [m.strip() for m in _MENTION_RE.findall(query) if m.strip()]


def strip_brackets(query: str) -> str:
    return query.replace("[", "").replace("]", "")


def longest_spans(
    spans: Iterable[tuple[int, int, T]], n_tokens: int
) -> Iterator[tuple[int, int, T, float]]:
    """The spans ``(start, end, item)`` of a query of ``n_tokens`` tokens that a mention links, with
    the weight of each: longest first, then leftmost, and none inside or across one already taken (a
    shorter span inside a linked name is part of that name). The weight grows from 0.5 to 1 as the
    span covers up to a quarter of the query: a name that is most of the question is more surely
    what it asks about."""
    taken = [False] * n_tokens
    for start, end, item in sorted(spans, key=lambda s: (s[0] - s[1], s[0])):
        if any(taken[start:end]):
            continue
        taken[start:end] = [True] * (end - start)
        coverage = (end - start) / max(1, n_tokens)
        yield start, end, item, 0.5 + 0.5 * min(1.0, 4 * coverage)
