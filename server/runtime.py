"""What the MCP tools need at run time: the configured KGs, the limits, and shared services created
on first use.

One ``Runtime`` per server process, passed explicitly to every tool registrar (no module-level
state). The expensive services (the sentence embedder, ~6 s to load; an LLM client) are created
lazily so that a server that is only asked ``get_edges`` never pays for them.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, cast


from tot_mcp.kg_adapters.base import Limits
from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.cache import DEFAULT_CACHE_TTL, DEFAULT_CACHE_WEIGHT
from tot_mcp.kg_adapters.environment import Environment
from tot_mcp.kg_adapters.errors import ServiceUnavailable, UnknownKG
from tot_mcp.kg_adapters.routing import LinkedKG
from tot_mcp.kg_adapters.spec import KGSpec

from tot_mcp.strategies.settings import Config
from tot_mcp.strategies.system import assemble, content_stamp, open_configured

from .handles import HandleStore

if TYPE_CHECKING:  # heavy imports only for type checkers
    from tot_mcp.kg_adapters.relation_names import RelationNames
    from tot_mcp.strategies.embeddings import Embedder
    from tot_mcp.strategies.llm.base import LLM

log = logging.getLogger("tot_mcp.runtime")


LLMFactory = Callable[[Mapping[str, Any], Any], "LLM"]


def llm_from_config(
    options: Mapping[str, Any], ctx: Any = None, environment: Environment | None = None
) -> "LLM":
    """Default LLM factory: the ``[llm]`` table's ``backend`` (anthropic, sampling, scripted) and
    ``model``, built by :func:`strategies.llm.factory.make_llm` (keys from ``environment``); ``ctx``
    is the MCP request context that sampling needs."""
    backend = str(options.get("backend") or "").strip()
    if not backend:
        raise ServiceUnavailable(
            'no LLM configured: add an [llm] table with backend = "anthropic" (or "sampling") '
            "to the --config file"
        )
    from tot_mcp.strategies.llm.base import LLMError
    from tot_mcp.strategies.llm.factory import make_llm

    try:
        return make_llm(
            backend,
            ctx=ctx,
            model=options.get("model"),
            options=dict(options),
            environment=environment,
        )
    except LLMError as e:
        raise ServiceUnavailable(str(e)) from e


class Runtime:
    """The KGs by name, ``graph`` (all of them answered as one, linked), and lazily created shared
    services."""

    def __init__(
        self,
        kgs: Mapping[str, Graph],
        limits: Limits | None = None,
        config: Config | None = None,
        *,
        embedder_factory: Callable[[], "Embedder"] | None = None,
        llm_factory: LLMFactory | None = None,
        stamp: str | None = None,
        environment: Environment | None = None,
    ) -> None:
        self._llm: LLM | None = None
        self._llm_spent: Counter[str] = (
            Counter()
        )  # LLM calls each client made on the operator's key
        # the composition root links the KGs (the one place that decides which KG answers a call)
        # and makes the strategies' one services object: models, per-KG indexes, what policies keep
        # between calls
        self.system = assemble(
            kgs,
            config,
            limits or Limits(),
            embedder_factory=embedder_factory,
            llm_factory=self.llm,
            environment=environment,
        )
        #: the variables the system was built with (LLM keys are looked up in it when an LLM is
        #: first asked for)
        self.environment = self.system.environment
        self._llm_factory = llm_factory or partial(llm_from_config, environment=self.environment)
        self.kgs: dict[str, Graph] = self.system.kgs
        self.limits = self.system.limits
        self.config = self.system.config
        self.graph = self.system.graph
        self.services = self.system.services
        server = self.config.server
        fingerprint = json.dumps(
            [
                sorted((n, k.backend) for n, k in self.kgs.items()),
                [r.describe() for r in self.graph.linker.rules],
            ]
        )
        # with the content's stamp, handles are kept on disk too, for later processes serving the
        # same KGs
        self.handles = HandleStore(
            fingerprint + (stamp or ""),
            server.handles,
            server.handle_ttl,
            path=self.services.cache_dir / "handles.sqlite" if stamp else None,
        )
        self.load_seconds: float | None = None
        self._relation_names: Any = None
        self._relation_examples: dict[str, str] | None = None
        #: drawn search trees for the MCP Apps view (server.tree_view registers them; None: no apps
        #: on this server)
        self.tree_views: Any = None

    # -- construction ------------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        specs: Sequence[KGSpec] = (),
        limits: Limits | None = None,
        config: Config | None = None,
        *,
        cache_weight: int = DEFAULT_CACHE_WEIGHT,
        cache_ttl: float = DEFAULT_CACHE_TTL,
        **kwargs: Any,
    ) -> "Runtime":
        """Open the KGs of ``specs`` (``--kg``) and of ``config`` (``--config``; ``--kg`` wins for a
        name), or the embedded movie KG if neither names one. Loading files happens here, once.
        Anything printed while loading goes to stderr, so a noisy loader can never corrupt the stdio
        protocol stream."""
        t0 = time.perf_counter()
        config = config or Config()
        limits = limits or config.limits.to_limits()
        kgs = open_configured(specs, config, limits, cache_weight=cache_weight, cache_ttl=cache_ttl)
        kwargs.setdefault(
            "stamp", content_stamp(specs, config)
        )  # result handles then outlive the process
        runtime = cls(
            kgs, limits, config, **kwargs
        )  # a bad link rule is an InvalidInput here (exit 2)
        runtime.load_seconds = time.perf_counter() - t0
        return runtime

    # -- routing -----------------------------------------------------------------------------------
    def kg(self, name: str) -> Graph:
        try:
            return self.kgs[name]
        except KeyError:
            raise UnknownKG(f"no KG named {name!r}; configured: {', '.join(self.kgs)}") from None

    def select(self, kg: str | None) -> LinkedKG:
        """``None`` or ``"all"`` → every KG, linked; else the one named (or several,
        comma-separated, still linked)."""
        if kg is None or not kg.strip() or kg.strip() == "all":
            return self.graph
        names = [name.strip() for name in kg.split(",") if name.strip()]
        for name in names:
            self.kg(name)
        return self.graph.select(names) if names else self.graph

    async def relation_names(self) -> "RelationNames":
        """Short names of every KG's relations (``initialize`` lists them, the path tools accept
        them); asked once, again only after a KG could not be asked."""
        from tot_mcp.kg_adapters.relation_names import RelationNames

        names = self._relation_names
        if names is None or not names.by_kg.keys() >= self.kgs.keys():
            names = self._relation_names = await RelationNames.of(self.graph)
        return names

    async def relation_examples(self) -> dict[str, str]:
        """One example edge per relation of a small vocabulary (``Forrest Gump → Tom Hanks``), asked
        once."""
        from tot_mcp.kg_adapters.relation_names import relation_examples

        if self._relation_examples is None:
            self._relation_examples = await relation_examples(
                self.graph, await self.relation_names()
            )
        return self._relation_examples

    async def relation_id(self, relation: str) -> str:
        """The relation ID a tool argument stands for: an ID of a configured KG as it is (no I/O),
        else the one relation with that name (InvalidInput when none or several)."""
        if ":" in relation and relation.split(":", 1)[0] in self.kgs:
            return relation
        return (await self.relation_names()).resolve(relation)

    # -- shared services ---------------------------------------------------------------------------
    def _llm_options(self) -> dict[str, Any]:
        """The ``[llm]`` table as a backend's options (the client share is the server's, not the
        backend's)."""
        return self.config.llm.model_dump(exclude_none=True, exclude={"client_calls"})

    def client_llm(self, kind: str, client: str) -> "LLM":
        """The operator's LLM for one tool call of ``client``: only the configured ``[llm]``
        backend, and each completion charged to the client before it is sent, refused once its share
        (``[llm] client_calls``) is spent — so concurrent calls cannot overrun it. The key is the
        operator's: a client may not make the server pay for models it was not set up to run."""
        from mcp.server.mcpserver.exceptions import ToolError

        if self.config.llm.backend != kind:
            raise ToolError(
                f"llm={kind!r} would run on this server's own API key, which its operator "
                f'has not opened to clients ([llm] backend = "{kind}"); use '
                "llm='sampling' (your own model) or 'offline'"
            )
        budget = self.config.llm.client_calls
        spent = (
            f"llm={kind!r}: this client has used its {budget} LLM calls on this server's key; use "
            "llm='sampling' (your own model) or 'offline'"
        )
        if self._llm_spent[client] >= budget:
            raise ToolError(spent)

        def charge() -> None:
            if self._llm_spent[client] >= budget:
                from tot_mcp.strategies.llm.base import LLMError

                raise LLMError(spent)
            self._llm_spent[client] += 1

        try:
            inner = self._llm_factory(self._llm_options(), None)
        except ServiceUnavailable as e:  # the fix (a key, a flag) is the operator's: log it
            log.warning("llm=%r asked for by a client: %s", kind, e)
            reason = str(e).split(";")[0]  # the backend's reason, without the operator's fix
            raise ToolError(
                f"llm={kind!r} is not usable on this server ({reason}); use llm='sampling' "
                "(your own model) or 'offline'"
            ) from None
        # an LLM by duck typing: complete is charged, the rest is the backend's (__getattr__)
        return cast("LLM", _Charged(inner, charge))

    def llm(self, ctx: Any = None) -> "LLM":
        """The LLM backend chosen by the ``[llm]`` config table. Backends that do not depend on the
        request context are created once and shared (so their usage counters add up); ``ctx`` is
        passed for sampling."""
        options = self._llm_options()
        if ctx is not None and options.get("backend") == "sampling":
            return self._llm_factory(options, ctx)
        if self._llm is None:
            self._llm = self._llm_factory(options, None)
        return self._llm

    async def aclose(self) -> None:
        self.handles.close()
        for kg in self.kgs.values():
            try:
                await kg.aclose()
            except Exception:  # closing must not hide the reason we are shutting down
                log.exception("closing KG %s failed", kg.name)


class _Charged:
    """An LLM whose every completion is charged first (:meth:`Runtime.client_llm`); the rest is the
    backend's own (its name, its usage counts, which are this call's alone: a backend is made per
    call)."""

    def __init__(self, inner: "LLM", charge: Callable[[], None]) -> None:
        self._inner = inner
        self._charge = charge

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._inner, attr)

    async def complete(self, prompt: str, **kwargs: Any) -> str:
        self._charge()
        return await self._inner.complete(prompt, **kwargs)
