"""The one services object the strategies run on, shared by the MCP server and ``tot-search``: the
KGs (and all of them linked as one graph), the shared models, each KG's indexes under one
load-or-build policy, the LLM when one is configured, and what strategies keep between questions
(route statistics, the offline reasoner's KG statistics).

The load-or-build policy: an index in memory or in the on-disk cache is used at once; a missing one
is built within the call when the KG is small (``build_limit`` entities) or the caller waits anyway
(``tot-search``); otherwise it is built in a background thread and the call is refused with
:class:`IndexBuilding`, which says how far the build is and about how long is left, so no tool call
blocks for minutes. The indexes that take seconds at most (``cheap`` in
:data:`~strategies.indexes.INDEXES`: BM25, the relevance model) are always built within the call,
never sent to the background. Whatever is built or loaded within a call is built in a worker thread,
never in the event loop, so a server keeps answering its other requests meanwhile.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.environment import Environment
from tot_mcp.kg_adapters.errors import KGError
from tot_mcp.strategies.indexes import INDEXES, GraphResources, IndexNotBuilt, Models
from tot_mcp.strategies.global_view import local_graph
from tot_mcp.strategies.route_stats import RouteStats
from tot_mcp.strategies.settings import RetrievalConfig

if TYPE_CHECKING:
    from tot_mcp.strategies.embeddings import Embedder
    from tot_mcp.strategies.llm.base import LLM
    from tot_mcp.strategies.registry import Index, Progress, Strategy

DEFAULT_BUILD_LIMIT = RetrievalConfig.model_fields["build_limit"].default


class IndexBuilding(KGError):
    """An index is being built in the background; the message says how far it is and when to call
    again."""


@dataclass
class BuildJob:
    """One background build of one KG's indexes: what it builds, how far it is, how it ended."""

    kg: str
    needs: tuple[str, ...]
    entities: int
    started: float = field(default_factory=time.monotonic)
    stage: str = "starting"
    done: int = 0
    total: int = 0
    error: BaseException | None = None
    finished: bool = False
    cancelled: bool = (
        False  # the call waiting for it was cancelled: the build stops at its next step
    )

    def step(self, done: int, total: int) -> None:
        if self.cancelled:
            raise BuildCancelled(
                f"building the {' and '.join(self.needs)} index of {self.kg} was cancelled"
            )
        self.done, self.total = done, total

    def status(self) -> str:
        elapsed = time.monotonic() - self.started
        if self.total and self.done:
            frac = self.done / self.total
            left = elapsed / frac * (1 - frac)
            return f"{self.stage}: {frac:.0%} done, about {_duration(left)} left"
        return f"{self.stage}, {_duration(elapsed)} so far"


class BuildCancelled(Exception):
    """Raised inside a build's thread at its next step once the call that waited for it was
    cancelled."""


PROGRESS_SECONDS = 1.0  # how often a waiting call hears how far a build is


def _duration(seconds: float) -> str:
    seconds = max(1, round(seconds))
    return f"{seconds // 60} min {seconds % 60} s" if seconds >= 60 else f"{seconds} s"


