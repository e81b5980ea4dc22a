"""Whether the question asks for a relation the KG does not have at all.

Embeddings alone cannot tell: to MiniLM *directed by* is as near *edited by* as *director*, and a
KG's relation names rarely read like a question's words (*starred actors* / "who acted in"). So the
question's words are read against relations that knowledge graphs commonly record
(``data/relation_concepts.txt``, each with the words that name it), and the KG's vocabulary against
the same list. A question phrase is a relation the KG lacks when it clearly names one of those
concepts (and every concept nearly as close), while no relation of the KG names it: none shares its
word stems and none reads as that concept by meaning. "Who composed the music of [Forrest Gump]"
names *composer*; a movie KG with directors, writers, actors, genres and tags has nothing that names
it.

Deliberately one-sided: it only ever says "missing" on strong evidence; a question it cannot read is
left to the strategy. The thresholds were set on answerable dev questions (none refused, MetaQA and
PathQuestion) and a handful of made-up missing-relation questions; see docs/tools.md for the
measured rates.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tot_mcp.kg_adapters.errors import KGError

CONCEPTS = Path(__file__).parent / "data" / "relation_concepts.txt"
NAMES = 0.8  # a question phrase this close to a concept's word names that concept
NEARER = 0.15  # ... and must be this much closer to it than to every phrase of the KG's relations
SAME = 0.1  # concepts within this of the best one are other readings of the phrase: any may fit
# a relation phrase reads as a concept this close (and within SAME of its own best concept)
COVERS = 0.6
_STOP = frozenset(
    "a an the of by in on at to for with from and or has have had is was are were be been who what "
    "which when where how does did do".split()
)


def _stems(text: str) -> frozenset[str]:
    """Five-letter stems of the content words: *director* and *directed* share one; *writer* and
    *written* not."""
    return frozenset(
        w[:5] for w in re.findall(r"[a-z]+", text.lower()) if len(w) >= 4 and w not in _STOP
    )


@dataclass(frozen=True)
class Missing:
    phrase: str  # the question's words
    concept: str  # the relation they name, as the concept list spells it


@dataclass
class _Vocabulary:
    """A KG vocabulary read against the concepts: its phrases' vectors and stems, and the
    concepts it has."""

    matrix: np.ndarray
    stems: frozenset[str]
    covered: np.ndarray  # per concept word: its concept is one the KG has


class RelationFit:
    """The concept list, embedded once; one per embedder (kept in the services' policy state)."""

    def __init__(self, embedder) -> None:
        self.embedder = embedder
        groups = [
            [w.strip() for w in line.split("|") if w.strip()]
            for line in CONCEPTS.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.startswith("#")
        ]
        self.words = [w for g in groups for w in g]
        self.group = np.array([i for i, g in enumerate(groups) for _ in g])
        self.heads = [g[0] for g in groups]
        self.vectors = embedder.encode(self.words)
        self._vocabularies: dict[frozenset[str], _Vocabulary] = {}

    def _vocabulary(self, stats, relation_ids: list[str]) -> _Vocabulary:
        cache_key = frozenset(relation_ids)
        known = self._vocabularies.get(cache_key)
        if known is not None:
            return known
        vecs = stats.phrase_vectors(relation_ids)
        phrases = [p for r in relation_ids for p in stats.phrases(r)]
        stems = frozenset().union(*(_stems(p) for p in phrases)) if phrases else frozenset()
        word_ok = np.zeros(len(self.words), bool)
        for r in relation_ids:
            if len(vecs[r]):
                sims = (vecs[r] @ self.vectors.T).max(axis=0)
                word_ok |= sims >= max(COVERS, float(sims.max()) - SAME)
        for i, w in enumerate(self.words):
            s = _stems(w)
            word_ok[i] |= bool(s) and s <= stems  # every content word of it names a relation
        has = np.zeros(len(self.heads), bool)
        has[self.group[word_ok]] = True
        matrix = (
            np.concatenate([vecs[r] for r in relation_ids if len(vecs[r])])
            if relation_ids
            else np.zeros((0, self.vectors.shape[1]), np.float32)
        )
        known = self._vocabularies[cache_key] = _Vocabulary(matrix, stems, has[self.group])
        if len(self._vocabularies) > 64:  # KG scopes are few; never grow without bound
            self._vocabularies.pop(next(iter(self._vocabularies)))
        return known

    async def missing(self, stats, phrases: list[str]) -> list[Missing]:
        """The question phrases (relation-word spans, the mention left out) that name a relation
        none of the KG's relations has, best first. Empty when the KG's vocabulary cannot be
        read."""
        if not phrases:
            return []
        try:
            relation_ids = list(await stats.reader.vocabulary())
        except KGError:
            return []
        vocab = self._vocabulary(stats, relation_ids)
        spans = self.embedder.encode(phrases)
        to_concepts = spans @ self.vectors.T
        to_kg = (
            (spans @ vocab.matrix.T).max(axis=1)
            if len(vocab.matrix)
            else np.full(len(phrases), -1.0)
        )
        out: list[tuple[float, Missing]] = []
        for i, phrase in enumerate(phrases):
            best = float(to_concepts[i].max())
            if best < NAMES or best - float(to_kg[i]) < NEARER or _stems(phrase) & vocab.stems:
                continue
            readings = to_concepts[i] >= best - SAME
            if vocab.covered[readings].any():
                continue
            word = int(to_concepts[i].argmax())
            out.append((best, Missing(phrase, self.heads[self.group[word]])))
        out.sort(key=lambda x: -x[0])
        return [m for _, m in out]
