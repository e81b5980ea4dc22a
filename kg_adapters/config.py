"""The ``--config FILE`` TOML: which KGs to open (with backend options), how they link, limits, server, LLM.

Example::

    [kg.wd]
    spec = "wikidata"
    timeout = 30                      # anything but `spec` goes to the backend's opener
    sparql_query = false              # except this: no caller-written SPARQL here (the guarded tool is on by default)

    [kg.mb]
    spec = "data/musicbrainz.ttl"
    backend = "oxigraph"
    store = "data/mb.store"

    [kgs]                             # shorthand: NAME = "SPEC", no options
    movies = "embedded"

    [[link]]
    from_kg = "wd"
    to_kg = "mb"
    kind = "property"
    relation = "P434"
    template = "https://musicbrainz.org/artist/{value}"

    [limits]
    max_edges = 100

    [server]
    transport = "http"
    host = "127.0.0.1"
    port = 8000
    token_env = "TOT_MCP_TOKEN"

    [llm]
    backend = "anthropic"
    model = "claude-sonnet-4-5"

    [linking]                         # optional: enabled = false, or label-link only some pairs
    pairs = [["wd", "mb"]]

Relative paths in ``spec`` and ``store`` are resolved against the config file's directory. When several KGs are
served they are linked (:mod:`kg_adapters.linking`): by the ``[[link]]`` rules if there are any, else by label.
"""

from __future__ import annotations

import tomllib
from dataclasses import replace
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .base import KnowledgeGraph, Limits
from .cache import DEFAULT_CACHE_TTL, with_result_cache
from .linking import LinkingConfig, LinkRule
from .embedded import DEFAULT_KG_NAME
from .errors import InvalidInput
from .models import KG_NAME_RE
from .spec import KGSpec, make_spec, open_kg

