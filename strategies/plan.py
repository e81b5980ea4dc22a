"""``plan``: one LLM call, then the graph.

Tree-of-Traversals asks the model at every step (which entities, which relation, is this the
answer), so a 3-hop question costs a dozen calls. LLM-guided planning (arXiv 2511.19648) answers
MetaQA with one call per question: the model sees the question, its linked entities and the relation
vocabulary around them, writes whole relation paths, and a breadth-first walk of the graph executes
them. This strategy does that:

1. link the question's entities (the best match per mention, as the tree search's start state
   keeps);
2. list the relations around them with directions and counts and, so a model can plan 2-3 hops, the
   relations of a bounded sample of the entities each hop reaches ("after <relation>" groups),
   capped so the prompt stays small;
3. one LLM call (``prompts/plan.txt``) proposes up to ``k`` paths, best first; offline, the offline
   reasoner's ranked plans (:mod:`strategies.offline.paths`) stand in for the model;
4. the paths are walked in order with :func:`kg_adapters.follow.follow_path`; the first that reaches
   anything answers (entities and literal values), with the path that reached them;
5. no usable path, or none reaches anything: the tree search (``tot``) answers instead, and the
   result says so — unless the model replied that the graph does not have this
   (``NOT_IN_GRAPH: entity|relation — <reason>``): a reasoned refusal is the answer (status
   ``no_entity`` / ``unsupported``, the reason kept); searching on would spend a dozen calls to
   reach the same ``no_answer``.
"""

from __future__ import annotations

import dataclasses
import re
import time
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from tot_mcp import prompts
from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.errors import KGError
from tot_mcp.kg_adapters.follow import MAX_HOPS, Hop, PathResult, follow_path
from tot_mcp.kg_adapters.models import Direction, EntityMatch, Relation
from tot_mcp.kg_adapters.text import humanize, key
from tot_mcp.strategies.llm.base import LLMError, LLMUsage
from tot_mcp.strategies.llm.replies import find_refusal, read_refusal
from tot_mcp.strategies.registry import Call, Strategy, get
from tot_mcp.strategies.relevance import STOPWORDS
from tot_mcp.strategies.results import (
    PathStep,
    RetrievedEntity,
    StrategyResult,
    check_query,
    render_ranked,
)
from tot_mcp.strategies.tot.asm import link_topics
from tot_mcp.strategies.tot.method import TotOptions
from tot_mcp.strategies.tot.prompted import meaning, merged_names
from tot_mcp.strategies.tot.state import ID_RE

LINES_PER_LEVEL = 40  # relation lines shown per level of the vocabulary
LINES_PER_GROUP = 15  # ... and per "after <relation>" group
GROUPS_PER_LEVEL = 12  # hops whose reached entities are sampled, per level
SAMPLE = 20  # entities sampled per hop
VOCABULARY_LEVELS = 3  # levels listed at most (a 4-hop plan reuses the groups of the 3rd)
ANSWERS = 100  # targets returned
READINGS = 5  # the offline reasoner's plans a model's path is checked against
MODEL_PRIOR = (
    0.7  # a model's path no reading of the graph supports: below tau (0.8), the answer still shown
)


class PlanOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    k: int = Field(
        default=3, ge=1, le=10, description="Relation paths planned and tried, best first"
    )
    max_hops: int = Field(default=3, ge=1, le=MAX_HOPS, description="Longest path planned (hops)")


class PlanResult(StrategyResult):
    planner: Literal["llm", "offline"]
    linked: list[str] = Field(
        default_factory=list, description="Entities of the question the KG linked"
    )
    paths: list[str] = Field(default_factory=list, description="The paths planned, best first")
    path: str | None = Field(default=None, description="The path that answered")
    fell_back: bool = Field(
        default=False, description="No planned path reached anything: the tree search answered"
    )
    fallback_reason: str = ""
    reply: str | None = Field(default=None, description="The model's reply (LLM planner)")
    expansions: int = Field(default=0, description="The tree search's expansions, when it answered")
    search: dict | None = Field(
        default=None, description="The tree search's trace, when it answered"
    )
    _search: object = PrivateAttr(default=None)  # the SearchResult, when the tree search answered


