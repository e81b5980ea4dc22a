"""The composition root: one place turns a configuration into the running system — the KGs (those
that do I/O behind the result cache), the linked graph over them and the strategies' services — for
``tot-mcp``, ``tot-search`` and the benchmarks alike, so the same ``--config`` gives the same system
in all three.

:func:`build_system` opens the KGs of ``--kg`` specs and a config; :func:`assemble` links KGs
already open (tests, callers holding their own KG objects). Nothing else builds a linker, a
:class:`~kg_adapters.routing.LinkedKG` over the configured KGs, or a
:class:`~strategies.services.Services`.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tot_mcp.kg_adapters.base import Limits
from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.cache import DEFAULT_CACHE_TTL, DEFAULT_CACHE_WEIGHT
from tot_mcp.kg_adapters.config import open_kgs, served_kgs
from tot_mcp.kg_adapters.environment import Environment
from tot_mcp.kg_adapters.errors import InvalidInput, ServiceUnavailable
from tot_mcp.kg_adapters.routing import LinkedKG
from tot_mcp.kg_adapters.sameness import Linker
from tot_mcp.kg_adapters.spec import KGSpec

from .services import Services
from .settings import Config

if TYPE_CHECKING:
    from .embeddings import Embedder
    from .llm.base import LLM

log = logging.getLogger("tot_mcp.system")


#: a full collection after this many younger ones (Python's default is 10): see
#: :func:`freeze_loaded_objects`
FULL_COLLECTION_EVERY = 100
#: a young collection after this many new container objects (Python's default is 700)
YOUNG_COLLECTION_EVERY = 10_000


def freeze_loaded_objects() -> int:
    """Move everything alive now (the loaded KGs and indexes, the built server) out of the garbage
    collector's view; returns how many objects that is. A full collection otherwise re-scans all of
    them — on MetaQA ~425k objects, ~380 ms that land in some request's or question's latency
    (docs/scale.md). Call once, after loading and before serving or answering; objects created later
    (sessions, per-call garbage) are collected as usual.

    Full collections wait for ten times as many younger ones (:data:`FULL_COLLECTION_EVERY`): with
    the loaded objects frozen, Python's rule that a full collection waits until a quarter of the
    long-lived objects are new no longer holds it back, and one would run every ~70k allocations,
    each re-scanning the caches (result pages, links, labels) — a seventh of a three-KG question's
    time (docs/scale.md). Young collections wait for 10,000 new objects, not 700
    (:data:`YOUNG_COLLECTION_EVERY`): a remote KG's answer parses into tens of thousands of
    short-lived rows at a time, and at 700 the collector walked them every few dozen rows — 13% of
    a three-KG question's CPU (docs/performance.md). Together a full collection comes every ~10M
    allocations, ~140 times rarer than Python's default. Acyclic garbage is freed at once as ever;
    cyclic garbage waits longer (measured over 1,500 remote reads and walks: RSS 99–100 MB at
    Python's thresholds, 101–103 MB at these, 3,690 objects left for a final collection)."""
    gc.collect()
    gc.freeze()
    gen0, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(max(gen0, YOUNG_COLLECTION_EVERY), gen1, max(gen2, FULL_COLLECTION_EVERY))
    return gc.get_freeze_count()


@dataclass
class System:
    """The KGs by name, ``graph`` (all of them answered as one, linked) and the strategies' shared
    services."""

    kgs: dict[str, Graph]
    graph: LinkedKG
    services: Services
    config: Config
    limits: Limits
    environment: Environment = field(default_factory=Environment)
    load_seconds: float | None = None

    @property
    def linker(self) -> Linker:
        return self.graph.linker

    async def aclose(self) -> None:
        """Close every KG: the linked graph holds them all, and one failing to close does not keep
        the others open."""
        await self.graph.aclose()


def assemble(
    kgs: Mapping[str, Graph],
    config: Config | None = None,
    limits: Limits | None = None,
    *,
    embedder_factory: Callable[[], Embedder] | None = None,
    llm_factory: Callable[[Any], LLM] | None = None,
    wait_for_builds: bool = False,
    environment: Environment | None = None,
) -> System:
    """Link open KGs by the config's rules (a bad rule: InvalidInput) and make the services with the
    config's retrieval settings, the environment's (None: this process's) where the config leaves
    one unset. ``wait_for_builds``: a benchmark waits for a missing index instead of being told to
    retry."""
    if not kgs:
        raise InvalidInput("no KG configured")
    for key, kg in kgs.items():
        if kg.name != key:  # IDs carry kg.name, so routing by prefix needs the two to agree
            raise InvalidInput(f"KG registered as {key!r} is named {kg.name!r}")
    config = config or Config()
    limits = limits or config.limits.to_limits()
    kgs = dict(kgs)
    graph = LinkedKG(kgs, Linker.configured(kgs, config.link, config.linking), limits=limits)
    retrieval = config.retrieval
    environment = environment or Environment.read()
    if embedder_factory is None:
        backend, bulk = retrieval.embedder or environment.embedder, environment.bulk_embedder

        def embedder_factory() -> Embedder:
            from .embeddings import (
                Embedder,
                EmbeddingUnavailable,
                default_backend,
                default_bulk_backend,
            )

            try:
                return Embedder(backend=default_backend(backend), bulk=default_bulk_backend(bulk))
            except EmbeddingUnavailable as e:  # a tool answers "unavailable: <how to install it>"
                raise ServiceUnavailable(str(e)) from e

    services = Services(
        kgs,
        graph=graph,
        embedder_factory=embedder_factory,
        llm_factory=llm_factory,
        cache_dir=config._path(str(retrieval.cache_dir))
        if retrieval.cache_dir
        else environment.cache_dir,
        build_limit=retrieval.build_limit,
        wait_for_builds=wait_for_builds,
        cross_encoder_path=retrieval.cross_encoder_path or environment.cross_encoder_path,
        strategy_options=_checked_strategy_options(config.strategy),
    )
    return System(
        kgs=kgs,
        graph=graph,
        services=services,
        config=config,
        limits=limits,
        environment=environment,
    )


def _checked_strategy_options(tables: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """``[strategy.NAME]`` tables, each checked against its strategy's options at start-up (a
    misspelt strategy or option is an InvalidInput naming it, so the server does not start with a
    setting it ignores)."""
    from .registry import REGISTRY

    for name, options in tables.items():
        if name not in REGISTRY.names():
            raise InvalidInput(
                f"[strategy.{name}]: no strategy {name!r} (known: {', '.join(REGISTRY.names())})"
            )
        try:
            REGISTRY.get(name).parse_options(dict(options))
        except InvalidInput as e:
            raise InvalidInput(f"[strategy.{name}] in the config: {e}") from None
    return {k: dict(v) for k, v in tables.items()}


def open_configured(
    specs: Sequence[KGSpec] = (),
    config: Config | None = None,
    limits: Limits | None = None,
    *,
    cache_weight: int = DEFAULT_CACHE_WEIGHT,
    cache_ttl: float = DEFAULT_CACHE_TTL,
) -> dict[str, Graph]:
    """The KGs of ``specs`` (``--kg``; they win over the config's KG of the same name) and of
    ``config``, or the embedded movie KG when neither names one; those that do I/O behind one result
    cache. Files load here, once; anything a loader prints goes to stderr (the stdio protocol stream
    stays clean)."""
    config = config or Config()
    limits = limits or config.limits.to_limits()
    started = time.perf_counter()
    with contextlib.redirect_stdout(sys.stderr):
        try:
            kgs = open_kgs(
                list(specs), config, limits, cache_weight=cache_weight, cache_ttl=cache_ttl
            )
        except ImportError as e:
            raise InvalidInput(f"a KG backend is not available here: {e}") from None
    log.info("opened %d KG(s) in %.2fs", len(kgs), time.perf_counter() - started)
    return kgs


def content_stamp(specs: Sequence[KGSpec] = (), config: Config | None = None) -> str | None:
    """What identifies the served KGs' content across processes — each KG's kind and its file (path,
    size, newest modification) or endpoint URL — or None when some KG cannot say (then nothing made
    from them outlives the process). Result handles kept on disk are keyed by it: a changed file
    means its IDs may mean other things."""
    from importlib.metadata import PackageNotFoundError, version

    served = served_kgs(specs, config)
    parts = []
    for name in sorted(served):
        spec = served[name][0]
        target = spec.target
        if target is None:  # the embedded KG: its content is this release's
            try:
                parts.append(f"{name}={spec.kind}@{version('tot-mcp')}")
            except PackageNotFoundError:
                return None
        elif "://" in target:
            parts.append(f"{name}={spec.kind}:{target}")
        else:
            path = Path(target).expanduser()
            try:
                stats = (
                    [path.stat(), *(c.stat() for c in path.iterdir())]
                    if path.is_dir()
                    else [path.stat()]
                )
            except OSError:
                return None
            newest = max(st.st_mtime_ns for st in stats)
            parts.append(
                f"{name}={spec.kind}:{path.resolve()}:{sum(st.st_size for st in stats)}:{newest}"
            )
    return "|".join(parts)


def build_system(
    specs: Sequence[KGSpec] = (),
    config: Config | None = None,
    limits: Limits | None = None,
    **kwargs: Any,
) -> System:
    """:func:`open_configured` (given ``cache_weight`` and ``cache_ttl``), then :func:`assemble`
    (every other keyword)."""
    started = time.perf_counter()
    opening = {k: kwargs.pop(k) for k in ("cache_weight", "cache_ttl") if k in kwargs}
    kgs = open_configured(specs, config, limits, **opening)
    system = assemble(kgs, config, limits, **kwargs)
    system.load_seconds = time.perf_counter() - started
    return system
