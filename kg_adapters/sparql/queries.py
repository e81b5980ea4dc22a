"""SPARQL text for each operation. Inputs are terms rendered by a profile (validated IDs, escaped
literals) and ints; no function here sees raw caller text. Labels come from plain triples filtered
by language (never the ``wikibase:label`` SERVICE), so the same queries run on WDQS, QLever,
oxigraph, Blazegraph, Virtuoso, Fuseki.
"""

from __future__ import annotations

from collections.abc import Sequence

from .vocab import GenericProfile, WikidataProfile, lang_filter

Profile = WikidataProfile | GenericProfile


def _values(var: str, terms: Sequence[str]) -> str:
    return f"VALUES {var} {{ {' '.join(terms)} }}"


def _labels(
    p: Profile, var: str, out: str = "?l", pred: str = "?lp", preds: Sequence[str] | None = None
) -> str:
    preds = preds or p.label_preds
    return f"OPTIONAL {{ {var} {pred} {out} . {_values(pred, preds)} {lang_filter(out, p.langs)} }}"


def _int(n: int) -> int:
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"expected a non-negative int, got {n!r}")
    return n


def labels(p: Profile, entities: Sequence[str], only_present: bool = False) -> str:
    """The labels of ``entities``; with ``only_present``, rows only for those in a triple (so that
    IDs naming nothing are told in the same query)."""
    check = "FILTER EXISTS { { ?e ?p ?o } UNION { ?s ?p ?e } }" if only_present else ""
    return f"""{p.prefixes}SELECT ?e ?l ?lp WHERE {{
  {_values("?e", entities)} {check}
  {_labels(p, "?e")}
}}"""


def describe(p: Profile, entity: str) -> str:
    desc = _labels(p, entity, "?d", "?dp", p.desc_preds) if p.desc_preds else ""
    alias = _labels(p, entity, "?a", "?ap", p.alias_preds) if p.alias_preds else ""
    if (
        p.kind == "wikidata"
    ):  # branches, not a product of OPTIONALs: + statement count and P31 types with labels
        return f"""{p.prefixes}SELECT ?l ?lp ?d ?dp ?a ?ns ?nst ?t ?tl ?tlp WHERE {{
  {{ {_labels(p, entity)} }} UNION {{ {desc} }} UNION {{ {alias} }}
  UNION {{ {entity} wikibase:statements ?ns }}
  UNION {{ SELECT (COUNT(DISTINCT ?st) AS ?nst)
           WHERE {{ {entity} ?claim ?st . ?st wikibase:rank ?rank }} }}
  UNION {{ {entity} wdt:P31 ?t . {_labels(p, "?t", "?tl", "?tlp")} }}
}}"""
    return f"""{p.prefixes}SELECT ?l ?lp ?d ?dp ?a WHERE {{
  {_labels(p, entity)}
  {desc}
  {alias}
}}"""


def relation_used(p: Profile, relation: str) -> str:
    return f"{p.prefixes}ASK {{ ?s {relation} ?o }}"


def _edge_pattern(p: Profile, sources: Sequence[str], relation: str, forward: bool) -> str:
    """``?src`` bound to each of ``sources`` and its ``relation`` to ``?tgt`` (backward: from
    ``?tgt``); no sources: any entity with such an edge (a sample of the relation anywhere)."""
    if not sources:
        edge = f"?e {relation} ?tgt ." if forward else f"?tgt {relation} ?e ."
        return f"{edge} {p.entity_filter} BIND(?e AS ?src)"
    return f"{_values('?src', sources)} " + (
        f"?src {relation} ?tgt ." if forward else f"?tgt {relation} ?src ."
    )


def relations(p: Profile, entities: Sequence[str], backward_scan: int) -> str:
    """Each entity's relation types (``?e ?r ?dir``) with edge counts. Backward edges are read from
    a sample (hubs like Q5 have millions of incoming edges) of ``backward_scan + 1`` rows per entity
    in all; ``?t`` rows give each entity's backward rows in that sample *before* the relation join,
    so a caller can tell the entities whose backward edges were sampled (more than
    ``backward_scan``) and whether the sample itself was cut (its total reaching its limit: an
    entity with fewer may then have lost some)."""
    rows = _relation_rows(p, _values("?e", entities), len(entities), backward_scan)
    return f"{p.prefixes}SELECT ?e ?r ?dir ?n ?t ?l ?lp WHERE {{ {rows} }}"


