"""Finding a relation by what it means (``search_relations``): lexical ranking shared by every
backend.

Wikidata has ~12,000 properties; ``get_relations`` only shows the ones an entity already has. Here a
text ("where someone was born", "IMDb") is matched against property labels, aliases and descriptions
— in SPARQL on Wikidata-shaped endpoints (one bounded ``CONTAINS`` scan over the property
vocabulary), over the relation labels on local KGs — and ranked with rapidfuzz: labels and aliases
count fully, descriptions at 0.7.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field

STOP = frozenset(
    "a an the of in on at to for by with from and or is are was were be been what which who whom "
    "whose when where how why did does do that this these those it its as not someone something "
    "somebody thing things".split()
)
_WORD = re.compile(r"\w+")


class RelationHit(BaseModel):
    model_config = ConfigDict(frozen=True)
    id: str = Field(description="Namespaced relation ID, e.g. 'wd:P19'.")
    label: str
    description: str | None = None
    aliases: list[str] = Field(default_factory=list, description="Other names (at most 5).")
    count: int | None = Field(default=None, description="How many edges use it, when known.")
    score: float = Field(description="1.0 = the text is its label; lower is a looser match.")
    matched: str = Field(description="The label, alias or description that matched.")


def needles(text: str, limit: int = 5) -> list[str]:
    """Lower-cased content words of ``text`` worth a substring scan (the whole text when it has
    none)."""
    words = [w for w in _WORD.findall(text.lower()) if len(w) >= 3 and w not in STOP]
    out = list(dict.fromkeys(words))[:limit]
    return out or [text.lower().strip()]


def score(text: str, candidate: str, kind: str) -> float:
    """How well ``candidate`` (a label, alias or description) names what ``text`` asks for, 0–1."""
    from rapidfuzz import fuzz

    a, b = text.lower().strip(), candidate.lower().strip()
    if not a or not b:
        return 0.0
    if a == b:
        s = 1.0
    else:
        s = (
            max(
                fuzz.token_set_ratio(a, b), fuzz.partial_ratio(a, b) * 0.9, fuzz.WRatio(a, b) * 0.95
            )
            / 100
            * 0.95
        )
    weight = {"label": 1.0, "alias": 0.95, "description": 0.7}[kind]
    return round(s * weight, 4)


def rank(
    text: str, candidates: Iterable[tuple[str, str, str | None, list[str], int | None]], limit: int
) -> list[RelationHit]:
    """``candidates``: (id, label, description, aliases, count). Best first; ties by count, then
    ID."""
    hits = []
    for rid, label, desc, aliases, count in candidates:
        tries = (
            [(label, "label")]
            + [(a, "alias") for a in aliases]
            + ([(desc, "description")] if desc else [])
        )
        best, matched = max(((score(text, t, k), t) for t, k in tries), key=lambda x: x[0])
        if best >= 0.5:
            hits.append(
                RelationHit(
                    id=rid,
                    label=label,
                    description=desc,
                    aliases=aliases[:5],
                    count=count,
                    score=best,
                    matched=matched,
                )
            )
    hits.sort(key=lambda h: (-h.score, -(h.count or 0), len(h.id), h.id))
    return hits[:limit]
