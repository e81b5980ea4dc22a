"""Compact text renderings of tool results, in Tree-of-Traversals' token-efficient YAML-like form.

The structured result (JSON) is for programs; this text is what a model reads, so it names every ID
once next to its label and groups edges by source and relation instead of repeating them per edge.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from tot_mcp.kg_adapters.models import (
    backward,
    Direction,
    Edge,
    EdgePage,
    Entity,
    EntityMatch,
    KGInfo,
    Literal,
    Relation,
    RelationList,
)
from tot_mcp.kg_adapters.sparql.values import WKT, EntityDetails, coordinate_value
from tot_mcp.kg_adapters.link_grade import grade
from tot_mcp.kg_adapters.text import humanize, key

_ELLIPSIS_AT = 160  # characters of a description shown before it is cut
_QUALIFIERS_SHOWN = 8  # per edge in the text; a statement with dozens would drown the page


def one_line(text: str, limit: int = 500) -> str:
    """``text`` with its whitespace folded to single spaces, cut to ``limit`` characters with
    ``...``."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _short(text: str | None, limit: int = _ELLIPSIS_AT) -> str:
    return one_line(text, limit) if text else ""


def entity_line(entity: Entity) -> str:
    """``id: label - description`` (the description only when there is one)."""
    desc = _short(entity.description)
    return f"{entity.id}: {entity.label}" + (f" - {desc}" if desc else "")


def entity_ref(entity_id: str, entities: dict[str, Entity]) -> str:
    """``id label``: how an entity is named inside an edge list."""
    e = entities.get(entity_id)
    return f"{entity_id} {e.label}" if e is not None and e.label != entity_id else entity_id


def literal_text(value: Literal) -> str:
    if value.datatype == WKT and (point := coordinate_value(value.value)) is not None:
        return f'"{point.value}"'  # Point(13.38 52.52) → "52.52°N, 13.38°E"
    out = f'"{value.value}"'
    if value.lang:
        out += f"@{value.lang}"
    elif value.datatype:
        out += f" ({value.datatype.rsplit('#', 1)[-1].rsplit('/', 1)[-1]})"
    return out


def relation_line(rel: Relation, of: int | None = None) -> str:
    """``movies:starred_actors (backward) [32]: inverse of starred actors``; with ``of`` (entities
    asked about, when several) ``[32; 3 of 5 entities]``."""
    label = (
        rel.inverse_label
        if rel.direction is Direction.backward and rel.inverse_label
        else rel.label
    )
    parts = [str(rel.count)] if rel.count is not None else []
    if of is not None and of > 1 and rel.entities is not None:
        parts.append(f"{rel.entities} of {of} entities")
    count = f" [{'; '.join(parts)}]" if parts else ""
    return f"{rel.id} ({rel.direction.value}){count}: {label}"


def _first(ids: Sequence[str], n: int) -> str:
    """``a, b, c and 7 more``: the first ``n`` IDs, then how many are left out."""
    return ", ".join(ids[:n]) + (f" and {len(ids) - n} more" if len(ids) > n else "")


def handle_line(handle: str | None, count: int, what: str = "entities") -> list[str]:
    """How to pass a result on without copying its IDs."""
    if not handle or count < 2:  # one ID is as short as a handle
        return []
    return [f"result {handle} = {count} {what} (from_result)"]


def _footer(truncated: bool, partial: bool, warnings: Sequence[str], more: str = "") -> list[str]:
    lines = []
    if truncated:
        lines.append(f"(truncated{': ' + more if more else ''})")
    if partial:
        lines.append("(partial: some backend failed; see warnings)")
    lines.extend(f"warning: {w}" for w in warnings)
    return lines


def loose_note(m: EntityMatch) -> str:
    """``: loose, shares 1 of 3 words`` when the mention's words do not all find themselves in the
    label (:mod:`kg_adapters.link_grade`): the match may be another thing than the one meant."""
    if not m.mention:
        return ""
    g = grade(m.mention, m.entity.label, m.match)
    if g.confident:
        return "" if g.kind != "typo" else ": a spelling difference"
    return (
        f": loose, shares {g.shared} of {g.words} words" if g.shared else ": loose, no word shared"
    )


