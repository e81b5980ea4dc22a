"""Scoring relation paths against a question with sentence embeddings.

A path is good when each hop can be read off a *different* phrase of the question (coverage
alignment): the score is Σ (centred similarity of hop phrase and question phrase − τ). τ is the
price of a hop, so the number of hops falls out of the score instead of being guessed. Similarities
are centred per question phrase on the KG's whole relation vocabulary, so a word that resembles
every relation ("film") favours none. Two structural terms refine it: the return hop r⁻¹ right after
r may go without words at a small cost (this is how "shares actors with X" reaches the other films),
and hops whose phrases nest outward from the topic mention in path order earn a small bonus. The
answer-type prior compares question phrases with the typical names at the end of the last hop.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..embeddings import Embedder
from .graph import Hop
from .kgstats import KGStats
from .question import STOPWORDS, ParsedQuestion
from .settings import OfflineSettings

# How English says "the other things with the same r" (the path r · r⁻¹); compared by embedding, not
# matched.
SHARING_WORDS = ("same", "shared", "also")
UNMATCHED = -1
SIBLING = -2


@dataclass(frozen=True)
class Alignment:
    score: float
    spans: tuple[int, ...]  # per hop: index into the question's spans, UNMATCHED or SIBLING


def _shares_stem(span: str, stems: list[str]) -> float:
    """1 if a content word of the span contains the first half (≥ 4 letters) of a word of the
    relation phrase ("directors" ~ "directed", "screenwriter" ~ "written"): morphology the sentence
    embedding blurs, at no cost."""
    for w in span.split():
        if len(w) < 4 or w in STOPWORDS:
            continue
        for b in stems:
            if b[:4] not in w:
                continue
            k = 4
            while k < len(b) and b[: k + 1] in w:
                k += 1
            if k >= 0.5 * len(b):
                return 1.0
    return 0.0


def is_return(hop: Hop, prev: Hop | None) -> bool:
    return prev is not None and hop[0] == prev[0] and hop[1] is not prev[1]


class QuestionScorer:
    """Per-question scoring state: question phrase embeddings and centred hop similarities (cached
    per relation)."""

    def __init__(
        self,
        question: ParsedQuestion,
        stats: KGStats,
        embedder: Embedder,
        settings: OfflineSettings,
    ) -> None:
        self.q = question
        self.stats = stats
        self.settings = settings
        self.embedder = embedder
        self.spans = question.spans
        self.span_vecs = (
            embedder.encode([s.text for s in self.spans])
            if self.spans
            else np.zeros((0, embedder.dim), np.float32)
        )
        self._vocab_mean: np.ndarray | None = None
        self._value_mean: np.ndarray | None = None
        self._rel_sims: dict[str, np.ndarray] = {}
        self._rel_top: dict[str, list[int]] = {}
        self._sibling: dict[str, float] = {}
        # a question ending "... which films" names the answer's type there, not one more relation
        final_focus = question.focus and [t for t in question.tokens if t[:1].isalnum()][-1:] == [
            question.focus
        ]
        self._type_only = {
            i for i, sp in enumerate(self.spans) if final_focus and sp.text == question.focus
        }

    async def prepare(self, relation_ids: list[str]) -> None:
        """Centre and cache the similarity of every question phrase to each of these relations."""
        if self._vocab_mean is None:
            vocab = await self.stats.vocabulary_matrix(relation_ids)
            self._vocab_mean = (
                (self.span_vecs @ vocab.T).mean(axis=1) if len(self.spans) else np.zeros(0)
            )
            examples = (
                await self.stats.value_matrix(relation_ids)
                if self.settings.value_examples
                else None
            )
            if examples is not None and len(examples) and len(self.spans):
                ref = (
                    examples
                    if self.settings.value_centring == "apart"
                    else np.concatenate([vocab, examples])
                )
                self._value_mean = (self.span_vecs @ ref.T).mean(axis=1)
                focus = set((self.q.focus or "").split())
                self._not_focus = np.array(
                    [not (focus & set(sp.text.split())) for sp in self.spans]
                )
                if self.settings.value_centring == "mixed":
                    # the focus phrase is left out of value readings entirely, centring included
                    self._vocab_mean = np.where(self._not_focus, self._value_mean, self._vocab_mean)
        todo = [r for r in dict.fromkeys(relation_ids) if r not in self._rel_sims]
        if not todo:
            return
        vecs = self.stats.phrase_vectors(todo)
        values = await self.stats.value_vectors(todo) if self._value_mean is not None else {}
        st = self.settings
        m = st.spans_per_hop
        for r in todo:
            sims = (
                (self.span_vecs @ vecs[r].T).max(axis=1) - self._vocab_mean
                if len(self.spans)
                else np.zeros(0)
            )
            if r in values and len(values[r]):
                # the reading with example values, centred on the other relations' value readings;
                # not for the focus phrase, which meets the values through the answer-type prior
                # already ("which movies" would otherwise read as any relation whose values are
                # film-like)
                vs = st.value_weight * (
                    (self.span_vecs @ values[r].T).max(axis=1) - self._value_mean
                )
                sims = np.maximum(sims, np.where(self._not_focus, vs, -np.inf))
            if st.lexical_weight and len(self.spans):
                stems = self._stems(r)
                sims = sims + st.lexical_weight * np.array(
                    [_shares_stem(sp.text, stems) for sp in self.spans]
                )
            self._rel_sims[r] = sims
            order = [int(i) for i in np.argsort(-sims, kind="stable")]
            self._rel_top[r] = [i for i in order if i not in self._type_only][:m]

    def similarity(self, relation_id: str, span: int) -> float:
        """How well relation ``relation_id`` reads span ``span`` of the question (as
        :meth:`relation_mentions` ranks them); -1 for a relation not read against the question."""
        sims = self._rel_sims.get(relation_id)
        return float(sims[span]) if sims is not None else -1.0

    def names(self, relation_id: str, span: int) -> bool:
        """Whether span ``span`` of the question literally names the relation (shares a word stem
        with one of its phrases: "director" ~ "directed by"), as opposed to meaning something near
        it."""
        return (
            bool(_shares_stem(self.spans[span].text, self._stems(relation_id)))
            if len(self.spans)
            else False
        )

    def _stems(self, relation_id: str) -> list[str]:
        """The relation's content words that :func:`_shares_stem` compares with the question's."""
        return [
            w
            for p in self.stats.phrases(relation_id)
            for w in p.split()
            if len(w) >= 4 and w not in STOPWORDS
        ]

    def prepared(self) -> frozenset[str]:
        """The relations read against the question so far (those the search met)."""
        return frozenset(self._rel_sims)

    def sibling_bonus(self, relation_id: str) -> float:
        """How much the question talks about *sharing* r ("the same actor", "share directors", "also
        directed") rather than about r itself: the best gain of a question phrase's similarity to
        "same r" over "r"."""
        b = self._sibling.get(relation_id)
        if b is None:
            b = 0.0
            if len(self.spans) and self.settings.sibling_weight:
                phrases = self.stats.phrases(relation_id)
                variants = [f"{w} {p}" for p in phrases for w in SHARING_WORDS]
                plain = self.span_vecs @ self.stats.phrase_vectors([relation_id])[relation_id].T
                shared = self.span_vecs @ self.embedder.encode(variants).T
                b = (
                    max(0.0, float((shared.max(axis=1) - plain.max(axis=1)).max()))
                    * self.settings.sibling_weight
                )
            self._sibling[relation_id] = b
        return b

    def extend(
        self, aligns: list[Alignment], hop: Hop, prev: Hop | None, keep: int = 8
    ) -> list[Alignment]:
        """The best alignments of the path extended by ``hop`` (each hop to its own phrase)."""
        st = self.settings
        sims = self._rel_sims[hop[0]]
        cands: dict[tuple[int, ...], float] = {}

        def add(spans: tuple[int, ...], score: float) -> None:
            if cands.get(spans, -1e9) < score:
                cands[spans] = score

        ret = is_return(hop, prev)
        for a in aligns:
            if ret:
                # r⁻¹ right after r usually names nothing new (the phrase for r covers "films that
                # share r with X"), but may have words of its own ("the films *written by* the
                # writer of X"; see complete_reading); two wordless hops in a row would read one
                # "same r" twice
                if not a.spans or a.spans[-1] != SIBLING:
                    add((*a.spans, SIBLING), a.score - st.sibling_cost + self.sibling_bonus(hop[0]))
                else:
                    add((*a.spans, UNMATCHED), a.score - st.unmatched_cost)
                if not st.return_reads:
                    continue
            used = [self.spans[i] for i in a.spans if i >= 0]
            for i in self._rel_top[hop[0]]:
                sp = self.spans[i]
                if any(sp.start < u.end and u.start < sp.end for u in used):
                    continue
                order = sum(
                    st.order_weight if u.distance < sp.distance else -st.order_weight for u in used
                )
                add((*a.spans, i), a.score + float(sims[i]) - st.hop_price + order)
            add((*a.spans, UNMATCHED), a.score - st.unmatched_cost)
        best = sorted(cands.items(), key=lambda kv: -kv[1])[:keep]
        return [Alignment(score, spans) for spans, score in best]

    @staticmethod
    def complete_reading(align: Alignment, hops: tuple[Hop, ...]) -> bool:
        """A return hop r⁻¹ that reads words of its own ("the films *written by* the writer of X")
        passes the walk on to a new relation; ending there, or turning back again, is one relation
        named twice ("the director that directed X", "the release date of X"), which the wordless
        reading covers."""
        for i in range(1, len(hops)):
            if align.spans[i] >= 0 and is_return(hops[i], hops[i - 1]):
                if i == len(hops) - 1 or is_return(hops[i + 1], hops[i]):
                    return False
        return True

    def relation_mentions(self) -> list[tuple[int, float, str]]:
        """The question's relation words: non-overlapping phrases, best first, that match some
        relation seen in this search better than τ, with that relation. A plan that leaves one
        unexplained probably misses a hop."""
        if not self._rel_sims or not len(self.spans):
            return []
        rels = list(self._rel_sims)
        mat = np.stack([self._rel_sims[r] for r in rels])
        best, arg = mat.max(axis=0), mat.argmax(axis=0)
        chosen: list[tuple[int, float, str]] = []
        for i in np.argsort(-best, kind="stable"):
            b = float(best[i])
            if b <= self.settings.hop_price:
                break
            sp = self.spans[i]
            if any(
                sp.start < self.spans[j].end and self.spans[j].start < sp.end for j, _, _ in chosen
            ):
                continue
            chosen.append((int(i), b, rels[int(arg[i])]))
        return chosen

    def chained_relations(self) -> int:
        """How many relations the question's possessive / "of" chain names: its blocks, except that
        two blocks joined by "of" count once when they read better as one relation phrase ("the
        cause of death of X 's father" chains two relations, not three)."""
        blocks = list(self.q.slots)
        if len(blocks) < 2 or not self._rel_sims:
            return len(blocks)
        best = np.stack(list(self._rel_sims.values())).max(axis=0)

        def within(s: int, e: int) -> float:
            return max(
                (
                    float(best[i])
                    for i, sp in enumerate(self.spans)
                    if s <= sp.start and sp.end <= e
                ),
                default=-1.0,
            )

        n = len(blocks)
        for (s1, e1), (s2, e2) in zip(blocks, blocks[1:]):
            if e2 + 1 != s1:
                continue  # not two "of"-joined neighbours on the left of the mention
            merged = max(
                (
                    float(best[i])
                    for i, sp in enumerate(self.spans)
                    if s2 <= sp.start < e2 and sp.end == e1
                ),
                default=-1.0,
            )
            if merged > self.settings.hop_price and merged >= max(within(s1, e1), within(s2, e2)):
                n -= 1
        return n

    def uncovered(
        self, align: Alignment, hops: tuple[Hop, ...], mentions: list[tuple[int, float, str]]
    ) -> float:
        """Σ (strength − τ) of the relation words that no hop of this alignment is matched to,
        except words for a relation the path already follows (a question may name one relation
        twice: "the director that directed")."""
        used = [self.spans[i] for i in align.spans if i >= 0]
        on_path = {h[0] for h in hops}
        total = 0.0
        for i, b, rel in mentions:
            m = self.spans[i]
            if rel in on_path or any(m.start < u.end and u.start < m.end for u in used):
                continue
            total += b - self.settings.hop_price
        return total

    async def type_scores(self, hops: list[Hop]) -> dict[Hop, float]:
        """How well the question's focus phrase ("which actors", "who") matches each hop's answer
        type, as a z-score over these candidate hops (it ranks them against each other and is 0 when
        there is nothing to choose)."""
        hops = list(dict.fromkeys(hops))
        out = {h: 0.0 for h in hops}
        if not self.q.focus:
            return out
        tv = await self.stats.type_vectors(hops)
        have = {h: v for h in hops if (v := tv.get(h)) is not None}
        if len(have) >= 2:
            f = self.embedder.encode_one(self.q.focus)
            sims = np.stack(list(have.values())) @ f
            z = (sims - sims.mean()) / max(float(sims.std()), self.settings.type_std_floor)
            out.update({h: float(v) for h, v in zip(have, z)})
        return out