@dataclass
class Proposal:
    """One planned path: where it starts and the hops it follows."""

    start: list[str]
    hops: list[Hop]
    confidence: float | None = None  # the offline reasoner's calibrated confidence
    answers: list[str] | None = None  # the offline reasoner's answers (IDs, ``literal:`` values)

    def text(self, labels: dict[str, str]) -> str:
        start = ", ".join(f"{labels.get(s, s)} ({s})" for s in self.start)
        return " -> ".join([start, *(f"{h.relation_id} {h.direction.value}" for h in self.hops)])


@dataclass
class Group:
    """The relations of some entities: the question's (``after`` None), or a sample of those a path
    reaches — ``via`` its hops before the last, ``after``; two branches ending in the same relation
    are two groups."""

    after: Hop | None
    level: int
    sample: list[str]
    relations: list[Relation]
    via: tuple[Hop, ...] = ()

    @property
    def path(self) -> tuple[Hop, ...]:
        return () if self.after is None else (*self.via, self.after)


# -- 2. the relation vocabulary --------------------------------------------------------------------
def _stems(text: str) -> set[str]:
    return {
        w[:5]
        for w in re.findall(r"[a-z]+", text.replace("_", " ").lower())
        if len(w) > 2 and w not in STOPWORDS
    }


def _ranked(relations: list[Relation], stems: set[str]) -> list[Relation]:
    """Relations sharing a word with the question first, then by edge count."""

    def rank(r: Relation) -> tuple[int, int]:
        return -len(stems & _stems(f"{r.label} {humanize(r.id.split(':', 1)[-1])}")), -(
            r.count or 0
        )

    return sorted(relations, key=rank)


async def _relations(kg: Graph, ids: list[str]) -> list[Relation]:
    try:
        return list((await kg.get_relations(ids[: kg.limits.max_ids])).relations)
    except (
        KGError
    ):  # the vocabulary is best effort; the walk and the fallback report what fails for real
        return []


async def _sample(kg: Graph, sources: list[str], hop: Hop, exclude: set[str]) -> list[str]:
    try:
        page = await kg.get_edges(
            sources[: kg.limits.max_ids],
            hop.relation_id,
            hop.direction,
            limit=min(kg.limits.max_edges, 4 * SAMPLE),
        )
    except KGError:
        return []
    return list(
        dict.fromkeys(e.target for e in page.edges if e.target and e.target not in exclude)
    )[:SAMPLE]


async def gather_vocabulary(
    kg: Graph, topics: list[str], question: str, levels: int
) -> list[Group]:
    """The question's relations, then per level the relations of a sample of what each new hop
    reaches (one group per distinct hop), at most :data:`LINES_PER_LEVEL` lines and
    :data:`GROUPS_PER_LEVEL` groups a level."""
    stems = _stems(question)
    first = Group(None, 1, topics, _ranked(await _relations(kg, topics), stems)[:LINES_PER_LEVEL])
    groups, parents = [first], [first]
    for level in range(2, levels + 1):
        # round robin over the parents' ranked relations, so every branch gets its most relevant
        # hops first
        order = sorted(
            ((pos, n, r) for n, g in enumerate(parents) for pos, r in enumerate(g.relations)),
            key=lambda x: x[:2],
        )
        new: list[Group] = []
        lines = 0
        for _, n, r in order:
            if len(new) >= GROUPS_PER_LEVEL or lines >= LINES_PER_LEVEL:
                break
            hop = Hop(relation_id=r.id, direction=r.direction)
            sample = await _sample(kg, parents[n].sample, hop, set(topics))
            rels = _ranked(await _relations(kg, sample), stems)[
                : min(LINES_PER_GROUP, LINES_PER_LEVEL - lines)
            ]
            if rels:
                new.append(Group(hop, level, sample, rels, parents[n].path))
                lines += len(rels)
        groups += new
        parents = new
    return groups


