"""Entity search over labels without an LLM: exact, case-insensitive, fuzzy (rapidfuzz) and BM25 (bm25s).

Built once per KG. ``link`` does entity linking for ``initialize``: explicit ``[mentions]`` first, otherwise the
longest token n-grams of the query that are some entity's label.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from rapidfuzz import fuzz, process

from .text import bracketed_mentions, key, tokens

_MAX_NGRAM = 12
_STOP = frozenset(
    "a an the of in on at to for by with from and or is are was were be been what which who whom whose when where "
    "how why did does do that this these those it its as 's ? , . ! film films movie movies".split()
)


@dataclass(frozen=True)
class Hit:
    index: int  # the entity's position in the label list
    score: float
    match: str
    mention: str | None = None


class LabelIndex:
    """Lookup structures over a list of labels; ``index`` values are positions in that list."""

    def __init__(self, labels: Sequence[str], extra_text: Sequence[str | None] | None = None) -> None:
        self._labels = labels
        self._exact: dict[str, list[int]] = defaultdict(list)
        self._by_key: dict[str, list[int]] = defaultdict(list)
        for i, label in enumerate(labels):
            if not label:
                continue
            self._exact[label].append(i)
            self._by_key[key(label)].append(i)
        self._keys = list(self._by_key)
        self._extra = extra_text
        self._bm25 = None  # built on first use: most sessions never need it

    # -- search -----------------------------------------------------------------------------------------------
    def search(self, text: str, limit: int = 10) -> list[Hit]:
        """Best first: exact label, then case-insensitive, then fuzzy and BM25 candidates."""
        hits: dict[int, Hit] = {}

        def add(i: int, score: float, match: str) -> None:
            if i not in hits or hits[i].score < score:
                hits[i] = Hit(i, score, match)

        for i in self._exact.get(text, ()):
            add(i, 1.0, "exact")
        k = key(text)
        if not k:
            return []
        for i in self._by_key.get(k, ()):
            add(i, 0.95, "casefold")
        if len(hits) < limit:
            for cand, score, _ in process.extract(k, self._keys, scorer=fuzz.WRatio, limit=limit, score_cutoff=70):
                for i in self._by_key[cand]:
                    add(i, 0.9 * score / 100.0, "fuzzy")
        if len(hits) < limit:
            for i, score in self._bm25_search(k, limit):
                add(i, 0.8 * score, "bm25")
        ranked = sorted(hits.values(), key=lambda h: (-h.score, len(self._labels[h.index]), h.index))
        return ranked[:limit]

    def _bm25_search(self, k: str, limit: int) -> list[tuple[int, float]]:
        import bm25s  # imported lazily: it pulls scipy

        if self._bm25 is None:
            corpus = []
            for i, label in enumerate(self._labels):
                extra = self._extra[i] if self._extra is not None else None
                corpus.append(tokens(f"{label} {extra or ''}") or ["<empty>"])
            retriever = bm25s.BM25()
            retriever.index(corpus, show_progress=False)
            self._bm25 = retriever
        q = [t for t in k.split() if t not in _STOP] or k.split()
        if not q:
            return []
        n = min(limit, len(self._labels))
        if n == 0:
            return []
        docs, scores = self._bm25.retrieve([q], k=n, show_progress=False)
        top = float(scores[0][0]) if len(scores[0]) else 0.0
        if top <= 0:
            return []
        return [(int(d), float(s) / top) for d, s in zip(docs[0], scores[0]) if s > 0]

    # -- entity linking -------------------------------------------------------------------------------------
    def link(self, query: str, limit: int = 10) -> list[Hit]:
        mentions = bracketed_mentions(query)
        if mentions:
            out: dict[int, Hit] = {}
            for m in mentions:
                for h in self.search(m, limit=limit):
                    if h.index not in out:
                        out[h.index] = Hit(h.index, h.score, h.match, mention=m)
            return sorted(out.values(), key=lambda h: -h.score)[:limit]
        return self._ngram_link(query, limit)

    def _ngram_link(self, query: str, limit: int) -> list[Hit]:
        toks = tokens(query)
        spans: list[tuple[int, int, list[int]]] = []
        for n in range(min(_MAX_NGRAM, len(toks)), 0, -1):
            for start in range(0, len(toks) - n + 1):
                gram = toks[start : start + n]
                if all(t in _STOP for t in gram):
                    continue
                ids = self._by_key.get(" ".join(gram))
                if ids:
                    spans.append((start, start + n, ids))
        taken = [False] * len(toks)
        hits: list[Hit] = []
        # longest spans first; a shorter span inside an already linked one is part of that name
        for start, end, ids in spans:
            if any(taken[start:end]):
                continue
            for t in range(start, end):
                taken[t] = True
            mention = " ".join(toks[start:end])
            coverage = (end - start) / max(1, len(toks))
            for i in ids:
                exact = 1.0 if self._labels[i].casefold() in query.casefold() else 0.9
                hits.append(Hit(i, round(0.5 + 0.5 * min(1.0, 4 * coverage), 4) * exact, "mention", mention))
        if not hits:
            return [Hit(h.index, h.score * 0.8, h.match) for h in self.search(query, limit)]
        hits.sort(key=lambda h: -h.score)
        return hits[:limit]
