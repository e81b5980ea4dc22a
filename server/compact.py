"""The answer a client model reads from an answering tool (``tree_of_traversals``, ``route_query``
and the strategy tools).

A model handed a whole search tree, subgraph and every ranked entity does not read it: it cannot
check or steer answers buried in 20-60k characters. So every answering tool returns, by default, one
small shape: the answer items with their IDs (bounded, with a result handle for all of them), the
status and why, what the question was linked to, the relation path(s) that reached the answers
and, when a subgraph was searched, the KG edges that lead from the question's entity to the first
answers. ``detail="full"`` adds the whole search tree and subgraph (text) and the strategy's whole
result (a free-form ``full`` object, kept out of the output schema).

Budgets: the text stays within :data:`TEXT_BUDGET` characters, the structured result within
:data:`STRUCTURED_BUDGET`, and :class:`CompactAnswer` is the one output schema of these tools (about
3,500 characters: it is resent with every tool list).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from mcp_types import CallToolResult
from pydantic import BaseModel, ConfigDict, Field

from tot_mcp.kg_adapters.models import Direction, backward
from tot_mcp.strategies.results import (
    REFUSALS,
    STATUSES,
    LinkInfo,
    RetrievedEntity,
    StrategyResult,
)

from .render import one_line
from .tool_results import tool_result

Detail = Literal["answer", "full"]
MAX_ITEMS = 20  # answer items listed; the rest are counted, and reachable through the result handle
MAX_FACTS = 8  # supporting KG edges listed
MAX_PATHS = 5  # distinct relation paths listed
TEXT_BUDGET = 2500  # characters of text in the default detail
STRUCTURED_BUDGET = 5000  # characters of json.dumps(structured content) in the default detail
_LINE = 300  # characters of a reason or other one-line field
_LABEL = 80  # characters of a label
_CONTEXT_LINE = 180  # characters of one line of a strategy's context (ARK)
_CUT = '… (the rest: from_result, or detail="full")'
_LITERAL = "literal:"  # how an answer that is a value, not an entity, is named


def _untitled(schema: dict[str, Any]) -> None:
    """Drop the per-field titles pydantic derives from the names: they say nothing the names do not,
    and the output schema is resent with every tool list."""
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)


class _Compact(BaseModel):
    model_config = ConfigDict(json_schema_extra=_untitled)


class Hop(_Compact):
    """One relation followed, in the direction it was followed."""

    relation: str = Field(description="Relation ID")
    label: str
    direction: Literal["forward", "backward"]


class Item(_Compact):
    id: str = Field(description="Entity ID ('literal:…' for a value)")
    label: str
    score: float | None = None
    path: int | None = Field(default=None, description="Index into paths")


class Link(LinkInfo):
    model_config = ConfigDict(json_schema_extra=_untitled)


class Fact(_Compact):
    """One KG edge supporting the answer, read subject → relation → object."""

    subject: str
    subject_label: str
    relation: str = Field(description="Relation ID")
    relation_label: str
    object: str = Field(description="Entity ID, or 'literal:…'")
    object_label: str


class CompactAnswer(_Compact):
    """An answering tool's result: the answers and what supports them; more with detail=full."""

    strategy: str = Field(description="What ran")
    kg: str = Field(description="The KG(s) asked")
    status: str = Field(description="One of: " + ", ".join(STATUSES))
    reason: str = Field(description="One line: why this status")
    items: list[Item] = Field(description=f"Best first; at most {MAX_ITEMS}")
    total: int = Field(description="Items in all")
    result_id: str | None = Field(default=None, description="Handle of all items, for from_result")
    answer: str = Field(default="", description="In words, when there are no items")
    links: list[Link] = Field(default_factory=list, description="What the question was linked to")
    paths: list[list[Hop]] = Field(
        default_factory=list, description="Relation paths from a linked entity"
    )
    facts: list[Fact] = Field(
        default_factory=list, description="Edges from a linked entity to the first answers"
    )
    value: float | None = None
    llm_calls: int | None = None
    expansions: int | None = None
    partial_reason: str = ""
    warnings: list[str] = Field(default_factory=list)
    view: str | None = Field(
        default=None, description="The search tree drawn: a ui:// resource (MCP Apps)"
    )
    full: dict[str, Any] | None = Field(default=None, description="detail=full: the whole result")


