"""Entity search over labels without an LLM: exact, case-insensitive, fuzzy and word-overlap
matching.

Built once per KG. ``link`` does entity linking for ``initialize``: explicit ``[mentions]`` first,
otherwise the longest token n-grams of the query that are some entity's label.

Ranking (``search``), best first:

* ``exact`` 1.0 — the label, case-sensitively (MetaQA has ``Ginger Rogers`` the actor and ``ginger
  rogers`` the tag: ``[ginger rogers]`` must give the tag first);
* ``casefold`` 0.95 — the same words ignoring case and punctuation spacing;
* ``fuzzy`` / ``bm25`` ≤ 0.9 — candidates from a character-trigram index (typos: ``keanu reevs``)
  and an IDF-weighted word index (extra words: ``matrix reloaded movie``), each scored by the better
  of *whole-string similarity* of the content words (stopwords and 'movie'/'film' dropped; Indel
  ratio, word order ignored; it penalises length differences) and an *IDF-weighted word-overlap
  F-score* (β = 0.5) between query and label, where words that differ by a typo count partly
  (``hank``/``hanks``). Whole-string similarity with no shared word counts only 60% (``Phantom`` is
  not ``tom hank``); labels under a fifth of the query's length, or over five times it, are skipped
  (the label ``O`` never matches ``tom hank``). The name says which of the two won; ``bm25`` stands
  for the word-overlap score. Candidates below 0.45 are dropped. Ties go to the better-connected
  entity (``priors``), then the shorter label.

Both candidate indexes are numpy posting lists built lazily on the first fuzzy search, so a search
costs a few bincounts plus ~100 rapidfuzz calls: about a millisecond on MetaQA's 43k labels.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from rapidfuzz import fuzz

from .text import bracketed_mentions, key, longest_spans, tokens

_MAX_NGRAM = 12
_STOP = frozenset(
    "a an the of in on at to for by with from and or is are was were be been what which who whom "
    "whose when where how why did does do that this these those it its as 's ? , . ! film films "
    "movie movies".split()
)
_CANDIDATES = 64  # per candidate generator
_MIN_SCORE = 0.45
_MIN_LENGTH_RATIO = 0.2  # of content characters, shorter/longer
_FUZZY_TOP = 0.9
_RECENT = 2048  # label searches remembered (a plain dict, emptied when full)
_COMMON_POSTINGS = 20_000  # words/trigrams this frequent add nothing to candidate generation


@dataclass(frozen=True)
class Hit:
    index: int  # the entity's position in the label list
    score: float
    match: str
    mention: str | None = None


def ngram_spans(toks: Sequence[str]) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each run of at most ``_MAX_NGRAM`` tokens that is not all stopwords,
    longest first, then leftmost: where a name may be mentioned in a question."""
    for n in range(min(_MAX_NGRAM, len(toks)), 0, -1):
        for start in range(len(toks) - n + 1):
            if not all(t in _STOP for t in toks[start : start + n]):
                yield start, start + n


def _trigrams(k: str) -> set[str]:
    padded = f" {k} "
    return {padded[i : i + 3] for i in range(len(padded) - 2)}


def _content(toks: list[str]) -> list[str]:
    words = [t for t in toks if any(c.isalnum() for c in t)]
    content = [t for t in words if t not in _STOP]
    return content or words