def legend(groups: list[Group], entities: list[EntityMatch]) -> str:
    """The forward/backward example, from this KG's own first relation and the question's first
    entity."""
    rel = next((r for g in groups for r in g.relations if r.direction is Direction.forward), None)
    if rel is None or not entities:
        return "e.g. X -r forward-> what X is r; Y -r backward-> what is r Y"
    name = entities[0].entity.label
    return (
        f"e.g. {name} -{rel.id} forward-> what {name} is {rel.label}; "
        f"Y -{rel.id} backward-> what is {rel.label} Y"
    )


def render_vocabulary(groups: list[Group]) -> str:
    out = []
    for g in groups:
        if g.after is None:
            out.append("Relations of the question's entities:")
        else:
            hops = " -> ".join(f"{h.relation_id} {h.direction.value}" for h in g.path)
            out.append(f"After {hops} (hop {g.level - 1}; {len(g.sample)} entities sampled):")
        for r in g.relations:
            count = f" [{r.count}]" if r.count is not None else ""
            out.append(f"  {r.id} {r.direction.value}{count}: {meaning(r)}")
    return "\n".join(out) if any(g.relations for g in groups) else "(no relations found)"


# -- 3. parsing the plan ---------------------------------------------------------------------------
_LIST_MARK = re.compile(r"^\s*(?:\(?\d{1,2}[.):]|[-*\u2022#>]+)\s+")
_PATH_LINE = re.compile(r"^[\W_]*path\b\s*\d*\s*[:=.)-]?\s*(.+)$", re.I)
_ARROW = re.compile(r"\s*(?:-+>|→|⟶|=>|»|\s>\s)\s*")
_BACKWARD = re.compile(r"\b(?:backwards?|reversed?|inverse|incoming)\b|⁻¹|\^-1|<-", re.I)
_FORWARD = re.compile(r"\b(?:forwards?|outgoing)\b", re.I)


def _words(text: str) -> str:
    return f" {key(text)} "


def _ids(text: str) -> list[str]:
    return [i.rstrip(".,:;!?'\"") for i in ID_RE.findall(text)]


