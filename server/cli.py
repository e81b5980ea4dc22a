"""``tot-mcp``: serve knowledge graphs over MCP (stdio by default, or streamable HTTP), or check a
configuration.

Precedence: command-line flags > ``--config`` TOML > environment variables
(:mod:`kg_adapters.environment`) > built-in defaults. ``--kg`` and the config's KGs are
combined (``--kg`` wins for a name); with neither, the embedded MetaQA movie KG is served as
``movies``. Bad input never shows a traceback: one message on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import logging
import os
import re
import sys
from dataclasses import fields
from functools import partial
from pathlib import Path
from typing import Any, NoReturn

from tot_mcp.kg_adapters.base import Limits
from tot_mcp.kg_adapters.cache import DEFAULT_CACHE_TTL, DEFAULT_CACHE_WEIGHT
from tot_mcp.kg_adapters.environment import TOKEN as TOKEN_ENV, Environment
from tot_mcp.kg_adapters.errors import KGError
from tot_mcp.kg_adapters.sameness import with_flags
from tot_mcp.kg_adapters.spec import parse_kg_args
from tot_mcp.strategies.settings import LOG_LEVELS, SERVER_DEFAULTS, Config, load_config
from tot_mcp.strategies.system import freeze_loaded_objects

from . import __version__

EXIT_USAGE = 2

# Subcommands dispatched on argv[1] before option parsing: name -> "module:function" taking argv[2:]
# and returning an exit code.
SUBCOMMANDS: dict[str, str] = {
    "load": "tot_mcp.kg_adapters.bulk_load:main"
}  # tot-mcp load FILES --into STORE

#: flags that stand for the ``[server]`` setting of the same name (given: over the config's value)
SERVER_FLAGS = (
    "handles",
    "handle_ttl",
    "tools",
    "transport",
    "host",
    "port",
    "stateless",
    "allowed_hosts",
    "log_level",
)
LIMIT_FLAGS = {  # flag -> (Limits field, help)
    "--max-ids": ("max_ids", "entity IDs per call"),
    "--max-relations": ("max_relations", "relations per get_relations result"),
    "--max-edges": ("max_edges", "edges per get_edges page"),
    "--max-search": ("max_search", "entities per initialize/search_entities result"),
    "--max-query-chars": ("max_query_chars", "characters in a query"),
}


class UsageError(Exception):
    """Bad command line or configuration: reported as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not usage + message
        raise UsageError(f"{message} (see tot-mcp --help)")