class _FuzzyIndex:
    """Trigram and word posting lists over the distinct label keys.

    Built after the server has frozen its long-lived objects out of the garbage collector's view
    (``gc.freeze``), so it is made of objects the collector does not track: numpy arrays, strings,
    floats and tuples of them (a list per label added ~43k objects to every full collection on
    MetaQA: 13.5 → 1.2 ms per full collection).
    """

    def __init__(self, keys: list[str]) -> None:
        self.n = len(keys)
        tri_post: dict[str, list[int]] = defaultdict(list)
        word_post: dict[str, list[int]] = defaultdict(list)
        self.tri_len = np.zeros(self.n, dtype=np.float32)
        key_words: list[tuple[str, ...]] = []
        for i, k in enumerate(keys):
            tris = _trigrams(k)
            self.tri_len[i] = len(tris)
            for t in tris:
                tri_post[t].append(i)
            words = tuple(_content(k.split()))
            key_words.append(words)
            for w in set(words):
                word_post[w].append(i)
        self.key_words: tuple[tuple[str, ...], ...] = tuple(key_words)
        self.key_text = tuple(" ".join(words) for words in key_words)
        self.tri_post = {t: np.asarray(v, dtype=np.int32) for t, v in tri_post.items()}
        self.word_post = {w: np.asarray(v, dtype=np.int32) for w, v in word_post.items()}
        self.max_idf = math.log(1 + self.n)
        self._idf = {w: math.log(1 + self.n / len(p)) for w, p in self.word_post.items()}

    def idf(self, word: str) -> float:
        return self._idf.get(word, self.max_idf)

    def _top(self, scores: np.ndarray, keep: np.ndarray, k: int) -> list[int]:
        """The (at most) ``k`` best-scoring positions among those ``keep`` marks (a boolean mask:
        its nonzero is several times cheaper than one over the float scores)."""
        nz = np.flatnonzero(keep)
        if len(nz) > k:
            nz = nz[np.argpartition(-scores[nz], k - 1)[:k]]
        return nz.tolist()

    def candidates(self, k: str, words: Sequence[str]) -> set[int]:
        out: set[int] = set()
        q_tris = _trigrams(k)
        lists = [
            p
            for t in q_tris
            if (p := self.tri_post.get(t)) is not None and len(p) < _COMMON_POSTINGS
        ]
        if lists:
            counts = np.bincount(np.concatenate(lists), minlength=self.n).astype(np.float32)
            dice = 2 * counts / (len(q_tris) + self.tri_len)
            out.update(self._top(dice, dice >= 0.3, _CANDIDATES))
        posts, weights = [], []
        for w in set(words):
            p = self.word_post.get(w)
            if p is not None and len(p) < _COMMON_POSTINGS:
                posts.append(p)
                weights.append(np.full(len(p), self.idf(w), dtype=np.float32))
        if posts:
            scores = np.bincount(
                np.concatenate(posts), weights=np.concatenate(weights), minlength=self.n
            )
            out.update(self._top(scores, scores > 0, _CANDIDATES))  # every idf is > 0
        return out

    def word_overlap(self, q_words: Sequence[str], d_words: Sequence[str]) -> float:
        """IDF-weighted F-score (β = 0.5) of the word overlap, a word within a small edit of one on
        the other side counting partly. β < 1 weighs "the label's words are in the query" above "the
        query's words are in the label", so extra words in the query ('matrix reloaded movie') cost
        less than extra words in the label."""
        if not q_words or not d_words:
            return 0.0
        recall = self._coverage(q_words, d_words)
        if not recall:
            return 0.0
        precision = self._coverage(d_words, q_words)
        if not precision:
            return 0.0
        return 1.25 * precision * recall / (0.25 * precision + recall)

    def _coverage(self, src: Sequence[str], dst: Sequence[str]) -> float:
        """The IDF share of ``src``'s words found in ``dst`` (a word ≥ 4 letters within fuzz.ratio ≥
        75 of one there counts by that ratio). The hottest loop of a search: called for both sides
        of ~60 candidates."""
        idf, max_idf, ratio = self._idf.get, self.max_idf, fuzz.ratio
        total = got = 0.0
        long_dst = None
        for w in src:
            weight = idf(w, max_idf)
            total += weight
            if w in dst:
                got += weight
                continue
            if len(w) >= 4:
                if long_dst is None:
                    long_dst = [d for d in dst if len(d) >= 4]
                best = 0.0
                for d in long_dst:
                    best = max(best, ratio(w, d) / 100.0)
                if best >= 0.75:
                    got += weight * best
        return got / total if total else 0.0