class PlanReader:
    """Reads a model's reply into :class:`Proposal` s, forgivingly: IDs or labels, entity numbers,
    any case, list markers and prose around the lines; a hop's missing direction is the one the
    vocabulary shows after the previous hop. A line that does not read is dropped, and so is a
    refusal line (``find_refusal`` reads it)."""

    def __init__(
        self, entities: list[EntityMatch], groups: list[Group], kg_names: set[str]
    ) -> None:
        self.entities = [m.entity for m in entities]
        self.groups = {g.path: g for g in groups}
        self.last_hop = {
            g.after: g for g in groups
        }  # older prompts keyed their groups by the last hop alone
        self.kg_names = kg_names
        self.relations: dict[str, Relation] = {}
        for g in groups:
            for r in g.relations:
                self.relations.setdefault(r.id, r)

    def read(self, text: str, k: int, max_hops: int) -> list[Proposal]:
        out: dict[tuple, Proposal] = {}
        for line in (text or "").splitlines():
            line = _LIST_MARK.sub("", line.strip()).strip("*` ")
            if read_refusal(line) is not None:
                continue
            m = _PATH_LINE.match(line)
            body = m.group(1) if m else line
            parts = [p for p in _ARROW.split(body) if p.strip()]
            if len(parts) < 2 and not (m and parts):
                continue
            p = self._proposal(parts)
            if p is not None and len(p.hops) <= max_hops:
                out.setdefault((tuple(p.start), tuple(p.hops)), p)
        return list(out.values())[:k]

    def _proposal(self, parts: list[str]) -> Proposal | None:
        start = self._entities(parts[0])
        rest = parts[1:] if start else parts
        if not start and len(parts) > 1 and self._hop(parts[0], ()) is None:
            rest = parts[1:]  # a start the linked entities do not name: they all start the path
        hops: list[Hop] = []
        for seg in rest:
            hop = self._hop(seg, tuple(hops))
            if hop is None:
                return None
            hops.append(hop)
        if not hops:
            return None
        return Proposal(start=start or [e.id for e in self.entities], hops=hops)

    def _entities(self, seg: str) -> list[str]:
        ids = [i for i in _ids(seg) if any(e.id == i for e in self.entities)]
        if ids:
            return list(dict.fromkeys(ids))
        num = re.fullmatch(r"\W*(?:entity\s*)?#?(\d{1,2})\W*", seg, re.I)
        if num and 1 <= int(num.group(1)) <= len(self.entities):
            return [self.entities[int(num.group(1)) - 1].id]
        named = [e for e in self.entities if key(e.label) and _words(e.label) in _words(seg)]
        return [max(named, key=lambda e: len(e.label)).id] if named else []

    def _hop(self, seg: str, before: tuple[Hop, ...]) -> Hop | None:
        seg = re.sub(r"\s*(?:⁻¹|\^-1)", " backward", seg)
        rid = next((i for i in _ids(seg) if i in self.relations), None)
        if rid is None:  # an ID of this KG the vocabulary did not show (it may still exist)
            rid = next(
                (
                    i
                    for i in _ids(seg)
                    if i.split(":", 1)[0] in self.kg_names
                    and not any(e.id == i for e in self.entities)
                ),
                None,
            )
        if (
            rid is None
        ):  # a local name ("directed_by") or a label ("directed by"): the longest that fits
            words = _words(seg)
            named = [
                (len(n), r)
                for r, rel in self.relations.items()
                for n in (key(r.split(":", 1)[-1]), key(rel.label))
                if n and f" {n} " in words
            ]
            rid = max(named)[1] if named else None
        if rid is None:
            return None
        rel = self.relations.get(rid)
        bare = seg.replace(rid, " ")
        if rel is not None:
            bare = re.sub(re.escape(rel.label), " ", bare, flags=re.I)
        if _BACKWARD.search(bare):
            direction = Direction.backward
        elif _FORWARD.search(bare):
            direction = Direction.forward
        # the direction the vocabulary shows for it after the previous hop, else anywhere, else
        # forward
        else:
            group = self.groups.get(before) or self.last_hop.get(before[-1] if before else None)
            shown = [r.direction for r in getattr(group, "relations", []) if r.id == rid]
            shown = shown or [
                r.direction for g in self.groups.values() for r in g.relations if r.id == rid
            ]
            direction = shown[0] if len(set(shown)) == 1 else Direction.forward
        return Hop(relation_id=rid, direction=direction)


# -- 4. walking ------------------------------------------------------------------------------------
async def walk(kg: Graph, p: Proposal) -> PathResult | None:
    """The path's targets: never back through the start at an intermediate hop ("films that share
    actors with X"), unless only that reaches anything ("the spouse of X's spouse's spouse"). None
    when the KG refuses the path."""
    try:
        res = await follow_path(
            kg, p.start, p.hops, exclude_start=True, through_start=False, limit=ANSWERS
        )
        if not res.total:
            res = await follow_path(kg, p.start, p.hops, exclude_start=False, limit=ANSWERS)
    except KGError:  # e.g. a relation the model made up
        return None
    return res if res.total else None


def answers(res: PathResult, labels: dict[str, str], value: float) -> list[RetrievedEntity]:
    start = set(res.start)
    out = []
    for t in sorted(res.targets, key=lambda t: t.id in start):  # the question's own entities last
        steps = [
            PathStep(
                relation=h.relation_id,
                label=labels.get(h.relation_id) or humanize(h.relation_id.split(":", 1)[-1]),
                direction=h.direction,
                target=node,
            )
            for h, node in zip(res.hops, t.example[1:])
        ]
        out.append(
            RetrievedEntity(
                id=t.id or f"literal:{t.label}",
                label=t.label,
                score=value,
                source="plan",
                depth=len(res.hops),
                path=steps,
            )
        )
    return out


