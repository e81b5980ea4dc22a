"""A KG in a pyoxigraph store (on disk or in memory): for graphs too large to index in Python.

Triples stay in the store (RocksDB on disk); Python holds caches and, without an on-disk label
index, the label search index. How terms become IDs and where entity search looks:
:mod:`kg_adapters.store_names`; how files get into a store: :mod:`kg_adapters.bulk_load`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, cast

import pyoxigraph as ox
from pydantic import BaseModel, ConfigDict, field_validator

from .backends import Backend
from .base import LABEL, Capabilities, Hop, KnowledgeGraph, Limits, hop_by_hop
from .bulk_load import load_into_store  # noqa: F401 - callers make a store and open it from here
from .cpu import cpu_bound
from .errors import BackendError, InvalidInput, NotFound
from .fts_index import FtsLabelIndex, KeyHit
from .lru import LRU
from .models import (
    AdjacentIds,
    Direction,
    Edge,
    EdgePage,
    Entity,
    EntityDescription,
    EntityMatch,
    KGInfo,
    Literal,
    Relation,
    RelationList,
    inverse_of,
)
from .rdf_file import (
    DEFAULT_LANGUAGES,
    DESCRIPTION_PREDICATES,
    METADATA_PREDICATES,
    language_rank,
    local_name,
    parse_languages,
)
from .store_names import (
    ALIAS_NODES,
    LABEL_NODES,
    META_GRAPH,
    META_NS,
    PLAIN_TYPES,
    RELATION_NS,
    InMemoryLabelSearch,
    LabelSearch,
    Term,
    TermCodec,
    key_term,
    name_iri,
    name_of,
    read_meta,
)
from .text import humanize

if TYPE_CHECKING:  # the SPARQL package (httpx, rdflib) is imported when a caller query needs it
    from .sparql.run import ThreadRuns
    from .sparql.workers import StoreQueryWorkers, StoreSource

_DESCRIPTION_NODES = [ox.NamedNode(p) for p in DESCRIPTION_PREDICATES]
_UNNAMED = object()  # not in the ID cache yet (None there means: no ID)


class OxigraphKG(KnowledgeGraph):
    capabilities = Capabilities(backend="oxigraph", sparql=True)

    def __init__(
        self,
        name: str,
        store: ox.Store,
        *,
        limits: Limits | None = None,
        description: str | None = None,
        languages: Sequence[str] = DEFAULT_LANGUAGES,
        entity_base: str | None = None,
        relation_base: str | None = None,
        label_search: LabelSearch | None = None,
        cache_size: int = 50_000,
        query_source: StoreSource | None = None,
    ) -> None:
        super().__init__(name, limits)
        self.store = store
        # where a query process finds the same data (sparql_query runs there, killed at its
        # timeout); without one, caller queries run in threads here, at most MAX_THREAD_RUNS at once
        self.query_source = query_source
        self._workers: StoreQueryWorkers | None = None
        self._thread_runs: ThreadRuns | None = None
        meta = read_meta(store)
        self.description = description if description is not None else meta.get("description", "")
        self.languages = tuple(languages)
        self.codec = TermCodec(
            entity_base if entity_base is not None else meta.get("entityBase"),
            relation_base if relation_base is not None else meta.get("relationBase"),
        )
        self.label_search: LabelSearch = label_search or InMemoryLabelSearch(store)
        self._entity_cache: LRU[Entity] = LRU(cache_size)
        self._ids: LRU[str | None] = LRU(cache_size)  # term → its ID
        self._relation_labels: dict[str, str] = {}
        self._info: KGInfo | None = None  # a full scan: computed once
        self._prefix = f"{name}:"
        self._in_use: dict[str, bool] = {}  # metadata predicate IRI → does the store use it

    # -- terms and IDs ---------------------------------------------------------------------------
    def _term_id(self, term: Term) -> str | None:
        eid = self._ids.peek(term, _UNNAMED)
        if eid is _UNNAMED:  # a walk meets the same targets (a genre, an actor) edge after edge
            local = self.codec.encode(term)
            eid = None if local is None else self._prefix + local
            self._ids.put(term, eid)
        return eid

    def _terms(self, entity_ids: list[str]) -> dict[Term, list[str]]:
        """Any number of IDs by the term each names (duplicates once); none checked to exist."""
        out: dict[Term, list[str]] = {}
        for eid, local in zip(entity_ids, self._local_ids(entity_ids, bulk=True)):
            out.setdefault(self.codec.decode(local), []).append(eid)
        return out

    def _quads(self, s=None, p=None, o=None) -> Iterator[ox.Quad]:
        try:
            return self.store.quads_for_pattern(s, p, o, None)
        except OSError as e:
            raise BackendError(f"KG {self.name!r}: store read failed: {e}") from e

    def _used(self, preds: list[ox.NamedNode]) -> list[ox.NamedNode]:
        """The predicates of ``preds`` the store holds at all (asked once each; a served store is
        read-only): a label is read from one predicate, not from the eight metadata predicates RDF
        may use, of which a store usually holds one or two — each a store lookup per entity."""
        used = self._in_use
        for p in preds:
            if p.value not in used:
                used[p.value] = next(iter(self._quads(p=p)), None) is not None
        return [p for p in preds if used[p.value]]

    def _exists(self, term: Term) -> bool:
        if not isinstance(term, ox.Literal) and next(iter(self._quads(s=term)), None) is not None:
            return True
        return next(iter(self._quads(o=term)), None) is not None

    def _entity_term(self, local: str) -> Term:
        term = self.codec.decode(local)
        if not self._exists(term):
            raise NotFound(f"no entity {self._prefix}{local} in KG {self.name!r}")
        return term

    def _relation_node(self, relation_id: str) -> ox.NamedNode:
        node = self.codec.decode_relation(self._local_relation(relation_id))
        if node.value in METADATA_PREDICATES or next(iter(self._quads(p=node)), None) is None:
            raise NotFound(
                f"no relation {relation_id!r} in KG {self.name!r}; call get_relations to list them"
            )
        return node

    def _best_text(self, term: Term, preds: list[ox.NamedNode]) -> str | None:
        best: tuple[float, int, str] | None = None
        for rank_p, pred in enumerate(preds):
            for q in self._quads(s=term, p=pred):
                if isinstance(q.object, ox.Literal) and q.object.value.strip():
                    rank = language_rank(q.object.language, self.languages)
                    if best is None or (rank, rank_p) < best[:2]:
                        best = (rank, rank_p, q.object.value.strip())
        return best[2] if best else None

    def _entity(self, term: Term, eid: str | None = None) -> Entity:
        cached = self._entity_cache.peek(term)
        if cached is not None:
            return cached
        eid = eid or self._term_id(term) or ""
        desc = (
            None
            if isinstance(term, ox.Literal)
            else self._best_text(term, self._used(_DESCRIPTION_NODES))
        )
        ent = Entity.model_construct(
            id=eid, label=self._label(term), description=desc, kg=self.name
        )
        self._entity_cache.put(term, ent)
        return ent

    def _labelled_entity(self, term: Term, eid: str | None = None) -> Entity:
        """The entity by label only: never reads its description (:meth:`_entity` does)."""
        eid = eid or self._term_id(term) or ""
        return Entity.model_construct(
            id=eid, label=self._label(term), description=None, kg=self.name
        )

    def _label(self, term: Term) -> str:
        """The name shown for a term: a literal's value; else its best label, or its local name."""
        if isinstance(term, ox.Literal):
            return term.value
        cached = self._entity_cache.peek(term)
        if cached is not None:
            return cached.label
        return self._best_text(term, self._used(LABEL_NODES)) or (
            "_:" + term.value if isinstance(term, ox.BlankNode) else local_name(term.value)
        )

    def _relation_model(
        self, iri: str, direction: Direction, count: int | None = None, entities: int | None = None
    ) -> Relation:
        label = self._relation_labels.get(iri)
        if label is None:
            label = self._best_text(ox.NamedNode(iri), self._used(LABEL_NODES)) or humanize(
                name_of(iri, RELATION_NS) or iri
            )
            self._relation_labels[iri] = label
        return Relation.model_construct(
            id=self._prefix + self.codec.encode_relation(iri),
            label=label,
            inverse_label=inverse_of(label),
            direction=direction,
            count=count,
            entities=entities,
        )

    def _matches(
        self, find: Callable[[str, int], Sequence[KeyHit]], text: str, limit: int, mention: bool
    ) -> list[EntityMatch]:
        """The entities the label index ``find`` (its ``link`` or ``search``) names for ``text``,
        but those this KG gives no ID; the hits' mentions kept if ``mention``."""
        limit = self.limits.clamp(limit, self.limits.max_search)
        found = find(self.limits.check_query(text), limit)
        out = []
        for h in found:
            try:
                term = key_term(h.key)
            except ValueError:
                continue
            if (eid := self._term_id(term)) is not None:
                out.append(
                    EntityMatch.model_construct(
                        entity=self._entity(term, eid),
                        score=h.score,
                        match=h.match,
                        mention=h.mention if mention else None,
                    )
                )
        return out

    def _targets(self, term: Term, pred: ox.NamedNode, direction: Direction) -> Iterator[Term]:
        """Neighbours in the store's index order (stable), each once even if in several graphs."""
        if direction is Direction.forward:
            if isinstance(term, ox.Literal):
                return
            quads = self._quads(s=term, p=pred)
            pick = lambda q: q.object  # noqa: E731
        else:
            quads = self._quads(p=pred, o=term)
            pick = lambda q: q.subject  # noqa: E731
        seen: set[Term] = set()
        for q in quads:
            t = pick(q)
            if t not in seen and not isinstance(t, ox.Triple):
                seen.add(t)
                yield t

    def _anywhere(self, pred: ox.NamedNode, direction: Direction) -> Iterator[tuple[Term, Term]]:
        """The relation's edges wherever they are, (source, target) in ``direction``, each once."""
        seen: set[tuple[Term, Term]] = set()
        forward = direction is Direction.forward
        for q in self._quads(p=pred):
            subject, obj = q.subject, q.object
            if isinstance(subject, ox.Triple) or isinstance(obj, ox.Triple):
                continue
            pair = (subject, obj) if forward else (obj, subject)
            if pair not in seen:
                seen.add(pair)
                yield pair

    def _count(self, terms: list[Term], direction: Direction) -> Iterator[tuple[Term, str, int]]:
        """(term, predicate IRI, distinct edges) from (forward) or to (backward) each term, across
        all graphs: one query for all of them."""
        forward = direction is Direction.forward
        if forward:
            terms = [t for t in terms if not isinstance(t, ox.Literal)]
        # SPARQL cannot name a blank node (it would be a variable): count those by walking quads
        for t in (t for t in terms if isinstance(t, ox.BlankNode)):
            counts: dict[str, int] = {}
            for p, _ in {
                (q.predicate.value, q.object if forward else q.subject)
                for q in (self._quads(s=t) if forward else self._quads(o=t))
            }:
                counts[p] = counts.get(p, 0) + 1
            yield from ((t, p, n) for p, n in counts.items() if p not in METADATA_PREDICATES)
        values = " ".join(str(t) for t in terms if not isinstance(t, ox.BlankNode))
        if not values:
            return
        var, other = ("s", "o") if forward else ("o", "s")
        q = (
            f"SELECT ?{var} ?p (COUNT(*) AS ?n) WHERE {{ SELECT DISTINCT ?{var} ?p ?{other} "
            f"WHERE {{ VALUES ?{var} {{ {values} }} ?s ?p ?o }} }} GROUP BY ?{var} ?p"
        )
        try:
            solutions = self.store.query(q, use_default_graph_as_union=True)
            rows = list(cast(ox.QuerySolutions, solutions))  # a SELECT answers solutions
        except (OSError, RuntimeError, SyntaxError) as e:
            raise BackendError(f"KG {self.name!r}: store query failed: {e}") from e
        yield from (
            (r[var], r["p"].value, int(r["n"].value))
            for r in rows
            if r["p"].value not in METADATA_PREDICATES
        )

    # -- the contract: a read that is a unit of CPU work is @cpu_bound, off the event loop in a
    # server (kg_adapters.cpu) --------------------------------------------------------------------
    @cpu_bound
    def initialize(
        self, query: str, limit: int = 10, named: frozenset[str] = frozenset()
    ) -> list[EntityMatch]:
        return self._matches(self.label_search.link, query, limit, mention=True)

    @cpu_bound
    def search_entities(self, text: str, limit: int = 10) -> list[EntityMatch]:
        return self._matches(self.label_search.search, text, limit, mention=False)

    @cpu_bound
    def relations(self, entity_ids: list[str]) -> dict[str, RelationList]:
        """One count query per direction however many entities; one with no relation is checked
        to exist (two index lookups), the others plainly do."""
        by_term = self._terms(entity_ids)
        rows: dict[Term, list[tuple[bool, str, Direction, int, str]]] = {}
        for d in (Direction.forward, Direction.backward):
            for term, iri, n in self._count(list(by_term), d):
                key = (d is Direction.backward, self.codec.encode_relation(iri))
                rows.setdefault(term, []).append((*key, d, n, iri))
        out: dict[str, RelationList] = {}
        for term, eids in by_term.items():
            if term not in rows and not self._exists(term):
                continue
            rels = [
                self._relation_model(iri, d, n, 1) for *_, d, n, iri in sorted(rows.get(term, []))
            ]
            rl = RelationList.model_construct(
                relations=rels, truncated=False, partial=False, warnings=[]
            )
            out.update((eid, rl) for eid in eids)
        return out

    @cpu_bound
    def edges(
        self,
        entity_ids: list[str],
        relation_id: str,
        direction: Direction = Direction.forward,
        limit: int | None = None,
        offset: int = 0,
        labelled: bool = True,
    ) -> EdgePage:
        limit = self.limits.clamp(limit, self.limits.max_edges)
        entity = self._labelled_entity if labelled else self._entity
        terms = list(dict.fromkeys(self._entity_term(x) for x in self._local_ids(entity_ids)))
        pred = self._relation_node(relation_id)
        direction = Direction(direction)
        if not isinstance(offset, int) or offset < 0:
            raise InvalidInput("offset must be an integer ≥ 0")
        rel_id = self._prefix + self.codec.encode_relation(pred.value)
        stream = ((src, tgt) for src in terms for tgt in self._targets(src, pred, direction))
        try:
            window = list(islice(stream, offset, offset + limit + 1))
        except OSError as e:
            raise BackendError(f"KG {self.name!r}: store read failed: {e}") from e
        edges: list[Edge] = []
        entities: dict[str, Entity] = {}
        for src, tgt in window[:limit]:
            sid = self._term_id(src) or ""
            entities.setdefault(sid, entity(src, sid))
            tid = self._term_id(tgt)
            value = None
            if isinstance(tgt, ox.Literal):
                dt = tgt.datatype.value if tgt.datatype is not None and not tgt.language else None
                value = Literal.model_construct(
                    value=tgt.value, datatype=None if dt in PLAIN_TYPES else dt, lang=tgt.language
                )
            edges.append(
                Edge.model_construct(
                    source=sid,
                    relation=rel_id,
                    direction=direction,
                    target=tid,
                    value=value,
                    qualifiers=[],
                )
            )
            if tid is not None:
                entities.setdefault(tid, entity(tgt, tid))
        truncated = len(window) > limit
        return EdgePage.model_construct(
            edges=edges,
            entities=entities,
            truncated=truncated,
            next_offset=offset + len(edges) if truncated else None,
            partial=False,
            warnings=[],
            relation=self._relation_model(pred.value, direction),
        )

    @cpu_bound
    def adjacent_ids(
        self,
        entity_ids: list[str],
        relation_id: str | Sequence[Hop],
        direction: Direction = Direction.forward,
        limit: int = 2000,
        labelled: bool = False,
        then: Sequence[str] = (),  # local: a read of them later costs no round trip
        with_relations: bool = False,
    ) -> AdjacentIds | dict[Hop, AdjacentIds]:
        """One walk of the store's index a hop, no check that each source exists (one that does
        not has no edges). ``labelled`` changes nothing: a label costs index lookups here either
        way."""
        return hop_by_hop(self._adjacent, entity_ids, relation_id, direction, limit, labelled)

    def _adjacent(
        self,
        entity_ids: list[str],
        relation_id: str,
        direction: Direction,
        limit: int,
        labelled: bool,
    ) -> AdjacentIds:
        pred = self._relation_node(relation_id)
        direction = Direction(direction)
        stream: Iterator[tuple[Term, Term]]
        if entity_ids:
            terms = list(self._terms(list(dict.fromkeys(entity_ids))))
            stream = ((src, t) for src in terms for t in self._targets(src, pred, direction))
        else:
            stream = self._anywhere(pred, direction)
        limit = max(0, limit)
        pairs: list[tuple[str, str]] = []
        values: list[tuple[str, str]] = []
        term_id = self._term_id
        try:
            for src, t in stream:
                if (sid := term_id(src)) is None:
                    continue
                if len(pairs) + len(values) == limit:
                    return AdjacentIds.model_construct(pairs=pairs, values=values, truncated=True)
                if (tid := term_id(t)) is not None:
                    pairs.append((sid, tid))
                elif isinstance(t, ox.Literal):
                    values.append((sid, t.value))
        except OSError as e:
            raise BackendError(f"KG {self.name!r}: store read failed: {e}") from e
        return AdjacentIds.model_construct(pairs=pairs, values=values, truncated=False)

    @cpu_bound
    def labels(self, entity_ids: list[str], key: bool = False) -> dict[str, str]:
        out: dict[str, str] = {}
        for eid in dict.fromkeys(entity_ids):
            try:
                (term,) = self._terms([eid])
            except InvalidInput:
                continue
            if not self._exists(term):
                continue
            if not key:
                out[eid] = self._label(term)
            elif isinstance(term, ox.NamedNode):  # a triple file's name, as the memory KG's key
                out[eid] = name_of(term.value) or term.value
            elif isinstance(term, ox.Literal):
                out[eid] = term.value
        return out

    async def describe_entity(self, entity_id: str) -> EntityDescription:
        (local,) = self._local_ids([entity_id])
        term = self._entity_term(local)
        ent = self._entity(term, entity_id)
        preds = [] if isinstance(term, ox.Literal) else self._used(ALIAS_NODES + LABEL_NODES)
        names = [
            q.object.value
            for pred in preds
            for q in self._quads(s=term, p=pred)
            if isinstance(q.object, ox.Literal)
            and language_rank(q.object.language, self.languages) <= len(self.languages)
        ]
        aliases = [a for a in dict.fromkeys(names) if a != ent.label]
        rels = (await self.relations([entity_id]))[entity_id].relations
        iri = term.value if isinstance(term, ox.NamedNode) else None
        return EntityDescription(
            entity=ent, aliases=aliases, relations=rels[: self.limits.max_relations], iri=iri
        )

    @cpu_bound
    def find(
        self, values: list[str], relation_id: str | None = None, limit: int = 20
    ) -> dict[str, list[str]]:
        """A value names the term whose key it is — an IRI, a triple-file name, a plain literal —
        if the store holds it; with ``relation_id``, the relation is walked backward from there."""
        limit = self.limits.clamp(limit, self.limits.max_edges)
        if relation_id == LABEL:  # the label index, every name in one go
            named = self.label_search.named_many(list(dict.fromkeys(values)), limit)
            out: dict[str, list[str]] = {}
            for v in dict.fromkeys(values):
                hits = named.get(v, ())
                best = [h for h in hits if h.match == "exact"] or hits
                out[v] = [tid for h in best if (tid := self._term_id(key_term(h.key))) is not None]
            return out
        pred = None if relation_id is None else self._relation_node(relation_id)
        out = {}
        for value in dict.fromkeys(values):
            candidates: list[Term] = [ox.NamedNode(name_iri(value)), ox.Literal(value)]
            if ":" in value:
                try:
                    candidates.insert(0, key_term(value))
                except ValueError:
                    pass
            term = next((t for t in candidates if self._exists(t)), None)
            found = (
                []
                if term is None
                else [term]
                if pred is None
                else self._targets(term, pred, Direction.backward)
            )
            out[value] = [
                tid for t in islice(found, limit) if (tid := self._term_id(t)) is not None
            ]
        return out

    async def info(self) -> KGInfo:
        if self._info is None:
            try:
                rows = list(
                    cast(  # a SELECT answers solutions
                        ox.QuerySolutions,
                        self.store.query(
                            "SELECT ?p (COUNT(*) AS ?n) WHERE { SELECT DISTINCT ?s ?p ?o WHERE "
                            "{ ?s ?p ?o } } GROUP BY ?p ORDER BY DESC(?n)",
                            use_default_graph_as_union=True,
                        ),
                    )
                )
            except (OSError, RuntimeError) as e:
                raise BackendError(f"KG {self.name!r}: store query failed: {e}") from e
            counts = [(r["p"].value, int(r["n"].value)) for r in rows]
            edges = [
                (p, n)
                for p, n in counts
                if not p.startswith(META_NS) and p not in METADATA_PREDICATES
            ]
            self._info = KGInfo(
                name=self.name,
                backend=self.capabilities.backend,
                description=self.description,
                entities=None,
                triples=sum(n for _, n in edges),  # edges, as MemoryKG counts: labels are metadata
                relations=len(edges),
                relation_sample=[
                    self._relation_model(p, Direction.forward, n) for p, n in edges[:20]
                ],
            )
        return self._info

    async def sparql_query(
        self, query: str, *, limit: int | None = None, timeout: float | None = None
    ):
        """A caller's read-only query, checked by the guard (:mod:`kg_adapters.sparql.guard`) and
        evaluated on the store over all its graphs but the metadata one; common prefixes (rdf, rdfs,
        owl, xsd, skos, schema, wd, wdt …) need no declaration."""
        from .sparql.guard import DEFAULT_MAX_ROWS
        from .sparql.run import ThreadRuns, query_store
        from .sparql.workers import StoreQueryWorkers

        if not self.capabilities.sparql:
            raise InvalidInput(
                f"KG {self.name!r} does not take SPARQL queries "
                "(sparql_query = false in its config)"
            )
        if self._workers is None and self.query_source is not None:
            self._workers = StoreQueryWorkers(self.name, self.query_source)
        if self._thread_runs is None:
            self._thread_runs = ThreadRuns()
        return await query_store(
            self.store,
            self.name,
            query,
            self.limits.clamp(limit, DEFAULT_MAX_ROWS),
            timeout,
            hidden=(META_GRAPH,),
            workers=self._workers,
            runs=self._thread_runs,
        )

    async def aclose(self) -> None:
        if self._workers is not None:
            self._workers.close()