class LabelIndex:
    """Lookup structures over a list of labels; ``index`` values are positions in that list.

    ``priors`` (optional, one per label, ≥ 0 — e.g. an entity's degree) only break ties between
    equally good matches. Descriptions are not searched (they add noise).
    """

    def __init__(
        self, labels: Sequence[str], priors: Sequence[float] | np.ndarray | None = None
    ) -> None:
        self._labels = labels
        self._exact: dict[str, list[int]] = defaultdict(list)
        self._by_key: dict[str, list[int]] = defaultdict(list)
        for i, label in enumerate(labels):
            if not label:
                continue
            self._exact[label].append(i)
            self._by_key[key(label)].append(i)
        self._by_key.pop("", None)
        self._keys = list(self._by_key)
        self._priors = priors
        self._fuzzy: _FuzzyIndex | None = (
            None  # built on first use: most sessions only need exact lookups
        )
        # the same mention is looked up again and again (an agent's initialize then search, a router
        # and the strategy it runs); the labels never change, so recent answers are kept
        self._recent: dict[str, tuple[int, list[Hit]]] = {}

    def _prior(self, i: int) -> float:
        return float(self._priors[i]) if self._priors is not None else 0.0

    # -- search ------------------------------------------------------------------------------------
    def named(self, label: str) -> list[int]:
        """Positions whose label is exactly ``label``, else those whose lookup key equals its key
        (case, spacing and punctuation aside); no fuzzy matches. What cross-KG label links are made
        of."""
        exact = self._exact.get(label)
        if exact:
            return list(exact)
        k = key(label)
        return list(self._by_key.get(k, ())) if k else []

    def search(self, text: str, limit: int = 10) -> list[Hit]:
        """Best first: exact label, then case-insensitive, then fuzzy and word-overlap
        candidates."""
        if limit < 1:
            return []
        known = self._recent.get(text)
        if (
            known is not None and known[0] >= limit
        ):  # the first ``limit`` of a longer answer are this answer
            return known[1][:limit]
        got = self._search(text, limit)
        if len(self._recent) >= _RECENT:
            self._recent.clear()
        self._recent[text] = (limit, got)
        return list(got)

    def _search(self, text: str, limit: int) -> list[Hit]:
        hits: dict[int, Hit] = {}

        def add(i: int, score: float, match: str) -> None:
            if i not in hits or hits[i].score < score:
                hits[i] = Hit(i, score, match)

        text = text.strip()
        for i in self._exact.get(text, ()):
            add(i, 1.0, "exact")
        k = key(text)
        if not k:
            return []
        for i in self._by_key.get(k, ()):
            add(i, 0.95, "casefold")
        if len(hits) < limit:
            for cand, score, match in self._fuzzy_search(k):
                for i in self._by_key[self._keys[cand]]:
                    add(i, score, match)
        ranked = sorted(
            hits.values(),
            key=lambda h: (-h.score, -self._prior(h.index), len(self._labels[h.index]), h.index),
        )
        return ranked[:limit]

    def _fuzzy_search(self, k: str) -> list[tuple[int, float, str]]:
        if self._fuzzy is None:
            self._fuzzy = _FuzzyIndex(self._keys)
        fz = self._fuzzy
        q_words = _content(k.split())
        q_text = " ".join(q_words)
        out = []
        for c in fz.candidates(k, q_words):
            ck = self._keys[c]
            if ck == k:
                continue  # already an exact/casefold hit
            # compare content words only: 'movie' in the query must not make 'Road, Movie' similar
            c_text = fz.key_text[c]
            if min(len(c_text), len(q_text)) < _MIN_LENGTH_RATIO * max(len(c_text), len(q_text)):
                # a one-letter label is not a fuzzy match for a name, nor a name for a letter
                continue
            sim = fuzz.token_sort_ratio(q_text, c_text) / 100.0
            overlap = fz.word_overlap(q_words, fz.key_words[c])
            if overlap == 0:
                # similar letters but not one shared word ('Phantom' for 'tom hank') is weak
                # evidence
                sim *= 0.6
            best = max(sim, overlap)
            if best * _FUZZY_TOP < _MIN_SCORE:
                continue
            out.append((c, round(_FUZZY_TOP * best, 4), "fuzzy" if sim >= overlap else "bm25"))
        return out

    # -- entity linking ----------------------------------------------------------------------------
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
        spans = [
            (s, e, ids)
            for s, e in ngram_spans(toks)
            if (ids := self._by_key.get(" ".join(toks[s:e])))
        ]
        hits: list[Hit] = []
        for start, end, ids, weight in longest_spans(spans, len(toks)):
            mention = " ".join(toks[start:end])
            for i in ids:
                exact = 1.0 if self._labels[i] in query else 0.9
                hits.append(Hit(i, round(weight * exact, 4), "mention", mention))
        if not hits:
            return [
                Hit(h.index, round(h.score * 0.8, 4), h.match) for h in self.search(query, limit)
            ]
        hits.sort(
            key=lambda h: (-h.score, -self._prior(h.index), len(self._labels[h.index]), h.index)
        )
        return hits[:limit]
