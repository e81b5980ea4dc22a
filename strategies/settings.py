"""The ``--config FILE`` TOML as one model, :class:`Config`: the graph tables
(:mod:`kg_adapters.config`) plus what the composition root (:mod:`strategies.system`) and the
server need — ``[server]``, ``[llm]``, ``[retrieval]``, ``[strategy.NAME]``. Every default is spelt
here, in the models, once; flags and code read it from them. docs/configuration.md is generated
from these models (``python -m scripts.config_doc --write``).

Errors name the key as written and, for a misspelt one, the nearest valid key.
"""

from __future__ import annotations

import difflib
import tomllib
import types
import typing
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError, field_validator
from pydantic_core import ErrorDetails

from tot_mcp.kg_adapters.config import GraphConfig
from tot_mcp.kg_adapters.errors import InvalidInput

MAX_CONFIG_BYTES = 1 << 20
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ServerConfig(_Strict):
    """``[server]``: how clients reach the server and what each may hold (a flag of the same name
    wins)."""

    transport: Literal["stdio", "http"] = Field(
        default="stdio", description="stdio (a client starts the server) or http (streamable HTTP)."
    )
    host: str = Field(default="127.0.0.1", description="HTTP: the address to bind.")
    port: int = Field(
        default=8000, ge=0, le=65535, description="HTTP: the port (0: any free port)."
    )
    token_env: str | None = Field(
        default=None,
        description="HTTP: the environment variable holding the bearer token clients "
        "must send (besides $TOT_MCP_TOKEN and --token).",
    )
    log_level: str = Field(
        default="WARNING", description="The stderr log level: " + ", ".join(LOG_LEVELS) + "."
    )
    handles: int = Field(default=2000, ge=1, description="Result handles (from_result) kept.")
    handle_ttl: float = Field(
        default=3600.0, gt=0, allow_inf_nan=False, description="Seconds a result handle lives."
    )
    stateless: StrictBool = Field(
        default=False,
        description="HTTP: no sessions, so any process behind a load balancer answers "
        "any request (no sampling back-channel then).",
    )
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="HTTP: Host header values accepted besides the bind address "
        "('name', 'name:port', 'name:*', '*': any); needed behind a reverse proxy.",
    )
    max_sessions: int = Field(
        default=1000,
        ge=1,
        description="HTTP: 2025-era sessions open at once; at the limit the one idle "
        "longest, or never used after its handshake, is ended to admit a new client.",
    )
    max_sessions_per_client: int = Field(
        default=100,
        ge=1,
        description="HTTP: 2025-era sessions one peer address may hold; its next one "
        "ends its own idle or half-open session.",
    )
    header_timeout: float = Field(
        default=10.0,
        gt=0,
        le=3600,
        description="HTTP: seconds a connection has to send a request's headers.",
    )
    body_timeout: float = Field(
        default=30.0, gt=0, le=3600, description="HTTP: seconds a request has to send its body."
    )
    max_calls_per_client: int = Field(
        default=16,
        ge=1,
        le=10_000,
        description="Tool calls one client (an HTTP session, a stateless peer address, the stdio "
        "client) may have in flight; one more is refused with a one-line error.",
    )
    tools: Literal["default", "all"] = Field(
        default="default",
        description="The tools clients see: default (what a model needs) or all (each "
        "strategy with its knobs, build_index, router_stats).",
    )

    @field_validator("log_level")
    @classmethod
    def _level(cls, v: str) -> str:
        if v.upper() not in LOG_LEVELS:
            raise ValueError(f"use one of {', '.join(LOG_LEVELS)}")
        return v.upper()


class LLMConfig(_Strict):
    """``[llm]``: the server's own LLM, for strategies that need one."""

    backend: str | None = Field(
        default=None,
        description="anthropic, openai, sampling (the client's model) or scripted; unset: "
        "no server-side LLM (tools that need one say so).",
    )
    model: str | None = Field(
        default=None, description="The backend's model name (unset: its default)."
    )

    @field_validator("backend")
    @classmethod
    def _known(cls, v: str | None) -> str | None:
        """A misspelt backend is refused at start-up, not at the first call that needs it."""
        from tot_mcp.strategies.llm.factory import LLMS

        if v is None or v in LLMS:
            return v
        near = _nearest(v, LLMS.names(), cutoff=0.75)  # few, short names: only a near typo
        hint = f"; did you mean {near}?" if near else ""
        raise ValueError(f"no LLM backend {v!r}{hint} (known: {', '.join(LLMS.names())})")

    base_url: str | None = Field(
        default=None, description="openai / anthropic: the API's base URL."
    )
    timeout: float | None = Field(
        default=None,
        gt=0,
        allow_inf_nan=False,
        description="Seconds per LLM request (unset: the backend's).",
    )
    max_retries: int | None = Field(
        default=None,
        ge=0,
        description="Retries after a transient LLM failure (unset: the backend's).",
    )
    client_calls: int = Field(
        default=200,
        ge=0,
        description="LLM calls one MCP client may spend on this backend, the operator's key, over "
        "the server's life (0: none). tree_of_traversals runs anthropic/openai for clients only "
        "when it is the configured backend.",
    )


