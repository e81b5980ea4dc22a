"""The ``tree_of_traversals`` tool: run the whole Tree-of-Traversals search server-side, with a
progress notification per expansion, and return the answer compactly (:mod:`server.compact`); the
search tree and the final subgraph with ``detail="full"``, and drawn as an MCP Apps view."""

from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import Field

from tot_mcp.strategies.llm import factory
from tot_mcp.strategies.llm.base import LLMError
from tot_mcp.strategies.grounding import run_checked
from tot_mcp.strategies.llm.sampling import sampling_unavailable_reason
from tot_mcp.strategies.registry import Call, get
from tot_mcp.strategies.tot.state import DEFAULT_MAX_EDGES

from ..tree_view import TOOL_META, publish_tree
from ..compact import CompactAnswer, Detail, Extras, compact_result
from ..render import one_line
from ..tool_results import payer_of, progress_to

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from ..runtime import Runtime


def register(server: "MCPServer", runtime: "Runtime") -> None:
    kg_names = ", ".join(runtime.kgs)

    @server.tool(
        title="Answer a question with Tree-of-Traversals (server-side search)",
        annotations=ToolAnnotations(readOnlyHint=True, idempotentHint=False, openWorldHint=False),
        meta=TOOL_META,  # MCP Apps: clients that render apps show the search tree inline
    )
    async def tree_of_traversals(
        query: Annotated[
            str, Field(description="The question; mark entity mentions in [brackets].")
        ],
        llm: Annotated[
            Literal["offline", "sampling", "anthropic", "openai"],
            Field(
                description="Who reasons: offline (no LLM, free), sampling (your model, via the "
                "client), anthropic or openai (the server's key)."
            ),
        ] = "offline",
        kg: Annotated[
            str | None,
            Field(description=f"One or more of {kg_names}, comma-separated; default all."),
        ] = None,
        k: Annotated[
            int | None,
            Field(ge=1, le=10, description="Branches tried per step; 1 is a chain, cheaper."),
        ] = None,
        detail: Detail = "answer",  # the result text says what "full" adds
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, CompactAnswer]:
        """Answer a question with the Tree-of-Traversals search on the server: it links the
        entities, grows a subgraph step by step under a policy (an LLM, or offline rules), and stops
        at an answer it values well. Returns the answers with IDs, why, and the edges behind them:
        one call instead of driving the step tools."""
        graph = runtime.select(kg)
        warnings: list[str] = []
        kind = llm
        if kind == "sampling":
            reason = sampling_unavailable_reason(ctx)
            if reason:
                warnings.append(f"sampling unavailable ({reason}); fell back to the offline policy")
                kind = "offline"
        paid = kind in ("anthropic", "openai")  # the operator's key, not the client's model
        charged = runtime.client_llm(kind, payer_of(ctx)) if paid else None
        if kind != "offline":
            try:  # a paid backend as the operator configured it ([llm]: model, base_url, timeout)
                backend = charged or factory.make_llm(
                    kind, ctx=ctx, environment=runtime.environment
                )
            except LLMError as e:
                raise ToolError(f"tree_of_traversals: {'; '.join([*warnings, str(e)])}") from None
        # with a model, plan first (one call) and search the tree only when the plan fails: what
        # tot-search --llm measures; offline, the tree search itself
        name = "tot" if kind == "offline" else "auto"
        strategy = get(name)
        given: dict[str, Any] = (
            {} if k is None else {"k": k}
        )  # the rest: [strategy.tot], else the paper's
        if "max_edges_per_expansion" not in runtime.services.strategy_options.get("tot", {}):
            given["max_edges_per_expansion"] = min(DEFAULT_MAX_EDGES, runtime.limits.max_edges)
        given = (
            {**runtime.services.strategy_options.get("tot", {}), **given}
            if name == "auto"
            else given
        )
        call = Call.of(
            strategy,
            runtime.services,
            graph,
            query,
            given,
            scope=graph,
            llm_kind=kind,
            llm_factory=None if kind == "offline" else (lambda: backend),
            progress=progress_to(ctx),
        )
        try:
            out = await run_checked(strategy, call)
        except LLMError as e:  # the offline policy cannot run here (e.g. no embedder)
            raise ToolError(f"tree_of_traversals: {'; '.join([*warnings, str(e)])}") from None

        from tot_mcp.strategies.plan import PlanResult  # here: loaded with its strategy, not before

        plan = out if isinstance(out, PlanResult) and not out.fell_back else None
        planned = plan is not None
        extras = Extras(
            strategy=f"plan first, policy {kind}" if planned else f"tot, policy {kind}",
            warnings=warnings,
            more="the search tree and subgraph",
        )
        if plan is not None and plan.path:
            extras.head.append(f"path: {plan.path}")
        result = getattr(out, "_search", None)  # None: refused before the search ran
        meta = None
        if result is not None:
            extras.view, meta = publish_tree(runtime, result, ctx, policy=kind, warnings=warnings)
            if result.answer.dropped:
                dropped = one_line("; ".join(result.answer.dropped), 200)
                extras.head.append(f"dropped (not in the subgraph): {dropped}")
            if detail == "full":
                extras.full = result.model_dump(mode="json", exclude={"subgraph_text", "question"})
        answer = compact_result(
            out,
            extras,
            detail,
            lambda ids: runtime.handles.remember(
                "tree_of_traversals", ids, query=query, llm=llm, kg=kg, k=k
            ),
        )
        answer.meta = meta
        return answer
