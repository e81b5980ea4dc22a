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
from typing import TYPE_CHECKING
from urllib.parse import unquote

import pyoxigraph as ox
from pydantic import BaseModel, ConfigDict, field_validator

from .backends import Backend
from .base import Capabilities, LabelledEdgesKG, Limits
from .bulk_load import load_into_store  # noqa: F401 - callers make a store and open it from here
from .cpu import cpu_bound
from .errors import BackendError, InvalidInput, KGError, NotFound
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
    ENTITY_NS,
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
    read_meta,
)
from .text import humanize
from .text import key as label_key

if TYPE_CHECKING:  # the SPARQL package (httpx, rdflib) is imported when a caller query needs it
    from .sparql.run import ThreadRuns
    from .sparql.workers import StoreQueryWorkers, StoreSource

_DESCRIPTION_NODES = [ox.NamedNode(p) for p in DESCRIPTION_PREDICATES]
_UNNAMED = object()  # not in the ID cache yet (None there means: no ID)


class OxigraphKG(LabelledEdgesKG):
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
        # where a query process finds the same data (sparql_query runs there, killed at its timeout); without
        # one, caller queries run in threads of this process, at most MAX_THREAD_RUNS at once
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
        self.labels: LabelSearch = label_search or InMemoryLabelSearch(store)
        self._entity_cache: LRU[Entity] = LRU(cache_size)
        self._ids: LRU[str | None] = LRU(cache_size)  # term → its ID
        self._relation_labels: dict[str, str] = {}
        self._info: KGInfo | None = None  # a full scan: computed once
        self._prefix = f"{name}:"
        self._in_use: dict[str, bool] = {}  # metadata predicate IRI → does the store use it (asked once)

    # -- terms and IDs ------------------------------------------------------------------------------------------
    def term_id(self, term: Term) -> str | None:
        eid = self._ids.peek(term, _UNNAMED)
        if eid is _UNNAMED:  # a walk meets the same targets (a genre, an actor) edge after edge
            local = self.codec.encode(term)
            eid = None if local is None else self._prefix + local
            self._ids.put(term, eid)
        return eid

    def _quads(self, s=None, p=None, o=None) -> Iterator[ox.Quad]:
        try:
            return self.store.quads_for_pattern(s, p, o, None)
        except OSError as e:
            raise BackendError(f"KG {self.name!r}: store read failed: {e}") from e

    def _used(self, preds: list[ox.NamedNode]) -> list[ox.NamedNode]:
        """The predicates of ``preds`` the store holds at all (asked once each; a served store is read-only): a
        label is read from one predicate, not from the eight metadata predicates RDF may use, of which a store
        usually holds one or two — each a store lookup per entity."""
        used = self._in_use
        for p in preds:
            if p.value not in used:
                used[p.value] = next(iter(self._quads(p=p)), None) is not None
        return [p for p in preds if used[p.value]]

    def _exists(self, term: Term) -> bool:
        if not isinstance(term, ox.Literal) and next(iter(self._quads(s=term)), None) is not None:
            return True
        return next(iter(self._quads(o=term)), None) is not None

    def entity_term(self, local: str) -> Term:
        term = self.codec.decode(local)
        if not self._exists(term):
            raise NotFound(f"no entity {self._prefix}{local} in KG {self.name!r}")
        return term

    async def subjects_of(self, relation_id: str, limit: int = 20) -> list[str]:
        try:
            node = self.relation_node(relation_id)
        except KGError:
            return []
        out: list[str] = []
        for q in self._quads(p=node):
            eid = self.term_id(q.subject)
            if eid is not None and eid not in out:
                out.append(eid)
                if len(out) >= limit:
                    break
        return out

    def relation_node(self, relation_id: str) -> ox.NamedNode:
        node = self.codec.decode_relation(self.local_relation(relation_id))
        if node.value in METADATA_PREDICATES or next(iter(self._quads(p=node)), None) is None:
            raise NotFound(f"no relation {relation_id!r} in KG {self.name!r}; call get_relations to list them")
        return node

    def _best_text(self, term: Term, preds: list[ox.NamedNode]) -> str | None:
        best: tuple[float, int, str] | None = None
        for rank_p, pred in enumerate(preds):
            for q in self._quads(s=term, p=pred):
                if isinstance(q.object, ox.Literal) and q.object.value.strip():
                    cand = (language_rank(q.object.language, self.languages), rank_p, q.object.value.strip())
                    if best is None or cand[:2] < best[:2]:
                        best = cand
        return best[2] if best else None

    def entity(self, term: Term, eid: str | None = None) -> Entity:
        cached = self._entity_cache.peek(term)
        if cached is not None:
            return cached
        eid = eid or self.term_id(term) or ""
        desc = None if isinstance(term, ox.Literal) else self._best_text(term, self._used(_DESCRIPTION_NODES))
        ent = Entity.model_construct(id=eid, label=self._label(term), description=desc, kg=self.name)
        self._entity_cache.put(term, ent)
        return ent

    def _label(self, term: Term) -> str:
        """The name shown for a term: a literal's value; else its best label, or its IRI's local name."""
        if isinstance(term, ox.Literal):
            return term.value
        return self._best_text(term, self._used(LABEL_NODES)) or (
            "_:" + term.value if isinstance(term, ox.BlankNode) else local_name(term.value)
        )

    def labelled_entity(self, term: Term, eid: str | None = None) -> Entity:
        """The entity by label only: never reads its description (what :meth:`entity` does the first time)."""
        cached = self._entity_cache.peek(term)
        if cached is not None:
            return cached if cached.description is None else cached.model_copy(update={"description": None})
        eid = eid or self.term_id(term) or ""
        return Entity.model_construct(id=eid, label=self._label(term), description=None, kg=self.name)

    def relation_label(self, iri: str) -> str:
        label = self._relation_labels.get(iri)
        if label is None:
            label = self._best_text(ox.NamedNode(iri), self._used(LABEL_NODES)) or humanize(
                unquote(iri[len(RELATION_NS) :]) if iri.startswith(RELATION_NS) else iri
            )
            self._relation_labels[iri] = label
        return label

    def relation_model(self, iri: str, direction: Direction, count: int | None = None) -> Relation:
        label = self.relation_label(iri)
        return Relation.model_construct(
            id=self._prefix + self.codec.encode_relation(iri),
            label=label,
            inverse_label=inverse_of(label),
            direction=direction,
            count=count,
        )

    def _hit_entity(self, hit: KeyHit, labelled: bool = False) -> Entity | None:
        """The entity a label-index hit names (None for a key this KG cannot give an ID); by label only if
        ``labelled`` (a label link needs no descriptions)."""
        try:
            term = key_term(hit.key)
        except ValueError:
            return None
        eid = self.term_id(term)
        return None if eid is None else (self.labelled_entity if labelled else self.entity)(term, eid)

    def _matches(self, find: Callable[[str, int], Sequence[KeyHit]], text: str, limit: int, mention: bool
                 ) -> list[EntityMatch]:
        """The entities the label index ``find`` (its ``link`` or ``search``) names for ``text``; the hits' mentions
        kept if ``mention``."""
        found = find(self.limits.check_query(text), self.limits.clamp(limit, self.limits.max_search))
        return [EntityMatch.model_construct(entity=ent, score=h.score, match=h.match,
                                            mention=h.mention if mention else None)
                for h in found if (ent := self._hit_entity(h)) is not None]

    # -- interface ---------------------------------------------------------------------------------------------
    @cpu_bound  # a unit of CPU work: off the event loop in a server (kg_adapters.cpu)
    def initialize(self, query: str, limit: int = 10) -> list[EntityMatch]:
        return self._matches(self.labels.link, query, limit, mention=True)

    @cpu_bound  # a unit of CPU work: off the event loop in a server (kg_adapters.cpu)
    def search_entities(self, text: str, limit: int = 10) -> list[EntityMatch]:
        return self._matches(self.labels.search, text, limit, mention=False)

    def _count_query(self, terms: list[Term], direction: Direction) -> dict[str, int]:
        """Distinct edges per predicate from (forward) or to (backward) the terms, across all graphs."""
        if direction is Direction.forward:
            terms = [t for t in terms if not isinstance(t, ox.Literal)]
        counts: dict[str, int] = {}
        # SPARQL cannot name a blank node (it would be a variable): count those by walking their quads
        for t in (t for t in terms if isinstance(t, ox.BlankNode)):
            seen = {
                (q.predicate.value, q.object if direction is Direction.forward else q.subject)
                for q in (self._quads(s=t) if direction is Direction.forward else self._quads(o=t))
            }
            for p, _ in seen:
                counts[p] = counts.get(p, 0) + 1
        values = " ".join(str(t) for t in terms if not isinstance(t, ox.BlankNode))
        if values:
            var, other = ("s", "o") if direction is Direction.forward else ("o", "s")
            q = (
                f"SELECT ?p (COUNT(*) AS ?n) WHERE {{ SELECT DISTINCT ?{var} ?p ?{other} WHERE {{ "
                f"VALUES ?{var} {{ {values} }} ?s ?p ?o }} }} GROUP BY ?p"
            )
            try:
                for row in self.store.query(q, use_default_graph_as_union=True):
                    counts[row["p"].value] = counts.get(row["p"].value, 0) + int(row["n"].value)
            except (OSError, RuntimeError, SyntaxError) as e:
                raise BackendError(f"KG {self.name!r}: store query failed: {e}") from e
        for p in METADATA_PREDICATES:
            counts.pop(p, None)
        return counts

    @cpu_bound  # a unit of CPU work: off the event loop in a server (kg_adapters.cpu)
    def get_relations(self, entity_ids: list[str]) -> RelationList:
        terms = list(dict.fromkeys(self.entity_term(x) for x in self.local_ids(entity_ids)))
        return self._relations(terms, self.limits.max_relations)

    @cpu_bound  # a unit of CPU work: off the event loop in a server (kg_adapters.cpu)
    def relation_counts(self, entity_ids: list[str]) -> RelationList:
        """One count query per direction however many entities (a reasoner's frontier of thousands was two
        queries per ``max_ids``); no check that each exists (two index lookups each; one that does not counts
        nothing, as over SPARQL)."""
        terms = list(dict.fromkeys(self.codec.decode(x) for x in self.bulk_local_ids(entity_ids)))
        return self._relations(terms, None)

    def _relations(self, terms: list[Term], cap: int | None) -> RelationList:
        rows = sorted(((d is Direction.backward, self.codec.encode_relation(iri), d, n, iri)
                       for d in (Direction.forward, Direction.backward)
                       for iri, n in self._count_query(terms, d).items()), key=lambda r: r[:2])
        cap = len(rows) if cap is None else cap
        rels = [self.relation_model(iri, d, n) for _, _, d, n, iri in rows[:cap]]
        return RelationList.model_construct(relations=rels, truncated=len(rows) > cap, partial=False, warnings=[])

    def _targets(self, term: Term, pred: ox.NamedNode, direction: Direction) -> Iterator[Term]:
        """Neighbours in the store's index order (stable), each once even if it is in several named graphs."""
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

    @cpu_bound  # a unit of CPU work: off the event loop in a server (kg_adapters.cpu)
    def adjacent(
        self, entity_ids: list[str], relation_id: str, direction: Direction = Direction.forward, limit: int = 2000
    ) -> EdgePage:
        """One walk of the store's index for any number of entities, labels only: the default pages get_edges by
        ``max_ids`` and builds each target's description."""
        locals_ = self.bulk_local_ids(list(dict.fromkeys(entity_ids)))
        page = self._read_edges(locals_, relation_id, direction, max(0, limit), 0, self.labelled_entity)
        return page.model_copy(update={"next_offset": None, "relation": None})

    @cpu_bound  # a unit of CPU work: off the event loop in a server (kg_adapters.cpu)
    def adjacent_ids(
        self, entity_ids: list[str], relation_id: str, direction: Direction = Direction.forward, limit: int = 2000
    ) -> AdjacentIds:
        """The walk :meth:`adjacent` makes, without the two things that cost most of it here: each target's label
        (index lookups per edge) and the check that each source exists (one that does not has no edges)."""
        terms = list(dict.fromkeys(self.codec.decode(x) for x in self.bulk_local_ids(list(dict.fromkeys(entity_ids)))))
        pred = self.relation_node(relation_id)
        direction = Direction(direction)
        limit = max(0, limit)
        pairs: list[tuple[str, str]] = []
        values: list[tuple[str, str]] = []
        term_id = self.term_id
        taken = 0
        try:
            for src in terms:
                sid: str | None = None  # made once a source, for its first edge
                for t in self._targets(src, pred, direction):
                    if taken == limit:
                        return AdjacentIds.model_construct(pairs=pairs, values=values, truncated=True)
                    taken += 1
                    if sid is None:
                        sid = term_id(src) or ""
                    if (tid := term_id(t)) is not None:
                        pairs.append((sid, tid))
                    elif isinstance(t, ox.Literal):
                        values.append((sid, t.value))
        except OSError as e:
            raise BackendError(f"KG {self.name!r}: store read failed: {e}") from e
        return AdjacentIds.model_construct(pairs=pairs, values=values, truncated=False)

    @cpu_bound  # a unit of CPU work: off the event loop in a server (kg_adapters.cpu)
    def labels_of(self, entity_ids: list[str]) -> dict[str, str]:
        """No check that each exists (a linker names whole frontiers): one that does not gets its local name, as
        over SPARQL."""
        out: dict[str, str] = {}
        for eid in dict.fromkeys(entity_ids):
            try:
                (local,) = self.local_ids([eid])
                out[eid] = self.labelled_entity(self.codec.decode(local), eid).label
            except (InvalidInput, NotFound):
                continue
        return out

    @cpu_bound  # a unit of CPU work: off the event loop in a server (kg_adapters.cpu)
    def _edges(self, entity_ids: list[str], relation_id: str, direction: Direction,
               limit: int | None, offset: int, labelled: bool) -> EdgePage:
        limit = self.limits.clamp(limit, self.limits.max_edges)
        entity = self.labelled_entity if labelled else self.entity
        return self._read_edges(self.local_ids(entity_ids), relation_id, direction, limit, offset, entity)

    def _read_edges(self, locals_: list[str], relation_id: str, direction: Direction, limit: int, offset: int,
                    entity: Callable[[Term, str | None], Entity]) -> EdgePage:
        terms = list(dict.fromkeys(self.entity_term(x) for x in locals_))
        pred = self.relation_node(relation_id)
        direction = Direction(direction)
        if not isinstance(offset, int) or offset < 0:
            raise InvalidInput("offset must be an integer ≥ 0")
        rel_id = self._prefix + self.codec.encode_relation(pred.value)
        stream = ((src, tgt) for src in terms for tgt in self._targets(src, pred, direction))
        try:
            window = list(islice(stream, offset, offset + limit + 1))
        except OSError as e:
            raise BackendError(f"KG {self.name!r}: store read failed: {e}") from e
        truncated = len(window) > limit
        edges: list[Edge] = []
        entities: dict[str, Entity] = {}
        for src, tgt in window[:limit]:
            sid = self.term_id(src) or ""
            entities.setdefault(sid, entity(src, sid))
            tid = self.term_id(tgt)
            value = None
            if isinstance(tgt, ox.Literal):
                dt = tgt.datatype.value if tgt.datatype is not None and not tgt.language else None
                value = Literal.model_construct(
                    value=tgt.value, datatype=None if dt in PLAIN_TYPES else dt, lang=tgt.language
                )
            edges.append(
                Edge.model_construct(
                    source=sid, relation=rel_id, direction=direction, target=tid, value=value, qualifiers=[]
                )
            )
            if tid is not None:
                entities.setdefault(tid, entity(tgt, tid))
        return EdgePage.model_construct(
            edges=edges,
            entities=entities,
            truncated=truncated,
            next_offset=offset + len(edges) if truncated else None,
            partial=False,
            warnings=[],
            relation=self.relation_model(pred.value, direction),
        )

    async def describe_entity(self, entity_id: str) -> EntityDescription:
        (local,) = self.local_ids([entity_id])
        term = self.entity_term(local)
        ent = self.entity(term, entity_id)
        preds = [] if isinstance(term, ox.Literal) else self._used(ALIAS_NODES + LABEL_NODES)
        names = [q.object.value for pred in preds for q in self._quads(s=term, p=pred)
                 if isinstance(q.object, ox.Literal)
                 and language_rank(q.object.language, self.languages) <= len(self.languages)]
        aliases = [a for a in dict.fromkeys(names) if a != ent.label]
        rels = (await self.get_relations([entity_id])).relations
        return EntityDescription(
            entity=ent,
            aliases=aliases,
            relations=rels,
            iri=term.value if isinstance(term, ox.NamedNode) else None,
        )

    async def find_by_label(self, label: str, limit: int = 20) -> list[Entity]:
        """Entities whose label is exactly ``label``, else those whose label equals it up to case (the default
        would run the whole label search, fuzzy and full-text stages included, and keep only these)."""
        if not label.strip():
            return []
        return (await self.find_by_labels([label], limit))[label]

    async def find_by_labels(self, labels: list[str], limit: int = 20) -> dict[str, list[Entity]]:
        """:meth:`find_by_label` of a frontier's names from the label index in one lookup: it holds every name
        of every entity with its key, so the store is read only for the entities found (their shown label, which
        must equal the name for an exact match; no description). A name the index does not hold is no entity's
        label here."""
        wanted = list(dict.fromkeys(labels))
        if limit < 1:
            return {label: [] for label in wanted}
        named = self.labels.named_many([label for label in wanted if label.strip()], max(limit, 20))
        out: dict[str, list[Entity]] = {}
        for label in wanted:
            found = [ent for h in named.get(label, ()) if (ent := self._hit_entity(h, labelled=True)) is not None]
            want = label_key(label)
            out[label] = ([e for e in found if e.label == label] or [e for e in found if label_key(e.label) == want]
                          )[:limit]
        return out

    async def label_of(self, entity_id: str) -> str:
        """The label :meth:`describe_entity` shows, without counting the entity's relations (label links ask it
        for every entity of a frontier)."""
        (local,) = self.local_ids([entity_id])
        return self.entity(self.entity_term(local), entity_id).label

    async def resolve_key(self, key: str) -> str | None:
        candidates: list[Term] = [ox.NamedNode(name_iri(key)), ox.Literal(key)]  # a triple-file name, a value
        if ":" in key:
            try:
                candidates.insert(0, key_term(key))
            except ValueError:
                pass
        for term in candidates:
            if self._exists(term):
                return self.term_id(term)
        return None

    async def entity_key(self, entity_id: str) -> str | None:
        """The IRI; for a name from a triple file, the name itself (as MemoryKG gives it)."""
        (local,) = self.local_ids([entity_id])
        term = self.entity_term(local)
        if isinstance(term, ox.NamedNode):
            return unquote(term.value[len(ENTITY_NS) :]) if term.value.startswith(ENTITY_NS) else term.value
        return term.value if isinstance(term, ox.Literal) else None

    async def info(self) -> KGInfo:
        if self._info is None:
            try:
                rows = list(
                    self.store.query(
                        "SELECT ?p (COUNT(*) AS ?n) WHERE { SELECT DISTINCT ?s ?p ?o WHERE { ?s ?p ?o } } "
                        "GROUP BY ?p ORDER BY DESC(?n)",
                        use_default_graph_as_union=True,
                    )
                )
            except (OSError, RuntimeError) as e:
                raise BackendError(f"KG {self.name!r}: store query failed: {e}") from e
            rows = [(r["p"].value, int(r["n"].value)) for r in rows if not r["p"].value.startswith(META_NS)]
            edges = [(p, n) for p, n in rows if p not in METADATA_PREDICATES]
            self._info = KGInfo(
                name=self.name,
                backend=self.backend,
                description=self.description,
                entities=None,
                triples=sum(n for _, n in edges),  # edges, as MemoryKG counts them: labels are metadata
                relations=len(edges),
                relation_sample=[self.relation_model(p, Direction.forward, n) for p, n in edges[:20]],
            )
        return self._info


    async def sparql_query(self, query: str, *, limit: int | None = None, timeout: float | None = None):
        """A caller's read-only query, checked by the guard (:mod:`kg_adapters.sparql.guard`) and evaluated on
        the store over all its graphs but the metadata one; common prefixes (rdf, rdfs, owl, xsd, skos, schema,
        wd, wdt …) need no declaration."""
        from .sparql.guard import DEFAULT_MAX_ROWS
        from .sparql.run import ThreadRuns, query_store
        from .sparql.workers import StoreQueryWorkers

        if not self.capabilities.sparql:
            raise InvalidInput(f"KG {self.name!r} does not take SPARQL queries (sparql_query = false in its config)")
        if self._workers is None and self.query_source is not None:
            self._workers = StoreQueryWorkers(self.name, self.query_source)
        if self._thread_runs is None:
            self._thread_runs = ThreadRuns()
        return await query_store(self.store, self.name, query, self.limits.clamp(limit, DEFAULT_MAX_ROWS), timeout,
                                 hidden=(META_GRAPH,), workers=self._workers, runs=self._thread_runs)

    async def aclose(self) -> None:
        if self._workers is not None:
            self._workers.close()


