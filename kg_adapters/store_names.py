"""Names in a pyoxigraph store: the IDs its RDF terms get, the IRIs triple-file names get, what a
store records about itself, and the labels entity search finds.

**IDs.** Entity IDs are a *safe encoding of the RDF term*, so they need no ID table and stay stable
across reloads of the same data:

* an IRI under the store's entity base namespace → the rest of the IRI (``movies:Tom%20Hanks`` for
  ``urn:tot:e:Tom%20Hanks``), as long as that rest contains no ``:``;
* any other IRI → the IRI itself (``kg:http://example.org/x``; an absolute IRI contains ``:``);
* a blank node → ``_:`` + the store's blank-node ID;
* a literal → ``~`` + percent-encoded lexical form, then ``@lang`` or ``^^xsd:type`` /
  ``^^<percent-encoded datatype IRI>`` (plain strings have no suffix): ``movies:~1999``,
  ``kg:~Paris@fr``, ``kg:~1999^^xsd:gYear``. Literals whose encoding exceeds 512 characters get no
  ID (the edge carries only ``value``).

Relation IDs are the predicate IRI with the relation base namespace stripped
(``movies:directed_by``), else the full IRI. Both bases are recorded in the store's metadata graph
``<urn:tot:meta>`` when a file is loaded.

**Entity search** goes through a :class:`LabelSearch`: the SQLite FTS index ``tot-mcp load`` writes
beside a store (:class:`~kg_adapters.fts_index.FtsLabelIndex`), else :class:`InMemoryLabelSearch`,
which reads every label once into a :class:`~kg_adapters.label_index.LabelIndex`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Protocol
from urllib.parse import quote, unquote

import pyoxigraph as ox

from .errors import InvalidInput
from .fts_index import KeyHit
from .label_index import Hit, LabelIndex
from .rdf_file import ALIAS_PREDICATES, LABEL_PREDICATES

ENTITY_NS = "urn:tot:e:"  # head/tail names of head|relation|tail files, percent-encoded
RELATION_NS = "urn:tot:r:"  # relation names of head|relation|tail files, percent-encoded
META_GRAPH = ox.NamedNode("urn:tot:meta")
META_NS = "urn:tot:meta#"
XSD = "http://www.w3.org/2001/XMLSchema#"
PLAIN_TYPES = (XSD + "string", "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString")
# kept readable in IRIs made from names; ':' '/' '#' '?' '%' and spaces are encoded
NAME_SAFE = "!$&'()*+,;=@"
_MAX_LOCAL = 512
_SPACE = re.compile(r"\s")  # str.isspace's characters
LABEL_NODES = [ox.NamedNode(p) for p in LABEL_PREDICATES]
ALIAS_NODES = [ox.NamedNode(p) for p in ALIAS_PREDICATES]

Term = ox.NamedNode | ox.BlankNode | ox.Literal


def name_iri(name: str, namespace: str = ENTITY_NS) -> str:
    """The IRI a name from a ``head|relation|tail`` file gets in a store: ``Tom Hanks`` →
    ``urn:tot:e:Tom%20Hanks``."""
    return namespace + quote(name, safe=NAME_SAFE)


def name_of(iri: str, namespace: str = ENTITY_NS) -> str | None:
    """The triple-file name behind an IRI :func:`name_iri` made, else None."""
    return unquote(iri[len(namespace) :]) if iri.startswith(namespace) else None


class TermCodec:
    """The reversible term ↔ local-ID encoding described in the module docstring."""

    def __init__(self, entity_base: str | None, relation_base: str | None) -> None:
        self.entity_base = entity_base or None
        self.relation_base = relation_base or None

    @staticmethod
    def _strip(iri: str, base: str | None) -> str:
        if base and iri.startswith(base):
            rest = iri[len(base) :]
            if rest and ":" not in rest and not rest.startswith(("~", "_")):
                return rest
        return iri

    def encode(self, term: Term) -> str | None:
        if isinstance(term, ox.NamedNode):
            local = self._strip(term.value, self.entity_base)
        elif isinstance(term, ox.BlankNode):
            local = "_:" + term.value
        elif isinstance(term, ox.Literal):
            local = "~" + quote(term.value, safe="")
            dt = term.datatype.value if term.datatype is not None else None
            if term.language:
                local += "@" + term.language
            elif dt and dt not in PLAIN_TYPES:
                short = "xsd:" + dt[len(XSD) :] if dt.startswith(XSD) else quote(dt, safe="")
                local += "^^" + short
        else:  # RDF-star triple terms are not entities here
            return None
        return local if len(local) <= _MAX_LOCAL and not _SPACE.search(local) else None

    def decode(self, local: str) -> Term:
        try:
            if local.startswith("~"):
                body, lang, dt = local[1:], None, None
                if "^^" in body:
                    body, dt = body.split("^^", 1)
                    dt = XSD + dt[4:] if dt.startswith("xsd:") else unquote(dt)
                elif "@" in body:
                    body, lang = body.split("@", 1)
                value = unquote(body)
                if lang:
                    return ox.Literal(value, language=lang)
                if dt:
                    return ox.Literal(value, datatype=ox.NamedNode(dt))
                return ox.Literal(value)
            if local.startswith("_:"):
                return ox.BlankNode(local[2:])
            if ":" in local:
                return ox.NamedNode(local)
            if self.entity_base:
                return ox.NamedNode(self.entity_base + local)
        except ValueError as e:
            raise InvalidInput(f"malformed ID {local!r}: {e}") from None
        raise InvalidInput(
            f"malformed ID {local!r}: this store has no entity base namespace; use the full IRI"
        )

    def encode_relation(self, iri: str) -> str:
        return self._strip(iri, self.relation_base)

    def decode_relation(self, local: str) -> ox.NamedNode:
        iri = local if ":" in local else (self.relation_base or "") + local
        if ":" not in iri:
            raise InvalidInput(
                f"malformed relation ID {local!r}: expected a name from get_relations or a full IRI"
            )
        try:
            return ox.NamedNode(iri)
        except ValueError as e:
            raise InvalidInput(f"malformed relation ID {local!r}: {e}") from None


def read_meta(store: ox.Store) -> dict[str, str]:
    """What a load recorded in the store's metadata graph: ``source``, ``entityBase`` …"""
    return {
        q.predicate.value[len(META_NS) :]: q.object.value
        for q in store.quads_for_pattern(META_GRAPH, None, None, META_GRAPH)
        if q.predicate.value.startswith(META_NS) and isinstance(q.object, ox.Literal)
    }


