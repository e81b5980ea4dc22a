"""Tools for large vocabularies (Wikidata and other SPARQL KGs):

* ``sparql_query``: a caller-written, read-only SPARQL query against one KG that speaks SPARQL. The server only
  maps MCP to the adapter contract (:meth:`KnowledgeGraph.sparql_query`, offered where ``capabilities.sparql`` is
  true); the guard — read forms only, no SERVICE outside the KG's allowlist, a LIMIT at the cap, the KG's
  prefixes predeclared — lives in :mod:`kg_adapters.sparql.guard`. Here the answer is bounded once more in
  characters and rendered as a compact table.
* ``search_relations``: a relation by what it means (labels, aliases, descriptions), across the KGs
  (:meth:`KnowledgeGraph.search_relations`).
* ``resolve_external_id``: an external identifier (IMDb ``tt1375666`` via ``wd:P345``) to the entity
  (:meth:`KnowledgeGraph.find_by_value`).

They are offered when some configured KG answers SPARQL (the in-memory movie KG alone does not need them).
"""


import json
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from kg_adapters.errors import InvalidInput, NotFound
from kg_adapters.models import Entity
from kg_adapters.sparql.guard import (
    DEFAULT_MAX_CHARS,
    DEFAULT_MAX_ROWS,
    DEFAULT_TIMEOUT,
    SparqlRows,
    SparqlTerm,
)
from kg_adapters.sparql.relsearch import RelationHit

from ..results import tool_result
from ..runtime import Runtime

MAX_TEXT_CHARS = 8000  # the rendered table; rows beyond it are left out of text and structured result alike
MAX_CELL_CHARS = 200  # one value in the table
MAX_VALUE_CHARS = 2000  # one value in the structured result
_NUMERIC = {f"http://www.w3.org/2001/XMLSchema#{t}" for t in ("integer", "decimal", "double", "float", "int",
                                                               "long", "nonNegativeInteger")}
_SIMPLE_LOCAL = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _compact(iri: str, prefixes: dict[str, str]) -> str:
    best = ""
    for p, ns in prefixes.items():
        if iri.startswith(ns) and len(ns) > len(prefixes.get(best, "")) and set(iri[len(ns):]) <= _SIMPLE_LOCAL:
            best = p
    if best and iri[len(prefixes[best]):]:
        return f"{best}:{iri[len(prefixes[best]):]}"
    return f"<{iri}>"


def term_text(t: SparqlTerm, prefixes: dict[str, str]) -> str:
    """``wd:Q42``, ``"Douglas Adams"@en``, ``1952``, ``"1952-03-11T00:00:00Z"^^xsd:dateTime``, ``_:b0``."""
    if t.type == "uri":
        out = _compact(t.value, prefixes)
    elif t.type == "bnode":
        out = f"_:{t.value}"
    elif t.type == "literal":
        if t.datatype in _NUMERIC and t.value.lstrip("+-").replace(".", "", 1).replace("E", "").replace(
                "e", "").replace("-", "").replace("+", "").isdigit():
            out = t.value
        else:
            out = json.dumps(t.value, ensure_ascii=False)
            if t.lang:
                out += f"@{t.lang}"
            elif t.datatype:
                out += "^^" + _compact(t.datatype, prefixes)
    else:
        out = t.value
    return out if len(out) <= MAX_CELL_CHARS else out[: MAX_CELL_CHARS - 1] + "…"


def _cut_value(t: SparqlTerm) -> SparqlTerm:
    if len(t.value) <= MAX_VALUE_CHARS:
        return t
    return t.model_copy(update={"value": t.value[:MAX_VALUE_CHARS] + "…"})


