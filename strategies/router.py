"""The query router — the dispatcher. It analyses a question (hop count, complexity, relationship
intensity, entity count, query type: by the LLM as JSON when one is configured, by rules offline)
and sends it to the registered strategy that serves it, keeping statistics of its decisions (the
seed's ``route_stats``):

* one entity and a chain of relations (a lookup or a multi-hop question) → ``chain``
  (Chain-of-Traversals, k = 1), escalated to ``tot`` (the tree search, with backtracking) when the
  chain ends without any answer (an answer valued below τ is returned as it is, with its value and
  status);
* several entities (what links them is the question) → ``tot``;
* no entity the KG can link, or an open "tell me about…" question → ``ark`` (a context of ranked
  entities with the paths that reach them), on KGs held locally;
* unsure (the analysis recognises no relation at all) → ``combined``: ``chain`` and ``ark`` both,
  their results interleaved round-robin.

``plan`` (one LLM call plans relation paths, the graph is walked along them; the tree search when
none reaches anything) takes the place of ``chain`` and ``tot`` when a model is given
(``analyser="llm"``); a caller can force any route (``route="tot"``).

Adaptive routing after the adaptive-RAG routers (Jeong et al. 2024, "Adaptive-RAG"): route on
estimated complexity, escalate when the cheap route fails.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sequence
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from tot_mcp import prompts
from tot_mcp.kg_adapters.errors import InvalidInput
from tot_mcp.strategies.llm.base import LLM, LLMError
from tot_mcp.strategies.llm.replies import extract_json
from tot_mcp.strategies.offline.question import parse_question
from tot_mcp.strategies.registry import Call, Strategy, get
from tot_mcp.strategies.relevance import STOPWORDS, QueryRelevance, Span
from tot_mcp.strategies.results import (
    RetrievedEntity,
    StrategyResult,
    check_query,
    render_ranked,
)
from tot_mcp.strategies.tot.asm import LINK_LIMIT

Route = Literal["chain", "tot", "ark", "combined", "plan", "beam", "rerank"]


# -- query analysis (LLM, or rules offline) --------------------------------------------------------
QueryType = Literal["lookup", "multi_hop", "path", "subgraph"]


class QueryAnalysis(BaseModel):
    hops: int = Field(default=1, ge=0, description="Relations the question chains (estimated)")
    complexity: float = Field(ge=0.0, le=1.0)
    relationship_intensity: float = Field(ge=0.0, le=1.0)
    reasoning_needed: bool
    entity_count: int = Field(ge=0)
    query_type: QueryType = "lookup"
    source: Literal["llm", "rules"] = "rules"
    fallback_reason: str | None = None


_REASONING_CUES = frozenset(
    "why how compare compared difference both either same share shares shared also common than "
    "before after between most least".split()
)
_SUBGRAPH_CUES = (
    "everything about",
    "all about",
    "related to",
    "connected to",
    "connections",
    "neighbourhood",
    "neighborhood",
    "around",
    "overview",
)
_RELATION_CUES = frozenset(["of", "by", "'s", "with", "whose", "share", "shares", "same", "also"])


class RuleQueryAnalyser:
    """Rule-based analysis (no LLM). Relationship intensity and complexity grow with the number of
    relations the query mentions — estimated from the KG's own relation vocabulary when a
    :class:`QueryRelevance` is given, else from relational cue words — plus cues for
    comparison/reasoning and the number of entities."""

    def __init__(self, relevance: QueryRelevance | None = None) -> None:
        self.relevance = relevance

    def analyse(
        self,
        query: str,
        entity_labels: Sequence[str] = (),
        entity_count: int | None = None,
        hops: int | None = None,
    ) -> QueryAnalysis:
        """``hops``: the hop count when already known (skips the estimate, the only costly part)."""
        words = re.findall(r"\w+|'s", query.casefold())
        content = [w for w in words if w not in STOPWORDS]
        if hops is None and self.relevance is not None:
            # the phrases the tree search's offline policy reads too: their embeddings are then
            # computed once
            parsed = parse_question(query, list(entity_labels)).spans
            hops = self.relevance.estimate_hops(
                query, entity_labels, spans=[Span(x.text, x.start, x.end) for x in parsed]
            )
        elif hops is None:
            hops = min(4, sum(1 for w in words if w in _RELATION_CUES))
        mentions = re.findall(r"\[([^\[\]]+)\]", query)
        if entity_count is None:
            entity_count = len(mentions) or len(
                re.findall(r"\b[A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)*", query[1:])
            )
        reasoning = any(w in _REASONING_CUES for w in words)
        low = query.casefold()
        intensity = min(
            1.0,
            0.3 * hops
            + 0.2 * any(w in ("share", "shares", "same", "also") for w in words)
            + 0.2 * (entity_count >= 2),
        )
        complexity = min(
            1.0,
            0.1
            + 0.2 * max(0, hops - 1)
            + 0.15 * reasoning
            + 0.15 * (entity_count >= 2)
            + 0.1 * (len(content) > 12)
            + 0.15 * (hops >= 3),
        )
        if entity_count >= 2:  # several anchors: what links them is the question
            qtype: QueryType = "path"
        elif any(c in low for c in _SUBGRAPH_CUES):
            qtype = "subgraph"
        elif hops >= 2:
            qtype = "multi_hop"
        else:
            qtype = "lookup"
        return QueryAnalysis(
            hops=hops,
            complexity=round(complexity, 3),
            relationship_intensity=round(intensity, 3),
            reasoning_needed=reasoning,
            entity_count=entity_count,
            query_type=qtype,
            source="rules",
        )


class LLMQueryAnalyser:
    """Asks the LLM (``prompts/router_analyse.txt``) for JSON; falls back to the rules on error or
    bad JSON."""

    def __init__(self, llm: LLM, fallback: RuleQueryAnalyser) -> None:
        self.llm = llm
        self.fallback = fallback

    async def analyse(
        self, query: str, entity_labels: Sequence[str] = (), entity_count: int | None = None
    ) -> QueryAnalysis:
        try:
            text = await self.llm.complete(
                prompts.render("router_analyse", query=query), max_tokens=200, temperature=0.0
            )
        except LLMError as e:
            return self._fallback(query, entity_labels, entity_count, f"LLM failed: {e}")
        data = extract_json(text)
        if not isinstance(data, dict):
            return self._fallback(
                query, entity_labels, entity_count, f"analysis is not JSON: {str(text)[:120]!r}"
            )
        try:
            qtype = str(data.get("query_type", "lookup")).strip().lower()
            return QueryAnalysis(
                hops=max(0, min(8, int(data.get("hops", 1)))),
                complexity=float(data["complexity"]),
                relationship_intensity=float(data["relationship_intensity"]),
                reasoning_needed=bool(data.get("reasoning_needed", False)),
                entity_count=int(data.get("entity_count", entity_count or 0)),
                query_type=qtype if qtype in get_args(QueryType) else "lookup",
                source="llm",
            )
        except (KeyError, TypeError, ValueError, ValidationError) as e:
            return self._fallback(
                query, entity_labels, entity_count, f"analysis JSON invalid: {type(e).__name__}"
            )

    def _fallback(self, query, labels, count, reason: str) -> QueryAnalysis:
        return self.fallback.analyse(query, labels, count).model_copy(
            update={"fallback_reason": reason}
        )


def choose_route(a: QueryAnalysis, linked: int, local: bool) -> Route:
    """The rule above; ``linked``: entities the KG linked; ``local``: the KG is held locally (ARK
    can run)."""
    if (linked == 0 or a.query_type == "subgraph") and local:
        return "ark"
    if a.entity_count >= 2 or a.query_type == "path":
        return "tot"
    if a.hops == 0 and local:
        return "combined"
    return "chain"


def round_robin(lists: Sequence[Iterable[RetrievedEntity]], k: int) -> list[RetrievedEntity]:
    """Interleave ranked lists (first of each, then second of each, ...) dropping IDs already
    taken."""
    iters = [iter(x) for x in lists]
    out: list[RetrievedEntity] = []
    seen: set[str] = set()
    while iters and len(out) < k:
        alive = []
        for it in iters:
            for item in it:
                if item.id not in seen:
                    seen.add(item.id)
                    out.append(item)
                    alive.append(it)
                    break
            if len(out) >= k:
                break
        iters = alive
    return out


class RouterOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    analyser: Literal["rules", "llm"] = Field(
        default="rules",
        description="Query analysis by rules or by the LLM (falls back to rules on bad JSON)",
    )
    route: Route | None = Field(
        default=None,
        description=(
            "Force a strategy: chain (relations from one entity), tot (tree search), plan (planned "
            "relation paths), ark (a context to read, for open questions), combined (chain + ark), "
            "beam (the question's graph region), rerank (entity linking for hard names)."
        ),
    )
    top_k: int = Field(default=20, ge=1, le=200, description="Answers returned.")


class RouterResult(StrategyResult):
    analysis: QueryAnalysis
    route: Route
    ran: list[str] = Field(description="Strategies run, in order (an escalation adds the second)")
    linked: list[str] = Field(
        default_factory=list, description="Entities of the question the KG linked"
    )
    _ran: StrategyResult | None = PrivateAttr(default=None)  # what answered, for the tools to read


async def _sub(call: Call, name: str) -> StrategyResult:
    s: Strategy = get(name)
    return await s.run(call.as_strategy(s))


async def _run_router(call: Call) -> RouterResult:
    t0 = time.perf_counter()
    o: RouterOptions = call.options  # type: ignore[assignment]
    query = check_query(call.query, call.kg.limits.max_query_chars)
    local = call.kg.capabilities.local_index
    try:
        matches = (await call.kg.initialize(query, limit=LINK_LIMIT))[:5]
    except Exception:  # noqa: BLE001 - nothing linked is a routing signal, not an error
        matches = []
    labels = [m.entity.label for m in matches]
    relevance = (
        (await call.services.resources(call.kg, ("relevance",))).relevance() if local else None
    )
    rules = RuleQueryAnalyser(relevance)
    llm = o.analyser == "llm" and not call.offline
    analysis = (
        await LLMQueryAnalyser(call.llm(), rules).analyse(query, labels, None)
        if llm
        else rules.analyse(query, labels, None, hops=1)
    )  # the rules' hop count is read below
    route: Route = o.route or choose_route(analysis, len(matches), local)
    if not o.route and not call.offline and route in ("chain", "tot"):
        # with a model: one planning call, the tree search only when no planned path answers
        route = "plan"
    runs = ("chain", "ark") if route == "combined" else (route,)
    if not local and any(
        get(r).local_only for r in runs
    ):  # the registry says which need one KG's triples
        members = [
            k.name for k in getattr(call.kg, "kgs", {}).values() if k.capabilities.local_index
        ]
        raise InvalidInput(
            f"route {route!r} reads every triple of one KG: pass kg (one held locally: "
            f"{', '.join(members) or 'none configured'})"
        )
    ran = [runs[0]]
    out = await _sub(call, ran[0])
    if not llm:
        # the rules' hop count decides one thing, chain or combined for a single linked entity, and
        # costs the embeddings of the question's phrases: the chain has just computed them, so it is
        # read after it ran
        analysis = rules.analyse(query, labels, None)
        if not o.route and route == "chain":
            route = choose_route(analysis, len(matches), local)
    if route == "combined":
        second = await _sub(call, "ark")
        ran.append("ark")
        out = out.model_copy(
            update={"results": round_robin([out.results, second.results], o.top_k)}
        )
    elif (
        route == "chain" and not out.results
    ):  # no answer at all; a weak one is returned with its value
        ran.append("tot")
        out = await _sub(call, "tot")
    elif getattr(
        out, "fell_back", False
    ):  # plan: no planned path reached anything, the tree search answered
        ran.append("tot")
    seconds = time.perf_counter() - t0
    call.services.route_stats.record(route, analysis, seconds)
    result = RouterResult(
        query=query,
        kg=call.kg.name,
        results=out.results[: o.top_k],
        status=out.status,
        reason=out.reason,
        answer_text=out.answer_text,
        context=out.context,
        value=out.value,
        usage=out.usage,
        error=out.error,
        partial=out.partial,
        partial_reason=out.partial_reason,
        analysis=analysis,
        route=route,
        ran=ran,
        linked=[m.entity.id for m in matches],
        seconds=round(seconds, 4),
    )
    result._ran = out
    return result


def _render_router(out: RouterResult) -> str:
    a = out.analysis
    head = (
        f"route: {out.route} → ran {' then '.join(out.ran)} ({a.hops} hop(s), complexity "
        f"{a.complexity:.2f}, {a.query_type}, {a.entity_count} "
        f"entit{'y' if a.entity_count == 1 else 'ies'}, analysis by {a.source}"
        + (f"; fallback: {a.fallback_reason}" if a.fallback_reason else "")
        + f"); status: {out.status}"
    )
    extra = [head] + ([f"answer: {out.answer_text}"] if out.answer_text else [])
    return render_ranked(f"Routed results for {out.query!r}", out.results, extra)


ROUTER = Strategy(
    name="router",
    job="answer",
    options=RouterOptions,
    run=_run_router,
    render=_render_router,
    result=RouterResult,
    local_only=False,
    tool="route_query",
    llm_option="analyser",
    title="Route a question to the strategy that serves it",
    summary="Answer a question server-side in one call with the strategy that fits it (a chain "
    "of relations from its entity, the tree search when several entities are named, a "
    "context to read for open questions). Returns the answers with IDs, why, and which "
    "strategy ran.",
    model_options=("route", "top_k"),
    reference="Adaptive-RAG (Jeong et al., NAACL 2024): complexity-based routing with escalation",
)