@dataclass
class Extras:
    """What a tool adds to the strategy's result: what ran, lines to show, warnings, a view, and
    what detail=full shows."""

    strategy: str
    head: list[str] = field(default_factory=list)  # lines shown under the status
    warnings: list[str] = field(default_factory=list)
    view: str | None = None
    context: str | None = None  # a text the strategy made for the client to read (ARK), cut
    # detail=full sections (title, body, ...); the search tree and subgraph follow when a search ran
    full_text: list[str] = field(default_factory=list)
    full: dict[str, Any] | None = None
    more: str = "the strategy's whole result"  # what detail=full adds, in words


def compact_result(
    out: StrategyResult, extras: Extras, detail: Detail, remember: Callable[[list[str]], str | None]
) -> CallToolResult:
    """The tool result of ``out``: a :class:`CompactAnswer` and its text. ``remember`` turns the
    answers' entity IDs into a result handle. ``out`` may be a plain :class:`StrategyResult` (a
    refusal before the strategy ran) or any strategy's own result."""
    search = _search_of(out)
    if search is not None and detail == "full":  # after the tool's own sections
        extras.full_text += [
            "Search tree (* = chosen path):",
            search.tree_text(),
            "Final local subgraph:",
            search.subgraph_text,
        ]
    paths: list[list[Hop]] = []
    items = [_item(r, paths) for r in out.results]
    if search is not None and not paths:  # tot's answers: the chosen trajectory's relations
        chosen = _chosen_hops(search)
        if chosen:
            paths = [chosen]
            items = [it.model_copy(update={"path": 0}) for it in items]
    facts, edges_seen = _facts(search, [it.id for it in items]) if search is not None else ([], 0)
    entity_ids = [r.id for r in out.results if not r.id.startswith(_LITERAL)]
    expansions = getattr(out, "expansions", None) or (search.expansions if search else None)
    model = CompactAnswer(
        strategy=extras.strategy,
        kg=out.kg,
        status=out.status,
        reason=_reason(out),
        items=items[:MAX_ITEMS],
        total=len(items),
        result_id=remember(entity_ids) if entity_ids else None,
        answer="" if items else one_line(out.answer_text, _LINE),
        links=[Link(**x.model_dump()) for x in out.links] or _ungraded_links(out, search),
        paths=paths[:MAX_PATHS],
        facts=facts,
        value=None if out.value is None else round(out.value, 4),
        llm_calls=out.usage.calls if out.usage is not None else None,
        expansions=expansions,
        partial_reason=one_line(out.partial_reason, _LINE),
        warnings=[one_line(w, _LINE) for w in extras.warnings],
        view=extras.view,
    )
    _fit_structured(model)
    text = _text(model, extras, out.seconds, edges_seen, detail)
    if detail == "full":
        model.full = extras.full
    return tool_result(model, text, exclude_none=True)


# -- the parts -------------------------------------------------------------------------------------
def _search_of(out: StrategyResult) -> Any:
    """The tree search behind ``out`` (tot, or a route that ran it) when it ran in this process."""
    for r in (out, getattr(out, "_ran", None)):
        search = getattr(r, "_search", None) if r is not None else None
        if search is not None:
            return search
    return None


def _reason(out: StrategyResult) -> str:
    return one_line(out.reason or out.error or STATUSES.get(out.status, ""), _LINE)


def _item(r: RetrievedEntity, paths: list[list[Hop]]) -> Item:
    index = None
    if r.path:
        hops = [
            Hop(relation=s.relation, label=s.label, direction=s.direction.value) for s in r.path
        ]
        if hops not in paths:
            paths.append(hops)
        index = paths.index(hops)
    return Item(
        id=r.id,
        label=one_line(r.label, _LABEL),
        score=round(r.score, 4),
        path=index if index is not None and index < MAX_PATHS else None,
    )


def _chosen_hops(search: Any) -> list[Hop]:
    """The relations the chosen trajectory expanded along: its final subgraph's expansions."""
    sub = search.subgraph
    return [
        Hop(
            relation=x.relation_id,
            label=_relation_label(sub, x.relation_id),
            direction=x.direction.value,
        )
        for x in sub.expansions
    ]


