"""A knowledge graph behind a SPARQL 1.1 endpoint: Wikidata (public WDQS or a mirror) or any RDF
store.

Every read is one or a few bounded queries over many IDs at once (``batch_size`` IDs a query,
LIMIT+1 paging with ORDER BY); labels of entities seen in results are cached, so follow-up reads
rarely need a label query.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import overload

from ..base import LABEL, Capabilities, Hop, KnowledgeGraph, Limits, hops_of
from ..eager import gather_eager
from ..errors import (
    BackendError,
    BackendRefused,
    BackendTimeout,
    EndpointFailed,
    InvalidInput,
    KGError,
    NotFound,
)
from ..lru import LRU
from ..models import (
    STRUCTURED_VALUE,
    AdjacentIds,
    Direction,
    Edge,
    EdgePage,
    Entity,
    EntityDescription,
    EntityMatch,
    KGInfo,
    Literal,
    Qualifier,
    Relation,
    RelationList,
    inverse_of,
)
from ..text import bracketed_mentions, humanize, key, longest_spans, strip_brackets
from . import queries, relsearch
from .endpoint import JsonEndpoint
from .escape import clean_search_text, sparql_literal
from .guard import DEFAULT_MAX_ROWS, GuardPolicy, SparqlRows, check_query_async
from .ids import WD, wikidata_local
from .relsearch import RelationHit
from .results import Row, Term, parse_select
from .values import UNITLESS, XSD, EntityDetails, quantity_value, time_value
from .vocab import GenericProfile, WikidataProfile
from .wbsearch import wbsearchentities

XSD_ANYURI = "http://www.w3.org/2001/XMLSchema#anyURI"
XSD_STRING = XSD + "string"
_GENID = "http://www.wikidata.org/.well-known/genid/"
_TOKEN = re.compile(r"\w+|[^\w\s]")
_STOP = frozenset(
    "a an the of in on at to for by with from and or is are was were be been being what which who "
    "whom whose when where how why did does do done that this these those it its as not no yes "
    "than then there their they he she his her him i me my we our you your name named list give "
    "show tell many much".split()
)
_MAX_NGRAM = 6
_MAX_GRAMS = 150
_MAX_MENTIONS = 8
# Generic RDF: a blank-node object (an award with a name and a year) is shown as the edge's value —
# its label, or STRUCTURED_VALUE if it has none — with its own properties as the edge's qualifiers,
# at most BNODE_PROPERTIES each; the query fetches at most BNODE_PROPERTIES × (page size + 1) such
# rows, so one huge node cannot blow up a page. One level only: a blank node among those properties
# is shown as STRUCTURED_VALUE.
BNODE_PROPERTIES = 20
#: seconds a walk's labelled last-hop rows answer the pages asked of that hop after it: the next
#: steps of the same question, not a later one (repeating a page is the result cache's job)
PAGE_ROWS_TTL = 60.0
#: what a read with something along may fail by where it alone would not (not a rate limit or an
#: open circuit: asking again at once would not help)
_ALONG_FAILED = (BackendRefused, BackendTimeout, EndpointFailed)
#: a walk's hop read carries the relations of at most this many targets a hop (``with_relations``):
#: a frontier the walk reads on, cheaply — more cost the endpoint and the parse more than the round
#: trip they save (bench.round_trips: 3-hop 1.22 s at 1,000, 1.03 s at 100), and a hub among them
#: is sampled as in a relations() batch of as many entities
RELATED_TARGETS = 100
#: a hop read carries the values its caller reads next (``then``) of at most this many targets a
#: hop: a hub's thousands would double the read's cost, and are seldom linked one by one
THEN_TARGETS = 1000
UNKNOWN = "unknown value"  # Wikidata's somevalue, a blank node or a genid IRI
Group = tuple[str, Term, list[Row]]  # an edge read: source local ID, target, its result rows


def _no_id(term: Term) -> bool:
    """A node with no ID of its own: a blank node, or Wikidata's skolemised unknown value."""
    return term.kind == "bnode" or term.value.startswith(_GENID)


def _property_rows(rows: Sequence[Row]) -> int:
    """Rows carrying a property of a blank-node target (or a Wikidata qualifier): ``?qp`` bound."""
    return sum("qp" in r for r in rows)


def _sorts_here(edge: tuple) -> bool:
    """Whether an edge's target (:meth:`SparqlKG._edge_key`) sorts by its string alone, as the
    endpoint's ``ORDER BY ?tgt`` sorts it: an IRI (SPARQL orders IRIs as simple literals) or a
    simple literal (no language, no datatype but ``xsd:string``; its order is its codepoints').
    Numbers, dates and tagged strings order by value, type and engine: the endpoint sorts those."""
    kind, lang, datatype = edge[1], edge[3], edge[4]
    return kind == "uri" or (kind == "literal" and lang is None and datatype in (None, XSD_STRING))


def _target_order(edge: tuple) -> tuple[bool, str]:
    """A source's edges as ``ORDER BY ?tgt`` orders them (:func:`_sorts_here`): IRIs before
    literals, each by its string."""
    return edge[1] != "uri", edge[2]


def _multiplicity(rows: list[Row]) -> int:
    """How many rows an edge is before its label rows joined it (one a graph holding it)."""
    return len(rows) // max(1, len({(r.get("l"), r.get("lp")) for r in rows}))


def _chunks(items: Sequence, size: int) -> list[Sequence]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def _direction(direction: Direction | str) -> Direction:
    try:
        return Direction(direction)
    except ValueError:
        raise InvalidInput(
            f"direction must be 'forward' or 'backward', got {direction!r}"
        ) from None


def _variants(text: str) -> list[str]:
    """Capitalisations worth an exact index lookup: as typed, lower, Title Case, first letter up,
    UPPER if short."""
    out = [
        text,
        text.lower(),
        " ".join(w[:1].upper() + w[1:] for w in text.split(" ")),
        text[:1].upper() + text[1:],
    ]
    if len(text) <= 5:
        out.append(text.upper())
    return list(dict.fromkeys(out))


