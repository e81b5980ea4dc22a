"""How surely an entity link names what the question mentioned, read from the two strings.

Backends name their matches differently (``fuzzy``/``bm25`` here, ``prefix`` in the store's FTS,
``api`` for Wikidata's search) and a typo may win as ``bm25``; what a caller needs is one judgement
that does not depend on the backend: did the mention's words all find themselves in the label (maybe
with a typo each), or only some? ``[Forest Gump]`` → *Forrest Gump* is a typo (confident); ``[Saturn
Protocol Nineteen]`` → *Protocol* shares 1 of 3 words (loose: that title is not what was asked
about).

Kinds: ``exact`` (the label as written), ``normalised`` (case, spacing, punctuation aside), ``typo``
(every word within a small edit of one of the label's), ``partial`` (some words shared), ``similar``
(letters alike, no word shared), and the backend's own name when there is no mention to compare
with.
"""

from __future__ import annotations

from dataclasses import dataclass

from rapidfuzz.distance import OSA

from .models import EntityMatch
from .text import key, tokens

# words a name may carry or drop without naming something else ('the Matrix', 'Titanic (film)')
_NOISE = frozenset("a an the of and & film films movie movies".split())
# a one-word name shorter than this, one letter off, is another name ('Yanks'/'Hanks')
_MIN_TYPO_WORD = 5


@dataclass(frozen=True)
class LinkGrade:
    kind: str
    confident: bool
    shared: int  # words of the mention found in the label (a typo counts)
    words: int  # words of the mention

    def note(self, mention: str, label: str) -> str:
        """One line for a reader: what the mention was linked to and how, empty for an exact
        match."""
        if self.kind in ("exact", "normalised"):
            return ""
        if self.kind == "typo" and self.confident:
            return f"[{mention}] read as '{label}' (a spelling difference)"
        if self.kind == "typo":
            return f"[{mention}] was not found; the closest name, '{label}', differs by a letter"
        if self.kind == "partial":
            shares = f"shares {self.shared} of {self.words} words"
            return f"[{mention}] was not found; the closest name, '{label}', {shares}"
        return f"[{mention}] was not found; the closest name is '{label}' ({self.kind} match)"


def _words(text: str) -> list[str]:
    words = [t for t in tokens(text) if any(c.isalnum() for c in t)]
    return [w for w in words if w not in _NOISE] or words


def _near(a: str, b: str) -> bool:
    """One edit apart (a swap of two letters counts one; two edits for long words), and not a
    different short word ('cat'/'cut'; 'eye'/'eyes' is one)."""
    if a == b:
        return True
    if min(len(a), len(b)) < 3 or max(len(a), len(b)) < 4:
        return False
    limit = 2 if min(len(a), len(b)) >= 8 else 1
    return OSA.distance(a, b, score_cutoff=limit) <= limit


def grade(mention: str | None, label: str, match: str, alone: bool = True) -> LinkGrade:
    """The grade of linking ``mention`` (None: the backend did not say which text it linked) to
    ``label``. ``alone``: no other name matched the mention nearly as well; a one-word typo with a
    close rival ('Hanks': *Shanks*, *Yanks*, *Hacks*) is a guess."""
    if mention is None or not mention.strip():
        sure = match in ("exact", "casefold", "mention")
        return LinkGrade("exact" if match == "exact" else match, sure, 1 if sure else 0, 1)
    if mention.strip() == label.strip():
        return LinkGrade("exact", True, 1, 1)
    m, lab = _words(mention), _words(label)
    if key(mention) == key(label) or (m and m == lab):
        return LinkGrade("normalised", True, len(m), len(m))
    unused = list(lab)
    shared = 0
    for w in m:
        hit = next((u for u in unused if u == w), None) or next(
            (u for u in unused if _near(w, u)), None
        )
        if hit is not None:
            unused.remove(hit)
            shared += 1
    if shared == len(m) and not unused:
        sure = len(m) > 1 or (len(m[0]) >= _MIN_TYPO_WORD and alone)
        return LinkGrade("typo", sure, shared, len(m))
    return LinkGrade("partial" if shared else "similar", False, shared, len(m))


def best_per_mention(matches: list[EntityMatch]) -> dict[str, EntityMatch]:
    """The best match of each mention (``""`` for matches the backend gave no mention), so a fuzzy
    near-namesake never stands beside the name it resembles."""
    best: dict[str, EntityMatch] = {}
    for m in matches:
        k = m.mention or ""
        if k not in best or m.score > best[k].score:
            best[k] = m
    return best
