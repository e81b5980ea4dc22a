"""Nothing a caller sends can change the meaning of a query: IDs are validated, text is an escaped
literal.

Checked with hypothesis over thousands of generated strings (quotes, braces, newlines, ``}``, ``#``,
NUL, ``\\u`` escapes, INSERT/DELETE attempts) against two real SPARQL parsers: rdflib's and
oxigraph's (pyoxigraph, which also *executes* every query the adapter sends, in process, so the
round trip of the text is checked too).
"""

from __future__ import annotations

import asyncio
import base64
import re
import urllib.parse

import httpx
import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rdflib.plugins.sparql.parser import parseQuery

from tot_mcp.kg_adapters.base import Limits
from tot_mcp.kg_adapters.errors import InvalidInput, KGError, NotFound
from tot_mcp.kg_adapters.sparql import (
    EndpointRegistry,
    IriIds,
    is_safe_iri,
    open_sparql_kg,
    sparql_literal,
)
from tot_mcp.kg_adapters.sparql.escape import clean_search_text, iri_ref
from tot_mcp.kg_adapters.sparql.ids import wikidata_entity, wikidata_property

NASTY = [
    '"',
    "'",
    "\\",
    "\\u0022",
    "\\U0000007D",
    "}",
    "{",
    "#",
    "\n",
    "\r",
    "\t",
    "\x00",
    "\x7f",
    "<",
    ">",
    "^^",
    "@en",
    " . ",
    ";",
    "} INSERT DATA { <a:b> <a:c> <a:d> } #",
    '" } ; DELETE WHERE { ?s ?p ?o } #',
    "')) UNION { ?s ?p ?o } #",
    "\ud800",
    "Ω",
    "东京",
    "\u2028",
    "%",
    "~",
    "Q42",
    "P31",
]
nasty_text = st.lists(st.one_of(st.sampled_from(NASTY), st.text(max_size=8)), max_size=6).map(
    "".join
)
LABEL = ox.NamedNode("http://www.w3.org/2000/01/rdf-schema#label")
Q1 = ox.NamedNode("http://www.wikidata.org/entity/Q1")


def checks(n: int, **kw) -> settings:
    """Deterministic (derandomized, no example database) so the suite gives the same verdict on
    every run."""
    return settings(
        max_examples=n,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
        **kw,
    )


# -- the primitives --------------------------------------------------------------------------------
@checks(600)
@given(nasty_text)
def test_a_literal_is_either_refused_or_parses_back_to_exactly_the_text(text):
    cleaned = clean_search_text(text)  # what search code does first: always writable
    assert sparql_literal(cleaned).startswith('"') and "\\" not in cleaned and "\n" not in cleaned
    try:
        lit = sparql_literal(text, "en")
    except InvalidInput:
        assert re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]|\\[uU]", text), (
            "refused harmless text"
        )
        return
    query = f"SELECT ?s WHERE {{ ?s ?p {lit} }}"
    parsed = parseQuery(query)  # rdflib
    assert str(parsed[1]["where"]["part"][0]["triples"][0][2]["string"]) == text
    store = ox.Store()
    store.add(ox.Quad(Q1, LABEL, ox.Literal(text, language="en")))
    assert [row["s"] for row in store.query(query)] == [Q1]  # oxigraph reads the same text back


@checks(600)
@given(
    st.one_of(nasty_text, st.from_regex(r"\AQ[0-9]{1,12}\Z"), st.from_regex(r"\AP[0-9]{1,12}\Z"))
)
def test_wikidata_ids_pass_only_when_they_are_q_or_p_numbers(text):
    for check, pattern in (
        (wikidata_entity, r"Q[1-9][0-9]{0,10}"),
        (wikidata_property, r"P[1-9][0-9]{0,10}"),
    ):
        try:
            assert check(text) == text and re.fullmatch(pattern, text)
        except InvalidInput:
            assert not re.fullmatch(pattern, text)


def _b64(text: str) -> str:
    return "~" + base64.urlsafe_b64encode(text.encode("utf-8", "surrogatepass")).decode().rstrip(
        "="
    )


generic_ids = st.one_of(
    nasty_text,
    nasty_text.map(_b64),
    nasty_text.map(lambda t: _b64("http://example.org/" + t)),
    st.tuples(st.sampled_from(["ex", "rdf", "nope", "e.x", ""]), nasty_text).map(
        lambda p: f"{p[0]}.{p[1]}"
    ),
)


@checks(600)
@given(generic_ids)
def test_a_generic_id_decodes_to_a_safe_iri_or_is_refused(local):
    ids = IriIds({"ex": "http://example.org/"})
    try:
        iri = ids.decode(local)
    except (InvalidInput, NotFound):
        return
    assert is_safe_iri(iri) and not re.search(r'[<>"{}|^`\\\s\x00-\x1f]', iri)
    assert ids.decode(ids.encode(iri)) == iri
    ox.Store().query(f"ASK {{ {iri_ref(iri)} ?p ?o }}")  # parses