class Services:
    def __init__(
        self,
        kgs: Mapping[str, Graph] | Sequence[Graph],
        *,
        graph: Graph | None = None,
        embedder_factory: Callable[[], Embedder] | None = None,
        llm_factory: Callable[[Any], LLM] | None = None,
        cache_dir: Path | str | None = None,
        build_limit: int = DEFAULT_BUILD_LIMIT,
        wait_for_builds: bool = False,
        cross_encoder_path: str | None = None,
        strategy_options: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        self.kgs: dict[str, Graph] = (
            dict(kgs) if isinstance(kgs, Mapping) else {k.name: k for k in kgs}
        )
        self._graph = graph
        self.models = Models(embedder_factory)
        self._llm_factory = llm_factory
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir else Environment.read().cache_dir
        self.build_limit = build_limit
        self.wait_for_builds = wait_for_builds  # tot-search: a benchmark waits for its indexes
        self.cross_encoder_path = cross_encoder_path
        #: ``[strategy.NAME]`` tables: each strategy's option defaults on this system (validated by
        #: assemble)
        self.strategy_options = {k: dict(v) for k, v in (strategy_options or {}).items()}
        self.route_stats = RouteStats()
        #: the offline policy's reasoner per KG set: KG statistics computed once, kept between
        #: questions (keyed by what it depends on: a kind, the embedder, settings)
        self.policy_state: dict[Hashable, Any] = {}
        self._resources: dict[str, GraphResources] = {}
        self._builds: dict[str, BuildJob] = {}
        self._lock = threading.Lock()

    def options(self, strategy: Strategy, given: Mapping[str, Any] | None = None) -> Any:
        """``strategy``'s validated options: its defaults, then this system's ``[strategy.NAME]``
        table, then ``given`` (a caller's own choice)."""
        return strategy.parse_options(
            {**self.strategy_options.get(strategy.name, {}), **(given or {})}
        )

    # -- the KGs -----------------------------------------------------------------------------------
    @property
    def graph(self) -> Graph:
        """Every KG, linked (one per services object, so its link cache carries over between
        questions)."""
        if self._graph is None:
            from tot_mcp.kg_adapters.routing import LinkedKG

            self._graph = LinkedKG.of(list(self.kgs.values()))
        return self._graph

    # -- models ------------------------------------------------------------------------------------
    def embedder(self) -> Embedder:
        """Blocking (~6 s on first use): from a worker thread, or :meth:`aembedder`."""
        return self.models.embedder()

    async def aembedder(self) -> Embedder:
        if self.models._embedder is not None:
            return self.models._embedder
        return await _in_daemon_thread(self.models.embedder)

    def llm(self, ctx: Any = None) -> LLM:
        if self._llm_factory is None:
            from tot_mcp.strategies.llm.base import LLMError

            raise LLMError("no LLM is configured for this run")
        return self._llm_factory(ctx)

    # -- indexes -----------------------------------------------------------------------------------
    def resources_now(self, kg: Graph) -> GraphResources:
        """The KG's index holder (cheap: nothing is built here). Refuses a KG not held locally."""
        with self._lock:
            res = self._resources.get(kg.name)
            if res is None or res.graph.kg is not kg.store:  # the indexes are of the backend's data
                res = GraphResources(local_graph(kg), self.models, self.cache_dir)
                self._resources[kg.name] = res
            return res

    async def resources(
        self,
        kg: Graph,
        needs: Sequence[Index] = (),
        progress: Progress | None = None,
        build: bool | None = None,
    ) -> GraphResources:
        """The KG's indexes with ``needs`` ready: loaded, built here, or refused while a background
        build runs. ``build`` (for the indexes that are not cheap) False: never build (an
        :class:`~strategies.indexes.IndexNotBuilt` if missing); True: build here whatever the size;
        None: the policy above. Everything slow (the local graph, the content hash, every build and
        load) runs in a worker thread."""

        with self._lock:
            known = self._resources.get(kg.name)
        if (
            known is not None
            and known.graph.kg is kg.store
            and all(INDEXES.get(n).cheap and _ready(known, n) for n in needs)
        ):
            return known  # every call after the first: nothing to prepare, no thread hop

        def prepare() -> tuple[GraphResources, list[str]]:
            res = self.resources_now(kg)
            # the degree table behind its hub mask (ARK's context, beam): once per KG
            res.graph.degrees()
            return res, [n for n in needs if not INDEXES.get(n).cheap and not _ready(res, n)]

        res, missing = await _in_daemon_thread(prepare)
        if "relevance" in needs:
            await self.aembedder()
        if missing:
            inline = (
                build is True
                or self.wait_for_builds
                or (build is None and res.graph.n <= self.build_limit)
            )
            if build is False:
                raise IndexNotBuilt(
                    f"the {' and '.join(missing)} index of KG {kg.name!r} is not built; call "
                    "build_index first"
                )
            if inline:
                job = BuildJob(kg.name, tuple(missing), res.graph.n)
                if progress is not None:
                    await progress(
                        0,
                        1,
                        f"building the {' and '.join(missing)} index of {kg.name} "
                        f"({res.graph.n} entities)",
                    )
                await _wait_reporting(
                    asyncio.ensure_future(_in_daemon_thread(lambda: _build(res, missing, job))),
                    job,
                    progress,
                )
            else:
                job = self.start_build(kg, missing)
                if job.error is not None:
                    raise KGError(
                        f"building the {' and '.join(job.needs)} index of KG {kg.name!r} failed: "
                        f"{job.error}"
                    ) from None
                if not job.finished:
                    raise IndexBuilding(
                        f"the {' and '.join(job.needs)} index of KG {kg.name!r} ({job.entities} "
                        f"entities) is being built in the background ({job.status()}); call again "
                        "then. The step tools (get_relations, get_edges, follow_path) and "
                        "tree_of_traversals work meanwhile."
                    )
        if needs:
            await _in_daemon_thread(lambda: _load(res, needs))
        return res

    def start_build(self, kg: Graph, needs: Sequence[Index]) -> BuildJob:
        """Start (or join) the background build of ``needs`` for ``kg``; returns its job."""
        res = self.resources_now(kg)
        with self._lock:
            job = self._builds.get(kg.name)
            if job is not None and (
                not job.finished or job.error is None and all(_ready(res, n) for n in needs)
            ):
                return job  # still running, or it ended well and left these indexes ready
            job = BuildJob(kg.name, tuple(needs), res.graph.n)
            self._builds[kg.name] = job

        def work() -> None:
            try:
                _build(res, list(needs), job)
            except BaseException as e:  # noqa: BLE001 - reported by the next call that asks
                job.error = e
            finally:
                job.finished = True

        threading.Thread(target=work, name=f"tot-index-{kg.name}", daemon=True).start()
        return job


def _ready(res: GraphResources, need: str) -> bool:
    return INDEXES.get(need).ready(res)


async def _wait_reporting(build: asyncio.Future, job: BuildJob, progress: Progress | None) -> None:
    """Wait for an inline build, telling the caller each stage and how far it is (every
    PROGRESS_SECONDS, when it moved); if the call is cancelled, the build is told to stop at its
    next step instead of running on unseen."""
    said = None
    try:
        while not build.done():
            await asyncio.wait({build}, timeout=PROGRESS_SECONDS)
            now = (job.stage, job.done, job.total)
            if progress is not None and not build.done() and now != said:
                said = now
                await progress(job.done, job.total or None, job.status())
        await build
    except asyncio.CancelledError:
        job.cancelled = True
        raise


def _build(res: GraphResources, needs: Sequence[str], job: BuildJob) -> None:
    for need in needs:
        job.step(job.done, job.total)  # a cancelled build stops between stages too
        kind = INDEXES.get(need)
        if kind.build is not None:
            kind.build(res, job)


def _load(res: GraphResources, needs: Sequence[str]) -> None:
    """Bring ready indexes from disk into memory (seconds), and make the cheap ones (no disk cache;
    seconds), so the strategy itself never builds."""
    for need in needs:
        INDEXES.get(need).load(res)


async def _in_daemon_thread(fn: Callable[[], Any]) -> Any:
    """``fn()`` in a daemon thread: unlike ``asyncio.to_thread``, whose executor ``asyncio.run``
    joins on the way out, a Ctrl-C during a slow load (the embedder) does not wait for the load to
    finish."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if not fut.done():
            fut.set_result(value) if ok else fut.set_exception(value)

    def work() -> None:
        try:
            ok, value = True, fn()
        except BaseException as e:  # noqa: BLE001 - handed to the awaiting task, which re-raises it
            ok, value = False, e
        try:
            loop.call_soon_threadsafe(settle, ok, value)
        except RuntimeError:  # the loop is gone: the run was interrupted meanwhile
            pass

    threading.Thread(target=work, name="tot-load", daemon=True).start()
    return await fut