_PATH_OPTIONS = ("store",)
MAX_CONFIG_BYTES = 1 << 20
# Per-KG switch for caller-written SPARQL (the sparql_query tool), any backend: on by default where the backend
# answers SPARQL; `sparql_query = false` in a [kg.NAME] table turns it off for that KG.
SPARQL_QUERY_KEY = "sparql_query"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class KGConfig(_Strict):
    """One ``[kg.NAME]`` table: ``spec`` plus backend options passed through to the opener."""

    model_config = ConfigDict(extra="allow", frozen=True)
    spec: str

    @property
    def options(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class LimitsConfig(_Strict):
    max_ids: int | None = Field(default=None, ge=1)
    max_relations: int | None = Field(default=None, ge=1)
    max_edges: int | None = Field(default=None, ge=1)
    max_search: int | None = Field(default=None, ge=1)
    max_query_chars: int | None = Field(default=None, ge=1)

    def to_limits(self) -> Limits:
        return Limits(**{k: v for k, v in self.model_dump().items() if v is not None})


class ServerConfig(_Strict):
    transport: Literal["stdio", "http"] | None = None
    host: str | None = None
    port: int | None = Field(default=None, ge=0, le=65535)
    token_env: str | None = Field(default=None, description="Name of the environment variable holding the token.")
    log_level: str | None = None
    handles: int | None = Field(default=None, ge=1, description="Result handles kept (default 2000).")
    # inf: handles that never expire
    handle_ttl: float | None = Field(default=None, gt=0, allow_inf_nan=False,
                                     description="Seconds a result handle lives (default 3600).")
    stateless: bool | None = Field(default=None, description="HTTP: no sessions, any process answers any request.")
    allowed_hosts: list[str] | None = Field(default=None, description="HTTP: Host header values accepted besides "
                                                                      "the bind address ('*': any).")
    max_sessions: int | None = Field(default=None, ge=1, description="HTTP: 2025-era sessions open at once (default "
                                     "1000); at the limit the one idle longest, or never used after its handshake, "
                                     "is ended to admit a new client.")
    max_sessions_per_client: int | None = Field(default=None, ge=1, description="HTTP: 2025-era sessions one peer "
                                                "address may hold (default 100); its next one ends its own idle or "
                                                "half-open session.")
    header_timeout: float | None = Field(default=None, gt=0, le=3600, description="HTTP: seconds a connection has "
                                         "to send a request's headers (default 10).")
    body_timeout: float | None = Field(default=None, gt=0, le=3600, description="HTTP: seconds a request has to "
                                       "send its body (default 30).")
    max_calls_per_client: int | None = Field(default=None, ge=1, le=10_000, description="Tool calls one client (an "
                                             "HTTP session, a stateless peer address, the stdio client) may have "
                                             "in flight (default 16); one more is refused with a one-line error.")
    tools: Literal["default", "all"] | None = Field(default=None, description="The tools clients see: default (the "
                                                    "model's 10) or all (each strategy with its knobs, operator "
                                                    "tools).")


class LLMConfig(_Strict):
    backend: str | None = None
    model: str | None = None
    base_url: str | None = Field(default=None, description="openai / anthropic: the API's base URL.")
    timeout: float | None = Field(default=None, gt=0, allow_inf_nan=False,
                                  description="Seconds per LLM request.")
    max_retries: int | None = Field(default=None, ge=0, description="Retries after a transient LLM failure.")
    client_calls: int | None = Field(default=None, ge=0, description="LLM calls one MCP client may spend on this "
                                     "backend, the operator's key, over the server's life (default 200; 0: none). "
                                     "tree_of_traversals runs anthropic/openai for clients only when it is the "
                                     "configured backend.")


class RetrievalConfig(_Strict):
    embedder: Literal["minilm-int8", "minilm"] | None = Field(
        default=None, description="The sentence embedder: minilm-int8 (ONNX, the default; no torch) or minilm "
                                  "(torch; pip install 'tot-mcp[torch]'). Default: $TOT_MCP_EMBEDDER, else minilm-int8.")
    cache_dir: Path | None = Field(default=None, description="On-disk index cache (default $TOT_MCP_CACHE_DIR or "
                                                            "$XDG_CACHE_HOME/tot-mcp).")
    cross_encoder_path: str | None = Field(default=None, description="A local sentence-transformers CrossEncoder "
                                                                     "directory for rerank's second stage.")
    build_limit: int | None = Field(default=None, ge=0, description="Entities up to which a missing index is built "
                                                                     "within the call (default 5000); above, it is "
                                                                     "built in the background.")


class Config(_Strict):
    kg: dict[str, KGConfig] = Field(default_factory=dict)
    kgs: dict[str, str] = Field(default_factory=dict, description="Shorthand NAME = SPEC tables.")
    link: list[LinkRule] = Field(default_factory=list)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    server: ServerConfig = Field(default_factory=ServerConfig)
    llm: LLMConfig = Field(default_factory=LLMConfig)
    linking: LinkingConfig = Field(default_factory=LinkingConfig)
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    strategy: dict[str, dict[str, Any]] = Field(default_factory=dict, description="[strategy.NAME]: the options of "
                                                "one strategy (tot-search --method NAME), e.g. [strategy.ark] "
                                                "max_depth = 2; what clients and tot-search runs then start from.")
    base_dir: Path | None = Field(default=None, exclude=True)

    @field_validator("kg", "kgs")
    @classmethod
    def _names(cls, v: dict) -> dict:
        for name in v:
            if not KG_NAME_RE.match(name):
                raise ValueError(f"KG name {name!r}: use a letter then letters, digits, '_' or '-' (max 32)")
        return v

    def specs(self) -> list[tuple[KGSpec, dict[str, Any]]]:
        """Every configured KG as (spec, options), paths resolved against the config's directory."""
        out = []
        for name in self.kgs:
            if name in self.kg:
                raise InvalidInput(f"KG {name!r} is configured twice ([kgs] and [kg.{name}])")
        entries = [(n, KGConfig(spec=s)) for n, s in self.kgs.items()] + list(self.kg.items())
        for name, entry in entries:
            opts = entry.options
            for key in _PATH_OPTIONS:
                if isinstance(opts.get(key), str) and opts[key] != "memory":
                    opts[key] = str(self._path(opts[key]))
            out.append((make_spec(name, entry.spec, self.base_dir), opts))
        return out

    def _path(self, p: str) -> Path:
        path = Path(p).expanduser()
        return path if path.is_absolute() or self.base_dir is None else self.base_dir / path


def _describe(e: ValidationError, source: str) -> str:
    parts = []
    for err in e.errors()[:5]:
        where = ".".join(str(x) for x in err["loc"]) or "(top level)"
        msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
        parts.append(f"{where}: {msg}")
    return f"{source}: " + "; ".join(parts)


def parse_config(data: dict[str, Any], source: str = "config", base_dir: Path | None = None) -> Config:
    try:
        return Config.model_validate({**data, "base_dir": base_dir})
    except ValidationError as e:
        raise InvalidInput(_describe(e, source)) from None


def load_config(path: str | Path) -> Config:
    """Read and validate a TOML config; every problem is an InvalidInput naming the file and the key."""
    path = Path(path).expanduser()
    if path.exists() and not path.is_file():  # a directory, a FIFO, /dev/zero: never read until memory runs out
        raise InvalidInput(f"{path}: not a regular file")
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_CONFIG_BYTES + 1)
        if len(raw) > MAX_CONFIG_BYTES:
            raise InvalidInput(f"{path}: larger than {MAX_CONFIG_BYTES // 1024} KiB; a config file is a few lines")
        data = tomllib.loads(raw.decode("utf-8"))
    except FileNotFoundError:
        raise InvalidInput(f"{path}: no such config file") from None
    except OSError as e:
        raise InvalidInput(f"{path}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise InvalidInput(f"{path}: invalid TOML: {e}") from None
    except UnicodeDecodeError:
        raise InvalidInput(f"{path}: not UTF-8 text") from None
    return parse_config(data, str(path), path.resolve().parent)


def served_kgs(specs: Sequence[KGSpec] = (), config: Config | None = None) -> dict[str, tuple[KGSpec, dict[str, Any]]]:
    """The KGs a system serves, by name, with their options: the config's, then ``specs`` (``--kg``), each
    replacing the config's KG of its name, options and all; with neither, the embedded movie KG. Opening the KGs
    and stamping their content both start here, so the two never disagree on which KGs those are."""
    names = [s.name for s in specs]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise InvalidInput(f"KG name {duplicated[0]!r} is given twice")
    wanted: dict[str, tuple[KGSpec, dict[str, Any]]] = {s.name: (s, o) for s, o in (config or Config()).specs()}
    wanted.update((s.name, (s, {})) for s in specs)
    if not wanted:
        wanted[DEFAULT_KG_NAME] = (make_spec(DEFAULT_KG_NAME, "embedded"), {})
    return wanted


def open_kgs(
    specs: Sequence[KGSpec] | None = None, config: Config | None = None, limits: Limits | None = None, *,
    cache_weight: int = 0, cache_ttl: float = DEFAULT_CACHE_TTL,
) -> dict[str, KnowledgeGraph]:
    """Open the KGs :func:`served_kgs` names, with a result cache of ``cache_weight`` in front of those that do
    I/O (0: none). Opened in order; if one fails, the error propagates and nothing after it is opened."""
    config = config or Config()
    limits = limits or config.limits.to_limits()
    kgs: dict[str, KnowledgeGraph] = {}
    for name, (spec, opts) in served_kgs(specs or (), config).items():
        opts = dict(opts)
        sparql_on = opts.pop(SPARQL_QUERY_KEY, True)
        if not isinstance(sparql_on, bool):
            raise InvalidInput(f"[kg.{name}]: {SPARQL_QUERY_KEY} must be true or false, got {sparql_on!r}")
        kgs[name] = open_kg(spec, limits, **opts)
        if not sparql_on and kgs[name].capabilities.sparql:  # the backend could; the config says no
            kgs[name].capabilities = replace(kgs[name].capabilities, sparql=False)
    return with_result_cache(kgs, cache_weight, cache_ttl)

