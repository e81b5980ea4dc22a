"""The one registry of KG backends: a spec's kind → the :class:`Backend` that opens it, with its
typed options.

A ``--kg NAME=SPEC`` (or a config's ``spec = …``) is ``KIND`` (``embedded``, ``wikidata``),
``KIND:TARGET`` (``sparql:URL``, ``wikidata:URL``, ``store:PATH``, or a third party's kind) or a
file path (kind ``file``). The backend says what its target is (nothing, an optional URL, a URL, a
path), which options it takes (a pydantic model with ``extra="forbid"``: a misspelt option is an
error naming the valid ones) and how it opens.

Modelled on rdflib's ``plugin.register`` (a name bound to ``"module:attribute"``, imported on first
use, so an unused backend's imports cost nothing) and simonw/llm's plugins: a third party adds a
backend with :func:`register`, or from its own distribution through the entry-point group
``tot_mcp.kg_backends`` (``neo4j = "my_pkg.backend:BACKEND"``). A new backend is one module defining
a ``Backend`` plus one line in :data:`_BUILTINS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

from .errors import InvalidInput
from .plugins import LazyRegistry, parse_options

if TYPE_CHECKING:
    from .base import KnowledgeGraph, Limits

#: what follows ``KIND:`` in a spec: nothing, an http(s) URL (``url?``: optional), or a path
#: (resolved against the config file's directory)
Target = Literal["none", "url", "url?", "path"]
ENTRY_POINT_GROUP = "tot_mcp.kg_backends"
OptionsT = TypeVar("OptionsT", bound=BaseModel)


class NoOptions(BaseModel):
    """A backend that takes no options still rejects a misspelt one."""

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class Backend(Generic[OptionsT]):
    kind: str
    summary: str  # one line: what the spec opens (shown in errors and --help)
    target: Target
    options: type[OptionsT]
    open: Callable[[str, str | None, "Limits | None", OptionsT], "KnowledgeGraph"]

    def parse_options(self, given: dict[str, Any] | None, where: str) -> OptionsT:
        return parse_options(self.options, given, where)


_BUILTINS: dict[str, str] = {
    "embedded": "tot_mcp.kg_adapters.embedded:BACKEND",
    "file": "tot_mcp.kg_adapters.files:BACKEND",
    "store": "tot_mcp.kg_adapters.oxigraph_store:BACKEND",
    "sparql": "tot_mcp.kg_adapters.sparql:SPARQL_BACKEND",
    "wikidata": "tot_mcp.kg_adapters.sparql:WIKIDATA_BACKEND",
}


class Backends(LazyRegistry[Backend]):
    """Backends by kind, and how a spec names one. One per process (:data:`BACKENDS`); tests may
    make their own."""

    def __init__(self, builtins: dict[str, str] | None = None) -> None:
        super().__init__(
            "KG kind",
            _BUILTINS if builtins is None else builtins,
            ENTRY_POINT_GROUP,
            name_of=lambda backend: backend.kind,
        )

    def forms(self) -> list[str]:
        """How each kind but ``file`` is written: ``embedded``, ``sparql:URL``, ``store:PATH``, …"""
        shapes = {"none": "{k}", "url": "{k}:URL", "url?": "{k}, {k}:URL", "path": "{k}:PATH"}
        return [shapes[self.get(k).target].format(k=k) for k in self.names() if k != "file"]

    def split(self, spec: str) -> tuple[str, str | None]:
        """``"sparql:http://x"`` → ``("sparql", "http://x")``; ``"embedded"`` → ``("embedded",
        None)``; a spec naming no registered kind is a file path. Only the kind's name is read here:
        nothing is imported."""
        head, sep, rest = spec.partition(":")  # no ":": head is the whole spec
        if head in self.names() and head != "file":
            return head, rest if sep else None
        return "file", spec

    def resolve(self, name: str, spec: str, base_dir: Path | None = None) -> tuple[str, str | None]:
        """(kind, target) for ``NAME=SPEC``, the target checked as the backend expects it: a URL, or
        a path made absolute against ``base_dir`` (a config file's directory). Raises InvalidInput
        fit for a CLI user."""
        kind, target = self.split(spec)
        backend = self.get(kind)
        where = f"--kg {name}={spec}"
        if backend.target == "none" and target:
            raise InvalidInput(f"{where}: {kind} takes nothing after the name")
        if backend.target in ("url", "url?"):
            if target is None and backend.target == "url":
                raise InvalidInput(f"{where}: give the endpoint, {kind}:URL")
            if target is not None and not target.startswith(("http://", "https://")):
                raise InvalidInput(f"{where}: the endpoint must be an http(s) URL")
        if backend.target == "path":
            if not target:
                raise InvalidInput(f"{where}: give a path")
            path = Path(target).expanduser()
            if base_dir is not None and not path.is_absolute():
                path = base_dir / path
            if kind == "file" and not path.exists():
                raise InvalidInput(
                    f"{where}: no such file, nor a KG kind ({', '.join(self.forms())})"
                )
            if kind == "file" and not path.is_file():
                what = (
                    "a directory (an on-disk store? use store:PATH)"
                    if path.is_dir()
                    else "not a regular file"
                )
                raise InvalidInput(f"{where}: {what}")
            target = str(path)
        return kind, target


BACKENDS = Backends()


def register(backend: Backend | str, kind: str | None = None) -> None:
    BACKENDS.register(backend, kind)