def _int_at_least(minimum: int):
    """An argparse type: an integer ≥ ``minimum``, with a message that says which rule was
    broken."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text} must be ≥ {minimum}")
        return value

    return parse


_positive = _int_at_least(1)
_nonnegative = _int_at_least(0)


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"port {text!r} is not an integer") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(
            f"port {value} is out of range 0-65535 (0 = any free port)"
        )
    return value


_HOST_RE = re.compile(
    r"^(\*|\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?)(:(\*|[0-9]{1,5}))?$"
)


def _allowed_host(text: str) -> str:
    """An argparse type for ``--allowed-host``: a Host header value as a client sends it through a
    proxy — ``name``, ``name:port``, ``name:*`` (any port), ``[v6]:port``, or ``*`` (accept any
    Host)."""
    value = text.strip()
    if "://" in value or "/" in value:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give the host name as in the Host header (e.g. mcp.example.org "
            "or mcp.example.org:8443), not a URL"
        )
    m = _HOST_RE.match(value)
    if not m or (m.group(1) == "*" and m.group(3)):
        raise argparse.ArgumentTypeError(f"{text!r} is not a host name, host:port, host:* or *")
    port = m.group(4)
    if port and port != "*" and not 0 < int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r}: port {port} is out of range 1-65535")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="tot-mcp",
        description="Tree-of-Traversals knowledge-graph tools over MCP. With no arguments: serve "
        "the embedded MetaQA movie KG ('movies') over stdio.",
        epilog="Subcommands: "
        + ", ".join(f"tot-mcp {name} ... (tot-mcp {name} --help)" for name in SUBCOMMANDS),
    )
    p.add_argument(
        "--kg",
        action="append",
        default=[],
        metavar="[NAME=]SPEC",
        help="a KG to serve (repeatable; a bare SPEC is named after its file). SPEC: path to "
        "an RDF or .txt triples file, 'embedded', 'wikidata', 'wikidata:ENDPOINT_URL', "
        "'sparql:ENDPOINT_URL' or 'store:PATH'",
    )
    p.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="TOML configuration: [kg.NAME] / [kgs], [[link]], [limits], [server], "
        "[llm], ... (docs/configuration.md)",
    )
    p.add_argument(
        "--no-link",
        action="store_true",
        help=(
            "serve several KGs side by side, unlinked (default: linked by [[link]] rules, else by "
            "label)"
        ),
    )
    p.add_argument(
        "--link",
        action="append",
        default=[],
        metavar="A=B",
        help="label-link only these KG pairs (repeatable; default: every pair)",
    )
    p.add_argument(
        "--handles",
        type=_positive,
        default=None,
        metavar="N",
        help=f"result handles (from_result) kept (default {SERVER_DEFAULTS.handles})",
    )
    p.add_argument(
        "--handle-ttl",
        type=float,
        default=None,
        metavar="SECONDS",
        help=f"how long a result handle lives (default {SERVER_DEFAULTS.handle_ttl:g})",
    )
    p.add_argument(
        "--transport",
        choices=["stdio", "http"],
        default=None,
        help=f"default: {SERVER_DEFAULTS.transport}",
    )
    p.add_argument(
        "--host", default=None, help=f"HTTP bind address (default {SERVER_DEFAULTS.host})"
    )
    p.add_argument(
        "--port",
        type=_port,
        default=None,
        help=f"HTTP port (default {SERVER_DEFAULTS.port}; 0 = any free port)",
    )
    p.add_argument(
        "--token",
        default=None,
        help=f"require 'Authorization: Bearer TOKEN' on HTTP (default: env {TOKEN_ENV})",
    )
    p.add_argument(
        "--stateless",
        action="store_true",
        default=None,
        help="HTTP: keep no session between requests (2025-era clients too), so several processes "
        "can serve behind a load balancer without sticky sessions; no sampling back-channel then",
    )
    p.add_argument(
        "--allowed-host",
        dest="allowed_hosts",
        action="append",
        type=_allowed_host,
        default=None,
        metavar="HOST[:PORT]",
        help="HTTP: also accept requests whose Host header is HOST (any port unless given; "
        "repeatable; '*' = any). Needed behind a reverse proxy that forwards the public host name, "
        "which the DNS-rebinding protection otherwise answers with 421",
    )
    for flag, (field, help_text) in LIMIT_FLAGS.items():
        p.add_argument(
            flag,
            dest=field,
            type=_positive,
            default=None,
            metavar="N",
            help=f"max {help_text} (default {getattr(Limits(), field)})",
        )
    p.add_argument(
        "--cache-size",
        type=_nonnegative,
        default=DEFAULT_CACHE_WEIGHT,
        metavar="N",
        help="result cache for remote and on-disk KGs, in cached edges+entities "
        f"(0 = off; default {DEFAULT_CACHE_WEIGHT})",
    )
    p.add_argument(
        "--cache-ttl",
        type=float,
        default=DEFAULT_CACHE_TTL,
        metavar="SECONDS",
        help=f"how long a cached result stays valid (default {DEFAULT_CACHE_TTL:g})",
    )
    p.add_argument(
        "--log-level",
        default=None,
        type=str.upper,
        choices=LOG_LEVELS,
        help=f"stderr log level (default {SERVER_DEFAULTS.log_level})",
    )
    p.add_argument(
        "--tools",
        choices=["default", "all"],
        default=None,
        help="the tools clients see: default (what a model needs, ~7k characters of tool list) or "
        "all (each strategy with its algorithm knobs, build_index, router_stats)",
    )
    p.add_argument(
        "--check", action="store_true", help="load the KGs, print a summary of each and exit"
    )
    p.add_argument("--version", action="version", version=f"tot-mcp {__version__}")
    return p


# -- configuration ---------------------------------------------------------------------------------
def read_config(path: Path | None) -> Config:
    """The ``--config`` TOML, validated by :mod:`strategies.settings` (its errors name the file
    and key)."""
    return load_config(path) if path is not None else Config()


def resolve_limits(args: argparse.Namespace, config: Config) -> Limits:
    """``--max-*`` flags over the config's ``[limits]`` over the defaults."""
    values = config.limits.model_dump(exclude_none=True)
    values.update(
        {
            f.name: getattr(args, f.name)
            for f in fields(Limits)
            if getattr(args, f.name, None) is not None
        }
    )
    return Limits(**values)