def _relation_rows(p: Profile, entities: str, n: int, backward_scan: int) -> str:
    """:func:`relations`' pattern for the ``?e`` that ``entities`` binds (a VALUES, or a subquery
    of ``n`` entities at most)."""
    back = (
        f'{{ SELECT ?e ?pd ("b" AS ?dir) WHERE {{ {entities} ?s ?pd ?e . {p.backward_filter} }} '
        f"LIMIT {(_int(backward_scan) + 1) * n} }}"
    )
    return f"""{{
    {{ SELECT ?e ?r ?dir (COUNT(*) AS ?n) WHERE {{
        {{ {entities} ?e ?pd ?o . BIND("f" AS ?dir) }}
        UNION
        {back}
        {p.relation_join}
    }} GROUP BY ?e ?r ?dir }}
    {_labels(p, "?r")}
  }}
  UNION
  {{ SELECT ?e (COUNT(*) AS ?t) WHERE {{ {back} }} GROUP BY ?e }}"""


def edges(
    p: Profile,
    sources: Sequence[str],
    relation: str,
    forward: bool,
    limit: int,
    offset: int,
    statement: tuple[str, str] | None = None,
    bnode_rows: int | None = None,
    value: str | None = None,
) -> str:
    """One page of ``?src relation ?tgt`` (or reversed), ordered for stable paging, with target
    labels and — for Wikidata — the qualifiers of the matching non-deprecated statements, or — with
    ``bnode_rows`` — the properties of blank-node targets as ``?qp ?qv`` (see
    :func:`_bnode_properties`)."""
    page = (
        f"{{ SELECT ?src ?tgt WHERE {{ {_edge_pattern(p, sources, relation, forward)} }} "
        f"ORDER BY ?src ?tgt LIMIT {_int(limit)} OFFSET {_int(offset)} }}"
    )
    if bnode_rows is not None:
        return f"""{p.prefixes}SELECT ?src ?tgt ?qp ?qv ?l ?lp WHERE {{
  {{ {page} {_labels(p, "?tgt")} }}
  UNION
  {_bnode_properties(p, page, relation, forward, bnode_rows)}
}} ORDER BY ?src ?tgt ?qp ?qv"""
    quals = values = ""
    if statement is not None:
        claim, stmt = statement
        subj, obj = ("?src", "?tgt") if forward else ("?tgt", "?src")
        quals = (
            f"OPTIONAL {{ {subj} {claim} ?st . ?st {stmt} {obj} ; wikibase:rank ?rank . "
            "FILTER(?rank != wikibase:DeprecatedRank) ?st ?pqp ?qv . ?qp wikibase:qualifier ?pqp "
            f". OPTIONAL {{ ?qp wikibase:qualifierValue ?pqvp . ?st ?pqvp ?qvn . "
            f"{_value_node('?qvn', '?qv', '?qtp', '?qunit')} }} }}"
        )
        if (
            forward and value is not None
        ):  # literal targets: their precision / unit from the statement's value node
            values = (
                f"OPTIONAL {{ FILTER(isLiteral(?tgt)) ?src {claim} ?vs . ?vs {stmt} ?tgt ; "
                f"wikibase:rank ?vrank ; {value} ?vn . FILTER(?vrank != wikibase:DeprecatedRank) "
                f"{_value_node('?vn', '?tgt', '?tp', '?unit')} }}"
            )
    return f"""{p.prefixes}SELECT ?src ?tgt ?qp ?qv ?l ?lp ?tp ?unit ?qtp ?qunit WHERE {{
  {page}
  {quals}
  {values}
  {_labels(p, "?tgt")}
}} ORDER BY ?src ?tgt"""