class SparqlKG(KnowledgeGraph):
    """The contract's reads over SPARQL, and two of its extensions: ``sparql_query`` (a caller's
    query, guarded) and ``search_relations`` (the endpoint's property labels searched)."""

    capabilities = Capabilities(backend="sparql", remote=True, sparql=True, relation_search=True)

    def __init__(
        self,
        name: str,
        profile: WikidataProfile | GenericProfile,
        sparql: JsonEndpoint,
        *,
        search_api: JsonEndpoint | None = None,
        search_language: str = "en",
        limits: Limits | None = None,
        batch_size: int = 50,
        backward_scan: int = 20000,
        label_search: str = "contains",
        description: str = "",
        label_cache: int = 50000,
        client_sort_max: int = 10_000,
        sparql_services: Iterable[str] = (),
    ) -> None:
        super().__init__(name, limits)
        self.profile = profile
        self.capabilities = replace(SparqlKG.capabilities, backend=profile.kind)
        self.sparql_services = frozenset(sparql_services)  # SERVICE IRIs a caller's query may use
        self.structured_bnodes = (
            profile.kind == "sparql"
        )  # blank nodes are values with properties (generic RDF)
        self.sparql = sparql
        self._url = sparql.guard.url
        self.search_api = search_api
        self.search_language = search_language
        self.batch_size = batch_size
        self.backward_scan = backward_scan
        self.label_search = label_search
        self.description = description
        self._labels: LRU[str] = LRU(label_cache)
        #: a source's page rows read with a walk's last hop (:meth:`_along`, ``labelled``), for the
        #: pages a traversal asks of the same hop next: (source term, relation term, forward) →
        #: :meth:`_source_reads`' answer; kept a short while (a question's reads, not a cache)
        self._page_rows: LRU[tuple] = LRU(
            label_cache, ttl=PAGE_ROWS_TTL, weigh=lambda read: 1 + len(read[0])
        )
        #: every value of a relation of what a lookup by value found (:meth:`find`), for the
        #: link lookup back, which reads them next: (local ID, relation term) → the values
        self._valued: LRU[tuple[Term, ...]] = LRU(
            label_cache, ttl=PAGE_ROWS_TTL, weigh=lambda ts: 1 + len(ts)
        )
        #: the relations of entities read with another read — what a lookup by value found, a
        #: walk's hop reached (_keep_relations) — for the relations() asked of them next
        self._related: LRU[RelationList] = LRU(
            label_cache, ttl=PAGE_ROWS_TTL, weigh=lambda rl: 1 + len(rl.relations)
        )
        #: a page is sorted here from an unsorted read of at most this many rows (_sorted_read)
        self.client_sort_max = client_sort_max
        self._used_relations: set[str] = (
            set()
        )  # relations an ASK found in use (bounded by the vocabulary)
        self._server_sorts: set[tuple[str, bool]] = (
            set()
        )  # (relation, forward) with non-IRI targets seen

    # -- plumbing ----------------------------------------------------------------------------------
    async def _select(self, query: str) -> list[Row]:
        return parse_select(await self.sparql.query(query), self._url)

    async def _ask(self, query: str) -> bool:
        """An ASK query's answer (a GET, unless an entity's IRI — up to 4,096 characters — makes it
        too long)."""
        return bool((await self.sparql.query(query)).get("boolean"))

    def _qid(self, local: str) -> str:
        return f"{self.name}:{local}"

    def _terms(self, entity_ids: list[str], bulk: bool = False) -> list[tuple[str, str]]:
        """(local, SPARQL term) for each ID, all validated before any query is built."""
        locals_ = self._local_ids(entity_ids, bulk)
        return [(local, self.profile.entity_term(local)) for local in locals_]

    def _relation(self, relation_id: str) -> tuple[str, str]:
        local = self._local_relation(relation_id)
        return local, self.profile.relation_term(local)

    def _rank(self, term: Term, pred: Term | None, preds: Sequence[str]) -> tuple[int, int, str]:
        langs = self.profile.langs
        lang = term.lang or ""
        li = langs.index(lang) if lang in langs else len(langs)
        pi = (
            preds.index(f"<{pred.value}>") if pred is not None and f"<{pred.value}>" in preds else 0
        )
        return (li, pi, term.value)

    def _best(self, rows: Iterable[Row], var: str, pvar: str, preds: Sequence[str]) -> str | None:
        found = [
            self._rank(r[var], r.get(pvar), preds)
            for r in rows
            if var in r and r[var].kind == "literal"
        ]
        return min(found)[2] if found else None

    def _label_in(self, rows: Iterable[Row]) -> str | None:
        """The best ``?l`` label of ``rows`` (by the profile's label predicates and languages)."""
        return self._best(rows, "l", "lp", self.profile.label_preds)

    def _remember(self, local: str, label: str | None) -> str:
        label = label or self.profile.fallback_label(local)
        self._labels.put(local, label)
        return label

    async def _ensure_labels(self, entities: Iterable[str], relations: Iterable[str] = ()) -> None:
        """Fetch the labels not cached yet, entities and relations together (one query a batch)."""
        p = self.profile
        missing = {p.entity_term(x): x for x in entities if x not in self._labels}
        missing.update((p.relation_node(x), x) for x in relations if x not in self._labels)
        await self._read_labels(missing)

    async def _absent(self, locals_: Iterable[str]) -> set[str]:
        """Those of ``locals_`` in no triple, asked of the ones not seen yet (one query per batch,
        which remembers the labels of the others)."""
        missing = {self.profile.entity_term(x): x for x in locals_ if x not in self._labels}
        return await self._read_labels(missing, only_present=True)

    async def _read_labels(self, items: dict[str, str], only_present: bool = False) -> set[str]:
        """Read and remember the labels of ``items`` (term → local ID), one query per batch; with
        ``only_present``, the items in no triple are returned instead, not remembered."""
        p = self.profile
        absent: set[str] = set()
        for batch in _chunks(list(items.items()), self.batch_size):
            rows = await self._select(queries.labels(p, [t for t, _ in batch], only_present))
            grouped: dict[str, list[Row]] = {}
            for r in rows:
                if "e" in r:
                    grouped.setdefault(r["e"].value, []).append(r)
            for _, local in batch:
                found = grouped.get(p.iri(local))
                if found is None and only_present:
                    absent.add(local)
                else:
                    self._remember(local, self._label_in(found or []))
        return absent

    def _entity(self, local: str, description: str | None = None) -> Entity:
        label = self._labels.peek(local) or self.profile.fallback_label(local)
        return Entity.model_construct(
            id=self._qid(local), label=label, description=description, kg=self.name
        )

    def _relation_model(
        self, local: str, label: str, direction: Direction, count: int | None
    ) -> Relation:
        return Relation.model_construct(
            id=self._qid(local),
            label=label,
            inverse_label=inverse_of(label),
            direction=direction,
            count=count,
        )

    def _value(self, term: Term) -> tuple[str | None, Literal | None]:
        """A result node as (entity local ID, None) or (None, literal value)."""
        if term.kind == "bnode" and self.structured_bnodes:
            return None, Literal.model_construct(value=STRUCTURED_VALUE, datatype=None, lang=None)
        if _no_id(term):
            return None, Literal.model_construct(value=UNKNOWN, datatype=None, lang=None)
        if term.kind == "uri":
            local = self.profile.entity_local(term)
            if local is not None:
                return local, None
            return None, Literal.model_construct(value=term.value, datatype=XSD_ANYURI, lang=None)
        return None, Literal.model_construct(
            value=term.value, datatype=term.datatype, lang=term.lang
        )

    def _units(self, rows: Iterable[Row]) -> list[str]:
        """Item IDs of the quantity units in ``rows`` (Wikidata value nodes), unitless "1" left
        out."""
        return [
            local
            for r in rows
            for var in ("unit", "qunit")
            if var in r and (local := self.profile.entity_local(r[var])) not in (None, UNITLESS)
        ]

    def _faithful(
        self, term: Term, value: Literal, rows: Sequence[Row], tp: str, unit: str
    ) -> Literal:
        """A Wikidata literal as Wikidata means it (:mod:`kg_adapters.sparql.values`): a time at the
        precision of its value node, a quantity with its unit. Anything else, or a generic endpoint,
        keeps the endpoint's value (a WKT coordinate is exact as it is; the text rendering writes it
        in degrees)."""
        if self.profile.kind != "wikidata" or term.kind != "literal":
            return value
        if term.datatype == XSD + "dateTime":
            precisions = [int(r[tp].value) for r in rows if tp in r and r[tp].value.isdigit()]
            return time_value(term.value, max(precisions) if precisions else None) or value
        units = [r[unit] for r in rows if unit in r]
        if units:
            local = self.profile.entity_local(units[0])
            label = None if local in (None, UNITLESS) else self._labels.peek(local) or local
            return quantity_value(term.value, label)
        return value

    # -- relations ---------------------------------------------------------------------------------
    async def relations(self, entity_ids: list[str]) -> dict[str, RelationList]:
        """One query per ``batch_size`` entities (:func:`queries.relations`), the batches at once
        (the endpoint's slots bound the concurrency). An ID with a prefix this KG does not have
        raises NotFound naming the prefixes it has."""
        ids = list(dict.fromkeys(entity_ids))
        terms = self._terms(ids, bulk=True)
        found = {local: rl for local, _ in terms if (rl := self._related.get(local)) is not None}
        batches = _chunks([t for t in terms if t[0] not in found], self.batch_size)
        parts = await asyncio.gather(*(self._relations_of(b) for b in batches))
        found.update((local, rl) for part in parts for local, rl in part.items())
        return {eid: found[local] for eid, (local, _) in zip(ids, terms) if local in found}

    async def _relations_of(self, batch: Sequence[tuple[str, str]]) -> dict[str, RelationList]:
        """One batch's relations by local ID. An entity with more than ``backward_scan`` incoming
        edges has its backward relations from a sample, uncounted; the rest of a batch whose sample
        such a hub cut are asked again, together (each round answers a hub, so this ends). The
        entities with no relation are looked up in one query; those in no triple are left out."""
        scan = self.backward_scan
        out: dict[str, RelationList] = {}
        empty: list[tuple[str, str]] = []
        while batch:
            rows = await self._select(queries.relations(self.profile, [t for _, t in batch], scan))
            batch = self._relations_read(rows, batch, (scan + 1) * len(batch), out, empty)
        absent = await self._absent(local for local, _ in empty)
        none = RelationList.model_construct(
            relations=[],
            truncated=False,
            partial=False,
            warnings=["no statements found for this entity"],
        )
        out.update((local, none) for local, _ in empty if local not in absent)
        return out

    def _relations_read(
        self,
        rows: list[Row],
        batch: Sequence[tuple[str, str]],
        sample: int,
        out: dict[str, RelationList],
        empty: list[tuple[str, str]],
    ) -> list[tuple[str, str]]:
        """One :func:`queries.relations` answer for ``batch`` (its backward sample ``sample`` rows
        at most): each entity's relations into ``out``, those with none into ``empty``, and the
        entities to ask again (those a hub's sample left out)."""
        scan = self.backward_scan
        back: dict[str, int] = {}  # entity IRI → its rows in the backward sample
        per: dict[str, list[Row]] = {}
        for r in rows:
            if "e" in r and "t" in r and r["t"].value.isdigit():
                back[r["e"].value] = int(r["t"].value)
            elif "e" in r:
                per.setdefault(r["e"].value, []).append(r)
        hubs = {iri for iri, n in back.items() if n > scan}
        cut = bool(hubs) and sum(back.values()) >= sample
        again = []
        for local, term in batch:
            iri = self.profile.iri(local)
            if cut and iri not in hubs:
                again.append((local, term))
            elif (rl := self._relation_list(per.get(iri, []), iri in hubs)).relations:
                out[local] = rl
            else:
                empty.append((local, term))
        return again

    def _relation_list(self, rows: list[Row], sampled: bool) -> RelationList:
        """One entity's relations from its rows, forward first, most edges first; ``sampled``: its
        backward ones were found in a sample, their counts left out."""
        rels = []
        for local, label, rs in self._labelled_relations(rows):
            # one count per direction (GROUP BY ?e ?r ?dir), repeated on each of its label rows
            for d, n in {
                r["dir"].value: int(r["n"].value) for r in rs if "dir" in r and "n" in r
            }.items():
                direction = Direction.forward if d == "f" else Direction.backward
                count = None if sampled and direction is Direction.backward else n
                rels.append(self._relation_model(local, label, direction, count))
        rels.sort(key=lambda r: (r.direction is Direction.backward, -(r.count or 0), r.label, r.id))
        warnings = (
            [
                f"more than {self.backward_scan} incoming edges: backward relations were found "
                "in a sample of them and their counts are omitted"
            ]
            if sampled
            else []
        )
        return RelationList.model_construct(
            relations=rels, truncated=sampled, partial=False, warnings=warnings
        )

    def _labelled_relations(self, rows: list[Row]) -> list[tuple[str, str, list[Row]]]:
        """(local ID, label, its rows) of each relation ``?r`` of ``rows``, in their order; its best
        label is remembered (the humanized local name when it has none, as get_relations shows
        it)."""
        grouped: dict[str, list[Row]] = {}
        for r in rows:
            local = self.profile.relation_local(r["r"].value) if "r" in r else None
            if local is not None:
                grouped.setdefault(local, []).append(r)
        return [
            (
                local,
                self._remember(
                    local,
                    self._label_in(rs) or humanize(self.profile.fallback_label(local)),
                ),
                rs,
            )
            for local, rs in grouped.items()
        ]

    async def _check_used(self, rel_term: str, relation_id: str) -> None:
        """NotFound unless a triple uses the relation (asked once: one in use stays in use)."""
        if rel_term not in self._used_relations:
            if not await self._ask(queries.relation_used(self.profile, rel_term)):
                raise NotFound(
                    f"no relation {relation_id!r} in KG {self.name!r}; call "
                    "get_relations to list them"
                )
            self._used_relations.add(rel_term)

    # -- edges -------------------------------------------------------------------------------------
    async def edges(
        self,
        entity_ids: list[str],
        relation_id: str,
        direction: Direction = Direction.forward,
        limit: int | None = None,
        offset: int = 0,
        labelled: bool = True,
    ) -> EdgePage:
        """One page (:meth:`_page`). No page reads descriptions: ``labelled`` changes nothing."""
        sources = self._terms(entity_ids)
        rel = self._relation(relation_id)
        direction = _direction(direction)
        limit = self.limits.clamp(limit, self.limits.max_edges)
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise InvalidInput("offset must be an integer ≥ 0")
        grouped, truncated = await self._page(sources, rel, direction, limit, offset)
        if not grouped and offset == 0:
            await self._check_used(rel[1], relation_id)
        return await self._edge_page(grouped, rel[0], direction, truncated, offset)

    @overload
    async def adjacent_ids(
        self,
        entity_ids: list[str],
        relation_id: str,
        direction: Direction = ...,
        limit: int = ...,
        labelled: bool = ...,
        then: Sequence[str] = ...,
        with_relations: bool = ...,
    ) -> AdjacentIds: ...
    @overload
    async def adjacent_ids(
        self,
        entity_ids: list[str],
        relation_id: Sequence[Hop],
        direction: Direction = ...,
        limit: int = ...,
        labelled: bool = ...,
        then: Sequence[str] = ...,
        with_relations: bool = ...,
    ) -> dict[Hop, AdjacentIds]: ...
    async def adjacent_ids(
        self,
        entity_ids: list[str],
        relation_id: str | Sequence[Hop],
        direction: Direction = Direction.forward,
        limit: int = 2000,
        labelled: bool = False,
        then: Sequence[str] = (),
        with_relations: bool = False,
    ) -> AdjacentIds | dict[Hop, AdjacentIds]:
        """One unsorted query per ``batch_size`` sources (:meth:`_unsorted`), no models built; no
        sources: one such query anywhere; none for sources a lookup by value found, whose values of
        the relation came with it (:meth:`_carried`). Where only a page reads a value right —
        Wikidata's (times and quantities come with their value nodes) and structured values (blank
        nodes, with their properties) — the page's read of ``limit`` edges (:meth:`_page`), one
        query per batch. Several hops: :meth:`_along`."""
        if not isinstance(relation_id, str):
            return await self._along(
                entity_ids, hops_of(relation_id), limit, labelled, then, with_relations
            )
        rel_local, rel_term = self._relation(relation_id)
        direction = _direction(direction)
        if not isinstance(limit, int) or limit < 0:
            raise InvalidInput("limit must be an integer ≥ 0")
        sources = self._terms(list(dict.fromkeys(entity_ids)), bulk=True)
        forward = direction is Direction.forward
        kept = self._carried(sources, rel_term) if forward and not labelled else None
        if kept is not None:  # a lookup's finds, whose values of the relation came with it
            return self._adjacent(kept[:limit], len(kept) > limit)
        read = None
        if not (self.profile.qualifiers and sources):
            read = await self._unsorted(sources, rel_term, forward, limit, labelled)
        if read is None:  # pages, to one edge over the limit (a page's flag is inexact at its end)
            grouped: list[Group] = []
            while len(grouped) <= limit:
                got, more = await self._page(
                    sources,
                    (rel_local, rel_term),
                    direction,
                    limit + 1 - len(grouped),
                    len(grouped),
                )
                grouped += got
                if not (more and got):
                    break
            cut = len(grouped) > limit
            page = await self._edge_page(grouped[:limit], rel_local, direction, cut, 0, shown=False)
            return AdjacentIds.of_page(page)
        pairs: list[tuple[str, str]] = []
        values: list[tuple[str, str]] = []
        for src, t, rows in read[0]:
            local, value = self._value(t)
            if local is not None:
                if labelled:
                    self._remember(local, self._label_in(rows))
                pairs.append((self._qid(src), self._qid(local)))
            elif value is not None:
                values.append((self._qid(src), value.value))
        return AdjacentIds.model_construct(pairs=pairs, values=values, truncated=read[1])

    async def _along(
        self,
        entity_ids: list[str],
        hops: list[Hop],
        limit: int,
        labelled: bool,
        then: Sequence[str] = (),
        with_relations: bool = False,
    ) -> dict[Hop, AdjacentIds]:
        """Several hops in one query per batch of sources (:func:`queries.hop_rows`), each hop with
        its own ``limit`` (its room + 1 edges asked: more is a cut). ``labelled``: the targets'
        labels with them, and the rows as a page reads them (:meth:`_source_reads`), kept for the
        pages a traversal asks of these hops next. One hop, or a hop a single read serves better
        — Wikidata's values, a blank node reached — is read as one relation is (no rows kept: a
        hub's thousands cost more to keep than a page of them costs to read), unless ``then`` asks
        the targets' values with it, or ``with_relations`` their relations (kept for
        :meth:`relations` a short while, as a lookup by value keeps its finds')."""
        if not isinstance(limit, int) or limit < 0:
            raise InvalidInput("limit must be an integer ≥ 0")
        rels = {hop: self._relation(hop[0]) for hop in hops}
        then = list(then)
        later = [self._relation(r)[1] for r in then]
        terms = self._terms(list(dict.fromkeys(entity_ids)), bulk=True)
        local_of = {t: local for local, t in terms}
        sources = list(local_of)
        # no sources: a sample of each relation anywhere, still one query for them all
        single = self.profile.qualifiers or (len(hops) == 1 and not (then or with_relations))
        alone = list(hops) if single else []
        got: dict[Hop, list[tuple[str, Term]]] = {h: [] for h in hops if h not in alone}
        cut: set[Hop] = set()
        found: dict[Term, dict[tuple[int, Term], None]] = {}  # a target's (then's index, value)
        for batch in _chunks(sources, self.batch_size) or [[]]:
            ask = [h for h in got if h not in cut]
            if not ask:
                break
            room = {h: limit - len(got[h]) for h in ask}  # one edge more: a full read is no cut
            asked = [(rels[h][1], h[1] is Direction.forward, room[h] + 1) for h in ask]
            related = (self.backward_scan, RELATED_TARGETS) if with_relations else None
            query = queries.hop_rows(
                self.profile, batch, asked, labelled, later, THEN_TARGETS, related
            )
            try:
                rows = await self._select(query)
            except _ALONG_FAILED:
                if not (then or with_relations):
                    raise
                # what came along made the answer too big or too slow, or the endpoint refused it:
                # the hops alone, as without it; the caller reads the rest after
                then, later, with_relations = [], [], False
                rows = await self._select(queries.hop_rows(self.profile, batch, asked, labelled))
            if with_relations:
                along = [r for r in rows if "e" in r]
                rows = [r for r in rows if "e" not in r]
            per: dict[Hop, dict[tuple, list[Row]]] = {h: {} for h in ask}
            for r in rows:
                if "src" not in r:  # a target's value of a relation of ``then``, if it has one
                    if "tgt" in r:
                        values = found.setdefault(r["tgt"], {})
                        if "av" in r and "a" in r:
                            values[(int(r["a"].value), r["av"])] = None
                elif "h" in r and (k := self._edge_key(r)) is not None:
                    per[ask[int(r["h"].value)]].setdefault(k, []).append(r)
            for h, groups in per.items():
                edges = [(k[0], krows[0]["tgt"]) for k, krows in groups.items()]
                if self.structured_bnodes and any(t.kind == "bnode" for _, t in edges):
                    alone.append(h)  # only a page reads a blank node's properties
                    del got[h]
                    continue
                got[h] += edges[: room[h]]
                read = sum(map(_multiplicity, groups.values())) if labelled else len(edges)
                if read > room[h]:
                    cut.add(h)
                if labelled:
                    whole = h not in cut and len(hops) > 1
                    self._keep_page_rows(groups, batch, local_of, rels[h][1], h, whole)
            if with_relations:
                targets = {
                    local
                    for groups in per.values()
                    for k, krows in groups.items()
                    if k[1] == "uri" and (local := self.profile.entity_local(krows[0]["tgt"]))
                }
                sample = queries.related_sample(self.backward_scan, RELATED_TARGETS, len(asked))
                self._keep_relations(along, targets, sample)
        out = {h: self._adjacent(edges, h in cut, then, found) for h, edges in got.items()}
        if alone:
            reads = await asyncio.gather(
                *(self.adjacent_ids(entity_ids, r, d, limit, labelled) for r, d in alone)
            )
            out.update(zip(alone, reads))
        return {h: out[h] for h in hops}

    def _carried(
        self, sources: list[tuple[str, str]], rel_term: str
    ) -> list[tuple[str, Term]] | None:
        """Every edge of ``sources`` along ``rel_term`` from the values a lookup by value read
        with its finds (:meth:`find`), or None unless all of them are kept."""
        edges: list[tuple[str, Term]] = []
        for local, _ in sources:
            values = self._valued.get((local, rel_term))
            if values is None:
                return None
            edges.extend((local, t) for t in values)
        return edges if sources else None

    def _keep_page_rows(
        self,
        groups: dict[tuple, list[Row]],
        batch: Sequence[str],
        local_of: dict[str, str],
        rel_term: str,
        hop: Hop,
        whole: bool,
    ) -> None:
        """Remember the targets' labels of a labelled hop read, and keep each source's rows as a
        page reads them (none when a target does not sort by its string: the endpoint sorts those
        pages)."""
        here = True
        for k, krows in groups.items():
            if not _sorts_here(k):
                here = False
            elif k[1] == "uri" and (local := self.profile.entity_local(krows[0]["tgt"])):
                self._remember(local, self._label_in(krows))
        reads = self._source_reads(groups, batch, local_of, whole) if here else None
        forward = hop[1] is Direction.forward
        for t, read in (reads or {}).items():
            if read is not None:
                self._page_rows.put((t, rel_term, forward), read)

    def _adjacent(
        self,
        edges: list[tuple[str, Term]],
        truncated: bool,
        then: Sequence[str] = (),
        found: Mapping[Term, Iterable[tuple[int, Term]]] | None = None,
    ) -> AdjacentIds:
        """The edges as IDs, with the reads of ``then`` from their targets (``found``: each
        target's values, by index in ``then``; none if a target is not there: a cut hop's read
        twice need not be the same edges)."""
        found = found or {}
        pairs: list[tuple[str, str]] = []
        values: list[tuple[str, str]] = []
        later: dict[str, AdjacentIds] = {r: AdjacentIds.model_construct() for r in then}
        seen: set[Term] = set()
        for src, t in edges:
            local, value = self._value(t)
            if local is not None:
                pairs.append((self._qid(src), self._qid(local)))
                if later and t not in seen:
                    seen.add(t)
                    if t not in found:
                        later = {}
                    for i, v in found.get(t, ()) if later else ():
                        if _no_id(v):
                            later = {}  # only a page reads a structured value right
                            break
                        v_local, v_value = self._value(v)
                        read = later[then[i]]
                        if v_local is not None:
                            read.pairs.append((self._qid(local), self._qid(v_local)))
                        elif v_value is not None:
                            read.values.append((self._qid(local), v_value.value))
            elif value is not None:
                values.append((self._qid(src), value.value))
        return AdjacentIds.model_construct(
            pairs=pairs, values=values, truncated=truncated, then=later
        )

    async def _unsorted(
        self, sources: list[tuple[str, str]], rel_term: str, forward: bool, limit: int, labels: bool
    ) -> tuple[list[Group], bool] | None:
        """Up to ``limit`` distinct edges (:func:`queries.edge_rows`), target labels with them if
        ``labels``, and whether more exist: one query per batch of sources. None when a source
        reaches a structured value (a blank node): only a page reads its properties."""
        out: list[Group] = []
        for batch in _chunks([t for _, t in sources], self.batch_size) or [[]]:
            room = limit - len(out)  # one edge more asked: a full read of the limit is not a cut
            query = queries.edge_rows(self.profile, batch, rel_term, forward, room + 1, labels)
            rows = await self._select(query)
            if labels:  # a target's label rows → one edge
                page = self._group_edges(rows)
            else:  # SELECT DISTINCT: a row is an edge (grouping costs as much again, on a hot path)
                page = [
                    (src, r["tgt"], [])
                    for r in rows
                    if "tgt" in r
                    and "src" in r
                    and (src := self.profile.entity_local(r["src"])) is not None
                ]
            if batch and self.structured_bnodes and any(t.kind == "bnode" for _, t, _ in page):
                self._server_sorts.add((rel_term, forward))  # the endpoint sorts a page of them
                return None
            if len(page) > room:
                return out + page[:room], True
            out.extend(page)
        return out, False

    async def _page(
        self,
        sources: list[tuple[str, str]],
        rel: tuple[str, str],
        direction: Direction,
        limit: int,
        offset: int,
    ) -> tuple[list[Group], bool]:
        """Edges ``offset`` to ``offset + limit`` in the endpoint's ``ORDER BY ?src ?tgt`` order,
        and whether more exist: one query per batch of sources the page reaches — sorted here from
        an unsorted read where it can (:meth:`_sorted_read`), else by the endpoint with Wikidata's
        qualifiers and value nodes or the properties of blank-node targets; a batch wholly before
        ``offset`` costs a count. Offsets count rows, as the endpoint's do: an edge a graph holds
        twice is two rows, so a page may hold fewer edges than rows and show one of them again on
        the next, but it says more exist while rows are left."""
        rel_local, rel_term = rel
        forward = direction is Direction.forward
        # only Wikidata's profile has qualifiers (statement and value nodes)
        qualified = self.profile if isinstance(self.profile, WikidataProfile) else None
        if qualified is not None and not qualified.qualifiers:
            qualified = None
        statement = qualified.statement_terms(rel_local) if qualified is not None else None
        value_node = qualified.value_term(rel_local) if qualified is not None else None
        batches = _chunks([t for _, t in sources], self.batch_size)
        grouped: list[Group] = []
        skip, room, truncated = offset, limit, False
        client = not self.profile.qualifiers and (rel_term, forward) not in self._server_sorts
        reads: dict[tuple, tuple | None] = {}  # this call's unsorted reads, per source
        local_of = {t: local for local, t in sources}
        for i, batch in enumerate(batches):
            if room == 0:
                truncated = True
                break
            read = (
                await self._sorted_read(batch, local_of, rel_term, forward, reads)
                if client
                else None
            )
            cut = False
            if read is not None:  # the same rows the endpoint would sort, sorted here
                order, groups = read
                if skip and len(batches) > 1 and len(order) <= skip:
                    skip -= len(order)
                    continue
                window = order[skip : skip + room + 1]
                page = [groups[k] for k in dict.fromkeys(window)]
                more = len(window) > room
            else:
                if skip and len(batches) > 1:
                    rows = await self._select(
                        queries.count_edges(self.profile, batch, rel_term, forward)
                    )
                    n = int(rows[0]["n"].value) if rows and "n" in rows[0] else 0
                    if n <= skip:
                        skip -= n
                        continue
                cap = (room + 1) * BNODE_PROPERTIES if self.structured_bnodes else None
                query = queries.edges(
                    self.profile,
                    batch,
                    rel_term,
                    forward,
                    room + 1,
                    skip,
                    statement,
                    cap,
                    value_node,
                )
                rows = await self._select(query)
                page = self._group_edges(rows)
                more = (
                    sum(_multiplicity([r for r in rs if "qp" not in r]) for _, _, rs in page) > room
                )
                if cap is not None and _property_rows(rows) >= cap:
                    kept = self._before_cut(rows, page)
                    cut, page = len(kept) < len(page), kept
            skip = 0
            # ``more``: the page's rows reached its LIMIT, though fewer edges (a graph holding an
            # edge twice makes it two rows): the edges after them are not left out as if none were
            if len(page) > room or cut or more:
                grouped.extend(page[:room])
                truncated = True
                break
            grouped.extend(page)
            room -= len(page)
            if room == 0 and i + 1 < len(batches):
                truncated = True  # later batches may hold more (the next page can then be empty)
        return grouped, truncated

    async def _sorted_read(
        self,
        batch: Sequence[str],
        local_of: dict[str, str],
        rel_term: str,
        forward: bool,
        memo: dict,
    ) -> tuple[list[tuple], dict[tuple, Group]] | None:
        """Every row :meth:`_page`'s sorted query pages over for one batch of sources, read unsorted
        (:func:`queries.edge_rows`) and put in the endpoint's ``ORDER BY ?src ?tgt`` order here: the
        edge keys in that order, once per row (a triple in two graphs is two rows, as the endpoint
        counts them), and the label rows of each edge. Only when every target sorts by its string
        (:func:`_sorts_here`: an IRI or a simple literal), and each source has at most
        ``client_sort_max`` rows: else None, and the endpoint sorts (a relation with another
        literal or a blank-node target is left to the endpoint from then on: one read, once).
        ``memo`` holds this call's reads per source (a source given again is not read again), from
        the rows a labelled walk kept (:meth:`_keep_page_rows`) first; repeating a page is
        otherwise the result cache's job, which has an age limit."""
        for t in dict.fromkeys(batch):
            kept = self._page_rows.get((t, rel_term, forward))
            if kept is not None and (t, rel_term, forward) not in memo:
                memo[(t, rel_term, forward)] = kept
        todo = [t for t in dict.fromkeys(batch) if (t, rel_term, forward) not in memo]
        if todo:
            query = queries.edge_rows(
                self.profile,
                todo,
                rel_term,
                forward,
                len(todo) * self.client_sort_max + 1,
                distinct=False,
            )
            rows = await self._select(query)
            whole = len(rows) <= len(todo) * self.client_sort_max  # the LIMIT did not cut the read
            keyed = self._keyed(rows)
            per = None if keyed is None else self._source_reads(keyed, todo, local_of, whole)
            if per is None:
                self._server_sorts.add((rel_term, forward))
                return None
            memo.update(((t, rel_term, forward), read) for t, read in per.items())
        reads = []
        # a source given twice is joined twice: each of its rows twice
        for t, times in Counter(batch).items():
            read = memo.get((t, rel_term, forward))
            if read is None:  # too many rows: the endpoint sorts this batch
                return None
            reads.append((self.profile.iri(local_of[t]), times, read))
        reads.sort(key=lambda x: x[0])  # ORDER BY ?src first: a source's IRI, then its targets'
        order: list[tuple] = []
        groups: dict[tuple, Group] = {}
        for _, times, (o, g) in reads:
            order.extend(o if times == 1 else [k for k in o for _ in range(times)])
            groups.update(g)
        return order, groups

    def _keyed(self, rows: list[Row]) -> dict[tuple, list[Row]] | None:
        """Rows of :func:`queries.edge_rows` by edge (:meth:`_edge_key`); None when a target does
        not sort by its string (:func:`_sorts_here`)."""
        keyed: dict[tuple, list[Row]] = {}
        for r in rows:
            k = self._edge_key(r)
            if k is None or not _sorts_here(k):
                return None
            keyed.setdefault(k, []).append(r)
        return keyed

    def _source_reads(
        self,
        keyed: dict[tuple, list[Row]],
        todo: Sequence[str],
        local_of: dict[str, str],
        whole: bool,
    ) -> dict[str, tuple[list[tuple], dict[tuple, Group]] | None] | None:
        """Each source's edge keys in the endpoint's ``ORDER BY ?src ?tgt`` order, once per row (a
        triple in two graphs is two rows, as the endpoint counts them), and each edge's label rows,
        from the rows of one unsorted read (:meth:`_keyed`, ``distinct=False``); None for a source
        with more than ``client_sort_max`` rows, or of a read cut short (not ``whole``); None in
        all for a row of a source not asked."""
        per: dict[str, tuple[list[tuple], dict[tuple, Group]]] = {
            local_of[t]: ([], {}) for t in todo
        }
        for k, krows in keyed.items():
            if k[0] not in per:
                return None
            order, groups = per[k[0]]
            groups[k] = (k[0], krows[0]["tgt"], krows)
            order.extend([k] * _multiplicity(krows))  # a pair's rows: its rows × its labels
        out: dict[str, tuple[list[tuple], dict[tuple, Group]] | None] = {}
        for t in todo:
            order, groups = per[local_of[t]]
            fits = whole and len(order) <= self.client_sort_max
            if fits:
                order.sort(key=_target_order)  # one source: by its targets
            out[t] = (order, groups) if fits else None
        return out

    def _edge_key(self, r: Row) -> tuple | None:
        src = self.profile.entity_local(r["src"]) if "src" in r and "tgt" in r else None
        if src is None:
            return None
        t = r["tgt"]
        return (src, t.kind, t.value, t.lang, t.datatype)

    def _group_edges(self, rows: list[Row]) -> list[Group]:
        """Rows (one per label × qualifier) → one entry per (source, target), in the query's
        order."""
        out: dict[tuple, Group] = {}
        for r in rows:
            k = self._edge_key(r)
            if k is None:
                continue
            if k not in out:
                out[k] = (k[0], r["tgt"], [])
            out[k][2].append(r)
        return list(out.values())

    def _before_cut(self, rows: list[Row], page: list[Group]) -> list[Group]:
        """The blank-node property rows hit their cap: edges after the last one that got properties
        may be missing theirs, so the page ends there (the caller marks it truncated if that dropped
        any). That last edge stays if it got all it can show, or if it is the first (a page always
        advances)."""
        keys = [self._edge_key(rs[0]) for _, _, rs in page]
        cut_at = [k for r in rows if "qp" in r and (k := self._edge_key(r)) in keys]
        if not cut_at:
            return page
        i = keys.index(cut_at[-1])
        got = _property_rows(page[i][2])
        return page[: i + 1] if got >= BNODE_PROPERTIES or i == 0 else page[:i]

    async def _edge_page(
        self,
        grouped: list[Group],
        rel_local: str,
        direction: Direction,
        truncated: bool,
        offset: int,
        shown: bool = True,
    ) -> EdgePage:
        """The page's models. Its labels not cached yet come in one query: every entity's and
        relation's if it is ``shown``, else only those its values read with (a quantity's unit, a
        blank node's properties)."""
        rel_id = self._qid(rel_local)
        capped = self.structured_bnodes and any(
            t.kind == "bnode" and _property_rows(rows) > BNODE_PROPERTIES for _, t, rows in grouped
        )
        # the first properties in the query's (property, value) order, whichever page the node is on
        if capped:
            grouped = [
                (src, t, self._first_properties(rows)) if t.kind == "bnode" else (src, t, rows)
                for src, t, rows in grouped
            ]
        need_labels: list[str] = []
        qual_props: list[str] = []
        units: list[str] = []
        for src, t, rows in grouped:
            need_labels.append(src)
            local, _ = self._value(t)
            if local is not None:
                self._remember(local, self._label_in(rows))
            for r in rows:
                if "qp" in r and "qv" in r:
                    qp = self.profile.relation_local(r["qp"].value)
                    if qp is not None:
                        qual_props.append(qp)
                    qlocal, _ = self._value(r["qv"])
                    if qlocal is not None:
                        need_labels.append(qlocal)
            units.extend(self._units(rows))  # a quantity reads with its unit's label
        if shown:
            await self._ensure_labels([*need_labels, *units], [rel_local, *qual_props])
        else:
            await self._ensure_labels(units, qual_props if self.structured_bnodes else ())
        edges: list[Edge] = []
        entities: dict[str, Entity] = {}
        for src, t, rows in grouped:
            if (key := self._qid(src)) not in entities:
                entities[key] = self._entity(src)
            local, value = self._value(t)
            if local is not None:
                if (key := self._qid(local)) not in entities:
                    entities[key] = self._entity(local)
            elif value is not None:
                value = self._faithful(t, value, rows, "tp", "unit")
            qualifiers = self._qualifiers(rows, entities)
            if t.kind == "bnode" and self.structured_bnodes:
                label = self._label_in(rows)
                if label is not None:
                    value = Literal.model_construct(value=label, datatype=None, lang=None)
            edges.append(
                Edge.model_construct(
                    source=self._qid(src),
                    relation=rel_id,
                    direction=direction,
                    value=value,
                    target=self._qid(local) if local is not None else None,
                    qualifiers=qualifiers,
                )
            )
        warnings = []
        if capped:
            warnings.append(
                f"some structured values (blank nodes) have more than {BNODE_PROPERTIES} "
                f"properties: the first {BNODE_PROPERTIES} (by property and value) are shown as "
                "qualifiers"
            )
        relation = self._relation_model(rel_local, self._relation_label(rel_local), direction, None)
        return EdgePage.model_construct(
            edges=edges,
            entities=entities,
            truncated=truncated,
            partial=False,
            warnings=warnings,
            next_offset=offset + len(edges) if truncated else None,
            relation=relation,
        )

    @staticmethod
    def _first_properties(rows: list[Row]) -> list[Row]:
        """A blank node's label rows and its first BNODE_PROPERTIES property rows (rows come in
        query order)."""
        props = [r for r in rows if "qp" in r]
        return [r for r in rows if "qp" not in r] + props[:BNODE_PROPERTIES]

    def _relation_label(self, local: str) -> str:
        """The cached label; a missing one reads as get_relations shows it (humanized local
        name)."""
        label = self._labels.peek(local)
        fallback = self.profile.fallback_label(local)
        return humanize(fallback) if label is None or label == fallback else label

    def _qualifiers(self, rows: list[Row], entities: dict[str, Entity]) -> list[Qualifier]:
        out: dict[tuple, Qualifier] = {}
        for r in rows:
            if "qp" not in r or "qv" not in r:
                continue
            qp = self.profile.relation_local(r["qp"].value)
            if qp is None:
                continue
            local, value = self._value(r["qv"])
            if local is None and value is not None:
                same = [x for x in rows if x.get("qp") == r["qp"] and x.get("qv") == r["qv"]]
                value = self._faithful(r["qv"], value, same, "qtp", "qunit")
            nested = (
                r["qv"].value if r["qv"].kind == "bnode" else None
            )  # two nested nodes are two qualifiers
            k = (
                qp,
                local,
                value.value if value else None,
                value.datatype if value else None,
                nested,
            )
            if k in out:
                continue
            if local is not None and (key := self._qid(local)) not in entities:
                entities[key] = self._entity(local)
            out[k] = Qualifier.model_construct(
                relation=self._relation_model(
                    qp, self._relation_label(qp), Direction.forward, None
                ),
                target=self._qid(local) if local is not None else None,
                value=value,
            )
        return sorted(
            out.values(),
            key=lambda q: (q.relation.id, q.target or "", q.value.value if q.value else ""),
        )

    async def labels(self, entity_ids: list[str], key: bool = False) -> dict[str, str]:
        """The labels not cached yet in one query per batch, which also tells the IDs naming
        nothing. ``key``: the IRIs, which the IDs encode (no query, and no look-up)."""
        locals_: dict[str, str] = {}
        for eid in dict.fromkeys(entity_ids):
            try:
                ((locals_[eid], _),) = self._terms([eid])
            except KGError:
                continue
        if key:
            return {eid: self.profile.iri(local) for eid, local in locals_.items()}
        absent = await self._absent(locals_.values())
        return {
            eid: self._labels.peek(local) or self.profile.fallback_label(local)
            for eid, local in locals_.items()
            if local not in absent
        }

    # -- search and linking ------------------------------------------------------------------------
    def _search_args(self, text: str, limit: int) -> tuple[str, int]:
        """A search's text as the endpoint will see it (InvalidInput if nothing is left) and its
        limit, clamped."""
        text = clean_search_text(self.limits.check_query(text))
        if not text:
            raise InvalidInput("search text is empty once control characters are removed")
        return text, self.limits.clamp(limit, self.limits.max_search)

    async def search_entities(self, text: str, limit: int = 10) -> list[EntityMatch]:
        return await self._search(text, limit)

    async def _search(self, text: str, limit: int, scan: bool = True) -> list[EntityMatch]:
        """Exact (any listed capitalisation) label and alias matches; when there are none and
        ``label_search`` is ``contains``, a bounded substring scan (unless ``scan`` is False)."""
        text, limit = self._search_args(text, limit)
        if self.search_api is not None:
            hits = await wbsearchentities(self.search_api, text, self.search_language, limit)
            out = []
            for h in hits:
                self._remember(h.qid, h.label)
                ent = Entity.model_construct(
                    id=self._qid(h.qid), label=h.label, description=h.description, kg=self.name
                )
                out.append(
                    EntityMatch.model_construct(
                        entity=ent, score=h.score, match=h.match, mention=None
                    )
                )
            out.sort(key=lambda m: -m.score)  # stable: keeps the API's ranking among equal scores
            return out[:limit]
        literals = [
            sparql_literal(v, lang or None) for v in _variants(text) for lang in self.profile.langs
        ]
        rows = await self._select(queries.find_labels(self.profile, literals, max(4 * limit, 50)))
        matches = self._matches(rows, {key(text): text})
        if (
            not matches and scan and self.label_search == "contains"
        ):  # a substring scan only when nothing matched
            needle = sparql_literal(text.lower())
            rows = await self._select(
                queries.contains_labels(self.profile, needle, max(4 * limit, 50))
            )
            matches = self._matches(rows, {key(text): text}, contains=text)
        return matches[:limit]

    def _matches(
        self, rows: list[Row], wanted: dict[str, str], contains: str | None = None
    ) -> list[EntityMatch]:
        """Group label-search rows per entity and score them (label > alias, exact case >
        casefold)."""
        p = self.profile
        per: dict[str, list[Row]] = {}
        for r in rows:
            local = p.entity_local(r["e"]) if "e" in r else None
            if local is not None and p.is_entity_local(local):
                per.setdefault(local, []).append(r)
        scored = []
        for local, rs in per.items():
            label = self._remember(local, self._label_in(rs))
            desc = self._best(rs, "d", "dp", p.desc_preds)
            sitelinks = max(
                (int(r["sl"].value) for r in rs if "sl" in r and r["sl"].value.isdigit()), default=0
            )
            best, how = 0.0, "contains"
            for r in rs:
                ml = r.get("ml")
                if ml is None:
                    continue
                alias = f"<{r['mp'].value}>" not in p.label_preds if "mp" in r else False
                k = key(ml.value)
                if k in wanted:
                    s, h = (1.0, "exact") if ml.value == wanted[k] else (0.95, "casefold")
                    if alias:
                        s, h = s - 0.1, "alias"
                elif contains is not None:
                    s, h = 0.5 + 0.4 * min(1.0, len(contains) / max(1, len(ml.value))), "contains"
                    if alias:
                        s -= 0.1
                else:
                    continue
                if s > best:
                    best, how = s, h
            if best > 0:
                ent = Entity.model_construct(
                    id=self._qid(local), label=label, description=desc, kg=self.name
                )
                scored.append((best, sitelinks, ent, how))
        scored.sort(key=lambda x: (-x[0], -x[1], len(x[2].label), x[2].id))
        return [
            EntityMatch.model_construct(entity=e, score=round(s, 4), match=h, mention=None)
            for s, _, e, h in scored
        ]

    async def initialize(
        self, query: str, limit: int = 10, named: frozenset[str] = frozenset()
    ) -> list[EntityMatch]:
        """Bracketed mentions by label search, each; a mention in ``named`` (matched by name in
        another KG) without the substring scan, which reads every label of the endpoint."""
        query = self.limits.check_query(query)
        limit = self.limits.clamp(limit, self.limits.max_search)
        mentions = bracketed_mentions(query)[:_MAX_MENTIONS]
        if mentions:
            best: dict[str, EntityMatch] = {}
            for m in mentions:
                if not clean_search_text(m):
                    continue
                for h in await self._search(m, limit, scan=m not in named):
                    if h.entity.id not in best or best[h.entity.id].score < h.score:
                        best[h.entity.id] = h.model_copy(update={"mention": m})
            return sorted(best.values(), key=lambda h: -h.score)[:limit]
        return await self._link_ngrams(clean_search_text(strip_brackets(query)), limit)

    async def _link_ngrams(self, query: str, limit: int) -> list[EntityMatch]:
        """One exact-label lookup for every candidate n-gram of the query, then the longest
        non-overlapping spans win (as in :mod:`kg_adapters.label_index`)."""
        toks = [(m.start(), m.end(), m.group(0)) for m in _TOKEN.finditer(query)]
        grams: dict[str, tuple[int, int, str]] = {}
        spans = (
            (s, s + n)
            for n in range(min(_MAX_NGRAM, len(toks)), 0, -1)
            for s in range(len(toks) - n + 1)
        )
        for s, e in spans:  # longest first, then leftmost
            span = toks[s:e]
            words = [t[2].casefold() for t in span]
            if (
                not span[0][2][0].isalnum()
                or not span[-1][2][0].isalnum()
                or all(w in _STOP for w in words)
            ):
                continue
            text = query[span[0][0] : span[-1][1]]
            grams.setdefault(key(text), (s, e, text))
            if len(grams) >= _MAX_GRAMS:
                break
        if not grams:
            return []
        literals = list(
            dict.fromkeys(
                sparql_literal(v, lang or None)
                for _, _, text in grams.values()
                for v in _variants(text)
                for lang in self.profile.langs
            )
        )
        rows = await self._select(queries.find_labels(self.profile, literals, 500))
        by_gram: dict[str, list[Row]] = {}
        for r in rows:
            if "ml" in r:
                by_gram.setdefault(key(r["ml"].value), []).append(r)
        out: dict[str, EntityMatch] = {}
        for _, _, k, weight in longest_spans(
            [(*grams[k][:2], k) for k in by_gram if k in grams], len(toks)
        ):
            text = grams[k][2]
            for m in self._matches(by_gram[k], {k: text})[:limit]:
                score = round(m.score * weight, 4)
                if m.entity.id not in out or out[m.entity.id].score < score:
                    out[m.entity.id] = m.model_copy(
                        update={"score": score, "match": "mention", "mention": text}
                    )
        if not out:  # no n-gram is a label: a search for the content words, scored lower
            words = [
                w for w in _TOKEN.findall(query) if w[0].isalnum() and w.casefold() not in _STOP
            ]
            hits = await self._search(" ".join(words), limit) if words else []
            return [m.model_copy(update={"score": round(m.score * 0.8, 4)}) for m in hits]
        return sorted(out.values(), key=lambda m: -m.score)[:limit]

    # -- description and info ----------------------------------------------------------------------
    async def describe_entity(self, entity_id: str) -> EntityDescription:
        """Labels and types in one query, relations (``max_relations`` at most) in another."""
        ((local, term),) = self._terms([entity_id])
        p = self.profile
        rows, rels = await asyncio.gather(
            self._select(queries.describe(p, term)), self.relations([entity_id])
        )
        if entity_id not in rels:
            raise NotFound(f"no entity {entity_id!r} in KG {self.name!r} ({self._url})")
        label = self._label_in(rows)
        desc = self._best(rows, "d", "dp", p.desc_preds)
        aliases = sorted({r["a"].value for r in rows if "a" in r} - {label})
        self._remember(local, label)
        common = dict(
            entity=self._entity(local, desc),
            aliases=aliases,
            iri=p.iri(local),
            relations=rels[entity_id].relations[: self.limits.max_relations],
        )
        if p.kind == "wikidata":
            return EntityDetails(
                **common, statements=self._statement_count(rows), types=self._types(rows)
            )
        return EntityDescription(**common)

    @staticmethod
    def _statement_count(rows: list[Row]) -> int | None:
        """``wikibase:statements`` when the endpoint has it (WDQS), else the statement nodes
        counted."""
        for var in ("ns", "nst"):
            counts = [int(r[var].value) for r in rows if var in r and r[var].value.isdigit()]
            if counts and (var == "nst" or counts[0]):
                return counts[0]
        return None

    def _types(self, rows: list[Row]) -> list[Entity]:
        """The item's P31 classes, labelled (best label in the configured languages), in ID
        order."""
        by_type: dict[str, list[Row]] = {}
        for r in rows:
            local = self.profile.entity_local(r["t"]) if "t" in r else None
            if local is not None:
                by_type.setdefault(local, []).append(r)
        out = []
        for local in sorted(by_type, key=lambda x: (len(x), x)):
            self._remember(local, self._best(by_type[local], "tl", "tlp", self.profile.label_preds))
            out.append(self._entity(local))
        return out

    async def info(self) -> KGInfo:
        sample: list[Relation] = []
        note = ""
        try:
            rows = await self._select(queries.relation_sample(self.profile, 20))
            for local, label, rs in self._labelled_relations(rows):
                n = next((int(r["n"].value) for r in rs if "n" in r), None)
                sample.append(self._relation_model(local, label, Direction.forward, n))
        except BackendError as e:
            note = f"endpoint not answering: {e}"
        backend = self.capabilities.backend
        what = "Wikidata" if backend == "wikidata" else "RDF"
        desc = self.description or f"{what} via the SPARQL endpoint {self._url}"
        return KGInfo(
            name=self.name,
            backend=backend,
            relation_sample=sample,
            description=desc + (f" ({note})" if note else ""),
            unreachable=note or None,
        )

    async def find(
        self, values: list[str], relation_id: str | None = None, limit: int = 20
    ) -> dict[str, list[str]]:
        """With a relation: one query per batch of values (``VALUES ?v``), the entities' labels with
        them, and (not on Wikidata) their relations and every value of the relation each has, kept
        for the reads of them that follow; nothing found for any and the relation used nowhere →
        NotFound. Without: the entities whose IRI a value is (a bare ``Q42`` too, on Wikidata) and
        that occur in a triple, one query per batch of those not seen yet; a literal is no node
        here."""
        out: dict[str, list[str]] = {v: [] for v in dict.fromkeys(values)}
        if (
            relation_id == LABEL
        ):  # an endpoint has no exact-name index: its own search, exact names kept
            found = await gather_eager(self._named(v, limit) for v in out)
            return dict(zip(out, found))
        if relation_id is None:
            local_of = {v: local for v in out if (local := self._key_local(v)) is not None}
            absent = await self._absent(set(local_of.values()))
            out.update((v, [self._qid(x)]) for v, x in local_of.items() if x not in absent)
            return out
        _, relation = self._relation(relation_id)
        # Wikidata's items hold hundreds of statements and hubs among them: a twin's relations
        # there are a read of their own, so that a link lookup stays light
        scan = None if self.profile.qualifiers else self.backward_scan
        # each find's own values of the relation: a link back reads them next (not on Wikidata,
        # whose values a page reads with their value nodes)
        along = not self.profile.qualifiers
        for batch in _chunks(list(out), self.batch_size):
            literals = [sparql_literal(v) for v in batch]
            query = queries.subjects_with_values(self.profile, relation, literals, scan, along)
            try:
                rows = await self._select(query)
            except _ALONG_FAILED:
                if scan is None and not along:
                    raise  # nothing came along: the lookup alone was refused
                # what came along made the answer too big or too slow: the lookup alone
                scan, along = None, False
                rows = await self._select(
                    queries.subjects_with_values(self.profile, relation, literals)
                )
            labels: dict[str, list[Row]] = {}
            valued: dict[str, list[Term]] = {}
            for r in rows:
                local = self.profile.entity_local(r["e"]) if "e" in r else None
                if local is not None and "w" in r:
                    valued.setdefault(local, []).append(r["w"])
                ids = out.get(r["v"].value) if "v" in r else None
                if local is None or ids is None or not self.profile.is_entity_local(local):
                    continue
                labels.setdefault(local, []).append(r)
                if len(ids) < limit and self._qid(local) not in ids:
                    ids.append(self._qid(local))
            for local, rs in labels.items():  # a link's entities are shown next: named now
                self._remember(local, self._label_in(rs))
                ws = valued.get(local)
                if along and ws and not any(map(_no_id, ws)):
                    self._valued.put((local, relation), tuple(dict.fromkeys(ws)))
            if scan is not None:
                related = [r for r in rows if "v" not in r and "w" not in r]
                self._keep_relations(related, labels, (scan + 1) * len(batch))
        if out and not any(out.values()):
            await self._check_used(relation, relation_id)
        return out

    def _keep_relations(self, rows: list[Row], entities: Iterable[str], sample: int) -> None:
        """Keep the relations of entities read with another read (:func:`queries.relations`' rows,
        its backward sample ``sample`` rows at most) for :meth:`relations` next: what an identifier
        finds is the same entity in another KG, and a walk's frontier, whose relations a walk or a
        linked ``get_relations`` asks next. Those a hub's sample left out are not kept."""
        batch = [(local, self.profile.iri(local)) for local in entities]
        out: dict[str, RelationList] = {}
        self._relations_read(rows, batch, sample, out, [])
        for local, rl in out.items():
            self._related.put(local, rl)

    async def _named(self, name: str, limit: int) -> list[str]:
        """The entities :meth:`search_entities` finds named exactly ``name``, else up to case."""
        if not isinstance(name, str) or not name.strip():
            return []
        hits = await self.search_entities(name, min(max(limit, 1), self.limits.max_search))
        exact = [h.entity.id for h in hits if h.match == "exact" and h.entity.label == name]
        want = key(name)
        return (exact or [h.entity.id for h in hits if key(h.entity.label) == want])[:limit]

    def _key_local(self, key: object) -> str | None:
        """The local ID of the entity whose IRI ``key`` is (a bare ``Q42`` too, on Wikidata), or
        None."""
        if not isinstance(key, str):
            return None
        key = key.strip()
        local = self.profile.entity_local(Term("uri", key))
        if local is None and self.profile.kind == "wikidata":
            http = key.replace("https://", "http://", 1)
            local = wikidata_local(WD + key) or wikidata_local(http)
        return local

    async def search_relations(self, text: str, limit: int = 10) -> list[RelationHit]:
        """Properties whose label, alias or description (configured languages) contains a content
        word of ``text`` — one bounded query — ranked lexically
        (:mod:`kg_adapters.sparql.relsearch`). Usage counts are not known here (counting uses of a
        property is a full scan on WDQS)."""
        text, limit = self._search_args(text, limit)
        words = [sparql_literal(w) for w in relsearch.needles(text)]
        rows = await self._select(queries.find_relations(self.profile, words, 300))
        candidates = []
        for local, label, rs in self._labelled_relations(rows):
            desc = self._best(rs, "d", "dp", self.profile.desc_preds)
            aliases = sorted({r["a"].value for r in rs if "a" in r} - {label})
            candidates.append((self._qid(local), label, desc, aliases, None))
        return relsearch.rank(text, candidates, limit)

    async def sparql_query(
        self, query: str, *, limit: int | None = None, timeout: float | None = None
    ) -> SparqlRows:
        """A caller's read-only query, checked by the guard, sent through this KG's endpoint (its
        etiquette and limits); the KG's prefixes (``wd:``, ``wdt:`` … or the configured ones) need
        no declaration."""
        from .run import run_remote

        if not self.capabilities.sparql:
            raise InvalidInput(
                f"KG {self.name!r} does not take SPARQL queries (sparql_query = false in its "
                "config)"
            )
        policy = GuardPolicy(
            prefixes=self.profile.prefix_map,
            services=self.sparql_services,
            max_rows=self.limits.clamp(limit, DEFAULT_MAX_ROWS),
        )
        checked = await check_query_async(query, policy)
        return await run_remote(self.sparql, self.name, checked, timeout)

    async def aclose(self) -> None:
        await self.sparql.aclose()
        if self.search_api is not None:
            await self.search_api.aclose()
