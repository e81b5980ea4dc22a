"""Turn ``--kg NAME=SPEC`` strings (and the TOML config) into configured KG backends.

SPEC is one of: a path to an RDF file (.ttl .nt .nq .rdf .xml .owl .jsonld .trig, optionally .gz) or a
``head|relation|tail`` triples file (.txt .tsv, optionally .gz); ``embedded`` (the shipped movie KG);
``wikidata`` (the public query service); ``wikidata:ENDPOINT_URL`` (Wikidata-shaped data elsewhere);
``sparql:ENDPOINT_URL`` (any SPARQL 1.1 endpoint); ``store:PATH`` (an on-disk pyoxigraph store).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from .base import KnowledgeGraph, Limits
from .errors import InvalidInput
from .models import KG_NAME_RE


class KGSpec(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    kind: str = Field(description="embedded | file | wikidata | sparql | store")
    target: str | None = Field(default=None, description="path or endpoint URL")


def parse_kg_arg(arg: str) -> KGSpec:
    """``"movies=embedded"`` → KGSpec. Raises InvalidInput with a message fit for a CLI user."""
    if "=" not in arg:
        raise InvalidInput(f"--kg {arg!r}: expected NAME=SPEC, e.g. movies=embedded or wd=wikidata")
    name, spec = (s.strip() for s in arg.split("=", 1))
    return make_spec(name, spec)


def make_spec(name: str, spec: str) -> KGSpec:
    if not KG_NAME_RE.match(name):
        raise InvalidInput(f"KG name {name!r}: use a letter then letters, digits, '_' or '-' (max 32)")
    if not spec:
        raise InvalidInput(f"--kg {name}=: SPEC is empty")
    if spec == "embedded":
        return KGSpec(name=name, kind="embedded")
    if spec == "wikidata":
        return KGSpec(name=name, kind="wikidata", target=None)
    for prefix in ("wikidata:", "sparql:"):
        if spec.startswith(prefix):
            url = spec[len(prefix) :]
            if not url.startswith(("http://", "https://")):
                raise InvalidInput(f"--kg {name}={spec}: the endpoint must be an http(s) URL")
            return KGSpec(name=name, kind=prefix[:-1], target=url)
    if spec.startswith("store:"):
        return KGSpec(name=name, kind="store", target=spec[len("store:") :])
    path = Path(spec).expanduser()
    if not path.exists():
        raise InvalidInput(f"--kg {name}={spec}: no such file (and not embedded/wikidata/sparql:/store:)")
    return KGSpec(name=name, kind="file", target=str(path))


def open_kg(spec: KGSpec, limits: Limits | None = None, **options) -> KnowledgeGraph:
    """Build the backend for one spec. Loading a file happens here, once."""
    if spec.kind == "embedded":
        from .embedded import load_embedded

        return load_embedded(spec.name, limits)
    if spec.kind == "file":
        from .files import open_file_kg

        return open_file_kg(spec.name, Path(spec.target or ""), limits=limits, **options)
    if spec.kind in ("wikidata", "sparql"):
        from .sparql import open_sparql_kg

        return open_sparql_kg(spec.name, spec.kind, spec.target, limits=limits, **options)
    if spec.kind == "store":
        from .oxigraph_store import open_store_kg

        return open_store_kg(spec.name, Path(spec.target or ""), limits=limits, **options)
    raise InvalidInput(f"unknown KG kind {spec.kind!r}")