def render(result: SparqlRows, shown_prefixes: dict[str, str]) -> tuple[SparqlRows, str]:
    """The text a model reads, and the result cut to the same rows (``MAX_TEXT_CHARS``)."""
    head = f"{result.form} on {result.kg}"
    if result.prefixes:
        head += f" (prefixes declared for you: {', '.join(f'{p}:' for p in result.prefixes)})"
    lines: list[str] = []
    if result.form == "ASK":
        lines = [f"{head}: {'true' if result.boolean else 'false'}"]
        return result, "\n".join(lines + [f"note: {n}" for n in result.notes])
    if not result.rows:
        lines = [f"{head}: no results"]
        return result, "\n".join(lines + [f"note: {n}" for n in result.notes])
    columns = result.columns or sorted({k for r in result.rows for k in r})
    table = [" | ".join(("?" + c) if result.form in ("SELECT",) else c for c in columns)]
    size = len(head) + len(table[0])
    kept = 0
    for row in result.rows:
        line = " | ".join(term_text(row[c], shown_prefixes) if c in row else "" for c in columns)
        if size + len(line) + 1 > MAX_TEXT_CHARS and kept:
            break
        table.append(line)
        size += len(line) + 1
        kept += 1
    cut = kept < len(result.rows)
    rows = [{k: _cut_value(v) for k, v in r.items()} for r in result.rows[:kept]]
    notes = list(result.notes)
    if any(len(v.value) > MAX_VALUE_CHARS for r in result.rows[:kept] for v in r.values()):
        notes.append(f"values longer than {MAX_VALUE_CHARS:,} characters are cut")
    hint = result.hint
    if cut:
        hint = (f"the answer was cut at {MAX_TEXT_CHARS:,} characters ({kept} of {len(result.rows)} rows shown): "
                "select fewer or shorter columns, or use LIMIT/OFFSET to page")
    result = result.model_copy(update={"rows": rows, "truncated": result.truncated or cut, "hint": hint,
                                       "notes": notes})
    what = "row" if result.form == "SELECT" else "triple"
    count = f"{kept} {what}{'s' if kept != 1 else ''}" + (" (truncated)" if result.truncated else "")
    lines = [f"{head}: {count}", *table, *(f"note: {n}" for n in notes)]
    if result.truncated and result.hint:
        lines.append(f"(truncated: {result.hint})")
    return result, "\n".join(lines)


