"""What the reasoner learns about a KG once and reuses for every question: relation phrases and
their embeddings, and each relation's answer type (the mean embedding of names it typically
reaches).

Everything is computed lazily — a relation's type only when a question first ends a path with it —
so opening a KG with hundreds of relations costs nothing up front; the cache lives as long as this
object (one per KG instance).
"""

from __future__ import annotations

import re

import numpy as np

from tot_mcp.kg_adapters.models import Direction
from tot_mcp.kg_adapters.text import humanize

from ..embeddings import Embedder
from .graph import Hop, KGReader

_SEGMENTS = re.compile(r"__|/|#|\.|:")


def relation_phrases(relation_id: str, label: str) -> list[str]:
    """Readings of a relation: its label, and the last segment of a path-like ID
    (``__people__person__place_of_birth`` → ``place of birth``), since questions name the specific
    part, not the namespace."""
    local = relation_id.split(":", 1)[-1]
    phrases = [humanize(label).strip().casefold() or local]
    segs = [s for s in _SEGMENTS.split(local) if s.strip("_")]
    lab_segs = [s for s in re.split(r"\s*(?:/|›|>)\s*", label) if s.strip()]
    for end in segs[-1:] + (lab_segs[-1:] if len(lab_segs) > 1 else []):
        tail = humanize(end).strip().casefold()
        if tail and tail not in phrases:
            phrases.append(tail)
    return phrases


def readable(name: str) -> str:
    return name.replace("_", " ").strip()