def _partial_reason(res: PathResult) -> str:
    if res.warnings:
        return "; ".join(res.warnings)
    if res.partial:
        return "part of the KG did not answer"
    return f"{res.total} targets reached; the first {len(res.targets)} are returned"


# -- the strategy ----------------------------------------------------------------------------------
async def _offline_plans(call: Call, topics: list[str], k: int, max_hops: int) -> list[Proposal]:
    """The offline reasoner's ranked plans (the one the offline tree search shares, kept between
    questions)."""
    from tot_mcp.strategies.offline.paths import shared_reasoner

    reasoner = shared_reasoner(call.services, await call.services.aembedder())
    reasoning = await reasoner.reason(scope(call), call.query, topics)
    plans = [p for p in reasoning.plans if len(p.hops) <= max_hops][:k]
    return [
        Proposal(
            start=topics,
            hops=[Hop(relation_id=r, direction=d) for r, d in p.hops],
            confidence=p.confidence,
            answers=p.answers,
        )
        for p in plans
    ]


def checked_value(found: list[RetrievedEntity], readings: list[Proposal]) -> float:
    """A model's path is worth what the graph says for it, not its rank in the reply: on its own
    :data:`MODEL_PRIOR`, and more as an independent reading of the question against the graph (the
    offline reasoner, no LLM) reaches the same answers — 1 − (1 − prior)(1 − agreement × that
    reading's confidence), agreement the Dice overlap of the two answer sets."""
    got = {a.id for a in found}
    agree = max(
        (
            2 * len(got & set(q.answers)) / (len(got) + len(q.answers)) * (q.confidence or 0.0)
            for q in readings
            if q.answers and got
        ),
        default=0.0,
    )
    return 1.0 - (1.0 - MODEL_PRIOR) * (1.0 - agree)


async def _fallback(
    call: Call,
    result: PlanResult,
    reason: str,
    usage: LLMUsage,
    tot_options: BaseModel | None = None,
) -> PlanResult:
    """The tree search's answer, run as the router runs a sub-strategy (with this call's KG, LLM and
    progress; ``tot_options``: the tree search's, when the caller set them)."""
    s = get("tot")
    sub = call.as_strategy(s)
    if tot_options is not None:
        sub.options = tot_options
    out = await s.run(sub)
    total = LLMUsage()
    total.add(usage)
    total.add(out.usage or sub.usage())
    trace = out.trace()
    done = result.model_copy(
        update={
            "results": out.results,
            "status": out.status,
            "answer_text": out.answer_text,
            "value": out.value,
            "usage": total,
            "error": out.error,
            "partial": out.partial,
            "partial_reason": out.partial_reason,
            "fell_back": True,
            "fallback_reason": reason,
            "expansions": int(trace.get("expansions", 0) or 0),
            "search": trace or None,
        }
    )
    done._search = getattr(
        out, "_search", None
    )  # the tree itself, for in-process callers (the MCP tool)
    return done


def scope(call: Call):
    """The KGs a path may cross: every KG of the run, linked (as the tree search walks them), unless
    the caller chose some — a path from a film in one KG to its genre in another needs the linked
    graph's relations."""
    return call.scope or call.services.graph


async def plan_first(
    call: Call, o: PlanOptions | None = None, tot_options: BaseModel | None = None
) -> PlanResult:
    """Plan once (``o``: the call's options unless given), walk the paths in the model's order, fall
    back to the tree search (with ``tot_options``)."""
    t0 = time.perf_counter()
    result = await _plan_first(call, o or call.options, tot_options)  # type: ignore[arg-type]
    result.seconds = round(time.perf_counter() - t0, 4)
    return result