def render_matches(
    heading: str,
    matches: Sequence[EntityMatch],
    warnings: Sequence[str] = (),
    handle: str | None = None,
    omitted: int = 0,
) -> str:
    if not matches:
        return "\n".join([f"{heading}: no entities found", *_footer(False, False, warnings)])
    lines = [f"{heading}:"]
    for m in matches:
        score = (
            "" if m.match == "exact" else f" {m.score:.2f}"
        )  # an exact match is 1.00 by definition
        how = f"{m.match}{score}" + (f' for "{m.mention}"' if m.mention else "") + loose_note(m)
        same = (
            f"  (same as {', '.join(m.same_as[:5])}{' …' if len(m.same_as) > 5 else ''})"
            if m.same_as
            else ""
        )
        lines.append(f"{entity_line(m.entity)}  [{how}]{same}")
    if omitted:
        lines.append(
            f"({omitted} fuzzy look-alike{'s' if omitted != 1 else ''} left out; search_entities "
            "lists them)"
        )
    return "\n".join(lines + _footer(False, False, warnings) + handle_line(handle, len(matches)))


def render_relations(
    entity_ids: Sequence[str], result: RelationList, hint: str | None = None
) -> str:
    shown = _first(entity_ids, 5)
    if not result.relations:
        lines = [f"{shown}: no relations"]
    else:
        several = len(entity_ids) > 1
        lines = [
            f"Relations of {shown} (id (direction) "
            f"[edges{'; entities having it' if several else ''}]: reading):"
        ]
        lines.extend(relation_line(r, len(entity_ids)) for r in result.relations)
    return "\n".join(
        lines
        + _footer(result.truncated, result.partial, result.warnings, "more relations exist")
        + ([hint] if hint else [])
    )


def render_relation_search(text: str, hits: Sequence[Any], warnings: Sequence[str]) -> str:
    """``get_relations(search=...)``: ``wd:P19 [2,345,678]: place of birth - description (matched
    "born in")``."""
    lines = [f"Relations matching {text!r}:" if hits else f"No relation matches {text!r}"]
    for h in hits:
        count = f" [{h.count:,}]" if h.count is not None else ""
        desc = f" - {h.description}" if h.description else ""
        via = f'  (matched "{h.matched}")' if h.matched != h.label else ""
        lines.append(f"{h.id}{count}: {h.label}{desc}{via}")
    return "\n".join(lines + _footer(False, False, warnings))


def _node_text(target: str | None, value: Literal | None, entities: dict[str, Entity]) -> str:
    if target is not None:
        return entity_ref(target, entities)
    if value is not None:
        return literal_text(value)
    return "?"


def _target_text(edge: Edge, entities: dict[str, Entity]) -> str:
    """The node reached, then its qualifiers in braces — a Wikidata statement's (start time, end
    time...) or a blank node's own properties over generic SPARQL (``"Note G" {type: g:ex.Program
    Program; comment: "..."}``)."""
    quals = edge.qualifier_text(
        lambda q: _node_text(q.target, q.value, entities), _QUALIFIERS_SHOWN
    )
    return (
        _node_text(edge.target, edge.value, entities) + quals
    )  # all qualifiers stay in the structured result


def relation_ref(relation_id: str, relation: Relation | None) -> str:
    """``P57 director``: the relation's local ID (to pass back) and its label, unless the ID already
    reads as it (``directed_by``)."""
    local = relation_id.split(":", 1)[1] if ":" in relation_id else relation_id
    if relation is None or relation.id != relation_id or not relation.label.strip():
        return local
    label = " ".join(relation.label.split())
    return local if key(label) == key(humanize(local)) else f"{local} {label}"