class KGStats:
    def __init__(
        self, reader: KGReader, embedder: Embedder, type_sample: int, value_examples: int = 0
    ) -> None:
        self.reader = reader
        self.embedder = embedder
        self.type_sample = type_sample
        self.value_examples = value_examples
        self._value_vecs: dict[str, np.ndarray] = {}  # relation → (0 or 1, dim)
        self._phrases: dict[str, list[str]] = {}
        self._phrase_vecs: dict[str, np.ndarray] = {}  # relation → (variants, dim)
        self._types: dict[Hop, np.ndarray | None] = {}
        self._vocab_matrix: np.ndarray | None = None
        self._vocab_ids: list[str] = []
        self._mismatch: dict[tuple[Hop, Hop], bool] = {}
        self._reference: list[frozenset] | None = None

    def phrases(self, relation_id: str) -> list[str]:
        p = self._phrases.get(relation_id)
        if p is None:
            label = self.reader.relation_label(relation_id)
            p = self._phrases[relation_id] = relation_phrases(relation_id, label)
        return p

    def phrase_vectors(self, relation_ids: list[str]) -> dict[str, np.ndarray]:
        missing = [r for r in dict.fromkeys(relation_ids) if r not in self._phrase_vecs]
        if missing:
            texts = [t for r in missing for t in self.phrases(r)]
            vecs = self.embedder.encode(texts)
            i = 0
            for r in missing:
                n = len(self.phrases(r))
                self._phrase_vecs[r] = vecs[i : i + n]
                i += n
        return {r: self._phrase_vecs[r] for r in relation_ids}

    async def value_vectors(self, relation_ids: list[str]) -> dict[str, np.ndarray]:
        """One verbalisation per relation with values it typically reaches ("has tags: thriller,
        martial arts"), as a (1, dim) array, or (0, dim) when ``value_examples`` is 0 or nothing is
        known. The values say what a relation is about when its label alone is vague or unusual."""
        missing = [r for r in dict.fromkeys(relation_ids) if r not in self._value_vecs]
        texts, owners = [], []
        hops = [(r, Direction.forward) for r in missing]
        samples = (
            await self.reader.target_names(hops, self.type_sample)
            if self.value_examples
            else [[] for _ in missing]
        )
        for r, sample in zip(missing, samples):
            names = [n for n in dict.fromkeys(readable(n) for n in sample) if n]
            names = names[: self.value_examples]
            if names:
                texts.append(f"{self.phrases(r)[0]}: {', '.join(names)}")
                owners.append(r)
            else:
                self._value_vecs[r] = np.zeros((0, self.embedder.dim), np.float32)
        if texts:
            for r, v in zip(owners, self.embedder.encode(texts)):
                self._value_vecs[r] = v[None, :]
        return {r: self._value_vecs[r] for r in relation_ids}

    async def value_matrix(self, extra: list[str]) -> np.ndarray:
        """The value verbalisations of the whole relation vocabulary: their own centring reference
        (values make every verbalisation resemble the KG's domain, so they are centred apart from
        the bare phrases)."""
        ids = list(dict.fromkeys([*(await self.reader.vocabulary()), *extra]))
        vecs = await self.value_vectors(ids)
        return np.concatenate([vecs[r] for r in ids], axis=0)

    async def vocabulary_matrix(self, extra: list[str]) -> np.ndarray:
        """Phrase vectors of the KG's relation vocabulary (plus ``extra``): the reference a question
        phrase's similarity is centred on, so words that resemble every relation ("film") stop
        favouring any."""
        vocab = await self.reader.vocabulary()
        ids = list(dict.fromkeys([*vocab, *extra]))
        if self._vocab_matrix is None or ids != self._vocab_ids:
            vecs = self.phrase_vectors(ids)
            self._vocab_matrix = np.concatenate([vecs[r] for r in ids], axis=0)
            self._vocab_ids = ids
        return self._vocab_matrix

    async def type_vectors(self, hops: list[Hop]) -> dict[Hop, np.ndarray | None]:
        todo = [h for h in dict.fromkeys(hops) if h not in self._types]
        texts: list[str] = []
        spans: list[tuple[Hop, int, int]] = []
        samples = await self.reader.target_names(todo, self.type_sample)
        for h, sample in zip(todo, samples):
            names = [n for n in (readable(n) for n in sample) if n][: self.type_sample]
            spans.append((h, len(texts), len(texts) + len(names)))
            texts.extend(names)
        if texts:
            vecs = self.embedder.encode(texts)
        for h, a, b in spans:
            if b > a:
                m = vecs[a:b].mean(axis=0)
                self._types[h] = m / (np.linalg.norm(m) + 1e-9)
            else:
                self._types[h] = None
        return {h: self._types[h] for h in hops}

    async def chain_mismatches(
        self, pairs: list[tuple[Hop, Hop]], min_expected: float, max_ratio: float
    ) -> dict[tuple[Hop, Hop], bool]:
        """For each pair, whether the KG itself says ``second`` does not follow ``first``: of the
        nodes ``first`` typically reaches, far fewer have ``second`` than the KG's nodes at large (a
        film titled "2010" reached as a release year is a coincidence, not a reading of "what year
        was X released"). Judged only when the sample is big enough for the base rate to predict at
        least ``min_expected`` such nodes, so a sparse KG, where every relation is rare, is never
        judged on too little evidence. The samples of all the pairs are read together."""
        todo = [pair for pair in dict.fromkeys(pairs) if pair not in self._mismatch]
        if todo:
            firsts = list(dict.fromkeys(first for first, _ in todo))
            samples = dict(zip(firsts, await self.reader.target_nodes(firsts, self.type_sample)))
            pool = await self._reference_nodes()
            rels = await self.reader.relation_sets([n for f in firsts for n in samples[f]])
            for first, second in todo:
                nodes = samples[first]
                hit = False
                if nodes and pool:
                    base = sum(second in r for r in pool) / len(pool)
                    have = sum(second in rels[n] for n in nodes)
                    expected = base * len(nodes)
                    hit = expected >= min_expected and have < max_ratio * expected
                self._mismatch[(first, second)] = hit
        return {pair: self._mismatch[pair] for pair in pairs}

    async def _reference_nodes(self) -> list[frozenset]:
        """The relations of the nodes the KG's relations point at, a few per relation and direction:
        the population a hop's targets are compared with."""
        if self._reference is None:
            per = max(1, self.type_sample // 4)
            hops = [
                (rid, d)
                for rid in await self.reader.vocabulary()
                for d in (Direction.forward, Direction.backward)
            ]
            got = await self.reader.target_nodes(hops, self.type_sample)
            seen = list(dict.fromkeys(n for nodes in got for n in nodes[:per]))
            sets = await self.reader.relation_sets(seen)
            self._reference = [sets[n] for n in seen]
        return self._reference


def flip(hop: Hop) -> Hop:
    return (hop[0], Direction.backward if hop[1] is Direction.forward else Direction.forward)