# -- opening ---------------------------------------------------------------------------------------
def default_store_dir(source: Path, cache_dir: Path | None = None) -> Path:
    """Where a file too large for memory gets its store when none is configured: under ``stores/``
    of the cache directory (None: the environment's), keyed by the file's path, size and mtime, so
    the next start reuses it."""
    from .environment import Environment

    st = source.stat()
    digest = hashlib.sha1(f"{source.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()
    return (cache_dir or Environment.read().cache_dir) / "stores" / f"{source.stem}-{digest[:16]}"


def open_store_kg(
    name: str, path: str | Path, limits: Limits | None = None, **options
) -> OxigraphKG:
    """Open an existing on-disk store (made by :func:`load_into_store`, ``tot-mcp load`` or
    ``oxigraph load --location``).

    Options: ``read_only`` (default True: several processes may share the store), ``description``,
    ``languages``, ``entity_base``, ``relation_base`` (override the store's recorded namespaces).
    Entity search uses the SQLite FTS label index ``STORE.labels.sqlite`` beside the store when
    there is one (written by ``tot-mcp load``), else reads the store's labels into memory on first
    search.
    """
    return open_store(name, path, limits, BACKEND.parse_options(options, f"store KG {name!r}"))


def open_store(
    name: str, path: str | Path | None, limits: Limits | None, options: StoreOptions
) -> OxigraphKG:
    """:func:`open_store_kg` with its options validated (what the backend registry calls)."""
    opts = options.model_dump(exclude_unset=True)  # only what was given: OxigraphKG has defaults
    path = Path(path or "").expanduser()
    if not path.is_dir():
        raise InvalidInput(
            f"no oxigraph store at {path}: create one with load_into_store() or "
            f"`oxigraph load --location {path} --file F`"
        )
    try:
        read_only = opts.pop("read_only", True)
        store = ox.Store.read_only(str(path)) if read_only else ox.Store(str(path))
    except OSError as e:
        raise InvalidInput(f"cannot open oxigraph store at {path}: {e}") from None
    from .sparql.workers import StoreSource

    return OxigraphKG(
        name,
        store,
        limits=limits,
        label_search=FtsLabelIndex.for_store(path),
        query_source=StoreSource(store=str(path)),
        **opts,
    )


class StoreOptions(BaseModel):
    """The options of an on-disk store KG (see :func:`open_store_kg`)."""

    model_config = ConfigDict(extra="forbid")

    read_only: bool = True
    description: str | None = None
    languages: tuple[str, ...] | None = None
    entity_base: str | None = None
    relation_base: str | None = None

    @field_validator("languages", mode="before")
    @classmethod
    def _languages(cls, v):
        return None if v is None else parse_languages(v)


BACKEND = Backend(
    kind="store",
    summary="an on-disk oxigraph store (from `tot-mcp load` or `oxigraph load`)",
    target="path",
    options=StoreOptions,
    open=open_store,
)