def render_edges(page: EdgePage) -> str:
    """Edges grouped by source, then by relation (named by ID and label) and direction, with a count
    per group."""
    if not page.edges:
        return "\n".join(["no edges", *_footer(page.truncated, page.partial, page.warnings)])
    groups: dict[str, dict[tuple[str, Direction], list[str]]] = {}
    via: dict[str, str] = {}
    for edge in page.edges:
        by_rel = groups.setdefault(edge.source, {})
        by_rel.setdefault((edge.relation, edge.direction), []).append(
            _target_text(edge, page.entities)
        )
        if edge.via:
            via[edge.source] = edge.via
    lines: list[str] = []
    for source, by_rel in groups.items():
        linked = (
            f" (same as {via[source]})" if source in via else ""
        )  # followed from the entity asked about
        lines.append(f"{entity_ref(source, page.entities)}{linked}:")
        for (relation, direction), targets in by_rel.items():
            name = relation_ref(relation, page.relation)
            name = backward(name) if direction is Direction.backward else name
            lines.append(f"  {name} [{len(targets)}]: {', '.join(targets)}")
    more = (
        f"call get_edges again with offset={page.next_offset} for more"
        if page.next_offset is not None
        else ""
    )
    return "\n".join(lines + _footer(page.truncated, page.partial, page.warnings, more))


def render_description(desc: EntityDetails) -> str:
    """The entity line, then — when the KG says (Wikidata) — its classes and statement count, which
    tell two look-alikes apart; aliases, IRI, links and relations."""
    lines, types, statements = [entity_line(desc.entity)], desc.types, desc.statements
    if types or statements is not None:
        kinds = (
            "instance of: " + ", ".join(f"{t.id} {t.label}" for t in types[:10]) if types else ""
        )
        count = (
            f"{statements:,} statement{'s' if statements != 1 else ''}"
            if statements is not None
            else ""
        )
        lines.append("; ".join(x for x in (kinds, count) if x))
    if desc.aliases:
        lines.append("aliases: " + ", ".join(desc.aliases[:20]))
    if desc.iri:
        lines.append(f"iri: {desc.iri}")
    if desc.same_as:
        lines.append("same as: " + ", ".join(desc.same_as))
    if desc.relations:
        lines.append("relations:")
        lines.extend("  " + relation_line(r) for r in desc.relations)
    return "\n".join(lines)


def render_kg_info(info: KGInfo, examples: dict[str, str] | None = None) -> str:
    sizes = ((info.entities, "entities"), (info.triples, "triples"), (info.relations, "relations"))
    counts = [f"{n:,} {what}" for n, what in sizes if n is not None]
    if len(counts) < 3:  # a remote endpoint is not asked to count what would take it long
        counts.append(
            "size not counted (too costly to ask a remote endpoint)"
            if not counts
            else "the rest not counted"
        )
    lines = [f"{info.name} ({info.backend}): {', '.join(counts)}"]
    if info.description:
        lines.append(f"  {_short(info.description, 400)}")
    if info.relation_sample:

        def ref(
            r: Relation,
        ) -> str:  # wd:P161 cast member; movies:directed_by (its ID reads as its label)
            kg = r.id.split(":", 1)[0] + ":" if ":" in r.id else ""
            example = f" ({examples[r.id]})" if examples and r.id in examples else ""
            return (
                kg
                + relation_ref(r.id, r)
                + (f" [{r.count:,}]" if r.count is not None else "")
                + example
            )

        sample = ", ".join(ref(r) for r in info.relation_sample)
        more = info.relations is None or info.relations > len(info.relation_sample)
        how = (
            " (a sample; get_relations(search=...) finds others)"
            if more
            else " (forward: subject → object, e.g.)"
            if examples
            else ""
        )
        lines.append(f"  relations{how}: {sample}")
    return "\n".join(lines)


def render_edges_result(result) -> str:
    """:func:`render_edges`, then what a model would otherwise count or guess: the distinct targets,
    the sources that had no such edge, why an empty page is empty, and the handle of what was
    reached."""
    lines = [render_edges(result)]
    if result.edges:
        on_page = " on this page" if result.truncated else ""
        lines.append(
            f"{result.targets} distinct target{'s' if result.targets != 1 else ''}{on_page}"
        )
    if result.sources_without_edges:
        lines.append(f"no such edge from: {_first(result.sources_without_edges, 10)}")
    if result.hint:
        lines.append(result.hint)
    lines.extend(handle_line(result.result_id, len({e.target for e in result.edges if e.target})))
    return "\n".join(lines)


