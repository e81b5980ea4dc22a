"""The reasoning core: enumerate relation paths from the topic entities with a beam, score them, return plans.

Independent of the tree-search state machine, so it can be tested and benchmarked on its own; ``OfflinePolicy``
turns a plan into Tree-of-Traversals actions.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass, field

from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.errors import KGError

from ..embeddings import Embedder
from .graph import GraphView, Hop, view_for
from .kgstats import KGStats
from .question import parse_question
from .scoring import SIBLING, Alignment, QuestionScorer
from .settings import OfflineSettings


@dataclass
class Plan:
    """A relation path from the topic, the entities it reaches, and how well it reads the question."""

    hops: tuple[Hop, ...]
    score: float
    align: float
    type_score: float
    answers: list[str]  # entity IDs, best first (the topic, if reached, last)
    answer_labels: list[str]
    frontiers: list[list[str]] = field(default_factory=list)  # entity IDs reached after each hop (capped)
    phrases: list[str | None] = field(default_factory=list)  # the question phrase each hop was read from
    confidence: float = 0.0  # 0..1, from the margin over the next different plan


@dataclass
class _Partial:
    hops: tuple[Hop, ...]
    aligns: list[Alignment]
    reached: list | None  # nodes reached by the last hop; None until read (a last hop is read lazily)
    frontiers: list[list | None]
    src: list | None = None  # the nodes the last hop leaves from, while ``reached`` is not read yet
    #: per hop, whether it reached more than ``max_frontier`` nodes (then its frontier may be a part of them: a read
    #: over I/O is cut at its edge cap) — such a frontier is never walked on from, whatever part of it was read
    over: list[bool] = field(default_factory=list)

    @property
    def align(self) -> float:
        return self.aligns[0].score if self.aligns else -1e9


@dataclass
class Reasoning:
    question: str
    topic_ids: list[str]
    plans: list[Plan]
    #: question phrases whose best-matching relation (of any KG) no walk from the topic reached, with it: the
    #: answer cannot be of the kind the question asks ("genres" when the catalog holding them is not linked)
    unreached: list[tuple[str, str]] = field(default_factory=list)

    @property
    def best(self) -> Plan | None:
        return self.plans[0] if self.plans else None


def shared_reasoner(services, embedder, settings: OfflineSettings | None = None) -> OfflineReasoner:
    """The reasoner kept in the services' policy state, one per embedder and settings, so the strategies and the
    checks that read a question against the graph share its statistics caches between questions."""
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
                view_for(kg), self.embedder, self.settings.type_sample, self.settings.value_examples)
        return st

    async def reason(self, kg: Graph, question: str, topic_ids: list[str]) -> Reasoning:
        """Ranked plans (best first) answering ``question`` from ``topic_ids``; empty if nothing connects."""
        st = self.settings
        stats = self.stats_for(kg)
        view = stats.view
        topics = await view.nodes_for(topic_ids)
        if not topics:
            return Reasoning(question, topic_ids, [])
        if view.knows_labels:
            labels = [view.label(t) for t in topics]
        else:
            labels = await _labels_via_interface(kg, topic_ids, view)
        q = parse_question(question, labels, st.max_span)
        scorer = QuestionScorer(q, stats, self.embedder, st)
        topic_set = set(topics) | set(await view.twins(topics))  # the question's entity in every linked KG
        rel_cache: dict[tuple, dict[Hop, int]] = {}

        async def relations_of(nodes: list) -> dict[Hop, int]:
            key = tuple(sorted(nodes, key=str)) if len(nodes) < 5000 else (id(nodes),)
            r = rel_cache.get(key)
            if r is None:
                r = rel_cache[key] = await view.relations(nodes)
            return r

        def targets(nodes: list, nb: dict) -> list:
            out: dict = {}
            for n in nodes:
                for t in nb.get(n, ()):
                    out[t] = None
            return list(out)

        async def follow(nodes: list, hop: Hop) -> list:
            return targets(nodes, await view.neighbours(nodes, hop))

        async def follow_within(nodes: list, hop: Hop) -> tuple[list, bool]:
            """What ``hop`` reaches, and whether it is more than ``max_frontier`` nodes — decided on all of them, not
            on a read cut at an edge cap ("every comedy" read as its first 2,000 films is not a walkable frontier)."""
            nb, over = await view.neighbours_within(nodes, hop, st.max_frontier)
            return targets(nodes, nb), over

        done: list[_Partial] = []
        layer = [_Partial((), [Alignment(0.0, ())], list(topics), [])]
        for depth in range(st.max_hops):
            children: list[tuple[float, _Partial, Hop]] = []
            for p in layer:
                src = p.reached
                if depth > 0:
                    if p.over[-1] or len(src) > st.max_frontier:
                        continue
                    # never walk back through the topic at an intermediate hop, unless nothing else is there
                    src = [n for n in src if n not in topic_set] or src
                rels = await relations_of(src)
                await scorer.prepare([h[0] for h in rels])
                prev = p.hops[-1] if p.hops else None
                for hop in rels:
                    aligns = scorer.extend(p.aligns, hop, prev)
                    children.append((aligns[0].score, _Partial((*p.hops, hop), aligns, src, p.frontiers,
                                                               over=p.over), hop))
            if not children:
                break
            children.sort(key=lambda c: -c[0])
            kept = children[: st.beam]
            layer = []
            if depth == st.max_hops - 1:
                # the last hop: what it reaches is read only for the plans that need it (the ranked ones, and a
                # hop whose size the score asks for), not for every path of the beam — on a remote KG a hop into a
                # hub ("every film of the genre") is the most expensive read of the walk
                done.extend(_Partial(child.hops, child.aligns, None, [*child.frontiers, None], child.reached,
                                     [*child.over, False]) for _, child, _ in kept)
                break
            for _, child, hop in kept:
                reached, over = await follow_within(child.reached, hop)
                if not reached:
                    continue
                part = _Partial(child.hops, child.aligns, reached, [*child.frontiers, reached], over=[*child.over, over])
                layer.append(part)
                done.append(part)

        async def materialise(p: _Partial) -> bool:
            """Reads a lazy last hop (once); False when it reaches nothing (then the path is no plan)."""
            if p.reached is None:
                p.reached = await follow(p.src or [], p.hops[-1])
                p.frontiers[-1] = p.reached
                p.src = None
            return bool(p.reached)

        if not done:
            return Reasoning(question, topic_ids, [])
        type_by_hop = await scorer.type_scores([p.hops[-1] for p in done])
        mentions = scorer.relation_mentions()
        chained = scorer.chained_relations() if st.slot_cost else 0
        # a question that names no relation ("describe X in a few words") is asking what the KG says most about X
        topic_edges = await relations_of(list(topics)) if st.salience_weight and not mentions else {}

        async def chain(p: _Partial) -> float:
            if not st.chain_cost:
                return 0.0
            rare = [await stats.chain_mismatch(a, b, st.chain_min_expected, st.chain_max_ratio)
                    for a, b in zip(p.hops, p.hops[1:])]
            return -st.chain_cost * sum(rare)

        async def final(p: _Partial) -> tuple[float, Alignment] | None:
            """The plan's score and its best alignment; None when no alignment is a complete reading."""
            aligns = [a for a in p.aligns if scorer.complete_reading(a, p.hops)]
            if not aligns:
                return None
            last = len(p.hops) - 1
            last_hub = False  # the hub test of a lazy last hop, asked without reading all it reaches
            if p.reached is None and last > 0 and any(a.spans[-1:] == (SIBLING,) for a in aligns):
                prev = p.frontiers[-2] or []
                last_hub = await view.reaches_more_than(p.src or [], p.hops[-1], int(st.hub_fanout * len(prev)))

            def hub(k: int) -> bool:
                f = p.frontiers[k]
                if f is None:
                    return last_hub
                size = max(len(f), st.max_frontier + 1) if p.over[k] else len(f)  # a cut read: more than it holds
                return size > st.hub_fanout * len(p.frontiers[k - 1] or [])

            def unread(a: Alignment) -> int:
                """Chained relation nouns no hop stands for. A wordless return hop through a hub ("everyone of
                the same gender") stands for none of them."""
                hubs = sum(1 for k, i in enumerate(a.spans) if i == SIBLING and k > 0 and hub(k))
                return max(0, min(chained, st.max_hops) - len(p.hops) + hubs)

            read, best = max(
                ((a.score - st.coverage_weight * scorer.uncovered(a, p.hops, mentions) - st.slot_cost * unread(a), a)
                 for a in aligns),
                key=lambda x: x[0],
            )
            prior = st.type_weight * type_by_hop.get(p.hops[-1], 0.0) + await chain(p)
            if topic_edges:
                prior += st.salience_weight * math.log1p(topic_edges.get(p.hops[0], 0))
            return read + prior, best

        finals = [(await final(p), p) for p in done]
        scored = sorted([(*f, p) for f, p in finals if f is not None], key=lambda sp: -sp[0])
        plans: list[Plan] = []
        shown: list[list] = []  # each plan's answer nodes, named below in one read
        for score, align, p in scored:
            if len(plans) >= max(st.plans, 1):
                break
            if not await materialise(p):
                continue
            ordered = [n for n in p.reached if n not in topic_set] + [n for n in p.reached if n in topic_set]
            ordered = ordered[: st.max_answers]
            shown.append(ordered)
            plans.append(
                Plan(
                    hops=p.hops,
                    score=score,
                    align=p.align,
                    type_score=type_by_hop.get(p.hops[-1], 0.0),
                    answers=[view.node_id(n) for n in ordered],
                    answer_labels=[],
                    frontiers=[[view.node_id(n) for n in (f or [])[: st.max_answers]] for f in p.frontiers],
                    phrases=[scorer.spans[i].text if i >= 0 else ("(same)" if i == SIBLING else None)
                             for i in align.spans],
                )
            )
        await view.fetch_labels([n for ordered in shown for n in ordered])
        for plan, ordered in zip(plans, shown):
            plan.answer_labels = [view.label(n) for n in ordered]
        _calibrate(plans, st.value_scale, st.value_bias)
        return Reasoning(question, topic_ids, plans, await _unreached(scorer, view, plans))

    async def rank_sources(
        self, kg: Graph, plan: Plan, level: int, candidates: list[str], topic_ids: list[str]
    ) -> list[str]:
        """``candidates`` (entities reached after hop ``level``) ordered by how many of the plan's answers they
        lead to through the remaining hops, earlier answers counting more — so a capped expansion keeps the
        entities that matter for the answer."""
        view = self.stats_for(kg).view
        weight = {a: 1.0 / (1 + i) for i, a in enumerate(plan.answers[:200])}
        topics = set(await view.nodes_for(topic_ids))
        scored = []
        for pos, cid in enumerate(candidates):
            nodes = await view.nodes_for([cid])
            for hop in plan.hops[level:]:
                nb = await view.neighbours(nodes, hop)
                nodes = list(dict.fromkeys(t for n in nodes for t in nb.get(n, ())))
                if hop is not plan.hops[-1]:
                    nodes = [n for n in nodes if n not in topics] or nodes
            gain = sum(weight.get(view.node_id(n), 0.0) for n in nodes)
            scored.append((-gain, pos, cid))
        return [c for _, _, c in sorted(scored)]