def edge_rows(
    p: Profile,
    sources: Sequence[str],
    relation: str,
    forward: bool,
    limit: int,
    labels: bool = True,
    distinct: bool = True,
) -> str:
    """Up to ``limit`` ``?src relation ?tgt`` pairs (or reversed), unsorted, with target labels if
    ``labels``: no ORDER BY, no OFFSET, no qualifiers, so a hub's thousands of edges cost one scan.
    ``distinct``: a triple in two named graphs is one edge, so ``limit + 1`` pairs asked and fewer
    got means none was left out (a bulk read). Else exactly the rows :func:`edges` pages over,
    duplicates included, so that a page sorted from them equals the endpoint's ``ORDER BY ?src
    ?tgt`` page (without the sort that costs oxigraph 0.3–0.5 s over a genre's 4,000 films, ~60 ms
    unsorted); a pair's label rows multiply it by the same factor, so counts stay recoverable.
    """
    pattern = _edge_pattern(p, sources, relation, forward)
    pairs = f"SELECT {'DISTINCT ' * distinct}?src ?tgt WHERE {{ {pattern} }} LIMIT {_int(limit)}"
    if not labels:
        return f"{p.prefixes}{pairs}"
    return f"""{p.prefixes}SELECT ?src ?tgt ?l ?lp WHERE {{
  {{ {pairs} }}
  {_labels(p, "?tgt")}
}}"""


def hop_rows(
    p: Profile,
    sources: Sequence[str],
    hops: Sequence[tuple[str, bool, int]],
    labels: bool = False,
    then: Sequence[str] = (),
    then_targets: int | None = None,
    related: tuple[int, int] | None = None,
) -> str:
    """``?src ?tgt`` edges along each of several hops (relation, forward, limit), each to its own
    limit, ``?h`` the hop's position: :func:`edge_rows` of several relations in one round trip (a
    hub's relation does not crowd out the others). Distinct edges; with ``labels``, the rows a
    page sorts (one a graph holding the edge) with the targets' labels. ``then``: relations read
    forward from each target too, in rows of their own (no ``?src``): ``?tgt``, and ``?av`` a
    value of relation number ``?a`` if it has one — joined to each distinct target, not to each
    edge row (a hub's rows would grow by a third); of the first ``then_targets`` targets of each
    hop, if given. ``related`` = (backward scan, targets): the relations of the first ``targets``
    targets of each hop too, in :func:`relations`' rows (``?e`` bound), its backward sample
    :func:`related_sample` rows at most."""
    distinct = "" if labels else "DISTINCT "
    branches = [
        f"{{ {{ SELECT {distinct}?src ?tgt WHERE {{ {_edge_pattern(p, sources, rel, fwd)} }} "
        f"LIMIT {_int(limit)} }} BIND({i} AS ?h) }}"
        for i, (rel, fwd, limit) in enumerate(hops)
    ]
    union = " UNION ".join(branches)
    out = f"?src ?tgt ?h{' ?l ?lp' * (labels or bool(related))}{' ?a ?av' * bool(then)}"
    out += " ?e ?r ?dir ?n ?t" * bool(related)
    rows = f"{{ {union} }} {_labels(p, '?tgt')}" if labels else union

    def targets(cap: int | None) -> str:  # the first ``cap`` distinct targets of each hop
        limit = "" if cap is None else f"LIMIT {_int(cap)}"
        return " UNION ".join(f"{{ SELECT DISTINCT ?tgt WHERE {b} {limit} }}" for b in branches)

    if then:
        values = " UNION ".join(
            f"{{ ?tgt {rel} ?av BIND({i} AS ?a) }}" for i, rel in enumerate(then)
        )
        rows = f"{{ {rows} }} UNION {{ {{ {targets(then_targets)} }} OPTIONAL {{ {values} }} }}"
    if related:
        scan, cap = related
        them = f"{{ SELECT DISTINCT (?tgt AS ?e) WHERE {{ {targets(cap)} FILTER(isIRI(?tgt)) }} }}"
        sample = related_sample(scan, cap, len(hops)) // (scan + 1)
        rows = f"{{ {rows} }} UNION {{ {_relation_rows(p, them, sample, scan)} }}"
    return f"{p.prefixes}SELECT {out} WHERE {{ {rows} }}"


