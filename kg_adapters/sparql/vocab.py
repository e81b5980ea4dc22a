"""The two vocabularies a SPARQL KG can speak: Wikidata's (items, truthy ``wdt:`` claims, statements
with qualifiers) and a generic RDF one (any predicate is a relation, labels from configurable
predicates).

A profile turns validated local IDs into SPARQL terms and result IRIs back into local IDs; nothing
else in the package writes an entity or relation into a query.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Literal
from urllib.parse import unquote

from ..errors import InvalidInput
from ..lru import LRU
from .escape import LANG_TAG, iri_ref, is_safe_iri, sparql_literal
from .ids import PID, QID, WD, IriIds, wikidata_entity, wikidata_local, wikidata_property
from .results import Term

# What a caller's SPARQL query (sparql_query) may use without declaring it: WDQS's own predeclared
# prefixes.
WIKIDATA_PREFIX_MAP = {
    "wd": "http://www.wikidata.org/entity/",
    "wds": "http://www.wikidata.org/entity/statement/",
    "wdv": "http://www.wikidata.org/value/",
    "wdref": "http://www.wikidata.org/reference/",
    "wdt": "http://www.wikidata.org/prop/direct/",
    "wdtn": "http://www.wikidata.org/prop/direct-normalized/",
    "wdno": "http://www.wikidata.org/prop/novalue/",
    "p": "http://www.wikidata.org/prop/",
    "ps": "http://www.wikidata.org/prop/statement/",
    "psv": "http://www.wikidata.org/prop/statement/value/",
    "psn": "http://www.wikidata.org/prop/statement/value-normalized/",
    "pq": "http://www.wikidata.org/prop/qualifier/",
    "pqv": "http://www.wikidata.org/prop/qualifier/value/",
    "pqn": "http://www.wikidata.org/prop/qualifier/value-normalized/",
    "pr": "http://www.wikidata.org/prop/reference/",
    "prv": "http://www.wikidata.org/prop/reference/value/",
    "wikibase": "http://wikiba.se/ontology#",
    "bd": "http://www.bigdata.com/rdf#",
    "schema": "http://schema.org/",
    "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
    "owl": "http://www.w3.org/2002/07/owl#",
    "xsd": "http://www.w3.org/2001/XMLSchema#",
    "skos": "http://www.w3.org/2004/02/skos/core#",
    "prov": "http://www.w3.org/ns/prov#",
    "geo": "http://www.opengis.net/ont/geosparql#",
}
# The prologue of the adapter's own Wikidata queries: the prefixes they write.
WIKIDATA_PREFIXES = "".join(
    f"PREFIX {p}: <{WIKIDATA_PREFIX_MAP[p]}>\n"
    for p in ("wd", "wdt", "p", "ps", "psv", "pq", "pqv", "wikibase", "schema", "rdfs", "skos")
)
WDT = WIKIDATA_PREFIX_MAP["wdt"]

DEFAULT_PREFIXES = {
    **{
        p: WIKIDATA_PREFIX_MAP[p]
        for p in ("rdf", "rdfs", "owl", "xsd", "skos", "schema", "wd", "wdt")
    },
    "foaf": "http://xmlns.com/foaf/0.1/",
    "dc": "http://purl.org/dc/elements/1.1/",
    "dcterms": "http://purl.org/dc/terms/",
    "dbr": "http://dbpedia.org/resource/",
    "dbo": "http://dbpedia.org/ontology/",
}
DEFAULT_LABELS = ("rdfs:label", "skos:prefLabel", "schema:name")
DEFAULT_DESCRIPTIONS = ("rdfs:comment", "schema:description")
DEFAULT_ALIASES = ("skos:altLabel",)
_CURIE = re.compile(r"^([A-Za-z][A-Za-z0-9_-]*):([A-Za-z0-9_.~-]+)\Z")


def check_languages(langs: Sequence[str]) -> list[str]:
    out = list(langs)
    if not out:
        raise InvalidInput("languages: give at least one language code, e.g. ['en', 'mul']")
    for lang in out:
        if not isinstance(lang, str) or not LANG_TAG.match(lang):
            raise InvalidInput(f"languages: {lang!r} is not a language tag")
    return out


def lang_filter(var: str, langs: Sequence[str]) -> str:
    """``FILTER(LANG(?l) IN ("en", "mul"))`` — ``""`` stands for untagged strings."""
    return f"FILTER(LANG({var}) IN ({', '.join(sparql_literal(x) for x in langs)}))"


_MAX_REMEMBERED_LOCALS = 100_000
_UNSEEN = object()


class WikidataProfile:
    kind: Literal["wikidata"] = "wikidata"
    qualifiers = True
    prefixes = WIKIDATA_PREFIXES
    prefix_map = WIKIDATA_PREFIX_MAP
    label_preds = ("<http://www.w3.org/2000/01/rdf-schema#label>",)
    desc_preds = ("<http://schema.org/description>",)
    alias_preds = ("<http://www.w3.org/2004/02/skos/core#altLabel>",)
    entity_filter = 'FILTER(STRSTARTS(STR(?e), "http://www.wikidata.org/entity/Q"))'
    # Relations are the properties with a direct (truthy) claim predicate; ?pd is that predicate.
    relation_join = "?r wikibase:directClaim ?pd ."
    backward_filter = 'FILTER(STRSTARTS(STR(?pd), "http://www.wikidata.org/prop/direct/"))'

    def __init__(self, languages: Sequence[str]) -> None:
        self.langs = check_languages(languages)

    def entity_term(self, local: str) -> str:
        return f"wd:{wikidata_entity(local)}"

    def relation_term(self, local: str) -> str:
        return f"wdt:{wikidata_property(local)}"

    def statement_terms(self, local: str) -> tuple[str, str]:
        pid = wikidata_property(local)
        return f"p:{pid}", f"ps:{pid}"

    def value_term(self, local: str) -> str:
        """The statement's full value node (time precision, quantity unit): ``psv:P…``."""
        return f"psv:{wikidata_property(local)}"

    def relation_node(self, local: str) -> str:
        """The node that carries the relation's label."""
        return f"wd:{wikidata_property(local)}"

    def entity_local(self, term: Term) -> str | None:
        return wikidata_local(term.value) if term.kind == "uri" else None

    def relation_local(self, iri: str) -> str | None:
        return wikidata_local(iri, PID) or wikidata_local(iri, PID, WDT)

    def iri(self, local: str) -> str:
        return WD + local

    def fallback_label(self, local: str) -> str:
        return local

    def is_entity_local(self, local: str) -> bool:
        return bool(QID.match(local))