def register(server: MCPServer, runtime: Runtime) -> None:
    """Add ``sparql_query`` when at least one configured KG answers SPARQL."""
    able = {name: kg for name, kg in runtime.kgs.items() if kg.capabilities.sparql}
    if not able:
        return
    names = ", ".join(f"{n} ({kg.backend})" for n, kg in able.items())
    annotations = ToolAnnotations(read_only_hint=True, idempotent_hint=True,
                                  open_world_hint=any(kg.capabilities.remote for kg in able.values()))
    default_kg = next(iter(able)) if len(able) == 1 else None

    @server.tool(title="Run a read-only SPARQL query", annotations=annotations)
    async def sparql_query(
        query: Annotated[str, Field(description="A SPARQL SELECT, ASK, CONSTRUCT or DESCRIBE query. The KG's usual "
                                    "prefixes (e.g. wd:, wdt:, p:, ps:, rdfs:) need no PREFIX declaration.",
                                    json_schema_extra={"maxLength": DEFAULT_MAX_CHARS})],
        kg: Annotated[str | None, Field(description=f"The KG to query, one of: {names}"
                                        + ("" if default_kg is None else f"; default {default_kg}") + ".")] = None,
        limit: Annotated[int | None, Field(ge=1, description=f"Most rows returned (at most {DEFAULT_MAX_ROWS}).",
                                           json_schema_extra={"maximum": DEFAULT_MAX_ROWS})] = None,
    ) -> Annotated[CallToolResult, SparqlRows]:
        """Run a read-only SPARQL query on one KG and get a compact table (plus typed rows).

        Only SELECT/ASK/CONSTRUCT/DESCRIBE; updates, LOAD and SERVICE (federation) are refused. The LIMIT is
        added or lowered to the row cap; a truncated answer says so. Use it for what the traversal tools cannot
        express (aggregates, filters, multi-hop patterns); prefer get_relations/get_edges for exploring."""
        name = (kg or "").strip() or default_kg
        if name is None:
            raise InvalidInput(f"several KGs answer SPARQL; pass kg (one of: {', '.join(able)})")
        target = runtime.kg(name)
        if not target.capabilities.sparql:
            raise InvalidInput(f"KG {name!r} ({target.backend}) does not answer SPARQL queries; these do: "
                               f"{', '.join(able)}")
        result = await target.sparql_query(query, limit=limit, timeout=DEFAULT_TIMEOUT)
        result, text = render(result, result.namespaces)
        return CallToolResult(content=[TextContent(type="text", text=text)],
                              structured_content=result.model_dump(mode="json", exclude_none=True))

    names_all = ", ".join(runtime.kgs)

    @server.tool(title="Find a relation by what it means", annotations=annotations)
    async def search_relations(
        text: Annotated[str, Field(description="What the relation means, e.g. 'place of birth', 'married to', "
                                   "'IMDb'.", json_schema_extra={"maxLength": 200})],
        kg: Annotated[str | None, Field(description=f"KG name (one of: {names_all}); default all.")] = None,
        limit: Annotated[int, Field(ge=1, description="Most relations returned (at most 50).",
                                    json_schema_extra={"maximum": 50})] = 10,
    ) -> Annotated[CallToolResult, RelationMatches]:
        """Find relations by meaning when the vocabulary is large (Wikidata has ~12,000 properties): matches
        labels, aliases and descriptions, best first, with IDs to pass to get_edges or resolve_external_id."""
        text = (text or "").strip()
        if not text or len(text) > 200:
            raise InvalidInput("text must be 1 to 200 characters")
        limit = min(limit, 50)
        chosen = runtime.select(kg)
        hits, warnings = await chosen.find_relations(text, limit)
        result = RelationMatches(text=text, kgs=list(chosen.kgs), relations=hits, warnings=warnings)
        lines = [f"Relations matching {text!r}:" if result.relations else f"No relation matches {text!r}"]
        for h in result.relations:
            count = f" [{h.count:,}]" if h.count is not None else ""
            desc = f" - {h.description}" if h.description else ""
            via = f'  (matched "{h.matched}")' if h.matched != h.label else ""
            lines.append(f"{h.id}{count}: {h.label}{desc}{via}")
        lines.extend(f"warning: {w}" for w in warnings)
        return tool_result(result, "\n".join(lines))

    @server.tool(title="Resolve an external identifier", annotations=annotations)
    async def resolve_external_id(
        property: Annotated[str, Field(description="The identifier property, namespaced: e.g. 'wd:P345' (IMDb ID). "
                                       "search_relations finds it by name.")],
        value: Annotated[str, Field(description="The identifier, e.g. 'tt1375666'.",
                                    json_schema_extra={"maxLength": 400})],
    ) -> Annotated[CallToolResult, ExternalIdResult]:
        """The entity an external identifier (IMDb, VIAF, MusicBrainz, ISBN …) belongs to."""
        value = (value or "").strip()
        if not value or len(value) > 400:
            raise InvalidInput("value must be 1 to 400 characters")
        owner = runtime.graph.owner(property)
        vocabulary = owner.relation_vocabulary()  # local KGs know theirs without I/O; SPARQL KGs check when empty
        if vocabulary is not None and property not in vocabulary:
            raise NotFound(f"no relation {property!r} in KG {owner.name!r}; call search_relations to find one")
        ids = await owner.find_by_value(property, value, limit=10)
        entities = [(await runtime.graph.describe_entity(i)).entity for i in ids[:5]]
        result = ExternalIdResult(property=property, value=value, entities=entities, more=max(0, len(ids) - 5))
        if not entities:
            text = f"no entity in KG {owner.name!r} has {property} = {value!r}"
        else:
            text = "\n".join([f"{property} = {value!r}:"] + [f"{e.id}: {e.label}" + (
                f" - {e.description}" if e.description else "") for e in entities]
                + ([f"(+{result.more} more)"] if result.more else []))
        return tool_result(result, text)


class RelationMatches(BaseModel):
    text: str
    kgs: list[str]
    relations: list[RelationHit]
    warnings: list[str] = Field(default_factory=list)


class ExternalIdResult(BaseModel):
    property: str
    value: str
    entities: list[Entity] = Field(default_factory=list, description="The entities with that identifier.")
    more: int = Field(default=0, description="Further matches not shown.")

