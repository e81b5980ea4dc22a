"""Text normalisation shared by label search, mention linking and relation verbalisation."""

from __future__ import annotations

import re

_TOKEN_RE = re.compile(r"\w+|[^\w\s]", re.UNICODE)
_CAMEL_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_MENTION_RE = re.compile(r"\[([^\[\]]{1,300})\]")


def tokens(text: str) -> list[str]:
    """Case-folded word and punctuation tokens; ``_`` counts as a space (``anna_of_x`` ≡ ``anna of x``)."""
    return _TOKEN_RE.findall(text.replace("_", " ").casefold())


def key(text: str) -> str:
    """The lookup key two spellings of one name share."""
    return " ".join(tokens(text))


def humanize(name: str) -> str:
    """``directed_by`` → ``directed by``; ``__people__person__place_of_birth`` → ``people person place of birth``;
    ``placeOfBirth`` → ``place of birth``. Used as the label of a relation that has none."""
    name = name.rsplit("#", 1)[-1].rsplit("/", 1)[-1]
    name = _CAMEL_RE.sub(" ", name)
    words = re.split(r"[_\s]+", name)
    return " ".join(w.lower() if w[:1].isupper() and w[1:].islower() else w for w in words if w) or name


def bracketed_mentions(query: str) -> list[str]:
    """Spans the user marked as entity mentions with ``[...]`` (the MetaQA convention)."""
    return [m.strip() for m in _MENTION_RE.findall(query) if m.strip()]


def strip_brackets(query: str) -> str:
    return query.replace("[", "").replace("]", "")
