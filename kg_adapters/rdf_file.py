"""RDF files (Turtle, N-Triples, N-Quads, RDF/XML, JSON-LD, TriG; optionally gzipped) parsed by
rdflib into a :class:`~kg_adapters.triple_index.TripleIndex`.

Label, description and alias triples are *metadata*: they name nodes, they are not edges to walk
(nobody wants ``rdfs:label`` offered as a relation). Everything else is an edge; literal objects
become literal nodes so a walk can go backward from ``"1999"`` as from any entity. Named graphs are
merged (a KG here is one set of triples).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote

from .base import Capabilities, Limits
from .errors import InvalidInput
from .memory import MemoryKG
from .triple_index import TripleIndex
from .triples_file import is_gzipped, is_triples_file, open_binary

if TYPE_CHECKING:
    from .sparql.workers import StoreQueryWorkers, StoreSource

RDF_FORMATS = {
    ".ttl": "turtle",
    ".turtle": "turtle",
    ".nt": "nt",
    ".ntriples": "nt",
    ".nq": "nquads",
    ".nquads": "nquads",
    ".rdf": "xml",
    ".xml": "xml",
    ".owl": "xml",
    ".jsonld": "json-ld",
    ".json-ld": "json-ld",
    ".json": "json-ld",
    ".trig": "trig",
    ".n3": "n3",
}
_QUAD_FORMATS = {"nquads", "trig"}
_FORMAT_ALIASES = {
    "ttl": "turtle",
    "ntriples": "nt",
    "n-triples": "nt",
    "nq": "nquads",
    "n-quads": "nquads",
    "rdfxml": "xml",
    "rdf/xml": "xml",
    "rdf+xml": "xml",
    "application/rdf+xml": "xml",
    "jsonld": "json-ld",
}

RDFS = "http://www.w3.org/2000/01/rdf-schema#"
SKOS = "http://www.w3.org/2004/02/skos/core#"
SCHEMA = ("http://schema.org/", "https://schema.org/")
LABEL_PREDICATES: tuple[str, ...] = (
    RDFS + "label",
    SKOS + "prefLabel",
    *(s + "name" for s in SCHEMA),
)
DESCRIPTION_PREDICATES: tuple[str, ...] = (
    RDFS + "comment",
    *(s + "description" for s in SCHEMA),
    SKOS + "definition",
)
ALIAS_PREDICATES: tuple[str, ...] = (SKOS + "altLabel",)
METADATA_PREDICATES = frozenset(LABEL_PREDICATES + DESCRIPTION_PREDICATES + ALIAS_PREDICATES)
DEFAULT_LANGUAGES: tuple[str, ...] = ("en",)
#: the media type of each format name: how a query process (and pyoxigraph) is told what it reads
RDF_MEDIA_TYPES = {
    "turtle": "text/turtle",
    "nt": "application/n-triples",
    "nquads": "application/n-quads",
    "xml": "application/rdf+xml",
    "json-ld": "application/ld+json",
    "trig": "application/trig",
    "n3": "text/n3",
}


def parse_languages(value) -> tuple[str, ...]:
    """A list of language tags, or one comma-separated string of them."""
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",")]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and v for v in value):
        raise ValueError("languages must be a list of language tags, e.g. ['en', 'de']")
    return tuple(value)


def rdf_format_for(path: Path, override: str | None = None) -> str | None:
    """The rdflib format name for ``path`` (by extension, ``.gz`` stripped), or the normalised
    ``override``."""
    if override:
        fmt = override.strip().lower()
        fmt = _FORMAT_ALIASES.get(fmt, fmt)
        if fmt not in set(RDF_FORMATS.values()):
            raise InvalidInput(
                f"unknown RDF format {override!r}; use one of {sorted(set(RDF_FORMATS.values()))}"
            )
        return fmt
    name = path.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return RDF_FORMATS.get(Path(name).suffix)


def file_query_source(source: str | Path, format: str | None = None) -> StoreSource | None:
    """How a query process loads an RDF file into its own in-memory store (None for
    ``head|relation|tail`` files, which need a conversion first: their caller queries run in threads
    of this process)."""
    from .sparql.workers import StoreSource

    source = Path(source)
    fmt = None if is_triples_file(source) else rdf_format_for(source, format)
    if fmt is None:
        return None
    return StoreSource(
        file=str(source.resolve()),
        media_type=RDF_MEDIA_TYPES[fmt],
        gz=is_gzipped(source),
        base_iri=source.resolve().as_uri(),
    )


def language_rank(lang: str | None, languages: Sequence[str]) -> float:
    """Lower is better: the preference list in order (exact tag, then its regional variants),
    untagged, any."""
    if lang:
        lang = lang.lower()
        for i, want in enumerate(languages):
            want = want.lower()
            if lang == want:
                return i
            if lang.startswith(want + "-"):
                return i + 0.5
        return len(languages) + 1
    return len(languages)


def local_name(iri: str) -> str:
    """``http://ex.org/people/Tom_Hanks`` → ``Tom Hanks``: the readable tail of an IRI with no
    label."""
    tail = iri.rstrip("/#")
    for sep in ("#", "/", ":"):
        if sep in tail:
            tail = tail.rsplit(sep, 1)[-1]
            break
    return unquote(tail).replace("_", " ").strip() or iri


def parse_rdf(path: Path, fmt: str) -> list[tuple]:
    """rdflib (s, p, o) terms of every distinct triple in the file (quads' graph names dropped), in
    a canonical order: rdflib iterates in hash order and invents random blank-node IDs, so without
    this the node numbering (and with it ``E<n>`` IDs) would change from one load to the next."""
    import rdflib
    from rdflib.compare import to_canonical_graph

    try:
        with open_binary(path) as fh, warnings.catch_warnings():
            warnings.simplefilter(
                "ignore", DeprecationWarning
            )  # rdflib's own N-Quads parser uses its deprecated API
            if fmt in _QUAD_FORMATS:
                ds = rdflib.Dataset()
                ds.parse(file=fh, format=fmt, publicID=path.resolve().as_uri())
                g = rdflib.Graph()
                for q in ds.quads((None, None, None, None)):
                    g.add(q[:3])
            else:
                g = rdflib.Graph()
                g.parse(file=fh, format=fmt, publicID=path.resolve().as_uri())
    # rdflib raises many unrelated types (SAXParseException, BadSyntax, JSONDecodeError ...)
    except Exception as e:
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise InvalidInput(f"{path}: could not parse as {fmt}: {msg[:300]}") from None
    if any(isinstance(t, rdflib.BNode) for triple in g for t in triple[::2]):
        g = to_canonical_graph(
            g
        )  # blank-node IDs from the graph's structure, the same on every load
    return sorted(
        g, key=lambda t: (isinstance(t[0], rdflib.BNode), str(t[0]), str(t[1]), str(t[2]))
    )


def load_rdf_file(
    path: str | Path,
    *,
    format: str | None = None,
    languages: Sequence[str] = DEFAULT_LANGUAGES,
    index: TripleIndex | None = None,
) -> TripleIndex:
    """Parse one RDF file into a TripleIndex (labels, descriptions and aliases as node metadata)."""
    from rdflib import BNode
    from rdflib import Literal as RDFLiteral

    path = Path(path)
    if not path.is_file():
        raise InvalidInput(f"RDF file not found: {path}")
    fmt = rdf_format_for(path, format)
    if fmt is None:
        raise InvalidInput(
            f"{path}: unknown RDF extension; pass format= (turtle, nt, nquads, xml, json-ld, trig)"
        )
    triples = parse_rdf(path, fmt)
    index = index or TripleIndex()

    bnodes: dict[str, str] = {}

    def term_key(t) -> str:
        if isinstance(t, BNode):
            # rdflib invents random bnode IDs per parse; number them by first appearance so keys are
            # stable
            k = bnodes.get(str(t))
            if k is None:
                k = bnodes[str(t)] = f"_:b{len(bnodes)}"
            return k
        return str(t)

    labels: dict[str, tuple[float, int, str]] = {}
    descriptions: dict[str, tuple[float, int, str]] = {}
    aliases: dict[str, list[str]] = {}

    def keep_best(table: dict, subject: str, rank: tuple[float, int], text: str) -> None:
        old = table.get(subject)
        if old is None or rank < old[:2]:
            table[subject] = (*rank, text)

    edges = []
    for s, p, o in triples:
        pred = str(p)
        if pred in METADATA_PREDICATES and isinstance(o, RDFLiteral):
            subject = term_key(s)
            text = str(o).strip()
            if not text:
                continue
            rank = language_rank(o.language, languages)
            if pred in ALIAS_PREDICATES:
                if rank <= len(languages):
                    aliases.setdefault(subject, []).append(text)
            elif pred in LABEL_PREDICATES:
                keep_best(labels, subject, (rank, LABEL_PREDICATES.index(pred)), text)
            else:
                keep_best(descriptions, subject, (rank, DESCRIPTION_PREDICATES.index(pred)), text)
            continue
        edges.append((s, pred, o))

    def label_of(k: str) -> str:
        best = labels.get(k)
        return best[2] if best else (k if k.startswith("_:") else local_name(k))

    def node(t) -> int:
        if isinstance(t, RDFLiteral):
            datatype = str(t.datatype) if t.datatype is not None else None
            return index.node(str(t), is_literal=True, datatype=datatype, lang=t.language)
        k = term_key(t)
        return index.node(k, label_of(k))

    for s, pred, o in edges:
        best = labels.get(pred)
        r = index.relation(
            pred, best[2] if best else None, local_hint=local_name(pred).replace(" ", "_")
        )
        index.add(node(s), r, node(o))

    # entities that only have metadata (a label but no edge) are still searchable and describable;
    # predicates' own labels were used as relation labels above and do not make them entities
    for subject in labels.keys() | descriptions.keys():
        if index.find_node(subject) is None and index.relation_by_key(subject) is None:
            index.node(subject, label_of(subject))
    for subject, (_, _, text) in descriptions.items():
        i = index.find_node(subject)
        if i is not None:
            index.nodes[i].description = text
    for subject, names in aliases.items():
        i = index.find_node(subject)
        if i is not None:
            label = index.nodes[i].label
            index.nodes[i].aliases = list(dict.fromkeys(n for n in names if n != label))
    index.freeze()
    return index


class RdfFileKG(MemoryKG):
    """A :class:`MemoryKG` over an RDF file that also answers caller-written read-only SPARQL
    (``sparql_query``, through :mod:`kg_adapters.sparql.guard`). The traversal index holds no RDF
    terms, so the queries run in separate processes that each parse the file once more into their
    own in-memory pyoxigraph store (lazily: most sessions never ask; each costs about the file's
    size in memory again) and are killed when a query runs out of time
    (:mod:`kg_adapters.sparql.workers`)."""

    capabilities = Capabilities(backend="memory", local_index=True, sparql=True)

    def __init__(
        self,
        name: str,
        index: TripleIndex,
        *,
        source: str | Path,
        format: str | None = None,
        description: str = "",
        limits: Limits | None = None,
    ) -> None:
        super().__init__(name, index, description=description, limits=limits)
        self.source = Path(source)
        self.format = format
        self._workers: StoreQueryWorkers | None = None

    async def sparql_query(
        self, query: str, *, limit: int | None = None, timeout: float | None = None
    ):
        from .sparql.guard import DEFAULT_MAX_ROWS
        from .sparql.run import query_store
        from .sparql.workers import StoreQueryWorkers

        if not self.capabilities.sparql:
            raise InvalidInput(
                f"KG {self.name!r} does not take SPARQL queries (sparql_query = false in its "
                "config)"
            )
        if self._workers is None:
            source = file_query_source(self.source, self.format)
            if source is None:
                raise InvalidInput(
                    f"KG {self.name!r}: {self.source.name} is not an RDF file pyoxigraph reads"
                )
            self._workers = StoreQueryWorkers(self.name, source)
        return await query_store(
            None,
            self.name,
            query,
            self.limits.clamp(limit, DEFAULT_MAX_ROWS),
            timeout,
            workers=self._workers,
        )

    async def aclose(self) -> None:
        if self._workers is not None:
            self._workers.close()