def write_meta(store: ox.Store, **values: str) -> None:
    for k, v in values.items():
        pred = ox.NamedNode(META_NS + k)
        for q in list(store.quads_for_pattern(META_GRAPH, pred, None, META_GRAPH)):
            store.remove(q)
        store.add(ox.Quad(META_GRAPH, pred, ox.Literal(v), META_GRAPH))


# -- label search ----------------------------------------------------------------------------------
class LabelSearch(Protocol):
    """What OxigraphKG needs from an entity search index: hits keyed by IRI (``_:id`` for blank
    nodes), one per key, best first. :class:`kg_adapters.fts_index.FtsLabelIndex` (SQLite FTS5, on
    disk) has this shape."""

    def search(self, text: str, limit: int = 10) -> Sequence[KeyHit]: ...

    def link(self, query: str, limit: int = 10) -> Sequence[KeyHit]: ...

    def named_many(self, labels: Sequence[str], limit: int = 20) -> Mapping[str, Sequence[KeyHit]]:
        """Exact names (``exact``) else the same up to case (``casefold``), every label at once; a
        label named nowhere is left out."""
        ...


def term_key(term: Term) -> str:
    return "_:" + term.value if isinstance(term, ox.BlankNode) else term.value


def key_term(k: str) -> Term:
    return ox.BlankNode(k[2:]) if k.startswith("_:") else ox.NamedNode(k)


def label_rows(store: ox.Store) -> Iterator[tuple[str, str, str]]:
    """``(key, name, kind)`` for every label (kind ``label``) and alias (``alias``) literal of the
    store: the names entity search finds, whether read into memory (:class:`InMemoryLabelSearch`) or
    into the on-disk index (:func:`kg_adapters.bulk_load.build_label_index`). Keys as
    :func:`term_key` writes them."""
    for preds, kind in ((LABEL_NODES, "label"), (ALIAS_NODES, "alias")):
        for pred in preds:
            for q in store.quads_for_pattern(None, pred, None, None):
                if isinstance(q.object, ox.Literal) and not isinstance(q.subject, ox.Triple):
                    yield term_key(q.subject), q.object.value, kind


class InMemoryLabelSearch:
    """Every label and alias in the store in a LabelIndex (built on first use). Holds only the
    names, not the triples: ~100 bytes per name."""

    def __init__(self, store: ox.Store) -> None:
        self._store = store
        self._index: LabelIndex | None = None
        self._keys: list[str] = []
        self._texts: list[str] = []

    def _build(self) -> LabelIndex:
        if self._index is None:
            pairs = dict.fromkeys((k, text) for k, text, _ in label_rows(self._store))
            self._keys = [k for k, _ in pairs]
            self._texts = [text for _, text in pairs]
            self._index = LabelIndex(self._texts)
        return self._index

    def _dedupe(self, hits: list[Hit], limit: int) -> list[KeyHit]:
        out: dict[str, KeyHit] = {}
        for h in hits:
            k = self._keys[h.index]
            if k not in out or out[k].score < h.score:
                out[k] = KeyHit(k, self._texts[h.index], h.score, h.match, h.mention)
        return sorted(out.values(), key=lambda h: -h.score)[:limit]

    def search(self, text: str, limit: int = 10) -> list[KeyHit]:
        return self._dedupe(self._build().search(text, limit * 2), limit)

    def link(self, query: str, limit: int = 10) -> list[KeyHit]:
        return self._dedupe(self._build().link(query, limit * 2), limit)

    def named_many(self, labels: Sequence[str], limit: int = 20) -> dict[str, list[KeyHit]]:
        index = self._build()
        out = {}
        for label in dict.fromkeys(labels):
            text = label.strip()
            hits = [
                Hit(i, 1.0, "exact") if self._texts[i] == text else Hit(i, 0.95, "casefold")
                for i in index.named(label)
            ]
            if hits:
                out[label] = self._dedupe(hits, limit)
        return out