async def _plan_first(call: Call, o: PlanOptions, tot_options: BaseModel | None) -> PlanResult:
    graph = scope(call)
    query = check_query(call.query, call.kg.limits.max_query_chars)
    matches = await link_topics(graph, query)  # as the tree search's start state
    topics = [m.entity.id for m in matches]
    labels = {m.entity.id: m.entity.label for m in matches}
    result = PlanResult(
        query=query,
        kg=call.kg.name,
        results=[],
        status="no_answer",
        planner="offline" if call.offline else "llm",
        linked=topics,
    )
    usage = LLMUsage()
    if not topics:
        return await _fallback(
            call, result, "no entity of the question was found in the KG", usage, tot_options
        )
    if call.offline:
        proposals = await _offline_plans(call, topics, o.k, o.max_hops)
        refusal = None
        reason = "the offline reasoner found no path from the question's entities"
    else:
        groups = await gather_vocabulary(graph, topics, query, min(o.max_hops, VOCABULARY_LEVELS))
        entities = "\n".join(
            f"{n}. {m.entity.id}: {m.entity.label}"
            + (f" - {m.entity.description}" if m.entity.description else "")
            for n, m in enumerate(matches, 1)
        )
        if merged_names(m.entity for m in matches):
            entities += "\n" + prompts.load("merged_names").strip()
        prompt = prompts.render(
            "plan",
            question=query,
            entities=entities,
            vocabulary=render_vocabulary(groups),
            k=o.k,
            max_hops=o.max_hops,
            legend=legend(groups, matches),
            sample=SAMPLE,
        )
        try:
            reply = await call.llm().complete(
                prompt,
                system=prompts.load("plan_system").strip(),
                max_tokens=80 * o.k + 120,
                temperature=0.0,
            )
        except (
            LLMError
        ) as e:  # as the tree search does: the failure is the result, not a reason to search
            return result.model_copy(update={"error": f"LLM failed: {e}", "usage": call.usage()})
        usage = call.usage()
        result.reply = reply[:4000]
        for g in groups:
            labels.update((r.id, r.label) for r in g.relations)
        reader = PlanReader(matches, groups, set(graph.members()))
        proposals = reader.read(reply, o.k, o.max_hops)
        refusal = find_refusal(reply)  # a NOT_IN_GRAPH line
        reason = "the model's reply held no usable path"
    result.usage = usage
    result.paths = [p.text(labels) for p in proposals]
    fallback_walk: tuple[Proposal, PathResult] | None = None
    for p in proposals:
        res = await walk(graph, p)
        if res is None:
            continue
        if (
            p.confidence is None and not _beyond_start(res) and p is not proposals[-1]
        ):  # a model's path
            fallback_walk = fallback_walk or (
                p,
                res,
            )  # only the question's own entities: try the next path
            continue
        return await _answered(call, result, p, res, labels, topics, o.max_hops)
    if fallback_walk is not None:
        return await _answered(call, result, *fallback_walk, labels, topics, o.max_hops)
    if refusal is not None:  # paths given beside it reached nothing: the refusal stands
        return result.model_copy(
            update={"status": refusal.status, "reason": refusal.reason, "value": 0.0}
        )
    if proposals:
        reason = f"none of the {len(proposals)} planned path(s) reached anything"
    return await _fallback(call, result, reason, usage, tot_options)


def _beyond_start(res: PathResult) -> bool:
    """Whether a walk reached anything besides the question's own entities (a path back to them is
    an answer only when no other path reaches more: "the spouse of X's spouse")."""
    start = set(res.start)
    return any(t.id is None or t.id not in start for t in res.targets)


