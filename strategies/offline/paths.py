"""The reasoning core: enumerate relation paths from the topic entities with a beam, score them,
return plans.

Independent of the tree-search state machine, so it can be tested and benchmarked on its own;
``OfflinePolicy`` turns a plan into Tree-of-Traversals actions.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass, field
from typing import cast

from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.eager import gather_eager
from tot_mcp.kg_adapters.errors import KGError

from ..embeddings import Embedder
from .graph import Hop, KGReader
from .kgstats import KGStats
from .question import parse_question
from .scoring import SIBLING, Alignment, QuestionScorer
from .settings import OfflineSettings


@dataclass
class Plan:
    """A relation path from the topic, the entities it reaches, and how well it reads the
    question."""

    hops: tuple[Hop, ...]
    score: float
    align: float
    type_score: float
    answers: list[str]  # entity IDs, best first (the topic, if reached, last)
    answer_labels: list[str]
    frontiers: list[list[str]] = field(
        default_factory=list
    )  # entity IDs reached after each hop (capped)
    phrases: list[str | None] = field(
        default_factory=list
    )  # the question phrase each hop was read from
    confidence: float = 0.0  # 0..1, from the margin over the next different plan


@dataclass
class _Partial:
    hops: tuple[Hop, ...]
    aligns: list[Alignment]
    reached: (
        list | None
    )  # nodes reached by the last hop; None until read (a last hop is read lazily)
    frontiers: list[list | None]
    src: list | None = None  # the nodes the last hop leaves from
    #: per hop, whether it reached more than ``max_frontier`` nodes (then its frontier may be a part
    #: of them: a read over I/O is cut at its edge cap) — such a frontier is never walked on from,
    #: whatever part of it was read
    over: list[bool] = field(default_factory=list)

    @property
    def align(self) -> float:
        return self.aligns[0].score if self.aligns else -1e9


@dataclass
class Reasoning:
    question: str
    topic_ids: list[str]
    plans: list[Plan]
    #: question phrases whose best-matching relation (of any KG) no walk from the topic reached,
    #: with it: the answer cannot be of the kind the question asks ("genres" when the catalog
    #: holding them is not linked)
    unreached: list[tuple[str, str]] = field(default_factory=list)

    @property
    def best(self) -> Plan | None:
        return self.plans[0] if self.plans else None


def shared_reasoner(services, embedder, settings: OfflineSettings | None = None) -> OfflineReasoner:
    """The reasoner kept in the services' policy state, one per embedder and settings, so the
    strategies and the checks that read a question against the graph share its statistics caches
    between questions."""
    settings = settings or OfflineSettings()
    slot = ("offline-reasoner", embedder, settings)
    reasoner = services.policy_state.get(slot)
    if reasoner is None:
        reasoner = services.policy_state[slot] = OfflineReasoner(embedder, settings)
    return reasoner


class OfflineReasoner:
    """Holds the embedder, the settings and one lazily-built statistics cache per KG instance."""

    def __init__(self, embedder: Embedder, settings: OfflineSettings | None = None) -> None:
        self.embedder = embedder
        self.settings = settings or OfflineSettings()
        self._stats: weakref.WeakKeyDictionary[Graph, KGStats] = weakref.WeakKeyDictionary()

    def stats_for(self, kg: Graph) -> KGStats:
        st = self._stats.get(kg)
        if st is None:
            st = self._stats[kg] = KGStats(
                KGReader(kg), self.embedder, self.settings.type_sample, self.settings.value_examples
            )
        return st

    async def reason(self, kg: Graph, question: str, topic_ids: list[str]) -> Reasoning:
        """Ranked plans (best first) answering ``question`` from ``topic_ids``; empty if nothing
        connects. A depth's reads go to the KG together (:class:`~.graph.KGReader`): its
        frontiers' relations, then the hops the beam keeps."""
        st = self.settings
        stats = self.stats_for(kg)
        reader = stats.reader
        named = await reader.labels(topic_ids)
        topics = [t for t in topic_ids if t in named]
        if not topics:
            return Reasoning(question, topic_ids, [])
        q = parse_question(question, [named[t] for t in topics], st.max_span)
        scorer = QuestionScorer(q, stats, self.embedder, st)
        # the question's entity in every linked KG
        topic_set = set(topics) | set(await reader.twins(topics))
        rel_cache: dict[tuple, dict[Hop, int]] = {}

        async def relations_of(frontiers: list[list[str]]) -> list[dict[Hop, int]]:
            keys = [tuple(sorted(f)) if len(f) < 5000 else (id(f),) for f in frontiers]
            todo = {k: f for k, f in zip(keys, frontiers) if k not in rel_cache}
            if todo:
                rel_cache.update(zip(todo, await reader.relations(list(todo.values()))))
            return [rel_cache[k] for k in keys]

        done: list[_Partial] = []
        layer = [_Partial((), [Alignment(0.0, ())], list(topics), [])]
        for depth in range(st.max_hops):
            walked: list[tuple[_Partial, list[str]]] = []
            for p in layer:
                src = p.reached
                if src is None:  # only a last hop is left unread, and it never joins the layer
                    continue
                if depth > 0:
                    if p.over[-1] or len(src) > st.max_frontier:
                        continue
                    # never walk back through the topic at an intermediate hop, unless nothing else
                    # is there
                    src = [n for n in src if n not in topic_set] or src
                walked.append((p, src))
            children: list[tuple[float, _Partial, Hop, list[str]]] = []
            for (p, src), rels in zip(walked, await relations_of([src for _, src in walked])):
                await scorer.prepare([h[0] for h in rels])
                prev = p.hops[-1] if p.hops else None
                for hop in rels:
                    aligns = scorer.extend(p.aligns, hop, prev)
                    child = _Partial((*p.hops, hop), aligns, src, p.frontiers, over=p.over)
                    children.append((aligns[0].score, child, hop, src))
            if not children:
                break
            children.sort(key=lambda c: -c[0])
            kept = children[: st.beam]
            layer = []
            if depth == st.max_hops - 1:
                # the last hop: what it reaches is read only for the plans that need it (the ranked
                # ones, and a hop whose size the score asks for), not for every path of the beam —
                # on a remote KG a hop into a hub ("every film of the genre") is the most expensive
                # read of the walk
                done.extend(
                    _Partial(
                        child.hops,
                        child.aligns,
                        None,
                        [*child.frontiers, None],
                        child.reached,
                        [*child.over, False],
                    )
                    for _, child, _, _ in kept
                )
                break
            # "every comedy" read as its first edges is no walkable frontier: over max_frontier is
            # decided on all of them
            reads = await reader.follow(
                [(src, hop) for _, _, hop, src in kept], st.max_frontier, frontier=True
            )
            for (_, child, _, src), (nb, over) in zip(kept, reads):
                reached = _targets(src, nb)
                if not reached:
                    continue
                part = _Partial(
                    child.hops,
                    child.aligns,
                    reached,
                    [*child.frontiers, reached],
                    src,
                    over=[*child.over, over],
                )
                layer.append(part)
                done.append(part)

        if not done:
            return Reasoning(question, topic_ids, [])
        mentions = scorer.relation_mentions()
        chained = scorer.chained_relations() if st.slot_cost else 0
        readings = {
            id(p): [a for a in p.aligns if scorer.complete_reading(a, p.hops)] for p in done
        }
        # the hub test of a lazy last hop, asked without reading all it reaches
        hub_of = {
            id(p): (tuple(p.src or ()), p.hops[-1], int(st.hub_fanout * len(p.frontiers[-2] or [])))
            for p in done
            if p.reached is None
            and len(p.hops) > 1
            and any(a.spans[-1:] == (SIBLING,) for a in readings[id(p)])
        }
        hub_asks = list(dict.fromkeys(hub_of.values()))
        pairs = [pair for p in done for pair in zip(p.hops, p.hops[1:])] if st.chain_cost else []

        async def nothing() -> dict:
            return {}

        def final(
            p: _Partial, hubs: dict[int, bool], rare: dict[tuple[Hop, Hop], bool]
        ) -> tuple[float, Alignment] | None:
            """The plan's score and its best alignment; None when no alignment is a complete
            reading."""
            aligns = readings[id(p)]
            if not aligns:
                return None

            def hub(k: int) -> bool:
                f = p.frontiers[k]
                if f is None:
                    return hubs.get(id(p), False)
                # a cut read: more than it holds
                size = max(len(f), st.max_frontier + 1) if p.over[k] else len(f)
                return size > st.hub_fanout * len(p.frontiers[k - 1] or [])

            def unread(a: Alignment) -> int:
                """Chained relation nouns no hop stands for. A wordless return hop through a hub
                ("everyone of the same gender") stands for none of them."""
                through = sum(1 for k, i in enumerate(a.spans) if i == SIBLING and k > 0 and hub(k))
                return max(0, min(chained, st.max_hops) - len(p.hops) + through)

            read, best = max(
                (
                    (
                        a.score
                        - st.coverage_weight * scorer.uncovered(a, p.hops, mentions)
                        - st.slot_cost * unread(a),
                        a,
                    )
                    for a in aligns
                ),
                key=lambda x: x[0],
            )
            prior = st.type_weight * type_by_hop.get(p.hops[-1], 0.0)
            if st.chain_cost:
                steps = zip(p.hops, p.hops[1:])
                prior -= st.chain_cost * sum(rare.get(step, False) for step in steps)
            if topic_edges:
                prior += st.salience_weight * math.log1p(topic_edges.get(p.hops[0], 0))
            return read + prior, best

        def ranked(hubs: dict[int, bool], rare: dict) -> list[tuple[float, Alignment, _Partial]]:
            scored = [(*f, p) for p in done if (f := final(p, hubs, rare)) is not None]
            scored.sort(key=lambda sp: -sp[0])
            return scored

        want = max(st.plans, 1)
        # the answer types first: the chain statistics read the same relation samples
        type_by_hop = await scorer.type_scores([p.hops[-1] for p in done])
        topic_edges: dict[Hop, int] = {}
        # the plans likely to rank first (scored before the hub tests and chain statistics, which
        # seldom reorder them): their last hops and answers' names read while those are out
        likely = [p for _, _, p in ranked({}, {})[:want]]
        # what else the scores ask of the KG, asked together
        asked = await gather_eager(
            [
                stats.chain_mismatches(pairs, st.chain_min_expected, st.chain_max_ratio)
                if pairs
                else nothing(),
                reader.reaches_more_than(hub_asks),
                # a question that names no relation ("describe X in a few words") is asking what the
                # KG says most about X
                relations_of([list(topics)]) if st.salience_weight and not mentions else nothing(),
                self._read_ahead(reader, likely, topic_set),
            ]
        )
        # the calls' results, in their order
        rare = cast("dict[tuple[Hop, Hop], bool]", asked[0])  # chain_mismatches, or {}
        hub_sizes = cast("list[bool]", asked[1])  # reaches_more_than
        topic_reads = cast("list[dict[Hop, int]]", asked[2])  # relations_of, or {}
        hubs = {p: dict(zip(hub_asks, hub_sizes))[ask] for p, ask in hub_of.items()}
        topic_edges = topic_reads[0] if topic_reads else {}
        ahead = cast("dict[int, list[str]]", asked[3])  # _read_ahead

        scored = ranked(hubs, rare)
        plans: list[Plan] = []
        while scored and len(plans) < want:
            batch, scored = scored[: want - len(plans)], scored[want - len(plans) :]
            # a lazy last hop is read once, and only for a plan
            lazy = [p for _, _, p in batch if p.reached is None and id(p) not in ahead]
            reads = await reader.follow([(p.src or [], p.hops[-1]) for p in lazy])
            got = {**ahead, **{id(p): _targets(p.src or [], nb) for p, (nb, _) in zip(lazy, reads)}}
            for _, _, p in batch:
                if p.reached is None:
                    p.reached = p.frontiers[-1] = got[id(p)]
                    p.src = None
            for score, align, p in batch:
                if not p.reached:
                    continue  # reaches nothing: no plan
                plans.append(
                    Plan(
                        hops=p.hops,
                        score=score,
                        align=p.align,
                        type_score=type_by_hop.get(p.hops[-1], 0.0),
                        answers=_answers(p.reached, topic_set, st.max_answers),
                        answer_labels=[],
                        frontiers=[(f or [])[: st.max_answers] for f in p.frontiers],
                        phrases=[
                            scorer.spans[i].text if i >= 0 else ("(same)" if i == SIBLING else None)
                            for i in align.spans
                        ],
                    )
                )
        await reader.labels(n for plan in plans for n in plan.answers)  # in one read
        for plan in plans:
            plan.answer_labels = [reader.label(n) for n in plan.answers]
        _calibrate(plans, st.value_scale, st.value_bias)
        return Reasoning(question, topic_ids, plans, await _unreached(scorer, reader, plans))

    async def _read_ahead(
        self, reader: KGReader, plans: list[_Partial], topics: set[str]
    ) -> dict[int, list[str]]:
        """What the lazy last hops of ``plans`` reach, and the names of every plan's answers: the
        lazy hops read, and walked ones again where their KG is remote, with their targets' names
        (a remote KG then also keeps the rows a traversal's page of those hops is sorted from), in
        one read a KG. Sent with the scores' last reads, they cost no round trip of their own; a
        local KG names the answers without I/O, so its walked hops are not read twice."""
        n = self.settings.max_answers
        read = [p for p in plans if p.reached is None or reader.is_remote(p.hops[-1])]
        reads = await reader.follow([(p.src or [], p.hops[-1]) for p in read], named=True)
        ahead = {
            id(p): _targets(p.src or [], nb) for p, (nb, _) in zip(read, reads) if p.reached is None
        }
        reached = [ahead[id(p)] if p.reached is None else p.reached for p in plans]
        await reader.labels(a for r in reached for a in _answers(r, topics, n))  # those not named
        return ahead

    async def rank_sources(
        self, kg: Graph, plan: Plan, level: int, candidates: list[str], topic_ids: list[str]
    ) -> list[str]:
        """``candidates`` (entities reached after hop ``level``) ordered by how many of the plan's
        answers they lead to through the remaining hops, earlier answers counting more — so a
        capped expansion keeps the entities that matter for the answer. Each hop is one read of
        every candidate's nodes."""
        reader = self.stats_for(kg).reader
        weight = {a: 1.0 / (1 + i) for i, a in enumerate(plan.answers[:200])}
        topics = set(topic_ids)
        reached = {c: [c] for c in dict.fromkeys(candidates)}
        for k, hop in enumerate(plan.hops[level:], start=level):
            await reader.equivalents(n for ns in reached.values() for n in ns)  # before the read
            reads = await reader.follow([(ns, hop) for ns in reached.values()])
            for c, (nb, _) in zip(list(reached), reads):
                nodes = _targets(reached[c], nb)
                if k < len(plan.hops) - 1:
                    nodes = [n for n in nodes if n not in topics] or nodes
                reached[c] = nodes
        scored = [
            (-sum(weight.get(n, 0.0) for n in reached[c]), pos, c)
            for pos, c in enumerate(candidates)
        ]
        return [c for _, _, c in sorted(scored)]