def render_paths(result, start_counted: bool = False) -> str:
    """``follow_path``: the path, what each hop reached, then the targets (most paths first) with
    one example. ``start_counted``: the start is among the nodes reached (exclude_start=false);
    else a hop that went back to it reads 0 there, while the walk goes on through it, so the line
    says the start is left out."""

    def name(x: str) -> str:
        e = result.entities.get(x)
        return e.label if e is not None else x

    home = (
        result.start[0].split(":", 1)[0] + ":" if result.start and ":" in result.start[0] else None
    )

    def rel(rid: str) -> str:  # the start's own KG goes without saying: written_by, catalog:genre
        return rid.removeprefix(home) if home else rid

    path = " → ".join(
        backward(rel(h.relation_id)) if h.direction is Direction.backward else rel(h.relation_id)
        for h in result.hops
    )
    linked = getattr(result, "linked", None)
    lines = ([linked] if linked else []) + [f"{_first(result.start, 5)} → {path}:"]
    if len(result.hops) > 1:
        left_out = "" if start_counted else " (the start not counted; walks still pass through it)"
        lines.append(f"reached per hop{left_out}: " + ", ".join(str(n) for n in result.reached))
    if result.without_edge:
        n = (
            result.without_edge
        )  # named when there are one or two (then a check of each is cheap); else counted
        names = (
            f": {', '.join(f'{x} {name(x)}' for x in result.without_edge_sample)}" if n <= 2 else ""
        )
        lines.append(f"{n} last-hop source{'s' if n != 1 else ''} without that edge{names}")
    plural = "s" if result.total != 1 else ""
    counted_only = (
        not result.targets and result.total
    )  # limit=0: counted, not listed (not cut, whatever the page says)
    if counted_only:
        lines.append(f"{result.total} target{plural} (not listed: limit=0)")
    elif not result.targets:
        lines.append("no targets")
        if getattr(result, "start_relations", None):
            instead = ", ".join(result.start_relations)
            lines.append(f"the start has these relations instead: {instead}")
    else:
        shown = ""
        if result.truncated and result.total > len(result.targets):
            first = (result.next_offset or result.total) - len(result.targets) + 1
            shown = f" (showing {first}-{first + len(result.targets) - 1})"
        legend = "; [paths] via one example" if len(result.hops) > 1 else ""
        lines.append(f"{result.total} target{plural}{shown}{legend}:")  # distinct by construction
        for t in result.targets:
            ref = f"{t.id} {t.label}" if t.id else literal_text(t.value) if t.value else t.label
            via = " ← ".join(name(x) for x in reversed(t.example[1:-1]))
            paths = f" [{t.paths}]" if len(result.hops) > 1 or t.paths > 1 else ""
            lines.append(f"  {ref}{paths}" + (f" via {via}" if via else ""))
    more = (
        f"call follow_path again with offset={result.next_offset} for more"
        if result.next_offset
        else ""
    )
    lines.extend(
        _footer(result.truncated and not counted_only, result.partial, result.warnings, more)
    )
    lines.extend(
        handle_line(
            result.result_id,
            len(result.targets) if not result.truncated else result.total,
            "targets",
        )
    )
    return "\n".join(lines)


def first_parts(description: str, limit: int) -> str:
    """The leading ``; ``-separated parts of a description that fit in ``limit`` characters (never a
    part cut in the middle of a name: ``written by John )``), ``…`` when some were left out."""
    text = " ".join(description.split())
    flag = re.search(r"\s*\(may be \d+ things named .*\)$", text)  # a merged title: never cut off
    if flag:
        text, limit = text[: flag.start()], max(20, limit - len(flag.group()))
    parts = [p.strip() for p in text.split(";") if p.strip()]
    kept: list[str] = []
    for p in parts:
        if len("; ".join([*kept, p])) > limit:
            break
        kept.append(p)
    if not kept and parts:
        kept, parts = [parts[0][: limit - 1] + "…"], parts[:1]
    return (
        "; ".join(kept) + ("; …" if len(kept) < len(parts) else "") + (flag.group() if flag else "")
    )
