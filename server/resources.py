"""One MCP resource per configured KG, ``kg://NAME``: what the KG is, how big, and which relations it has.

Clients read it to decide which KG to query before spending tool calls; the content is ``KnowledgeGraph.info()``
as JSON.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resources import FunctionResource

from kg_adapters.base import KnowledgeGraph

from .runtime import Runtime


def _reader(kg: KnowledgeGraph):
    async def read() -> str:
        return (await kg.info()).model_dump_json(indent=1)

    read.__name__ = f"kg_{kg.name}"
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
