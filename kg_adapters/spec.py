"""Turn ``--kg [NAME=]SPEC`` strings (and the TOML config) into configured KG backends.

SPEC is one of: a path to an RDF file (.ttl .nt .nq .rdf .xml .owl .jsonld .trig, optionally .gz) or
a ``head|relation|tail`` triples file (.txt .tsv, optionally .gz); ``embedded`` (the shipped movie
KG); ``wikidata`` (the public query service); ``wikidata:ENDPOINT_URL`` (Wikidata-shaped data
elsewhere); ``sparql:ENDPOINT_URL`` (any SPARQL 1.1 endpoint); ``store:PATH`` (an on-disk pyoxigraph
store).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from .backends import BACKENDS
from .base import KnowledgeGraph, Limits
from .embedded import DEFAULT_KG_NAME
from .graph import Graph
from .errors import InvalidInput
from .models import KG_NAME_RE


class KGSpec(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    kind: str = Field(
        description="a registered backend kind: embedded | file | wikidata | sparql | store | …"
    )
    target: str | None = Field(default=None, description="path or endpoint URL")


def parse_kg_arg(arg: str) -> KGSpec:
    """One ``--kg`` value, the same for ``tot-mcp`` and ``tot-search``: ``NAME=SPEC``, or a bare
    SPEC named after its file (``/data/films.ttl`` → ``films``, ``store:/data/kb.store`` → ``kb``;
    ``embedded`` → ``movies``, its name wherever it is served by default). A left part with ``/``
    or ``:`` is no name (``sparql:http://host/q?graph=x`` is a bare SPEC). Raises InvalidInput
    fit for a CLI user, quoting the flag as typed."""
    name, sep, spec = (s.strip() for s in arg.partition("="))
    if sep and not name:
        raise InvalidInput(f"--kg {arg!r}: NAME is empty; give NAME=SPEC, or a bare SPEC")
    if sep and not any(c in name for c in "/\\:"):
        return make_spec(name, spec)
    bare = arg.strip()
    if not bare:
        raise InvalidInput("--kg '': give NAME=SPEC or a SPEC, e.g. movies=embedded or wikidata")
    stem = re.sub(r"[^A-Za-z0-9_-]", "_", Path(bare).name.split(".")[0]).strip("_") or "kg"
    name = DEFAULT_KG_NAME if bare == "embedded" else (stem if stem[0].isalpha() else "kg" + stem)
    try:
        return make_spec(name[:32], bare)
    except InvalidInput as e:
        message = str(e).replace(f"--kg {name[:32]}={bare}", f"--kg {bare}", 1)
        if KG_NAME_RE.match(bare):  # a name alone, as if NAME=SPEC were meant
            message += f"; to name a KG, give NAME=SPEC, e.g. {bare}=embedded"
        raise InvalidInput(message) from None


def parse_kg_args(args: Sequence[str]) -> list[KGSpec]:
    """Every ``--kg`` value; two of one name (two bare files called ``graph.ttl``) are refused."""
    specs = [parse_kg_arg(arg) for arg in args]
    names = [s.name for s in specs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InvalidInput(
            f"--kg: KG name {twice[0]!r} is given twice (a bare SPEC is named after its file): "
            "name them, NAME=SPEC"
        )
    return specs


def make_spec(name: str, spec: str, base_dir: Path | None = None) -> KGSpec:
    """``NAME=SPEC`` as a KGSpec, its kind found by :data:`~kg_adapters.backends.BACKENDS` (a
    relative path is taken against ``base_dir``, a config file's directory). Raises InvalidInput fit
    for a CLI user."""
    if not KG_NAME_RE.match(name):
        raise InvalidInput(
            f"KG name {name!r}: use a letter then letters, digits, '_' or '-' (max 32)"
        )
    if not spec:
        raise InvalidInput(f"--kg {name}=: SPEC is empty")
    kind, target = BACKENDS.resolve(name, spec, base_dir)
    return KGSpec(name=name, kind=kind, target=target)


def open_backend(spec: KGSpec, limits: Limits | None = None, **options) -> KnowledgeGraph:
    """Build the backend for one spec, its options validated by the backend's model. Loading a file
    happens here, once."""
    backend = BACKENDS.get(spec.kind)
    opts = backend.parse_options(options, f"[kg.{spec.name}]")
    return backend.open(spec.name, spec.target, limits, opts)


def open_kg(spec: KGSpec, limits: Limits | None = None, **options) -> Graph:
    """One KG ready to use (:func:`open_backend` behind a :class:`~kg_adapters.graph.Graph`, no
    result cache)."""
    return Graph(open_backend(spec, limits, **options))