class GenericProfile:
    kind: Literal["sparql"] = "sparql"
    qualifiers = False
    entity_filter = "FILTER(isIRI(?e))"
    backward_filter = ""

    def __init__(
        self,
        languages: Sequence[str],
        prefixes: Mapping[str, str] | None = None,
        label_predicates: Sequence[str] = DEFAULT_LABELS,
        description_predicates: Sequence[str] = DEFAULT_DESCRIPTIONS,
        alias_predicates: Sequence[str] = DEFAULT_ALIASES,
    ) -> None:
        self.langs = [*check_languages(languages), ""]
        self.ids = IriIds({**DEFAULT_PREFIXES, **(prefixes or {})})
        self._locals: LRU[str | None] = LRU(
            _MAX_REMEMBERED_LOCALS
        )  # IRI → local ID: a hub read meets the same IRIs thousands of times
        # local ID → SPARQL term: a reasoner asks the same frontiers' IDs in query after query
        self._terms: LRU[str] = LRU(_MAX_REMEMBERED_LOCALS)
        self.prefixes = ""
        self.prefix_map = self.ids.prefixes  # usable undeclared in a caller's SPARQL query
        self.label_preds = tuple(self._predicate(p, "label_predicates") for p in label_predicates)
        self.desc_preds = tuple(
            self._predicate(p, "description_predicates") for p in description_predicates
        )
        self.alias_preds = tuple(self._predicate(p, "alias_predicates") for p in alias_predicates)
        if not self.label_preds:
            raise InvalidInput("label_predicates: give at least one predicate")
        # labels, descriptions and aliases are shown with the entity, not offered as relations to
        # follow
        hidden = ", ".join(dict.fromkeys((*self.label_preds, *self.desc_preds, *self.alias_preds)))
        self.relation_join = f"FILTER(?pd NOT IN ({hidden})) BIND(?pd AS ?r)"
        self.sample_filter = f"FILTER(?r NOT IN ({hidden}))"

    def _predicate(self, name: str, option: str) -> str:
        m = _CURIE.match(name) if isinstance(name, str) else None
        if m and m.group(1) in self.ids.prefixes:
            return iri_ref(self.ids.prefixes[m.group(1)] + m.group(2))
        if (
            isinstance(name, str)
            and is_safe_iri(name)
            and ("://" in name or name.startswith("urn:"))
        ):
            return iri_ref(name)
        raise InvalidInput(
            f"{option}: {name!r} is neither a full IRI nor prefix:name with a known prefix"
        )

    def entity_term(self, local: str) -> str:
        term = self._terms.peek(local)
        if term is None:
            term = iri_ref(self.ids.decode(local))  # raises for a malformed ID: nothing kept
            self._terms.put(local, term)
        return term

    relation_term = entity_term
    relation_node = entity_term

    def entity_local(self, term: Term) -> str | None:
        if term.kind != "uri":
            return None
        iri = term.value
        local = self._locals.get(iri, _UNSEEN)
        if local is not _UNSEEN:
            return local
        local = self.ids.encode(iri) if is_safe_iri(iri) else None
        local = local if local is not None and len(local) <= 512 else None
        self._locals.put(iri, local)
        return local

    def relation_local(self, iri: str) -> str | None:
        return self.entity_local(Term("uri", iri))

    def iri(self, local: str) -> str:
        return self.entity_term(local)[1:-1]  # decoded once: a read names each entity many times

    def fallback_label(self, local: str) -> str:
        iri = self.ids.decode(local)
        tail = re.split(r"[/#:]", iri.rstrip("/#"))[-1]
        return unquote(tail).replace("_", " ") or iri

    def is_entity_local(self, local: str) -> bool:
        return True