# -- through the public API: every query the adapter sends runs on a real engine -------------------
class InProcessEndpoint:
    """An httpx transport that answers SPARQL by running it on a pyoxigraph store (and records the
    queries)."""

    def __init__(self) -> None:
        self.store = ox.Store()
        self.queries: list[str] = []
        self.transport = httpx.MockTransport(self.handle)

    def handle(self, request: httpx.Request) -> httpx.Response:
        if request.headers.get("content-type", "").startswith("application/sparql-query"):
            params = {
                **dict(request.url.params),
                "query": request.content.decode(),
            }  # a direct POST
        elif request.method == "POST":
            params = dict(urllib.parse.parse_qsl(request.content.decode()))
        else:
            params = dict(request.url.params)
        query = params["query"]
        self.queries.append(query)
        result = self.store.query(query)  # raises SyntaxError on a malformed query: the test fails
        return httpx.Response(200, content=result.serialize(format=ox.QueryResultsFormat.JSON))


@pytest.fixture(scope="module")
def loop():
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def open_kgs(endpoint: InProcessEndpoint):
    common = {"registry": EndpointRegistry(), "transport": endpoint.transport, "retries": 0}
    limits = Limits(max_query_chars=300)
    wd = open_sparql_kg("wd", "wikidata", "http://in-process.test/sparql", limits, **common)
    g = open_sparql_kg(
        "g",
        "sparql",
        "http://in-process.test/sparql",
        limits,
        prefixes={"ex": "http://example.org/"},
        **common,
    )
    return wd, g


def run(loop, coro):
    try:
        return loop.run_until_complete(coro)
    except KGError:
        return None


@checks(150)
@given(nasty_text.filter(lambda t: clean_search_text(t) != ""))
def test_search_text_reaches_the_engine_as_exactly_that_literal(loop, text):
    endpoint = InProcessEndpoint()
    wanted = clean_search_text(text)
    endpoint.store.add(ox.Quad(Q1, LABEL, ox.Literal(wanted, language="en")))
    endpoint.store.add(ox.Quad(ox.NamedNode("http://example.org/x"), LABEL, ox.Literal(wanted)))
    wd, g = open_kgs(endpoint)
    if len(text.strip()) > 300:
        return
    hits = run(loop, wd.search_entities(text))
    assert hits and (hits[0].entity.id, hits[0].score) == ("wd:Q1", 1.0)
    hits = run(loop, g.search_entities(text))
    assert hits and hits[0].entity.id == "g:ex.x"
    run(loop, wd.initialize(text))
    run(loop, g.initialize(f"[{text}]"))
    assert endpoint.queries and all(
        q.lstrip().startswith(("PREFIX", "SELECT", "ASK")) for q in endpoint.queries
    )


@checks(150)
@given(
    st.one_of(nasty_text, st.from_regex(r"\AQ[0-9]{1,3}\Z")), nasty_text, generic_ids, generic_ids
)
def test_ids_and_relations_either_raise_or_make_queries_that_run(loop, qid, pid, ent, rel):
    endpoint = InProcessEndpoint()
    wd, g = open_kgs(endpoint)
    for kg, e, r in ((wd, f"wd:{qid}", f"wd:{pid}"), (g, f"g:{ent}", f"g:{rel}")):
        run(loop, kg.relations([e]))
        run(loop, kg.edges([e, e], r, "backward"))
        run(loop, kg.adjacent_ids([e], r, labelled=True))
        run(loop, kg.labels([e]))
        run(loop, kg.describe_entity(e))
        run(loop, kg.find([e.split(":", 1)[1]]))
        run(loop, kg.find(["x"], r))
    for q in endpoint.queries:  # only validated terms ever appear
        for iri in re.findall(r"<([^>]*)>", q):
            assert is_safe_iri(iri)
        for name in re.findall(r"\b(wd|wdt|p|ps):([A-Za-z0-9]+)", q):
            assert re.fullmatch(r"[QP][1-9][0-9]{0,10}", name[1])


def test_rdflib_also_parses_every_kind_of_query_the_adapter_sends(loop):
    endpoint = InProcessEndpoint()
    wd, g = open_kgs(endpoint)
    text = 'He said "hi" } INSERT DATA { <a:b> <a:c> <a:d> } # \\u0022'
    for kg, ent, rel in ((wd, "wd:Q42", "wd:P26"), (g, "g:ex.Alice", "g:ex.knows")):
        run(loop, kg.search_entities(text))
        run(loop, kg.initialize(text))
        run(loop, kg.initialize(f"who is [{text}]"))
        run(loop, kg.relations([ent]))
        run(loop, kg.edges([ent], rel))
        run(loop, kg.edges([ent], rel, "backward", limit=3, offset=2))
        run(loop, kg.adjacent_ids([ent], rel, labelled=True))
        run(loop, kg.adjacent_ids([], rel))
        run(loop, kg.labels([ent]))
        run(loop, kg.find([text, ent]))
        run(loop, kg.find([text], rel))
        run(loop, kg.describe_entity(ent))
        run(loop, kg.search_relations(text))
        run(loop, kg.info())
    assert len(endpoint.queries) >= 30
    for q in endpoint.queries:
        parsed = parseQuery(q)
        assert parsed[1].name in ("SelectQuery", "AskQuery")