def _answers(reached: list[str], topics: set[str], n: int) -> list[str]:
    """The first ``n`` nodes reached, the question's own entities last."""
    return [*(x for x in reached if x not in topics), *(x for x in reached if x in topics)][:n]


def _targets(nodes: list[str], nb: dict[str, list[str]]) -> list[str]:
    """What ``nb`` reaches from ``nodes``, each once, in the order of the nodes."""
    out: dict[str, None] = {}
    for n in nodes:
        for t in nb.get(n, ()):
            out[t] = None
    return list(out)


async def _unreached(
    scorer: QuestionScorer, reader: KGReader, plans: list[Plan]
) -> list[tuple[str, str]]:
    """Relation words of the question that read best as a relation the best plan does not walk: one
    the search never met, where the plan does not read the words at all; or one it met, where the
    plan reads the words as a relation that fits them far worse (``misread_margin``). Checked
    against every relation the KGs have, after the plans are ranked (they do not change)."""
    seen = scorer.prepared()
    try:
        unseen = [r for r in await reader.vocabulary() if r not in seen]
    except KGError:
        return []
    if not plans:
        return []
    if unseen:
        await scorer.prepare(unseen)
    best = plans[0]
    used = {h[0] for h in best.hops}
    out = []
    for i, sim, rel in scorer.relation_mentions():
        text = scorer.spans[i].text
        if rel in used:
            continue
        readers = [h[0] for h, p in zip(best.hops, best.phrases) if p and (text in p or p in text)]
        if not readers:
            if rel not in seen:
                out.append((text, rel))
            continue
        # the words name a relation the plan does not walk, and the plan read them as one they do
        # not name and that fits them far worse: an answer of the wrong kind ("who is the director
        # of [X]" answered by X's actors, X having no director here). Naming, not only meaning:
        # embeddings put "acted by" nearer "directed by".
        if (
            scorer.names(rel, i)
            and not any(scorer.names(r, i) for r in readers)
            and sim - max(scorer.similarity(r, i) for r in readers) > scorer.settings.misread_margin
        ):
            out.append((text, rel))
    return out


def _calibrate(plans: list[Plan], scale: float, bias: float) -> None:
    """Confidence = logistic(scale · margin + bias), where margin is the plan's score minus that of
    the best plan with a different top answer (capped at 1; 1 when there is no rival). A logistic
    fit of correctness on the dev samples found the margin carries the signal and the absolute score
    almost none."""
    for i, p in enumerate(plans):
        rival = next(
            (q.score for j, q in enumerate(plans) if j != i and q.answers[:1] != p.answers[:1]),
            None,
        )
        margin = min(1.0, p.score - rival) if rival is not None else 1.0
        p.confidence = 1.0 / (1.0 + math.exp(-(scale * margin + bias)))