def _relation_label(sub: Any, relation_id: str) -> str:
    rel = sub.relations.get(relation_id)
    return rel.label if rel is not None else relation_id


def _ungraded_links(out: StrategyResult, search: Any) -> list[Link]:
    """The entities the strategy started from, when it did not say how they matched."""
    if search is not None:
        ids = list(search.topic_entities)
        labels = {**search.labels, **{i: e.label for i, e in search.subgraph.entities.items()}}
    else:
        ids, labels = list(getattr(out, "linked", None) or []), {}
    return [
        Link(
            mention="",
            id=i,
            label=one_line(labels.get(i, i), _LABEL),
            match="ungraded",
            score=0.0,
            confident=False,
            note="the strategy did not say how it matched",
        )
        for i in ids[:5]
    ]


Triple = tuple[str, str, str]


def _facts(search: Any, answers: Sequence[str]) -> tuple[list[Fact], int]:
    """The edges of the final subgraph on a shortest way from a topic entity to each of the first
    answers, in answer order, at most :data:`MAX_FACTS`; and how many edges the subgraph holds."""
    sub = search.subgraph
    triples: list[Triple] = []
    for e in sub.edges:
        other = e.target or (_LITERAL + e.value.value if e.value is not None else None)
        if other is not None:
            forward = e.direction is Direction.forward
            triples.append(
                (e.source, e.relation, other) if forward else (other, e.relation, e.source)
            )
    around: dict[str, list[tuple[str, Triple]]] = {}
    for t in triples:
        around.setdefault(t[0], []).append((t[2], t))
        around.setdefault(t[2], []).append((t[0], t))
    for a, twins in sub.same_as.items():  # linked KGs: the same thing in another KG
        for b in twins:
            around.setdefault(a, []).append((b, (a, "same_as", b)))
    came: dict[str, tuple[str, Triple] | None] = {t: None for t in search.topic_entities}
    queue = deque(came)
    while queue:  # breadth first from the topic entities: each node's way back is a shortest one
        node = queue.popleft()
        for nxt, t in around.get(node, ()):
            if nxt not in came:
                came[nxt] = (node, t)
                queue.append(nxt)
    chosen: list[Triple] = []
    for answer in answers:
        chain, step = [], came.get(answer)
        while step is not None:
            chain.append(step[1])
            step = came.get(step[0])
        chosen += [t for t in reversed(chain) if t not in chosen]
        if len(chosen) >= MAX_FACTS:
            break
    labels = {**search.labels, **{i: e.label for i, e in sub.entities.items()}}

    def name(i: str) -> str:
        return one_line(i[len(_LITERAL) :] if i.startswith(_LITERAL) else labels.get(i, i), _LABEL)

    facts = [
        Fact(
            subject=s,
            subject_label=name(s),
            relation=r,
            object=o,
            object_label=name(o),
            relation_label="same as" if r == "same_as" else _relation_label(sub, r),
        )
        for s, r, o in chosen[:MAX_FACTS]
    ]
    return facts, len(triples)


def _fit_structured(model: CompactAnswer) -> None:
    """Drop facts, then answer items, from the end until the structured result fits its budget (long
    labels and values could otherwise pass it)."""

    def size() -> int:
        return len(json.dumps(model.model_dump(mode="json", exclude_none=True), ensure_ascii=False))

    while size() > STRUCTURED_BUDGET and (model.facts or len(model.items) > 1):
        if model.facts:
            model.facts.pop()
        else:
            model.items.pop()


# -- the text --------------------------------------------------------------------------------------
def _hops_text(hops: Sequence[Hop]) -> str:
    return " → ".join(h.label if h.direction == "forward" else backward(h.label) for h in hops)


def _link_text(link: LinkInfo) -> str:
    said = f"[{link.mention}] → " if link.mention else ""
    if link.match == "ungraded":
        return f"{said}{link.label} [{link.id}]"
    loose = "" if link.confident else ", loose"
    note = f" — {link.note}" if link.note else ""
    return f"{said}{link.label} [{link.id}] ({link.match} {link.score:.2f}{loose}){note}"


