"""The ``tree_of_traversals`` tool: run the whole Tree-of-Traversals search server-side and return the answer,
its value, the final local subgraph and the search tree, with a progress notification per expansion."""


from typing import TYPE_CHECKING, Annotated, Literal

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field

from strategies.llm import factory
from strategies.llm.base import LLMError, LLMUsage
from strategies.llm.sampling import sampling_unavailable_reason
from strategies.tot.asm import AsmConfig, TraversalASM
from strategies.tot.search import (
    RankedAnswer,
    SearchConfig,
    SearchNode,
    SearchProgress,
    TreeSearch,
)

from ..apps import TOOL_META, publish_tree
from ..results import tool_result

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from ..runtime import Runtime


class TreeOfTraversalsResult(BaseModel):
    question: str
    status: str = Field(description="answered (value ≥ tau), below_tau (best answer found), or no_answer.")
    answer: RankedAnswer
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


def register(server: "MCPServer", runtime: "Runtime") -> None:
    kg_names = ", ".join(runtime.kgs)

    @server.tool(
        title="Answer a question with Tree-of-Traversals (server-side search)",
        annotations=ToolAnnotations(readOnlyHint=True, idempotentHint=False, openWorldHint=False),
        meta=TOOL_META,  # MCP Apps: clients that render apps show the search tree inline
    )
    async def tree_of_traversals(
        query: Annotated[str, Field(description="The question; mark the topic entity with [brackets] if you can.")],
        k: Annotated[int, Field(ge=1, le=10, description="Branching factor: actions sampled per step (1 = chain).")] = 3,
        max_depth: Annotated[int, Field(ge=1, le=30, description="Actions before an answer is forced.")] = 7,
        tau: Annotated[float, Field(ge=0.0, le=1.0, description="Stop at an answer valued at least this.")] = 0.8,
        llm: Annotated[
            Literal["offline", "sampling", "anthropic", "openai"],
            Field(description="Policy: offline (no LLM), sampling (this client's model), anthropic (server's key), "
                  "openai (an OpenAI-compatible server: OPENAI_BASE_URL, TOT_OPENAI_MODEL)."),
        ] = "offline",
        kg: Annotated[str | None, Field(description=f"KG name(s), comma-separated (of: {kg_names}); default all.")] = None,
        max_expansions: Annotated[int, Field(ge=1, le=200, description="Give up after this many expansions.")] = 25,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, TreeOfTraversalsResult]:
        """Runs the full Tree-of-Traversals search (Markowitz et al. 2024) on the server: links the question's
        entities, then repeatedly expands the local subgraph (select entities → select relation → edges) guided by a
        policy and value function, best-first, until an answer scores ≥ tau. Returns the answer entities, the final
        subgraph and the search tree. Use it when you want an answer in one call instead of driving
        initialize / get_relations / get_edges yourself."""
        graph = runtime.select(kg)
        warnings: list[str] = []
        kind = llm
        if kind == "sampling":
            reason = sampling_unavailable_reason(ctx)
            if reason:
                warnings.append(f"sampling unavailable ({reason}); fell back to the offline policy")
                kind = "offline"
        try:
            embedder = await runtime.aembedder() if factory.needs_embedder(kind) else None
            policy = factory.make_policy(kind, graph, ctx=ctx, embedder=embedder, shared=runtime.policy_state)
        except LLMError as e:
            raise ToolError(f"tree_of_traversals: {'; '.join([*warnings, str(e)])}") from None

        async def progress(p: SearchProgress) -> None:
            if ctx is not None:
                best = f", best answer value {p.best_answer_value:.2f}" if p.best_answer_value is not None else ""
                await ctx.report_progress(p.expansions, p.max_expansions, f"{p.message}{best}")

        search = TreeSearch(
            TraversalASM(graph, AsmConfig(max_edges_per_expansion=min(50, runtime.limits.max_edges))),
            policy,
            SearchConfig(k=k, max_depth=max_depth, tau=tau, max_expansions=max_expansions),
        )
        try:
            result = await search.run(query, progress=progress)
        finally:
            await policy.aclose()
        if result.error:
            warnings.append(result.error)
        view = publish_tree(runtime, result, ctx, policy=kind, warnings=warnings)
        model = TreeOfTraversalsResult(
            question=query,
            status=result.status,
            answer=result.answer,
            value=result.value,
            llm=kind,
            expansions=result.expansions,
            usage=result.usage,
            subgraph_text=result.subgraph_text,
            tree_text=result.tree_text(),
            nodes=result.nodes,
            path=result.path,
            warnings=warnings,
            view=view.uri,
        )
        shown = ", ".join(f"{lab} ({i})" for lab, i in zip(result.answer.labels, result.answer.entity_ids))
        text = [
            f"Answer: {shown or result.answer.text}",
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