def related_sample(backward_scan: int, targets: int, hops: int) -> int:
    """The backward sample of :func:`hop_rows`' relations of ``targets`` targets a hop: what
    :func:`relations` samples for as many entities."""
    return (backward_scan + 1) * targets * hops


def _value_node(node: str, value: str, precision: str, unit: str) -> str:
    """A Wikidata value node's time precision or quantity unit, tied to the very value it
    describes."""
    return (
        f"{{ {node} wikibase:timeValue {value} ; wikibase:timePrecision {precision} }} UNION "
        f"{{ {node} wikibase:quantityAmount {value} ; wikibase:quantityUnit {unit} }}"
    )


def _bnode_properties(p: Profile, page: str, relation: str, forward: bool, rows: int) -> str:
    """The page again, kept to its blank-node targets, joined with their own triples: a UNION branch
    rather than an OPTIONAL because engines (oxigraph) evaluate ``OPTIONAL { ?tgt ?qp ?qv
    FILTER(isBlank(?tgt)) }`` by reading every IRI target's triples before filtering (~25× slower on
    a page of well-connected targets, docs/sparql.md), while a filter on the page alone is applied
    first. Both branches bind the same blank nodes (one query, one result), which is what ties a
    node's properties to its edge — a second query could not name them. Label triples are left out
    (the best label is the edge's value), and so is, backward, the edge itself. ``rows`` caps the
    branch, in ``(source, target, property, value)`` order so a cut falls at the end of the page."""
    back = "" if forward else f"FILTER(!sameTerm(?qp, {relation}) || !sameTerm(?qv, ?src))"
    return f"""{{ SELECT ?src ?tgt ?qp ?qv WHERE {{ {page} FILTER(isBlank(?tgt)) ?tgt ?qp ?qv .
      FILTER(?qp NOT IN ({", ".join(p.label_preds)})) {back}
  }} ORDER BY ?src ?tgt ?qp ?qv LIMIT {_int(rows)} }}"""


def find_relations(p: Profile, needles: Sequence[str], limit: int) -> str:
    """Properties (Wikidata: those with a direct claim; generic: predicates in use) whose label,
    alias or description contains one of the lower-cased ``needles`` (escaped literals), with their
    labels, descriptions and aliases in the configured languages."""
    preds = [*p.label_preds, *p.alias_preds, *p.desc_preds]
    found = " || ".join(f"CONTAINS(LCASE(STR(?ml)), {n})" for n in needles)
    used = "?r wikibase:directClaim ?pd ." if p.kind == "wikidata" else "FILTER EXISTS { ?s ?r ?o }"
    alias = _labels(p, "?r", "?a", "?ap", p.alias_preds) if p.alias_preds else ""
    desc = _labels(p, "?r", "?d", "?dp", p.desc_preds) if p.desc_preds else ""
    return f"""{p.prefixes}SELECT ?r ?l ?lp ?d ?dp ?a WHERE {{
  {{ SELECT DISTINCT ?r WHERE {{ ?r ?mp ?ml . {_values("?mp", preds)} {lang_filter("?ml", p.langs)}
      FILTER({found}) {used} }} LIMIT {_int(limit)} }}
  {{ {_labels(p, "?r")} }} UNION {{ {desc} }} UNION {{ {alias} }}
}}"""


def subjects_with_values(
    p: Profile,
    relation: str,
    literals: Sequence[str],
    backward_scan: int | None = None,
    values: bool = False,
) -> str:
    """Entities whose ``relation`` has one of the (escaped) literal values, with the value and their
    labels: many external IDs back to their items in one query. With ``values``, in rows with
    ``?w``, every value of ``relation`` each has (a link back reads them next); with
    ``backward_scan``, in rows with ``?r``, their relations as :func:`relations` reads them (one a
    value at most)."""
    found = f"{_values('?v', literals)} ?e {relation} ?v . {p.entity_filter}"
    rows = f"{{ SELECT DISTINCT ?e ?v WHERE {{ {found} }} }} {_labels(p, '?e')}"
    if not values and backward_scan is None:
        return f"{p.prefixes}SELECT ?e ?v ?l ?lp WHERE {{ {rows} }}"
    them = f"{{ SELECT DISTINCT ?e WHERE {{ {found} }} }}"
    parts = [rows]
    if values:
        parts.append(f"{them} ?e {relation} ?w .")
    if backward_scan is not None:
        parts.append(_relation_rows(p, them, len(literals), backward_scan))
    union = " UNION ".join(f"{{ {part} }}" for part in parts)
    return f"{p.prefixes}SELECT ?e ?v ?l ?lp ?w ?r ?dir ?n ?t WHERE {{ {union} }}"


