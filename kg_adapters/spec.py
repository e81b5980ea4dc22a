"""Turn ``--kg NAME=SPEC`` strings (and the TOML config) into configured KG backends.

SPEC is one of: a path to an RDF file (.ttl .nt .nq .rdf .xml .owl .jsonld .trig, optionally .gz) or
a ``head|relation|tail`` triples file (.txt .tsv, optionally .gz); ``embedded`` (the shipped movie
KG); ``wikidata`` (the public query service); ``wikidata:ENDPOINT_URL`` (Wikidata-shaped data
elsewhere); ``sparql:ENDPOINT_URL`` (any SPARQL 1.1 endpoint); ``store:PATH`` (an on-disk pyoxigraph
store).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from .backends import BACKENDS
from .base import KnowledgeGraph, Limits
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
    """``"movies=embedded"`` → KGSpec. Raises InvalidInput with a message fit for a CLI user."""
    if "=" not in arg:
        raise InvalidInput(f"--kg {arg!r}: expected NAME=SPEC, e.g. movies=embedded or wd=wikidata")
    name, spec = (s.strip() for s in arg.split("=", 1))
    return make_spec(name, spec)


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
