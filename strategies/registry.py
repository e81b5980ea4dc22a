"""The one registry of strategies: name → what it does, its typed options, the indexes it needs, how
it runs and how its result reads. ``tot-search --method NAME`` and the server's composite MCP tools
are generated from it, so a new strategy is one module (defining a :class:`Strategy`) plus one line
in :data:`_BUILTINS`.

Modelled on rdflib's ``plugin.register`` (a name bound to ``"module:attribute"``, imported on first
use, so a strategy's heavy imports cost nothing until it is chosen) and simonw/llm's
``register_models`` (third-party code adds its own with :func:`register`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from pydantic import BaseModel

from tot_mcp.kg_adapters.errors import InvalidInput
from tot_mcp.kg_adapters.plugins import LazyRegistry, parse_options

if TYPE_CHECKING:
    from tot_mcp.kg_adapters.graph import Graph
    from tot_mcp.strategies.indexes import GraphResources
    from tot_mcp.strategies.llm.base import LLM
    from tot_mcp.strategies.results import StrategyResult
    from tot_mcp.strategies.services import Services

#: a strategy's own result type, which its ``run`` returns and its ``render`` reads
R = TypeVar("R", bound="StrategyResult")

Progress = Callable[[float, float | None, str], Awaitable[None]]
#: what a strategy reads besides the graph: BM25 over entity descriptors, the relevance model
#: (relation-phrase embeddings), MiniLM and static entity vectors, the community hierarchy
Index = str  # a name in strategies.indexes.INDEXES (bm25, relevance, dense, static, hierarchy)
#: the figure that says whether a strategy does its job (``tot-search`` prints it, the side-by-side
#: table has a column for each): answers (Hits@1), the context a client reads (recall and size), a
#: ranked list (Recall@10), the entity a question is about (linking accuracy@1)
Job = Literal["answer", "context", "ranking", "linking"]


@dataclass
class Call:
    """Everything one run of a strategy gets: the shared services, the KG, the question, its
    validated options, a progress callback, and the LLM when one is configured (``llm_kind``
    "offline": the offline judges)."""

    services: Services
    kg: Graph
    query: str
    options: BaseModel
    llm_kind: str = "offline"
    llm_factory: Callable[[], LLM] | None = None
    progress: Progress | None = None
    needs: tuple[Index, ...] = ()
    method: str = (
        ""  # the registered name the call runs under (one run function may serve two names)
    )
    build: bool | None = None  # build missing indexes: None = the services' policy
    scope: Graph | None = None  # the linked KGs a walk may cross (default: every KG of the run)
    _llm: LLM | None = None
    _before: Any = None

    @classmethod
    def of(
        cls,
        strategy: Strategy,
        services: Services,
        kg: Graph,
        query: str,
        options: BaseModel | dict[str, Any] | None = None,
        **rest: Any,
    ) -> Call:
        """The one way to make a call: ``strategy`` run on ``kg`` with its needs and name,
        ``options`` as the services resolve them (its defaults, the config's table, then these; a
        model already parsed is kept); ``rest`` are the other fields (``llm_kind``, ``llm_factory``,
        ``progress``, ``build``, ``scope``)."""
        parsed = options if isinstance(options, BaseModel) else services.options(strategy, options)
        return cls(
            services=services,
            kg=kg,
            query=query,
            options=parsed,
            needs=strategy.needs,
            method=strategy.name,
            **rest,
        )

    @property
    def offline(self) -> bool:
        return self.llm_factory is None

    def llm(self) -> LLM:
        """The LLM of this call, made on first use (its usage is counted for this call only)."""
        if self.llm_factory is None:
            raise InvalidInput("this call has no LLM (offline)")
        if self._llm is None:
            self._llm = self.llm_factory()
            self._before = self._llm.usage.snapshot()
        return self._llm

    def as_strategy(self, strategy: Strategy) -> Call:
        """This call run as another strategy (how the router and plan's fallback hand a question
        on): the same KG, scope, question, LLM kind and progress; that strategy's options and needs;
        its own LLM usage count."""
        return dataclasses.replace(
            self,
            options=self.services.options(strategy),
            needs=strategy.needs,
            method=strategy.name,
            _llm=None,
            _before=None,
        )

    def usage(self) -> Any:
        from tot_mcp.strategies.llm.base import LLMUsage

        return self._llm.usage.since(self._before) if self._llm is not None else LLMUsage()

    async def resources(self) -> GraphResources:
        """This KG's indexes, with the ones the strategy declared ready (loaded, or built under the
        services' load-or-build policy, which refuses a long build with a message saying how far it
        is)."""
        return await self.services.resources(
            self.kg, self.needs, progress=self.progress, build=self.build
        )


@dataclass(frozen=True)
class Strategy(Generic[R]):
    name: str
    job: Job
    summary: str  # the tool description: what job it does for a client model, one paragraph
    options: type[BaseModel]  # ``extra="forbid"``: a misspelt option is an error
    run: Callable[[Call], Awaitable[R]]
    needs: tuple[Index, ...] = ()  # the indexes it reads: made ready before it runs
    tool: str | None = (
        None  # the MCP tool generated for it (None: served elsewhere, e.g. tree_of_traversals)
    )
    title: str = ""
    result: type[BaseModel] | None = (
        None  # the structured output type of the tool (default StrategyResult)
    )
    local_only: bool = True  # needs every triple of the KG (a ``local_index`` KG)
    reference: str = ""  # the method it implements, cited
    render: Callable[[R], str] | None = None
    llm_option: str | None = (
        None  # the option that asks for the LLM (e.g. ``judge="llm"``); None: llm-less
    )
    #: the options a client model sets on the default tool list (None: all); the rest are the
    #: server's ``[strategy.NAME]`` settings (algorithm knobs a model cannot judge)
    model_options: tuple[str, ...] | None = None

    def parse_options(self, given: dict[str, Any] | None) -> BaseModel:
        """Validated options; an unknown or ill-typed one is an :class:`InvalidInput` naming it and
        the valid ones."""
        return parse_options(self.options, given, f"{self.name} options")


# name → "module:attribute" of its Strategy; imported only when the strategy is first asked for
_BUILTINS: dict[str, str] = {
    "tot": "tot_mcp.strategies.tot.method:TOT",
    "chain": "tot_mcp.strategies.tot.method:CHAIN",
    "router": "tot_mcp.strategies.router:ROUTER",
    "ark": "tot_mcp.strategies.ark:ARK",
    "bfs": "tot_mcp.strategies.ark:BFS",
    "dfs": "tot_mcp.strategies.ark:DFS",
    "beam": "tot_mcp.strategies.deep_graphrag:BEAM",
    "rerank": "tot_mcp.strategies.rerank:RERANK",
    "initialize": "tot_mcp.strategies.link_only:INITIALIZE",
    "plan": "tot_mcp.strategies.plan:PLAN",
    "auto": "tot_mcp.strategies.plan:AUTO",
}


class Registry(LazyRegistry[Strategy]):
    """Strategies by name (the entry-point group ``tot_mcp.strategies`` adds a third party's). One
    per process is enough; tests may make their own."""

    def __init__(self, builtins: dict[str, str] | None = None) -> None:
        super().__init__(
            "method", _BUILTINS if builtins is None else builtins, "tot_mcp.strategies"
        )


REGISTRY = Registry()


def register(strategy: Strategy | str, name: str | None = None) -> None:
    REGISTRY.register(strategy, name)


def get(name: str) -> Strategy:
    return REGISTRY.get(name)


def available() -> list[str]:
    return REGISTRY.names()