def count_edges(p: Profile, sources: Sequence[str], relation: str, forward: bool) -> str:
    pattern = _edge_pattern(p, sources, relation, forward)
    return f"{p.prefixes}SELECT (COUNT(*) AS ?n) WHERE {{ {pattern} }}"


def find_labels(p: Profile, literals: Sequence[str], limit: int) -> str:
    """Entities whose label or alias is exactly one of ``literals`` (index lookups, fast on any
    store). The predicates are a FILTER, not a second ``VALUES``: oxigraph joins ``VALUES ?ml`` ×
    ``VALUES ?mp`` by scanning the label predicates (tens to hundreds of ms on a 100k-label store),
    while with the literal alone bound it looks each up in its object index (~3 ms)."""
    preds = ", ".join([*p.label_preds, *p.alias_preds])
    return _label_hits(
        p,
        f"SELECT DISTINCT ?e ?ml ?mp WHERE {{ {_values('?ml', literals)} ?e ?mp ?ml . "
        f"FILTER(?mp IN ({preds})) {p.entity_filter} }} LIMIT {_int(limit)}",
    )


def contains_labels(p: Profile, needle: str, limit: int) -> str:
    """Bounded substring fallback: case-insensitive CONTAINS over labels/aliases in the configured
    languages. ``needle`` is an escaped, lower-cased literal."""
    preds = [*p.label_preds, *p.alias_preds]
    return _label_hits(
        p,
        f"SELECT DISTINCT ?e ?ml ?mp WHERE {{ ?e ?mp ?ml . {_values('?mp', preds)} "
        f"{lang_filter('?ml', p.langs)}\n"
        f"      FILTER(CONTAINS(LCASE(STR(?ml)), {needle})) {p.entity_filter} }} LIMIT "
        f"{_int(limit)}",
    )


def _label_hits(p: Profile, matches: str) -> str:
    """The entities of ``matches`` (a sub-select of ``?e ?ml ?mp``: an entity, the label or alias
    that matched and its predicate) with their labels, descriptions and, on Wikidata, sitelink
    counts: what a label search scores."""
    return f"""{p.prefixes}SELECT ?e ?ml ?mp ?l ?lp ?d ?dp ?sl WHERE {{
  {{ {matches} }}
  {_labels(p, "?e")}
  {_labels(p, "?e", "?d", "?dp", p.desc_preds) if p.desc_preds else ""}
  {"OPTIONAL { ?e wikibase:sitelinks ?sl }" if p.kind == "wikidata" else ""}
}}"""


def relation_sample(p: Profile, limit: int) -> str:
    if p.kind == "wikidata":
        inner = f"SELECT ?r WHERE {{ ?r wikibase:directClaim ?pd }} ORDER BY ?r LIMIT {_int(limit)}"
        return f"{p.prefixes}SELECT ?r ?l ?lp WHERE {{ {{ {inner} }} {_labels(p, '?r')} }}"
    sample = "SELECT ?r WHERE { ?s ?r ?o } LIMIT 10000"
    inner = f"SELECT ?r (COUNT(*) AS ?n) WHERE {{ {{ {sample} }} {p.sample_filter} }} GROUP BY ?r"
    return (
        f"SELECT ?r ?n ?l ?lp WHERE {{ {{ {inner} ORDER BY DESC(?n) ?r LIMIT {_int(limit)} }} "
        f"{_labels(p, '?r')} }}"
    )