class RetrievalConfig(_Strict):
    """``[retrieval]``: the embedder and indexes behind semantic search and the strategies."""

    embedder: Literal["minilm-int8", "minilm"] | None = Field(
        default=None,
        description="The sentence embedder: minilm-int8 (ONNX, no torch) or minilm (torch; "
        "pip install 'tot-mcp[torch]'). Unset: $TOT_MCP_EMBEDDER, else minilm-int8.",
    )
    cache_dir: Path | None = Field(
        default=None,
        description="On-disk cache of indexes, result handles and stores (relative: to the "
        "config file). Unset: $TOT_MCP_CACHE_DIR, else $XDG_CACHE_HOME/tot-mcp.",
    )
    cross_encoder_path: str | None = Field(
        default=None,
        description="A local sentence-transformers CrossEncoder directory for rerank's second "
        "stage. Unset: $TOT_MCP_CROSS_ENCODER, else none.",
    )
    build_limit: int = Field(
        default=5000,
        ge=0,
        description="Entities up to which a missing index is built within the call; "
        "above, it is built in the background and the call says to retry.",
    )


#: every [server] default, for code that runs without a config (its constants are read from here)
SERVER_DEFAULTS = ServerConfig()


class Config(GraphConfig):
    """The whole ``--config`` file."""

    server: ServerConfig = Field(default_factory=ServerConfig)
    llm: LLMConfig = Field(default_factory=LLMConfig)
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    strategy: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="[strategy.NAME]: the options of one strategy (tot-search --method NAME), "
        "e.g. [strategy.ark] max_depth = 2; what clients and tot-search runs then start from.",
    )


# -- errors in words ---------------------------------------------------------------------------
_EXPECTED = {  # pydantic error type -> what the key should hold, in words
    "string_type": "a string in quotes",
    **dict.fromkeys(("int_type", "int_parsing", "int_from_float"), "a whole number"),
    **dict.fromkeys(("float_type", "float_parsing"), "a number"),
    **dict.fromkeys(("bool_type", "bool_parsing"), "true or false"),
    **dict.fromkeys(("dict_type", "model_type", "model_attributes_type"), "a table"),
    **dict.fromkeys(("list_type", "tuple_type"), "a list [...]"),
    "finite_number": "a finite number",
}


def _given(value: Any) -> str:
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "a list"
    return repr(value)


def _unwrap(tp: Any) -> Any:
    """``X | None`` → X."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return args[0] if len(args) == 1 else tp
    return tp


def _model_at(loc: tuple) -> type[BaseModel] | None:
    """The model whose fields are valid at ``loc`` (the location of a key), if the keys there are
    a model's."""
    tp: Any = Config
    for part in loc[:-1]:
        tp = _unwrap(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            field = tp.model_fields.get(str(part))
            if field is None:
                return None
            tp = field.annotation
        elif typing.get_origin(tp) in (dict, list):
            tp = typing.get_args(tp)[-1]
        else:
            return None
    tp = _unwrap(tp)
    return tp if isinstance(tp, type) and issubclass(tp, BaseModel) else None


def _nearest(word: str, choices: list[str], cutoff: float = 0.6) -> str | None:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=cutoff)
    return close[0] if close else None


def _at(data: Any, loc: tuple) -> Any:
    for part in loc:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return None
    return data


def _one_error(err: ErrorDetails, data: dict) -> str:
    loc = tuple(err["loc"])
    where = ".".join(str(x) for x in loc) or "(top level)"
    kind = err["type"]
    if kind == "extra_forbidden":
        model = _model_at(loc)
        near = _nearest(str(loc[-1]), list(model.model_fields)) if model else None
        return f"{where}: unknown key" + (f"; did you mean {near}?" if near else "")
    if kind == "missing":
        table = _at(data, loc[:-1])
        written = [k for k in table if isinstance(k, str)] if isinstance(table, dict) else []
        near = _nearest(str(loc[-1]), written)
        if near:
            written_as = ".".join(map(str, (*loc[:-1], near)))
            return f"{where}: missing; {written_as} is there — a misspelling of {loc[-1]}?"
        return f"{where}: missing (required)"
    if kind in _EXPECTED:
        text = f"{where}: expected {_EXPECTED[kind]}, got {_given(err.get('input'))}"
        if loc[:1] == ("kgs",) and isinstance(err.get("input"), dict):
            text += (
                f' ([kgs] holds NAME = "SPEC" lines; a KG with options is a [kg.{loc[-1]}] table)'
            )
        return text
    if kind == "value_error":  # a validator's own message, without pydantic's "Value error, "
        return f"{where}: {err.get('ctx', {}).get('error', err['msg'])}"
    return f"{where}: {err['msg']}"


def describe_error(e: ValidationError, source: str, data: dict) -> str:
    """One line for a config's validation errors (up to 5), each naming the key as written."""
    return f"{source}: " + "; ".join(_one_error(err, data) for err in e.errors()[:5])


def parse_config(
    data: dict[str, Any], source: str = "config", base_dir: Path | None = None
) -> Config:
    try:
        return Config.model_validate({**data, "base_dir": base_dir})
    except ValidationError as e:
        raise InvalidInput(describe_error(e, source, data)) from None


def load_config(path: str | Path) -> Config:
    """Read and validate a TOML config; every problem is an InvalidInput naming the file and the
    key."""
    path = Path(path).expanduser()
    if path.exists() and not path.is_file():  # a directory, a FIFO, /dev/zero: never read it all
        raise InvalidInput(f"{path}: not a regular file")
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_CONFIG_BYTES + 1)
        if len(raw) > MAX_CONFIG_BYTES:
            raise InvalidInput(
                f"{path}: larger than {MAX_CONFIG_BYTES // 1024} KiB; a config file is a few lines"
            )
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
