"""The MCP prompt ``tree_of_traversals(question)``: teaches a client's model the procedure with this
server's tools.

The text is data (``prompts/tot_procedure.txt``); this module only fills in the question and the KG
list.
"""

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from tot_mcp import prompts as templates
from .runtime import Runtime


def register_prompts(server: MCPServer, runtime: Runtime) -> None:
    kg_list = ", ".join(runtime.kgs)

    @server.prompt(
        name="tree_of_traversals",
        title="Answer a question with Tree-of-Traversals",
        description="Step-by-step instructions for answering a question by exploring the KG with "
        "initialize, get_relations and get_edges, backtracking when a branch looks wrong.",
    )
    def tree_of_traversals(
        question: Annotated[
            str, Field(description="The question to answer from the knowledge graph.")
        ],
    ) -> str:
        return templates.render("tot_procedure", question=question.strip(), kgs=kg_list)
