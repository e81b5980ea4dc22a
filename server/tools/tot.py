"""The ``tree_of_traversals`` tool: run the whole Tree-of-Traversals search server-side and return the answer,
its value, the final local subgraph and the search tree, with a progress notification per expansion."""


from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field

from tot_mcp.strategies.llm import factory
from tot_mcp.strategies.llm.base import LLMError, LLMUsage
from tot_mcp.strategies.grounding import run_checked
from tot_mcp.strategies.llm.sampling import sampling_unavailable_reason
from tot_mcp.strategies.registry import Call, get
from tot_mcp.strategies.tot.search import RankedAnswer, SearchNode

from ..apps import TOOL_META, publish_tree
from ..results import progress_to, tool_result

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from ..runtime import Runtime


class TreeOfTraversalsResult(BaseModel):
    question: str
    status: str = Field(description="answered (value ≥ tau), below_tau (best answer found), incomplete (the budget "
                        "ran out before the answer was reached), or no_answer.")
    answer: RankedAnswer
    partial: bool = Field(default=False, description="The answer set is known to be incomplete (partial_reason).")
    partial_reason: str = ""
    value: float
    llm: str = Field(description="The policy that actually ran (after any fallback).")
    expansions: int
    usage: LLMUsage
    subgraph_text: str = Field(description="The final local subgraph in compact form.")
    tree_text: str = Field(description="The search tree, indented; * marks the chosen path.")
    nodes: list[SearchNode] = Field(description="The search tree: nodes with parent, action, value, depth.")
    path: list[int]
    warnings: list[str] = Field(default_factory=list)
    view: str | None = Field(default=None, description="This search tree drawn as an HTML page: a ui:// resource "
                             "(MCP Apps; read it with resources/read). Kept by this server process for a while.")


#: the fields of TreeOfTraversalsResult that the search result holds as they are
_FROM_SEARCH = ("status", "answer", "partial", "partial_reason", "value", "expansions", "usage", "subgraph_text",
                "nodes", "path")


def register(server: "MCPServer", runtime: "Runtime") -> None:
    kg_names = ", ".join(runtime.kgs)

    @server.tool(
        title="Answer a question with Tree-of-Traversals (server-side search)",
        annotations=ToolAnnotations(readOnlyHint=True, idempotentHint=False, openWorldHint=False),
        meta=TOOL_META,  # MCP Apps: clients that render apps show the search tree inline
    )
    async def tree_of_traversals(
        query: Annotated[str, Field(description="The question; mark entity mentions in [brackets].")],
        llm: Annotated[
            Literal["offline", "sampling", "anthropic", "openai"],
            Field(description="Who reasons: offline (no LLM, free), sampling (your model, via the client), "
                  "anthropic or openai (the server's key)."),
        ] = "offline",
        kg: Annotated[str | None, Field(description=f"One or more of {kg_names}, comma-separated; default all.")]
        = None,
        k: Annotated[int | None, Field(ge=1, le=10, description="Branches tried per step; 1 is a chain, cheaper.")]
        = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, TreeOfTraversalsResult]:
        """Answer a question with the Tree-of-Traversals search on the server (Markowitz et al. 2024): it links
        the entities, grows a subgraph step by step under a policy (an LLM, or offline rules), and stops at an answer it values well.
        Returns the answer, the subgraph and the search tree: one call instead of driving the step tools."""
        graph = runtime.select(kg)
        warnings: list[str] = []
        kind = llm
        if kind == "sampling":
            reason = sampling_unavailable_reason(ctx)
            if reason:
                warnings.append(f"sampling unavailable ({reason}); fell back to the offline policy")
                kind = "offline"
        if kind != "offline":
            try:
                backend = factory.make_llm(kind, ctx=ctx, environment=runtime.environment)
            except LLMError as e:
                raise ToolError(f"tree_of_traversals: {'; '.join([*warnings, str(e)])}") from None
        strategy = get("tot")  # the one implementation: what tot-search --method tot measures
        given: dict[str, Any] = {} if k is None else {"k": k}  # the rest: [strategy.tot], else the paper's
        if "max_edges_per_expansion" not in runtime.services.strategy_options.get("tot", {}):
            given["max_edges_per_expansion"] = min(50, runtime.limits.max_edges)
        options = runtime.services.options(strategy, given)
        call = Call(services=runtime.services, kg=graph, scope=graph, query=query, options=options, llm_kind=kind,
                    llm_factory=None if kind == "offline" else (lambda: backend), progress=progress_to(ctx),
                    method="tot")
        try:
            out = await run_checked(strategy, call)
        except LLMError as e:  # the offline policy cannot run here (e.g. no embedder)
            raise ToolError(f"tree_of_traversals: {'; '.join([*warnings, str(e)])}") from None
        result = out._search
        view = publish_tree(runtime, result, ctx, policy=kind, warnings=warnings)
        model = TreeOfTraversalsResult(question=query, llm=kind, tree_text=result.tree_text(), warnings=warnings,
                                       view=view.uri, **{f: getattr(result, f) for f in _FROM_SEARCH})
        shown = "; ".join(f"{it.text} ({it.entity_id})" if it.entity_id else it.text for it in result.answer.items)
        text = [
            f"Answer: {shown or result.answer.text}",
            *([f"partial: {result.partial_reason}"] if result.partial else []),
            *([f"dropped (not in the subgraph): {'; '.join(result.answer.dropped)}"] if result.answer.dropped else []),
            (f"value {result.value:.2f} · {result.status} · {result.expansions} expansions · policy {kind}"
             f" · {result.usage.calls} LLM calls"),
            *(f"warning: {w}" for w in warnings),
            "",
            "Search tree (* = chosen path):",
            model.tree_text,
            "",
            "Final local subgraph:",
            result.subgraph_text,
        ]
        answer = tool_result(model, "\n".join(text))
        answer.meta = view.meta
        return answer