def resolve_token(
    args: argparse.Namespace, config: Config, environment: Environment | None = None
) -> str | None:
    """``--token``, else ``$TOT_MCP_TOKEN``, else the variable named by the config's ``[server]
    token_env``."""
    return args.token or (environment or Environment.read()).token(config.server.token_env)


def _checked_host(value: Any) -> str:
    """An ``allowed_hosts`` entry from the config file, checked like ``--allowed-host``."""
    try:
        return _allowed_host(str(value))
    except argparse.ArgumentTypeError as e:
        raise UsageError(f"allowed host {e}") from None


def _configure_logging(level: str) -> None:
    """Logs go to stderr only: in stdio mode stdout belongs to the protocol."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(
        level
    )  # a library that sets its own logger to DEBUG (bm25s) still reaches us only from `level`
    handler.setFormatter(
        logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S")
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


def _unfinished_load(kg) -> str | None:
    """What a ``tot-mcp load`` left unfinished in the KG's on-disk store, if it has one."""
    from tot_mcp.kg_adapters.bulk_load import unfinished_load

    store = getattr(getattr(kg.store, "query_source", None), "store", None)
    return unfinished_load(Path(store)) if store else None


_EMPTY = (
    "the KG is empty (0 triples), so every call would find nothing; if it is a store, "
    "load it again (tot-mcp load FILES --into STORE)"
)