def _text(m: CompactAnswer, extras: Extras, seconds: float, edges_seen: int, detail: Detail) -> str:
    """What the model reads; ``seconds`` only here, so that one call's structured result is the
    same in every run and process."""
    head = [f"{m.status}: {m.reason}" if m.reason else m.status]
    links = "; ".join(_link_text(link) for link in m.links)
    if m.status in REFUSALS and not m.items:  # a refusal: what it says, and what was linked
        lines = head + ([f"Linked: {links}"] if links else [])
        return "\n".join(lines + _full_sections(extras, detail))
    lines = head + extras.head
    if m.partial_reason and m.partial_reason not in m.reason:
        lines.append(f"partial: {m.partial_reason}")
    if links:
        lines.append(f"Linked: {links}")
    one_path = len(m.paths) == 1 and all(it.path == 0 for it in m.items)
    if one_path:
        lines.append(f"Path: {_hops_text(m.paths[0])}")
    else:
        lines += [f"Path P{k}: {_hops_text(p)}" for k, p in enumerate(m.paths, 1)]
    if m.items:
        first = f", first {len(m.items)}" if m.total > len(m.items) else ""
        handle = f"; all of them: from_result={m.result_id}" if m.result_id else ""
        lines.append(f"Answers ({m.total}{first}{handle}):")
        scored = len({it.score for it in m.items}) > 1
        for k, it in enumerate(m.items, 1):
            where = "" if it.id.startswith(_LITERAL) else f" [{it.id}]"
            score = f" {it.score:.3f}" if scored and it.score is not None else ""
            via = f" (P{it.path + 1})" if it.path is not None and not one_path else ""
            lines.append(f"{k}. {it.label}{where}{score}{via}")
    elif m.answer:
        lines.append(f"Answer: {m.answer}")
    tail = [
        " · ".join(
            x
            for x in (
                extras.strategy,
                f"value {m.value:.2f}" if m.value is not None else "",
                f"{m.expansions} expansions" if m.expansions else "",
                f"{m.llm_calls} LLM calls" if m.llm_calls is not None else "",
                f"{seconds:.2f} s" if seconds else "",
            )
            if x
        )
    ]
    tail += [f"warning: {w}" for w in m.warnings]
    if detail == "answer":
        drawn = f"; drawn: {m.view}" if m.view else ""
        tail.append(f'More: detail="full" for {extras.more}{drawn}')
    optional: list[str] = []  # shown while the budget lasts
    if m.facts:
        optional.append(f"Evidence ({len(m.facts)} of the {edges_seen} edges searched):")
        optional += [
            f"  {f.subject_label} [{f.subject}] —{f.relation_label}→ {f.object_label}"
            + ("" if f.object.startswith(_LITERAL) else f" [{f.object}]")
            for f in m.facts
        ]
    if extras.context and detail == "answer":
        optional.append('Context (cut; detail="full" for all of it):')
        optional += [one_line(x, _CONTEXT_LINE) for x in extras.context.splitlines() if x.strip()]
    return "\n".join(_fit(lines, optional, tail) + _full_sections(extras, detail))


def _fit(lines: list[str], optional: list[str], tail: list[str]) -> list[str]:
    """``lines``, as many ``optional`` lines as fit :data:`TEXT_BUDGET`, then ``tail``; when
    ``lines`` alone pass it, their last ones (answers) are cut, and that says so."""
    size = sum(len(x) + 1 for x in (*lines, *tail))
    if size > TEXT_BUDGET:
        size += len(_CUT) + 1
        while size > TEXT_BUDGET and len(lines) > 2:
            size -= len(lines.pop()) + 1
        lines.append(_CUT)
    for x in optional:
        if size + len(x) + 1 > TEXT_BUDGET:
            break
        lines.append(x)
        size += len(x) + 1
    return lines + tail


def _full_sections(extras: Extras, detail: Detail) -> list[str]:
    if detail != "full":
        return []
    out: list[str] = []
    for title, body in zip(extras.full_text[::2], extras.full_text[1::2]):
        out += ["", title, body]
    return out
