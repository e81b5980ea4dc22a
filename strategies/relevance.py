"""The offline relevance model every strategy ranks with: each hop of a relation path is matched to
a different short span of the question (MiniLM cosine, centred per span so generic words match
nothing), minus a per-hop price. Also the question's hop count, which the offline judges and the
router read."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from tot_mcp.kg_adapters.text import bracketed_mentions, tokens
from tot_mcp.kg_adapters.local_graph import LocalGraph

if TYPE_CHECKING:
    from tot_mcp.strategies.embeddings import Embedder


STOPWORDS = frozenset(
    "a an the of in on at to for by with from and or but is are was were be been being am what "
    "which who whom whose when where how why did does do done that this these those it its as s "
    "can could would should will shall may might must has have had having i you he she they we me "
    "him her them us my your his their our any some all also other than then there here about "
    "into onto over under up down out off so such very just too not no nor only own same both "
    "each few more most".split()
    + ["'s", "?", ",", ".", "!", ";", ":", "'", '"', "-"]  # punctuation tokens
)
# Answer-type words: they name what is asked for, not a relation, so they never count as a relation
# span.
TYPE_WORDS = frozenset(["film", "films", "movie", "movies", "thing", "things", "one", "ones"])


# -- offline relevance of relation paths -----------------------------------------------------------
@dataclass(frozen=True)
class Span:
    text: str
    start: int
    end: int


def query_spans(query: str, max_len: int = 4, exclude: Sequence[str] = ()) -> list[Span]:
    """Every 1–``max_len``-token span of the query that has a content word, with ``[mentions]`` and
    the given entity labels removed (the topic is where a path starts, not a relation)."""
    text = query
    for m in bracketed_mentions(query):
        text = text.replace(f"[{m}]", " ")
    low = text.replace("_", " ").casefold()
    for label in sorted(exclude, key=len, reverse=True):
        lab = label.replace("_", " ").casefold().strip()
        if len(lab) > 2:
            low = low.replace(lab, " ")
    toks = [t for t in tokens(low) if t.isalnum() or t == "'s"]
    spans: list[Span] = []
    for n in range(1, max_len + 1):
        for s in range(len(toks) - n + 1):
            gram = toks[s : s + n]
            if all(t in STOPWORDS or t in TYPE_WORDS for t in gram) or (
                n > 1 and gram[0] in STOPWORDS and gram[-1] in STOPWORDS
            ):
                continue
            spans.append(Span(" ".join(gram), s, s + n))
    return spans


def relation_phrase(label: str) -> str:
    """``people person place of birth`` → ``place of birth``: the last ``__`` segment of a
    Freebase-style name."""
    last = re.split(r"__|/", label.strip())[-1]
    return last.replace("_", " ").strip() or label


class QueryRelevance:
    """Relation-phrase embeddings of one KG; makes a :class:`PathScorer` per query."""

    def __init__(self, graph: LocalGraph, embedder: Embedder, hop_price: float = 0.12) -> None:
        self.graph = graph
        self.embedder = embedder
        self.hop_price = hop_price
        self.phrases = [relation_phrase(x) for x in graph.rel_labels]
        self.rel_vecs = (
            embedder.encode(self.phrases)
            if self.phrases
            else np.zeros((0, embedder.dim), np.float32)
        )

    def scorer(
        self, query: str, topic_labels: Sequence[str] = (), spans: Sequence[Span] | None = None
    ) -> PathScorer:
        """``spans``: the question's candidate relation phrases when the caller has them (default:
        every 1–4-token span with a content word, :func:`query_spans`)."""
        spans = list(spans) if spans is not None else query_spans(query, exclude=topic_labels)
        if not spans or len(self.phrases) == 0:
            return PathScorer(
                spans, np.zeros((len(spans), len(self.phrases)), np.float32), self.hop_price
            )
        vecs = self.embedder.encode([s.text for s in spans])
        sims = vecs @ self.rel_vecs.T  # spans × relations
        centred = sims - sims.mean(axis=1, keepdims=True) if sims.shape[1] > 1 else sims
        return PathScorer(spans, centred.astype(np.float32), self.hop_price)

    def estimate_hops(
        self,
        query: str,
        topic_labels: Sequence[str] = (),
        threshold: float = 0.18,
        spans: Sequence[Span] | None = None,
    ) -> int:
        """How many distinct relations the query mentions: greedy non-overlapping spans whose best
        centred similarity to some relation clears ``threshold``. The offline judge's and the
        router's main signal."""
        sc = self.scorer(query, topic_labels, spans)
        used: set[int] = set()
        hops = 0
        while hops < 6 and (best := sc.best_span(used)) is not None and best[1] >= threshold:
            hops += 1
            span = sc.spans[best[0]]
            used.update(range(span.start, span.end))
        return hops


class PathScorer:
    """Scores relation paths for one query. A path's score is Σ over hops of (best centred
    similarity between the hop's relation and a question span not used by an earlier hop) − hop
    price."""

    def __init__(self, spans: list[Span], centred: np.ndarray, hop_price: float) -> None:
        self.spans = spans
        self.centred = centred
        self.hop_price = hop_price

    def best_span(self, used: set[int], relation: int | None = None) -> tuple[int, float] | None:
        best: tuple[int, float] | None = None
        for k, s in enumerate(self.spans):
            if used and any(t in used for t in range(s.start, s.end)):
                continue
            row = self.centred[k]
            v = (
                float(row[relation])
                if relation is not None
                else float(row.max())
                if row.size
                else 0.0
            )
            if best is None or v > best[1]:
                best = (k, v)
        return best

    def hop(self, relation: int, used: frozenset[int]) -> tuple[float, frozenset[int]]:
        """(score of taking ``relation`` next, the span tokens used afterwards)."""
        best = self.best_span(set(used), relation)
        if best is None:
            return -self.hop_price, used
        span = self.spans[best[0]]
        return best[1] - self.hop_price, used | frozenset(range(span.start, span.end))