async def _unreached(scorer: QuestionScorer, view, plans: list[Plan]) -> list[tuple[str, str]]:
    """Relation words of the question that read best as a relation the best plan does not walk: one the search
    never met, where the plan does not read the words at all; or one it met, where the plan reads the words as a
    relation that fits them far worse (``misread_margin``). Checked against every relation the KGs have, after the
    plans are ranked (they do not change)."""
    seen = scorer.prepared()
    try:
        unseen = [r for r in await view.vocabulary() if r not in seen]
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
        # the words name a relation the plan does not walk, and the plan read them as one they do not name and that
        # fits them far worse: an answer of the wrong kind ("who is the director of [X]" answered by X's actors, X
        # having no director here). Naming, not only meaning: embeddings put "acted by" nearer "directed by".
        if (scorer.names(rel, i) and not any(scorer.names(r, i) for r in readers)
                and sim - max(scorer.similarity(r, i) for r in readers) > scorer.settings.misread_margin):
            out.append((text, rel))
    return out


def _calibrate(plans: list[Plan], scale: float, bias: float) -> None:
    """Confidence = logistic(scale · margin + bias), where margin is the plan's score minus that of the best plan
    with a different top answer (capped at 1; 1 when there is no rival). A logistic fit of correctness on the dev
    samples found the margin carries the signal and the absolute score almost none."""
    for i, p in enumerate(plans):
        rival = next((q.score for j, q in enumerate(plans) if j != i and q.answers[:1] != p.answers[:1]), None)
        margin = min(1.0, p.score - rival) if rival is not None else 1.0
        p.confidence = 1.0 / (1.0 + math.exp(-(scale * margin + bias)))


async def _labels_via_interface(kg: Graph, topic_ids: list[str], view: GraphView) -> list[str]:
    out = []
    for tid in topic_ids:
        try:
            label = await kg.label_of(tid)
        except Exception:  # noqa: BLE001 - a label is a nicety; the mention may still be bracketed
            continue
        out.append(label)
        view.remember_label(tid, label)
    return out
