"""MCP resources: one per configured KG, ``kg://NAME``, and the template ``kg://{kg}/entity/{id}``.

``kg://NAME`` is what the KG is, how big, and which relations it has: clients read it to decide
which KG to query before spending tool calls; the content is ``Graph.info()`` as JSON.

``kg://{kg}/entity/{id}`` is one entity's description as text: exactly what the ``describe_entity``
tool returns as its text (the same ``LinkedKG.describe_entity`` call, so IDs in linked KGs are
listed as ``same as``, and the same ``render.render_description``). ``id`` is the entity's ID as the
tools print it (``movies:E1407``) or its local part (``E1407``): an ``id`` that does not start with
``KG:`` gets that prefix. The ``kg`` argument completes to the configured KG names and ``id`` to the
entities whose label matches what was typed (``completion/complete``, a label search: ``Tom Ha`` →
``movies:E1407``); the ``tree_of_traversals`` prompt's ``question`` completes an open ``[mention``
to the labels that match. An unknown KG or entity is a one-line ``resources/read`` error.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from mcp.server.mcpserver.resources import FunctionResource, ResourceSecurity
from mcp_types import (
    Completion,
    CompletionArgument,
    CompletionContext,
    PromptReference,
    ResourceTemplateReference,
)

from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.errors import InvalidInput, KGError, NotFound, UnknownKG
from tot_mcp.kg_adapters.sparql.values import EntityDetails

from . import render
from .render import one_line
from .runtime import Runtime

ENTITY_TEMPLATE = "kg://{kg}/entity/{id}"
_MAX_COMPLETIONS = 100  # the protocol's cap on completion values


def _reader(kg: Graph):
    async def read() -> str:
        return (await kg.info()).model_dump_json(indent=1)

    return read


def register_resources(server: MCPServer, runtime: Runtime) -> None:
    for name, kg in runtime.kgs.items():
        server.add_resource(
            FunctionResource.from_function(
                fn=_reader(kg),
                uri=f"kg://{name}",
                name=name,
                title=f"KG {name}",
                description=f"The {name!r} knowledge graph ({kg.backend}): size, "
                "description and a sample of its relations.",
                mime_type="application/json",
            )
        )
    graph = runtime.graph

    @server.resource(
        ENTITY_TEMPLATE,
        name="entity",
        title="Entity description",
        description="One entity of KG `kg`: label, description, aliases, IRI, IDs in linked KGs "
        "and its relations (the text describe_entity returns). `id` is the namespaced ID "
        "(movies:E1407) or its local part (E1407).",
        mime_type="text/plain",
        security=ResourceSecurity(exempt_params={"id"}),  # an ID, never a file path: no path checks
    )
    async def entity(kg: str, id: str) -> str:
        if kg not in runtime.kgs:
            raise ResourceNotFoundError(
                one_line(f"unknown KG: no KG named {kg!r}; configured: {', '.join(runtime.kgs)}")
            )
        if not id.strip():
            raise ResourceNotFoundError(f"invalid input: no entity ID in kg://{kg}/entity/")
        id = (
            id.strip()
        )  # the namespaced ID the tools use: movies:E1407 stays, E1407 becomes movies:E1407
        entity_id = id if id.startswith(f"{kg}:") else f"{kg}:{id}"
        try:  # what the describe_entity tool does for entity_id
            desc = await graph.describe_entity(entity_id)
        except (NotFound, InvalidInput, UnknownKG) as exc:
            raise ResourceNotFoundError(one_line(f"not found: {exc}")) from exc
        except KGError as exc:
            raise ResourceError(one_line(f"error describing {entity_id}: {exc}")) from exc
        details = EntityDetails.model_validate(desc, from_attributes=True)
        return render.render_description(details)

    @server.completion()
    async def complete(
        ref: PromptReference | ResourceTemplateReference,
        argument: CompletionArgument,
        context: CompletionContext | None,
    ) -> Completion | None:
        """The entity template's ``kg`` (KG names) and ``id`` (entities by label), the prompt's
        ``[mention``."""
        if isinstance(ref, ResourceTemplateReference) and ref.uri == ENTITY_TEMPLATE:
            if argument.name == "kg":
                prefix = argument.value.strip().lower()
                return _values([n for n in runtime.kgs if n.lower().startswith(prefix)])
            if argument.name == "id":
                kg = ((context.arguments or {}).get("kg") if context else None) or None
                return _values([m.entity.id for m in await _labelled(kg, argument.value)])
        if isinstance(ref, PromptReference) and argument.name == "question":
            head, bracket, typed = argument.value.rpartition("[")
            if not bracket or "]" in typed:
                return None
            return _values([f"{head}[{m.entity.label}]" for m in await _labelled(None, typed)])
        return None

    async def _labelled(kg: str | None, typed: str) -> list:
        """Entities whose label matches ``typed`` (the tools' label search), none for under two
        characters or an unknown KG: a completion never fails."""
        if len(typed.strip()) < 2 or (kg is not None and kg not in runtime.kgs):
            return []
        try:
            return await runtime.select(kg).search_entities(typed.strip(), limit=10)
        except KGError:
            return []


def _values(values: list[str]) -> Completion:
    values = list(dict.fromkeys(values))
    return Completion(
        values=values[:_MAX_COMPLETIONS], total=len(values), has_more=len(values) > _MAX_COMPLETIONS
    )
