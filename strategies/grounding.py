"""Whether the KG can answer a question at all, decided once for every answering path.

Every strategy that answers or retrieves for a question (tot, chain, plan, router, ARK, BFS/DFS,
beam) runs through :func:`run_checked`: the tools, ``tot-search`` and the benchmarks alike. For a
client model a confident wrong answer is worse than none, so before the strategy runs (no expansion,
no LLM call):

* the question's entities are linked and graded (:mod:`kg_adapters.link_grade`): nothing found is
  ``no_entity``; only a loose look-alike (``[Saturn Protocol Nineteen]`` → *Protocol*, 1 of 3 words)
  is ``uncertain``, naming it — the strategy would answer about the look-alike;
* the question's relation words are read against the KG's relations
  (:mod:`strategies.relation_fit`): a relation the KG lacks is ``unsupported``, naming the relations
  the entity does have.

After the strategy, its status is put in the one vocabulary of :data:`strategies.results.STATUSES`
and every result carries the links and a one-line reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.errors import KGError
from tot_mcp.kg_adapters.link_grade import best_per_mention, grade
from tot_mcp.kg_adapters.models import Direction, EntityMatch
from tot_mcp.kg_adapters.text import bracketed_mentions, key
from tot_mcp.strategies.llm.base import LLMUsage
from tot_mcp.strategies.registry import Call, Strategy
from tot_mcp.strategies.tot.method import TotOptions
from tot_mcp.strategies.results import REFUSALS, STATUSES, LinkInfo, StrategyResult, check_query

LINK_LIMIT = 10  # matches asked of the linker (the strategies ask as many)
NEAR_RELATIONS = 12  # relations named when refusing
RIVAL_GAP = 0.1  # a one-word typo is a guess when another name matched within this
# the tree search's default threshold, for the strategies without one (plan, the router)
TAU = TotOptions.model_fields["tau"].default


@dataclass
class Grounding:
    links: list[LinkInfo] = field(default_factory=list)
    status: str | None = None  # set when the strategy must not run
    reason: str = ""


def _link_info(m: EntityMatch, mention: str | None, rival: float | None = None) -> LinkInfo:
    g = grade(mention, m.entity.label, m.match, alone=rival is None or rival < m.score - RIVAL_GAP)
    shown = mention or m.mention or m.entity.label
    return LinkInfo(
        mention=shown,
        id=m.entity.id,
        label=m.entity.label,
        match=g.kind,
        score=round(m.score, 4),
        confident=g.confident,
        note=g.note(shown, m.entity.label),
    )


def _rival(best: EntityMatch, matches: list[EntityMatch]) -> float | None:
    """The best score of another name for the same mention (same-named nodes are one name)."""
    others = [
        m.score
        for m in matches
        if m.mention == best.mention and key(m.entity.label) != key(best.entity.label)
    ]
    return max(others, default=None)


async def link(graph: Graph, query: str) -> Grounding:
    """The question's entities, graded; ``no_entity`` / ``uncertain`` when none is confidently
    found."""
    mentions = bracketed_mentions(query)
    matches = await graph.initialize(query, limit=LINK_LIMIT)
    if not matches:
        if mentions:
            said = ", ".join(f"[{m}]" for m in mentions)
            return Grounding(
                status="no_entity",
                reason=f"{said} was not found in the KG, and no name in it is "
                "close; check the spelling or ask search_entities for similar names",
            )
        return Grounding(
            status="no_entity",
            reason="no entity of the question was found in the KG; mark the name with [brackets]",
        )
    one = mentions[0] if len(mentions) == 1 else None
    links = [
        _link_info(m, m.mention or one, _rival(m, matches))
        for m in sorted(best_per_mention(matches).values(), key=lambda m: -m.score)
    ]
    loose = [li for li in links if not li.confident]
    if loose and (
        mentions or len(loose) == len(links)
    ):  # a bare question may also link loose n-grams
        notes = "; ".join(f"{li.note} ({li.id})" for li in loose)
        return Grounding(
            links,
            "uncertain",
            f"{notes}; not answered (it may not be in the KG): ask again with "
            "that exact name if it is the one meant",
        )
    return Grounding(links)


async def _relations_near(graph: Graph, ids: list[str]) -> str:
    try:
        rels = (await graph.get_relations(ids[: graph.limits.max_ids])).relations
    except KGError:
        return ""
    names: list[str] = []
    for r in sorted(rels, key=lambda r: (r.direction is not Direction.forward, -(r.count or 0))):
        name = (
            r.label
            if r.direction is Direction.forward
            else (r.inverse_label or f"{r.label} (inverse)")
        )
        if name not in names:
            names.append(name)
    more = f", … (+{len(names) - NEAR_RELATIONS})" if len(names) > NEAR_RELATIONS else ""
    return ", ".join(names[:NEAR_RELATIONS]) + more


async def check_relations(call: Call, graph: Graph, g: Grounding) -> Grounding:
    """``unsupported`` when the question names a relation none of the KGs has."""
    from tot_mcp.strategies.offline.paths import shared_reasoner
    from tot_mcp.strategies.offline.question import parse_question
    from tot_mcp.strategies.relation_fit import RelationFit

    embedder = await call.services.aembedder()
    reasoner = shared_reasoner(
        call.services, embedder
    )  # its statistics caches, shared with the strategies
    key = ("relation-fit", embedder)
    fit = call.services.policy_state.get(key)
    if fit is None:
        fit = call.services.policy_state[key] = RelationFit(embedder)
    words = parse_question(call.query, [li.label for li in g.links]).spans  # the relation words
    missing = await fit.missing(reasoner.stats_for(graph), [s.text for s in words])
    if not missing:
        return g
    kgs = list(graph.members())
    m = missing[0]
    article = "an" if m.concept[:1].lower() in tuple("aeiou") else "a"
    whose = (
        f"the {kgs[0]} KG has no"
        if len(kgs) == 1
        else f"none of the KGs ({', '.join(kgs)}) has {article}"
    )
    near = await _relations_near(graph, [li.id for li in g.links])
    topic = g.links[0].label if g.links else "the entity"
    reason = f"{whose} {m.concept} relation ('{m.phrase}')" + (
        f"; {topic} has: {near}" if near else ""
    )
    return Grounding(g.links, "unsupported", reason)


def graph_of(strategy: Strategy, call: Call) -> Graph:
    """The KGs the strategy reads: the caller's scope, else every KG linked, else (a strategy that
    reads every triple of one KG) that KG."""
    if call.scope is not None:
        return call.scope
    return call.kg if strategy.local_only else call.services.graph


async def ground(strategy: Strategy, call: Call) -> Grounding:
    graph = graph_of(strategy, call)
    g = await link(graph, call.query)
    if g.status is None:
        g = await check_relations(call, graph, g)
    return g


def settle(out: StrategyResult, g: Grounding, tau: float | None = None) -> StrategyResult:
    """The strategy's result in the one vocabulary, with the links and a reason. ``tau``: an answer
    valued below it is ``below_tau``, whichever strategy found it (plan and the router have no
    threshold of their own)."""
    out.links = g.links
    if tau is not None and out.status == "answered" and (out.value or 0.0) < tau:
        out.status = "below_tau"
    if out.status == "answered" and out.partial:
        out.status = "partial"
    if out.status not in STATUSES:
        out.status = "no_answer" if not out.results else "below_tau"
    if out.status in REFUSALS and not out.results:
        out.value = 0.0  # nothing answered is worth nothing, whatever the search valued on its way
    if not out.reason:
        out.reason = _reason(out, tau)
    return out


def _reason(out: StrategyResult, tau: float | None) -> str:
    """A status's one line when the strategy gave none: what it rests on, in figures."""
    valued = f"valued {out.value:.2f}" if out.value is not None else ""
    if out.status == "answered" and valued and tau is not None:
        return f"{valued} (tau {tau:g}), reached along the graph's edges from the linked entities"
    if out.status == "below_tau" and valued and tau is not None:
        return f"the best answer is {valued}, below tau {tau:g}: check it before relying on it" + (
            f" ({out.partial_reason})" if out.partial_reason else ""
        )
    if out.status == "partial":
        return out.partial_reason or STATUSES["partial"]
    return out.error or out.partial_reason or STATUSES[out.status]


async def run_checked(strategy: Strategy, call: Call) -> StrategyResult:
    """Run ``strategy`` on ``call`` with the checks every answering path shares. Returns a plain
    :class:`StrategyResult` (not the strategy's own type) when it refuses before the strategy runs.
    """
    if strategy.job == "linking":  # finds entities for the text; nothing to check an answer against
        out = await strategy.run(call)
        if not out.reason:
            out.reason = (
                "entities ranked by how well they match the text, not an answer checked "
                "against the graph's relations"
                if out.results
                else STATUSES.get(out.status, "")
            )
        return out
    query = check_query(call.query, call.kg.limits.max_query_chars)
    g = await ground(strategy, call)
    if g.status is not None:
        return StrategyResult(
            query=query,
            kg=call.kg.name,
            results=[],
            status=g.status,
            reason=g.reason,
            links=g.links,
            value=0.0,
            usage=LLMUsage(),
            context=g.reason if strategy.job == "context" else None,
        )
    tau = getattr(call.options, "tau", TAU) if strategy.job == "answer" else None
    return settle(await strategy.run(call), g, tau)
