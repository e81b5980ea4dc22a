"""Open a local file as a KG: ``head|relation|tail`` triple files and RDF files, in memory or — when
the file is too large, or when asked — in a pyoxigraph store.

Options (from ``--kg`` or a ``[kg.NAME]`` table in the config):

* ``format``: RDF format overriding the extension (turtle, nt, nquads, xml, json-ld, trig, n3);
* ``languages``: label language preference, a list or comma-separated string (default ``en``;
  untagged labels come next, then any language);
* ``backend``: ``auto`` (default), ``memory`` or ``oxigraph``;
* ``store``: where the oxigraph store lives (a directory, or ``memory``); setting it implies
  ``backend=oxigraph``. Default for ``auto``: a cache directory keyed by the file (see
  :func:`oxigraph_store.default_store_dir`);
* ``max_memory_mb`` (default 512) and ``max_memory_triples`` (default 5,000,000): above either,
  ``auto`` uses the store. The triple count is only measured for line-based files (N-Triples,
  N-Quads, triple files), by counting lines; gzipped sizes count 8× (a typical compression ratio);
* ``description``: shown by ``info``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .backends import Backend
from .base import KnowledgeGraph, Limits
from .errors import InvalidInput
from .rdf_file import (
    DEFAULT_LANGUAGES,
    file_query_source,
    load_rdf_file,
    parse_languages,
    rdf_format_for,
)
from .triples_file import is_gzipped, is_triples_file, load_triples_file, open_binary

_GZ_RATIO = 8


class FileOptions(BaseModel):
    """The options of a file KG (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    format: str | None = None
    languages: tuple[str, ...] = DEFAULT_LANGUAGES
    backend: Literal["auto", "memory", "oxigraph"] = "auto"
    store: str | None = None
    max_memory_mb: float = Field(512, gt=0)
    max_memory_triples: int = Field(5_000_000, gt=0)
    description: str | None = None

    _languages = field_validator("languages", mode="before")(lambda cls, v: parse_languages(v))


def _count_lines(path: Path, stop_after: int) -> int:
    n = 0
    with open_binary(path) as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            n += chunk.count(b"\n")
            if n > stop_after:
                break
    return n


def too_large_for_memory(path: Path, max_mb: float, max_triples: int) -> bool:
    size = path.stat().st_size * (_GZ_RATIO if is_gzipped(path) else 1)
    if size > max_mb * (1 << 20):
        return True
    line_based = is_triples_file(path) or rdf_format_for(path) in ("nt", "nquads")
    # below ~40 bytes per triple no file gets near the threshold, so only count lines when it could
    # matter
    if line_based and size > max_triples * 40:
        return _count_lines(path, max_triples) > max_triples
    return False


def open_file_kg(
    name: str, path: str | Path, limits: Limits | None = None, **options
) -> KnowledgeGraph:
    """A KG over one local file: MemoryKG when it fits in memory, OxigraphKG otherwise (see module
    docstring)."""
    return open_file(name, path, limits, BACKEND.parse_options(options, f"--kg {name}={path}"))


def open_file(
    name: str, path: str | Path | None, limits: Limits | None, opts: FileOptions
) -> KnowledgeGraph:
    """:func:`open_file_kg` with its options already validated (what the backend registry calls)."""
    where = f"--kg {name}={path}"
    path = Path(path or "").expanduser()
    if not path.is_file():
        raise InvalidInput(f"{where}: no such file")
    triples_file = is_triples_file(path)
    fmt = opts.format
    if not triples_file and rdf_format_for(path, fmt) is None:
        raise InvalidInput(
            f"{where}: unknown file type; use .ttl .nt .nq .rdf .xml .owl .jsonld .trig "
            "(optionally .gz), .txt/.tsv for head|relation|tail triples, or pass format="
        )
    backend, store = opts.backend, opts.store
    if store is not None and backend == "memory":
        raise InvalidInput(f"{where}: store= needs backend oxigraph (or auto), not memory")
    if backend == "auto":
        large = too_large_for_memory(path, opts.max_memory_mb, opts.max_memory_triples)
        backend = "oxigraph" if store is not None or large else "memory"
    languages = opts.languages
    description = opts.description or f"Loaded from {path.name}."
    if backend == "memory":
        from .memory import MemoryKG

        if triples_file:
            return MemoryKG(name, load_triples_file(path), description=description, limits=limits)
        # an RDF file also answers guarded SPARQL (parsed again on its first query)
        from .rdf_file import RdfFileKG

        index = load_rdf_file(path, format=fmt, languages=languages)
        return RdfFileKG(
            name, index, source=path, format=fmt, description=description, limits=limits
        )
    return _open_as_store(name, path, store, fmt, languages, description, limits)


def _open_as_store(name, path: Path, store, fmt, languages, description, limits) -> KnowledgeGraph:
    import pyoxigraph as ox

    from .bulk_load import load_into_store
    from .oxigraph_store import OxigraphKG, default_store_dir
    from .sparql.workers import StoreSource
    from .store_names import read_meta

    if store == "memory":
        st = load_into_store(path, None, format=fmt, description=description)
        source = file_query_source(path, fmt)
        return OxigraphKG(name, st, limits=limits, languages=languages, query_source=source)
    store_dir = Path(store).expanduser() if store is not None else default_store_dir(path)
    if store_dir.is_dir() and any(store_dir.iterdir()):
        try:  # read-only first: a store already loaded can then be shared by several servers
            existing = ox.Store.read_only(str(store_dir))
        except OSError as e:
            raise InvalidInput(f"--kg {name}: cannot open store {store_dir}: {e}") from None
        meta = read_meta(existing)
        if meta.get("loaded") == "true" and meta.get("source") == str(path.resolve()):
            return OxigraphKG(
                name,
                existing,
                limits=limits,
                languages=languages,
                query_source=StoreSource(store=str(store_dir)),
            )
        if meta:
            raise InvalidInput(
                f"--kg {name}: store {store_dir} holds {meta.get('source', 'another load')!r}, not "
                f"{path}; "
                "choose another store= directory or delete that one"
            )
        if next(iter(existing), None) is not None:
            raise InvalidInput(
                f"--kg {name}: store {store_dir} already holds other data; choose an empty "
                "directory"
            )
        del existing
    store_dir.parent.mkdir(parents=True, exist_ok=True)
    st = load_into_store(path, store_dir, format=fmt, description=description)
    return OxigraphKG(
        name, st, limits=limits, languages=languages, query_source=StoreSource(store=str(store_dir))
    )


BACKEND = Backend(
    kind="file",
    summary=(
        "a local RDF file or head|relation|tail triples file, in memory or (large) in an oxigraph "
        "store"
    ),
    target="path",
    options=FileOptions,
    open=open_file,
)
