"""Question structure without a parser: tokens, where the topic mention sits, and the candidate
phrases.

A relation path is read off the question by matching each hop to a different short span of words.
Spans carry their distance from the topic mention, because English nests relations outward from the
entity ("the director of the films [X] starred in": the hop nearest X comes first), and a possessive
chain after the mention ("X 's parent 's daughter") binds tighter than words before it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKEN = re.compile(r"'s\b|\w+(?:[-.']\w+)*|[^\w\s]", re.UNICODE)
_MENTION = re.compile(r"\[([^\[\]]{1,300})\]")

# Function words only: a span made of these alone says nothing about a relation.
STOPWORDS = frozenset(
    (
        "a an the of in on at to for by with from and or but is are was were be been being am "
        "what which who whom\n    "
        "whose when where how why did does do done that this these those it its as 's ? , . ! ; : "
        "' \" - s can could\n    "
        "would should will shall may might must has have had having i you he she they we me him "
        "her them us my your his\n    "
        "their our any some all than then there here about into onto over under up down out off "
        "so such\n    "
        "very just too not no nor only own both each few more most"
    ).split()
)


_DET = frozenset("the a an".split())
_MARK = "zzmentionzz"  # stands for the topic mention in the token list
_PREP = frozenset("in on at to for by with from of about into over under as".split())


def tokenize(text: str) -> list[str]:
    """Case-folded tokens; ``_`` reads as a space (``place_of_birth`` ≡ ``place of birth``)."""
    return _TOKEN.findall(text.replace("_", " ").casefold())


@dataclass(frozen=True)
class Span:
    text: str
    start: int  # token positions in the question without the mention
    end: int
    distance: (
        float  # structural distance from the topic mention (smaller = nearer, i.e. an earlier hop)
    )
    content: int  # number of non-stopword tokens


@dataclass(frozen=True)
class ParsedQuestion:
    text: str
    tokens: list[str]  # the question's tokens with the mention removed
    mention_at: int | None  # index in ``tokens`` where the mention was
    spans: list[Span]
    focus: str | None = None  # the phrase naming what is asked for ("which actors", "who"), if any
    slots: tuple[
        tuple[int, int], ...
    ] = ()  # relation nouns chained to the mention by "of" / "'s" (token ranges)


def find_mention(question: str, topic_labels: list[str]) -> tuple[str, str | None]:
    """(text before, the mention, text after) is found from ``[...]`` if present, else from a topic
    label that appears verbatim (case- and ``_``-insensitively). Returns (question with the mention
    replaced by a marker, the mention)."""
    m = _MENTION.search(question)
    if m:
        return question[: m.start()] + " \x00 " + _MENTION.sub(" ", question[m.end() :]), m.group(1)
    norm_q = question.replace("_", " ").casefold()
    for label in sorted(topic_labels, key=len, reverse=True):
        lab = label.replace("_", " ").casefold().strip()
        if not lab:
            continue
        pos = norm_q.find(lab)
        if pos >= 0:
            return question[:pos] + " \x00 " + question[pos + len(lab) :], label
    return question, None


def parse_question(question: str, topic_labels: list[str], max_span: int = 4) -> ParsedQuestion:
    marked, _ = find_mention(question, topic_labels)
    raw = _TOKEN.findall(marked.replace("_", " ").casefold().replace("\x00", f" {_MARK} "))
    mention_at = raw.index(_MARK) if _MARK in raw else None
    toks = [t for t in raw if t != _MARK]
    spans: list[Span] = []
    for n in range(1, max_span + 1):
        for s in range(0, len(toks) - n + 1):
            e = s + n
            if mention_at is not None and s < mention_at < e:
                continue  # a phrase does not run across the entity
            if e == mention_at and s > 0 and toks[s - 1] in _DET and toks[e - 1] not in STOPWORDS:
                # "the film [X]": a noun right before the entity says what it is, not a relation
                continue
            words = toks[s:e]
            if "'s" in words[1:]:
                # a possessive separates two relations ("X 's son 's wife"), never inside one
                continue
            content = sum(1 for w in words if w not in STOPWORDS)
            # a phrase starts with a content word and ends with one or with a preposition ("directed
            # by")
            if (
                content == 0
                or words[0] in STOPWORDS
                or (words[-1] in STOPWORDS and words[-1] not in _PREP)
            ):
                continue
            spans.append(Span(" ".join(words), s, e, _distance(toks, mention_at, s, e), content))
    return ParsedQuestion(
        question,
        toks,
        mention_at,
        spans,
        find_focus(raw),
        _chain_without_mark(raw, mention_at),
    )


def _chain_without_mark(raw: list[str], mention_at: int | None) -> tuple[tuple[int, int], ...]:
    """:func:`chain_slots` as ranges of the tokens without the mention marker (no mention: none)."""
    if mention_at is None:
        return ()
    return tuple((s - (s > mention_at), e - (e > mention_at)) for s, e in chain_slots(raw))


_WH = ("what", "which", "who", "whom", "whose", "where", "when", "how")
_SKIP = frozenset("is are was were be the a an kind kinds type types sort of".split())


def find_focus(toks: list[str]) -> str | None:
    """The answer's type phrase: the noun after a determiner wh-word ("which actors", "what is the
    nationality"), or the wh-word itself when it stands for a kind of thing ("who", "when",
    "where")."""
    for i, t in enumerate(toks):
        if t not in _WH:
            continue
        if t in ("what", "which", "whose", "how"):
            j = i + 1
            while j < len(toks) and toks[j] in _SKIP:
                j += 1
            words: list[str] = []
            while (
                j < len(toks) and toks[j] not in STOPWORDS and len(words) < 3 and toks[j] != _MARK
            ):
                words.append(toks[j])
                j += 1
            if words:
                # a run of words right before "of" is one noun phrase ("the release years of");
                # otherwise only the first word is surely a noun ("which person wrote ...", "which
                # actors acted in ...")
                return " ".join(words if j < len(toks) and toks[j] == "of" else words[:1])
            continue
        return t
    return None


# Nouns that name the answer's form, not a relation ("the name of the son of X" is one hop).
_META = frozenset("name names kind kinds type types sort sorts".split())


def chain_slots(toks: list[str]) -> list[tuple[int, int]]:
    """Relation nouns in a possessive / "of" chain on the mention, as token ranges of ``toks`` (the
    mention marker still in): "the spouse of the other half of X 's spouse" has three, whatever the
    words mean — English composes relations this way, so a reading with fewer hops leaves one out.
    Each block of words between two links counts if it has a content word; blocks are ordered from
    the mention outwards."""
    if _MARK not in toks:
        return []
    at = toks.index(_MARK)
    out: list[tuple[int, int]] = []

    def keep(s: int, e: int) -> None:
        if any(w not in STOPWORDS and w not in _META and w.isalpha() for w in toks[s:e]):
            out.append((s, e))

    i = at + 1
    while i < len(toks) and toks[i] == "'s":
        j = i + 1
        while j < len(toks) and _word(toks[j]):
            j += 1
        keep(i + 1, j)
        i = j
    i = at - 1
    while i >= 0 and toks[i] == "of":
        j = i - 1
        while j >= 0 and toks[j] != "of" and _word(toks[j]):
            j -= 1
        keep(j + 1, i)
        i = j
    return out


def _word(t: str) -> bool:
    return t != "'s" and t != _MARK and t[:1].isalnum()


def _distance(toks: list[str], mention_at: int | None, s: int, e: int) -> float:
    """Content words between the mention and the span; spans in a possessive chain right after the
    mention (``X 's a 's b``) come before everything on the left."""
    if mention_at is None:
        return float(s)
    if s >= mention_at:
        gap = sum(1 for w in toks[mention_at:s] if w not in STOPWORDS)
        if mention_at < len(toks) and toks[mention_at] == "'s":
            return gap - 0.5 - 0.01 * (s - mention_at)
        return gap + 0.25 + 0.01 * (s - mention_at)
    gap = sum(1 for w in toks[e:mention_at] if w not in STOPWORDS)
    return gap + 0.01 * (mention_at - e)