# -- commands --------------------------------------------------------------------------------------
async def run_check(runtime) -> int:
    """Print one block per KG (size, load time, relation sample) and the limits; non-zero if a KG
    fails."""
    from .render import render_kg_info

    failed = 0
    for name, kg in runtime.kgs.items():
        problem: KGError | str | None
        try:
            info = await kg.info()
        except KGError as e:
            problem = e
        else:  # unreachable, a store holding part of its data, or empty (after a failed load)
            empty = _EMPTY if info.triples == 0 else None
            problem = info.unreachable or _unfinished_load(kg) or empty
        if problem:
            failed += 1
            print(f"{name}: FAILED: {problem}")
        else:
            print(render_kg_info(info))
    linker = runtime.graph.linker
    for rule in linker.rules if len(runtime.kgs) > 1 else ():  # on a sample: linking none fails
        probe = await linker.probe(rule)
        print(probe.line())
        failed += probe.failed
    if runtime.load_seconds is not None and not failed:
        print(f"opened {len(runtime.kgs)} KG(s) in {runtime.load_seconds:.2f}s")
    print(
        "limits: "
        + " ".join(f"{field}={getattr(runtime.limits, field)}" for field, _ in LIMIT_FLAGS.values())
    )
    print("OK" if not failed else f"{failed} KG(s) or link rule(s) failed")
    await runtime.aclose()
    return 0 if not failed else 1


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code. When run as a program (``argv``
    None) and a server has finished serving, the process ends with ``os._exit``: tearing down a
    large in-memory KG object by object takes seconds, and a client waiting for the server to exit
    has nothing to gain from it."""
    as_program = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in SUBCOMMANDS:
        module, func = SUBCOMMANDS[argv[0]].split(":")
        return int(getattr(importlib.import_module(module), func)(argv[1:]) or 0)
    try:
        code, served = _main(argv, own_logging=as_program)
    except (UsageError, KGError) as e:
        print(f"tot-mcp: error: {e}", file=sys.stderr, flush=True)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    if served and as_program:
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _main(argv: list[str], own_logging: bool = True) -> tuple[int, bool]:
    """Returns (exit code, whether a server ran). ``own_logging``: set up stderr logging (not when
    embedded)."""
    args = build_parser().parse_args(argv)
    config = read_config(args.config)
    if args.handle_ttl is not None and not 0 < args.handle_ttl < float(
        "inf"
    ):  # nan and inf fail both
        raise UsageError("--handle-ttl must be a number of seconds > 0")
    flags = {k: getattr(args, k) for k in SERVER_FLAGS if getattr(args, k) is not None}
    hosts = flags.get("allowed_hosts", config.server.allowed_hosts)  # checked like the flag's
    flags["allowed_hosts"] = [_checked_host(h) for h in hosts]
    settings = config.server.model_copy(update=flags)
    linking = with_flags(config.linking, args.no_link, args.link)
    config = config.model_copy(update={"server": settings, "linking": linking})
    level = str(settings.log_level).upper()
    if level not in LOG_LEVELS:
        raise UsageError(f"log level {level!r}: use DEBUG, INFO, WARNING, ERROR or CRITICAL")
    if own_logging:
        _configure_logging(level)
    limits = resolve_limits(args, config)
    specs = parse_kg_args(args.kg)
    transport, host, port = settings.transport, settings.host, settings.port
    environment = Environment.read()  # once: everything below takes its values from here
    token = resolve_token(args, config, environment)

    from .runtime import Runtime

    runtime = Runtime.open(
        specs,
        limits,
        config,
        cache_weight=args.cache_size,
        cache_ttl=args.cache_ttl,
        environment=environment,
    )

    import anyio

    if args.check:
        return anyio.run(run_check, runtime), False

    from .app import build_server
    from .transports import LOOPBACK, bind_socket, serve_http, serve_stdio

    server = build_server(runtime)
    freeze_loaded_objects()
    if transport == "stdio":
        for flag, given in (
            ("--token", args.token),
            ("--stateless", args.stateless),
            ("--allowed-host", args.allowed_hosts),
        ):
            if given:
                print(f"tot-mcp: warning: {flag} only applies to --transport http", file=sys.stderr)
        try:
            anyio.run(serve_stdio, server)
        finally:
            anyio.run(runtime.aclose)
        return 0, True
    if not isinstance(port, int) or not 0 <= port <= 65535:
        raise UsageError(f"port {port!r} is out of range 0-65535")
    if host not in LOOPBACK and not token:
        print(
            f"tot-mcp: warning: serving on {host} without --token: anyone who can reach it can "
            "query the KGs",
            file=sys.stderr,
        )
    try:
        sock = bind_socket(host, port)
    except OSError as e:
        raise UsageError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    # uvloop when installed: HTTP's per-call cost is mostly event loop and stream plumbing (measured
    # with 10 clients on MetaQA: docs/scale.md)
    uvloop = {"use_uvloop": importlib.util.find_spec("uvloop") is not None}
    try:
        anyio.run(
            partial(
                serve_http,
                server,
                sock,
                token,
                settings,
                logging.getLevelName(logging.getLogger().level),
            ),
            backend_options=uvloop,
        )
    finally:
        anyio.run(runtime.aclose)
    return 0, True


if __name__ == "__main__":
    sys.exit(main())
