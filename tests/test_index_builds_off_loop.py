"""The first call of a strategy on a KG builds what it reads (BM25, the relevance model) in a worker
thread, through ``Services.resources``: while that build runs, the event loop keeps serving the
server's other requests, and the strategy then uses the index built there instead of building it
again in the loop.

Each build is made slow (it sleeps first, in the thread that builds) and a ticker stands for another
request: the figure is how often it ticked while a build ran. (The strategies' own per-question
work, e.g. embedding the question's spans, is not what is measured: it runs in the loop and takes a
while on a cold cache.)"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Self

import pytest
from retrieval_fixtures import make_kg, shared_embedder

from tot_mcp.strategies import indexes
from tot_mcp.strategies.registry import Call, get
from tot_mcp.strategies.services import Services

SLOW = 0.5  # seconds each patched build sleeps in the thread that runs it
TICK = 0.02


class Ticker:
    """Another request of the server: ticks every 20 ms for as long as the event loop lets it."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self._stop = asyncio.Event()
        self._task: asyncio.Task | None = None

    async def _run(self) -> None:
        while not self._stop.is_set():
            await asyncio.sleep(TICK)
            self.times.append(time.perf_counter())

    async def __aenter__(self) -> Self:
        self.loop_thread = threading.current_thread()
        self._task = asyncio.create_task(self._run())
        await asyncio.sleep(0)
        return self

    async def __aexit__(self, *exc) -> None:
        self._stop.set()
        await self._task

    def off_loop(self, build: Build) -> bool:
        return build.thread is not self.loop_thread

    def during(self, build: Build) -> int:
        """Ticks while ``build`` ran (a build in the loop's own thread leaves none)."""
        return sum(build.start < t <= build.end for t in self.times)


class Build:
    def __init__(self) -> None:
        self.thread = threading.current_thread()
        self.start = time.perf_counter()
        self.end = float("inf")


def slow_builds(monkeypatch, name: str) -> list[Build]:
    """Patch the index class ``name`` of :mod:`strategies.indexes` to sleep first; returns the
    builds made."""
    real = getattr(indexes, name)
    builders: list[Build] = []

    def slow(*args, **kwargs):
        build = Build()
        builders.append(build)
        time.sleep(SLOW)
        try:
            return real(*args, **kwargs)
        finally:
            build.end = time.perf_counter()

    monkeypatch.setattr(indexes, name, slow)
    return builders


@pytest.fixture
async def services(tmp_path):
    kg = make_kg(tmp_path)
    svc = Services([kg], embedder_factory=shared_embedder, cache_dir=tmp_path / "c")
    await (
        svc.aembedder()
    )  # the model load (~6 s, off the loop already) is not what is measured here
    return kg, svc


def ark_call(svc: Services, kg, query: str = "which films did [Ada Stone] direct") -> Call:
    ark = get("ark")
    return Call(
        services=svc,
        kg=kg,
        query=query,
        options=ark.parse_options({}),
        needs=ark.needs,
        method="ark",
    )


@pytest.mark.parametrize(
    ("index", "built"), [("DescriptorBM25", "bm25"), ("QueryRelevance", "relevance")]
)
async def test_resources_builds_the_index_in_a_worker_thread_while_the_loop_keeps_ticking(
    services, monkeypatch, index, built
):
    kg, svc = services
    builders = slow_builds(monkeypatch, index)
    async with Ticker() as ticker:
        res = await svc.resources(kg, get("ark").needs)
    assert len(builders) == 1 and ticker.off_loop(builders[0]), (
        "not built, or built in the event loop's thread"
    )
    assert ticker.during(builders[0]) >= 5, (
        f"the loop ticked {ticker.during(builders[0])} times during the build"
    )
    assert len(ticker.times) >= 5
    assert indexes.INDEXES.get(built).ready(res)
    held = getattr(res, built)()
    out = await get("ark").run(
        ark_call(svc, kg)
    )  # ARK reads the index built above: no second build
    assert out.results and len(builders) == 1 and getattr(res, built)() is held
    await svc.resources(kg, get("ark").needs)  # and a later call finds it ready
    assert len(builders) == 1


async def test_a_strategys_first_call_builds_its_indexes_off_the_loop(services, monkeypatch):
    kg, svc = services
    bm25, relevance = (
        slow_builds(monkeypatch, "DescriptorBM25"),
        slow_builds(monkeypatch, "QueryRelevance"),
    )
    async with Ticker() as ticker:
        out = await get("ark").run(ark_call(svc, kg))
    assert out.results
    assert len(bm25) == 1 and len(relevance) == 1
    for build in bm25 + relevance:
        assert ticker.off_loop(build) and ticker.during(build) >= 5, (
            f"the loop ticked {ticker.during(build)} times"
        )


async def test_the_router_finds_the_relevance_model_built_off_the_loop(services, monkeypatch):
    kg, svc = services
    relevance = slow_builds(monkeypatch, "QueryRelevance")
    router = get("router")
    call = Call(
        services=svc,
        kg=kg,
        query="which films did [Ada Stone] direct",
        options=router.parse_options({"route": "ark"}),
        needs=router.needs,
        method="router",
    )
    async with Ticker() as ticker:
        out = await router.run(call)
    assert out.results and len(relevance) == 1 and ticker.off_loop(relevance[0])
    assert ticker.during(relevance[0]) >= 5, f"the loop ticked {ticker.during(relevance[0])} times"


async def test_an_inline_build_reports_each_stage_and_stops_when_its_call_is_cancelled(
    tmp_path, monkeypatch
):
    """A caller waiting for a build hears its stage and how far it is, not one message at the start;
    a caller that gives up (the MCP request is cancelled) stops the build at its next step instead
    of leaving it running."""
    from tot_mcp.strategies import services as services_mod

    monkeypatch.setattr(services_mod, "PROGRESS_SECONDS", 0.05)
    steps: list[int] = []

    def slow_dense(self, build: bool = False, on_progress=None):
        for i in range(int(self.graph.kg.name == "big") * 180 + 20):
            time.sleep(0.02)
            if on_progress is not None:
                on_progress(i + 1, 200 if self.graph.kg.name == "big" else 20)
            steps.append(i)

    monkeypatch.setattr(indexes.GraphResources, "dense", slow_dense)
    heard: list[tuple[float, float | None, str]] = []

    async def progress(done: float, total: float | None, message: str) -> None:
        heard.append((done, total, message))

    small = Services(
        [make_kg(tmp_path)], embedder_factory=shared_embedder, cache_dir=tmp_path / "c"
    )
    await small.resources(small.kgs["mini"], ("dense",), progress=progress, build=True)
    assert heard[0][2].startswith("building the dense index of mini")
    assert any("embedding" in m and "% done" in m for _, _, m in heard[1:]), (
        heard
    )  # the stage, how far
    assert [d for d, _, _ in heard[1:]] == sorted(
        d for d, _, _ in heard[1:]
    )  # progress only goes up

    steps.clear()
    big_dir = tmp_path / "big"
    big_dir.mkdir()
    big = Services(
        [make_kg(big_dir, "big")], embedder_factory=shared_embedder, cache_dir=tmp_path / "c2"
    )
    call = asyncio.create_task(
        big.resources(big.kgs["big"], ("dense",), progress=progress, build=True)
    )
    await asyncio.sleep(0.4)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    stopped_at = len(steps)
    await asyncio.sleep(0.3)
    assert (
        len(steps) <= stopped_at + 1 and stopped_at < 100
    )  # it stopped at its next step, not after 200
    assert not [t for t in threading.enumerate() if t.name == "tot-load" and t.is_alive()]