# -- opening ---------------------------------------------------------------------------------------
def default_store_dir(source: Path, cache_dir: Path | None = None) -> Path:
    """Where a file too large for memory gets its store when none is configured: under ``stores/`` of the cache
    directory (None: the environment's), keyed by the file's path, size and mtime, so the next start reuses it."""
    from .environment import Environment

    st = source.stat()
    digest = hashlib.sha1(f"{source.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:16]
    return (cache_dir or Environment.read().cache_dir) / "stores" / f"{source.stem}-{digest}"


def open_store_kg(name: str, path: str | Path, limits: Limits | None = None, **options) -> OxigraphKG:
    """Open an existing on-disk store (made by :func:`load_into_store` or ``oxigraph load --location``).

    Options: ``read_only`` (default True: several processes may share the store), ``description``,
    ``languages``, ``entity_base``, ``relation_base`` (override the store's recorded namespaces). Entity search
    uses the SQLite FTS label index ``STORE.labels.sqlite`` beside the store when there is one (written by
    ``tot-mcp load``), else reads the store's labels into memory on first search.
    """
    return open_store(name, path, limits, BACKEND.parse_options(options, f"store KG {name!r}"))


def open_store(name: str, path: str | Path | None, limits: Limits | None, options: StoreOptions) -> OxigraphKG:
    """:func:`open_store_kg` with its options already validated (what the backend registry calls)."""
    opts = options.model_dump(exclude_unset=True)  # only what was given: OxigraphKG has its own defaults
    path = Path(path or "").expanduser()
    if not path.is_dir():
        raise InvalidInput(
            f"no oxigraph store at {path}: create one with load_into_store() or `oxigraph load --location {path} --file F`"
        )
    try:
        store = ox.Store.read_only(str(path)) if opts.pop("read_only", True) else ox.Store(str(path))
    except OSError as e:
        raise InvalidInput(f"cannot open oxigraph store at {path}: {e}") from None
    from .sparql.workers import StoreSource

    return OxigraphKG(name, store, limits=limits, label_search=FtsLabelIndex.for_store(path),
                      query_source=StoreSource(store=str(path)), **opts)


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
