"""``sparql_query``: a caller-written, read-only SPARQL query against one KG that speaks SPARQL. The
  server only maps MCP to the adapter contract (:meth:`Graph.sparql_query`, offered where
  ``capabilities.sparql`` is true); the guard — read forms only, no SERVICE outside the KG's
  allowlist, a LIMIT at the cap, the KG's prefixes predeclared — lives in
  :mod:`kg_adapters.sparql.guard`. Here the answer is bounded once more in characters and rendered
  as a compact table.

It is offered when some configured KG answers SPARQL. Relations by meaning
(``get_relations(search=...)``) and entities by an external identifier
(``search_entities(relation=...)``) are KG tools: every backend answers them.
"""

import json
import re
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import Field

from tot_mcp.kg_adapters.errors import InvalidInput
from tot_mcp.kg_adapters.sparql.guard import (
    DEFAULT_MAX_CHARS,
    DEFAULT_MAX_ROWS,
    DEFAULT_TIMEOUT,
    SparqlRows,
    SparqlTerm,
)

from ..tool_results import tool_result
from ..runtime import Runtime

MAX_TEXT_CHARS = (
    8000  # the rendered table; rows beyond it are left out of text and structured result alike
)
MAX_CELL_CHARS = 200  # one value in the table
MAX_VALUE_CHARS = 2000  # one value in the structured result
_NUMERIC = {
    f"http://www.w3.org/2001/XMLSchema#{t}"
    for t in ("integer", "decimal", "double", "float", "int", "long", "nonNegativeInteger")
}
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_SIMPLE_LOCAL = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _compact(iri: str, prefixes: dict[str, str]) -> str:
    best = ""
    for p, ns in prefixes.items():
        if (
            iri.startswith(ns)
            and len(ns) > len(prefixes.get(best, ""))
            and set(iri[len(ns) :]) <= _SIMPLE_LOCAL
        ):
            best = p
    if best and iri[len(prefixes[best]) :]:
        return f"{best}:{iri[len(prefixes[best]) :]}"
    return f"<{iri}>"


def term_text(t: SparqlTerm, prefixes: dict[str, str]) -> str:
    """``wd:Q42``, ``"Douglas Adams"@en``, ``1952``, ``"1952-03-11T00:00:00Z"^^xsd:dateTime``,
    ``_:b0``."""
    if t.type == "uri":
        out = _compact(t.value, prefixes)
    elif t.type == "bnode":
        out = f"_:{t.value}"
    elif t.type == "literal":
        if t.datatype in _NUMERIC and _NUMBER.fullmatch(t.value):  # as written: 1952, -0.5, 1.2E3
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
    if result.form == "ASK" or not result.rows:
        answer = ("true" if result.boolean else "false") if result.form == "ASK" else "no results"
        return result, "\n".join([f"{head}: {answer}", *(f"note: {n}" for n in result.notes)])
    columns = result.columns or sorted({k for r in result.rows for k in r})
    table = [" | ".join(("?" + c) if result.form == "SELECT" else c for c in columns)]
    size = len(head) + len(table[0])
    for row in result.rows:
        line = " | ".join(term_text(row[c], shown_prefixes) if c in row else "" for c in columns)
        if (
            size + len(line) + 1 > MAX_TEXT_CHARS and len(table) > 1
        ):  # at least one row, however long
            break
        table.append(line)
        size += len(line) + 1
    kept = len(table) - 1  # rows shown: the table's lines after its header
    cut = kept < len(result.rows)
    rows = [{k: _cut_value(v) for k, v in r.items()} for r in result.rows[:kept]]
    notes = list(result.notes)
    if any(len(v.value) > MAX_VALUE_CHARS for r in result.rows[:kept] for v in r.values()):
        notes.append(f"values longer than {MAX_VALUE_CHARS:,} characters are cut")
    hint = result.hint
    if cut:
        hint = (
            f"the answer was cut at {MAX_TEXT_CHARS:,} characters ({kept} of {len(result.rows)} "
            "rows shown): select fewer or shorter columns, or use LIMIT/OFFSET to page"
        )
    result = result.model_copy(
        update={"rows": rows, "truncated": result.truncated or cut, "hint": hint, "notes": notes}
    )
    what = "row" if result.form == "SELECT" else "triple"
    count = f"{kept} {what}{'s' if kept != 1 else ''}" + (
        " (truncated)" if result.truncated else ""
    )
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
    annotations = ToolAnnotations(
        read_only_hint=True,
        idempotent_hint=True,
        open_world_hint=any(kg.capabilities.remote for kg in able.values()),
    )
    default_kg = next(iter(able)) if len(able) == 1 else None

    @server.tool(title="Run a read-only SPARQL query", annotations=annotations)
    async def sparql_query(
        query: Annotated[
            str,
            Field(
                description="SELECT, ASK, CONSTRUCT or DESCRIBE; the KG's usual prefixes "
                "(wd:, wdt:, rdfs: ...) need no PREFIX.",
                json_schema_extra={"maxLength": DEFAULT_MAX_CHARS},
            ),
        ],
        kg: Annotated[
            str | None,
            Field(
                description=f"One of {names}"
                + ("" if default_kg is None else f"; default {default_kg}")
                + "."
            ),
        ] = None,
        limit: Annotated[
            int | None, Field(ge=1, json_schema_extra={"maximum": DEFAULT_MAX_ROWS})
        ] = None,
    ) -> Annotated[CallToolResult, SparqlRows]:
        """A read-only SPARQL query on one KG, answered as a compact table; for what the other tools
        cannot say (counts, filters, joins). Updates and SERVICE are refused; the row cap is applied
        as LIMIT."""
        name = (kg or "").strip() or default_kg
        if name is None:
            raise InvalidInput(f"several KGs answer SPARQL; pass kg (one of: {', '.join(able)})")
        target = runtime.kg(name)
        if not target.capabilities.sparql:
            raise InvalidInput(
                f"KG {name!r} ({target.backend}) does not answer SPARQL queries; these do: "
                f"{', '.join(able)}"
            )
        result = await target.sparql_query(query, limit=limit, timeout=DEFAULT_TIMEOUT)
        result, text = render(result, result.namespaces)
        return tool_result(result, text, exclude_none=True)