async def _answered(
    call: Call,
    result: PlanResult,
    p: Proposal,
    res: PathResult,
    labels: dict[str, str],
    topics: list[str],
    max_hops: int,
) -> PlanResult:
    """The result of the path that answered, valued by the graph's own evidence for it."""
    found = answers(res, labels, 0.0)
    if p.confidence is not None:
        value, why = p.confidence, ""
    else:
        value = checked_value(found, await _offline_plans(call, topics, READINGS, max_hops))
        why = (
            ""
            if value >= MODEL_PRIOR + 0.1
            else (
                "no reading of the question against the graph without "
                "the model reaches these answers: check the path"
            )
        )
    for a in found:
        a.score = round(value, 4)
    shown = ", ".join(a.label for a in found[:10]) + (
        f" (+{res.total - 10} more)" if res.total > 10 else ""
    )
    return result.model_copy(
        update={
            "results": found,
            "status": "answered",
            "answer_text": shown,
            "value": round(value, 4),
            "reason": why,
            "path": p.text(labels),
            "partial": res.partial or res.truncated,
            "partial_reason": _partial_reason(res) if res.partial or res.truncated else "",
        }
    )


def _render_plan(out: PlanResult) -> str:
    head = [f"planner: {out.planner}; status: {out.status}"]
    if out.fell_back:
        head.append(f"fell back to the tree search: {out.fallback_reason}")
    elif out.status in ("unsupported", "no_entity") and out.reason:
        head.append(f"the graph does not have this: {out.reason}")
    elif out.path:
        head.append(f"path: {out.path}")
    if out.partial:
        head.append(f"partial: {out.partial_reason}")
    if out.error:
        head.append(f"error: {out.error}")
    if out.answer_text:
        head.append(f"answer: {out.answer_text}")
    return render_ranked(f"Planned answer for {out.query!r}", out.results, head)


PLAN = Strategy(
    name="plan",
    job="answer",
    options=PlanOptions,
    run=plan_first,
    render=_render_plan,
    result=PlanResult,
    local_only=False,
    title="Plan relation paths once, then walk the graph",
    summary="Answer a question that follows a chain of relations from a named entity "
    '("who directed the films starring [X]") in one planning step: '
    "the question's entities are found in the graph, the "
    "relations around them are read, the best relation paths to the answer are planned at once, "
    "and the graph is walked along the first path that reaches anything. Costs one LLM call (none "
    "offline), so it is fast and cheap; when no planned path reaches an answer it falls back to "
    "the full tree search and says so. Returns the answer entities and values with the path that "
    "reached them, and whether the answer set is known to be incomplete.",
    reference=(
        "LLM-guided planning: one LLM call plans relation paths, BFS executes them (arXiv "
        "2511.19648)"
    ),
)


# -- auto: plan first where a model is present -----------------------------------------------------
async def _run_auto(call: Call) -> StrategyResult:
    """With a model: :func:`plan_first` (one call when a planned path answers; the tree search, with
    these options, when none does). Offline: the tree search itself — the offline planner is the
    tree search's own reasoner, so planning first would only walk the same readings twice."""
    o: TotOptions = call.options  # type: ignore[assignment]
    if call.offline:
        tot = get("tot")
        return await tot.run(dataclasses.replace(call, method="tot"))
    plan = PlanOptions(
        k=o.k, max_hops=min(o.max_hops, PlanOptions.model_fields["max_hops"].default)
    )
    return await plan_first(call, plan, TotOptions(**o.model_dump()))


def _render_auto(out: StrategyResult) -> str:
    return (
        _render_plan(out)
        if isinstance(out, PlanResult)
        else render_ranked(
            f"Tree search answer for {out.query!r}",
            out.results,
            [f"status: {out.status}"] + ([f"answer: {out.answer_text}"] if out.answer_text else []),
        )
    )


AUTO = Strategy(
    name="auto",
    job="answer",
    options=TotOptions,
    run=_run_auto,
    render=_render_auto,
    local_only=False,
    title="Plan first, the tree search when the plan fails",
    summary="Answer a question the cheapest way that the graph confirms: with a model, plan the "
    "relation paths in one call and walk them in the model's order (a path counts when it reaches "
    "something besides the question's own entities); only when none does, run the "
    "Tree-of-Traversals search. Offline, the tree search. The default of tot-search --llm, "
    "tree_of_traversals and route_query with a model.",
    reference=(
        "LLM-guided planning (arXiv 2511.19648), falling back to Tree-of-Traversals (Markowitz et "
        "al. 2024)"
    ),
)
