"""The SPARQL guard sends only what it checked: no query it passes makes the engine fetch a URL.

A canary HTTP server listens on loopback; an engine (pyoxigraph, which resolves SERVICE by HTTP, as
the local store kinds do) runs every query the guard lets through. The guard's lexer, rdflib's
parser and the engine read comment, IRI and string boundaries differently in places (``<?b&&#>`` is
an IRI to one and ``< ?b &&`` plus a comment to another; a comment ends at a carriage return for one
and at the next newline for another): queries built from those pieces either are refused or run
without the canary hearing anything. A control query run past the guard shows the canary does hear
the engine."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tot_mcp.kg_adapters.sparql.guard import GuardPolicy, QueryRefused, check_query


class _Canary(BaseHTTPRequestHandler):
    heard: list[str] = []

    def do_GET(self):  # noqa: N802 - http.server's name
        self._answer()

    def do_POST(self):  # noqa: N802
        self._answer()

    def _answer(self):
        type(self).heard.append(self.path)
        body = (
            b'{"head":{"vars":["x"]},"results":{"bindings":'
            b'[{"x":{"type":"literal","value":"CANARY"}}]}}'
        )
        self.send_response(200)
        self.send_header("content-type", "application/sparql-results+json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def canary():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Canary)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/canary/x", _Canary.heard
    server.shutdown()


@pytest.fixture(scope="module")
def store():
    s = ox.Store()
    s.add(ox.Quad(ox.NamedNode("http://e/a"), ox.NamedNode("http://e/p"), ox.Literal("1")))
    return s


def run_if_passed(store, query: str) -> bool:
    """Run ``query`` on the engine if the guard passes it; whether it passed."""
    try:
        checked = check_query(query, GuardPolicy())
    except QueryRefused:
        return False
    try:
        result = store.query(checked.text)
        list(result) if not isinstance(result, bool) else None
    except (SyntaxError, OSError, ValueError):
        pass  # the engine refusing what the guard passed is not a fetch
    return True


def test_the_canary_hears_the_engine_when_the_guard_is_bypassed(canary, store):
    url, heard = canary
    before = len(heard)
    list(store.query(f"SELECT * WHERE {{ SERVICE <{url}> {{ ?x ?y ?z }} }}"))
    assert len(heard) == before + 1  # the control: without the guard, SERVICE is fetched


@pytest.mark.parametrize("form", ["SELECT *", "ASK"])
def test_the_two_known_disagreements_are_refused(canary, store, form):
    url, heard = canary
    before = len(heard)
    q = (
        f"{form} WHERE {{ VALUES (?a ?b) {{(1 2)}} FILTER(?a<?b&&#>'''\r true) SERVICE <{url}> "
        f"{{ ?x ?y ?z }} FILTER(true||\n<http://x/'''>) }}" + (" LIMIT 5" if form != "ASK" else "")
    )
    with pytest.raises(QueryRefused):  # as ambiguous, or (its IRI rewritten) as not parsing
        check_query(q, GuardPolicy())
    assert not run_if_passed(store, q) and len(heard) == before


def test_a_second_copy_of_each_ambiguous_token_does_not_make_the_reading_agree(canary, store):
    """The attack that beat a check of the *sets* of IRIs and strings (an outside re-run of #36):
    the same IRIs and string again where every parser reads them alike. Body IRIs holding '#' or a
    quote are now rewritten or refused, so no parser reads a comment or a string start inside
    one."""
    url, heard = canary
    before = len(heard)
    hidden = (
        "\r true) } UNION { SERVICE <"
        + url
        + "> { ?x ?y ?z } } OPTIONAL { FILTER(true||\n<http://x/"
    )
    pad = '"' + hidden.replace("\r", "\\r").replace("\n", "\\n") + '"'
    quote3 = "'" * 3
    for form, end in (("SELECT *", " LIMIT 5"), ("ASK", "")):
        q = (
            f"PREFIX x: <http://x/> {form} WHERE {{ BIND(<x:y&&#> AS ?p1) "
            f"BIND(<http://x/{quote3}> AS ?p2) BIND({pad} AS ?p3) "
            f"{{ FILTER(?a<x:y&&#>{quote3}{hidden}{quote3}>) }} }}{end}"
        )
        assert not run_if_passed(store, q)
        run_if_passed(store, q.replace(f"BIND(<http://x/{quote3}> AS ?p2) ", ""))
    assert len(heard) == before


def test_a_local_name_escape_cannot_open_a_string_the_parsers_do_not_see(canary, store):
    """The third outside re-run of #36: ``x:a\\'`` is a name with an escaped quote to rdflib and
    oxigraph and a name then a string to a lexer, so a SERVICE inside that "string" passed (decoys
    matched every IRI and string). A backslash outside a string is refused; strings are sent
    canonical, on one line."""
    url, heard = canary
    before = len(heard)
    inner = f" }} #\r SERVICE <{url}> {{ ?x ?y ?z }} \n VALUES ?w {{ <http://x/"
    for form, end in (("SELECT *", " LIMIT 5"), ("ASK", "")):
        q = (
            "PREFIX x: <http://x/>\nPREFIX d: <http://x/'''>\n"
            f"{form} WHERE {{\n"
            f"  BIND('''{inner}''' AS ?z1)\n  BIND('' AS ?z2)\n"
            f"  VALUES ?v {{ x:a\\'''{inner}'''> }}\n}}{end}"
        )
        with pytest.raises(QueryRefused, match="backslash outside a string"):
            check_query(q, GuardPolicy())
        assert not run_if_passed(store, q)
    assert len(heard) == before


@pytest.mark.parametrize(
    "name",
    [
        "d:report.pdf.SERVICEx:c",
        "d:report.pdf.SERVICE x:c",
        "d:a:b.SERVICEx:c",
        "d:a%41.SERVICEx:c",
    ],
)
def test_a_name_one_parser_splits_at_a_dot_cannot_hide_a_service(canary, store, name):
    """The fourth outside re-run of #36: ``d:report.pdf.SERVICEx:c`` is one name to rdflib, but
    oxigraph reads ``d:report.pdf``, ``.`` and ``SERVICE x:c {...}``, and fetched the canary
    wherever some IRI matched the triple before it. A local part with '.', ':' or '%' is refused,
    and so is a word that starts like SERVICE."""
    url, heard = canary
    before = len(heard)
    store.add(
        ox.Quad(
            ox.NamedNode("http://e/s"),
            ox.NamedNode("http://e/p"),
            ox.NamedNode("http://example.org/doc/report.pdf"),
        )
    )
    q = (
        f"PREFIX x: <{url.rsplit('/', 1)[0]}/> PREFIX d: <http://example.org/doc/> "
        f"SELECT ?x WHERE {{ ?s ?p {name} {{ ?x ?y ?z }} }} LIMIT 5"
    )
    with pytest.raises(QueryRefused):
        check_query(q, GuardPolicy())
    assert not run_if_passed(store, q) and len(heard) == before


@pytest.mark.parametrize(
    ("prefixes", "body"),
    [
        (
            "PREFIX q: <http://example.org:8080> PREFIX GRAPH: <{canary}>",
            "?s ?p q:SERVICE GRAPH:z {{ ?x ?y ?z }}",
        ),
        ("PREFIX q: <http://example.org:8080>", "?s ?p q:a q:SERVICE <{canary}z> {{ ?x ?y ?z }}"),
        ("PREFIX q: <http://127.0.0.1:>", "?s ?p q:a q:SERVICE <{canary}z> {{ ?x ?y ?z }}"),
    ],
)
def test_a_name_that_is_no_iri_to_the_engine_cannot_hide_a_service(canary, store, prefixes, body):
    """The fifth outside re-run of #36: oxigraph reads a prefixed name whose IRI would be invalid as
    the bare prefix and the local part as code (``q:SERVICE`` with ``q:`` =
    ``<http://example.org:8080>``), and a prefix named GRAPH as the keyword; rdflib read a name and
    a GRAPH clause. Every name must make a valid IRI by the engine's own rules, and no prefix may
    start like a keyword."""
    url, heard = canary
    before = len(heard)
    store.add(
        ox.Quad(
            ox.NamedNode("http://e/s"),
            ox.NamedNode("http://e/home"),
            ox.NamedNode("http://example.org:8080"),
        )
    )
    base = url.rsplit("/", 1)[0] + "/"
    q = f"{prefixes.format(canary=base)} SELECT ?x WHERE {{ {body.format(canary=base)} }} LIMIT 5"
    with pytest.raises(QueryRefused):
        check_query(q, GuardPolicy())
    assert not run_if_passed(store, q) and len(heard) == before


@pytest.mark.parametrize(
    "iri", ["http://x/o#a.b.SERVICE", "http://x/o#a.b.service", "http://x/o#a.b.SERVICESILENT"]
)
def test_a_name_the_guard_writes_itself_is_one_name_to_every_parser(canary, store, iri):
    """The sixth outside re-run of #36: the guard wrote ``<http://x/o#a.b.SERVICE>x:c`` as
    ``ns0:a.b.SERVICEx:c`` — a name with two '.'-groups, glued to the next token — which oxigraph
    read as ``ns0:a.b``, ``.`` and a SERVICE (called even with an empty body and no data). An IRI
    whose name after '#' has a '.' becomes a namespace of its own, sent as ``ns0:``; written names
    are spaced; the checks run on the text sent."""
    url, heard = canary
    before = len(heard)
    q = f"PREFIX x: <{url.rsplit('/', 1)[0]}/> SELECT * WHERE {{ ?s ?p <{iri}>x:c {{ }} }} LIMIT 5"
    assert not run_if_passed(store, q) and len(heard) == before
    checked = check_query(f"SELECT * WHERE {{ ?s ?p <{iri}> }} LIMIT 5", GuardPolicy())
    assert (
        f"<{iri}>" in checked.text.split("SELECT")[0] and " ns0: " in checked.text
    )  # a legit IRI still reads


def test_an_iri_read_as_code_in_the_body_is_refused_even_when_declared_elsewhere():
    """The fifth outside re-run of #36 (no SERVICE): ``<d:x&&?o>`` is '<' and code to both parsers
    in a FILTER, so the caller's ``d:x`` went out unexpanded, unchecked; declaring the same text as
    a prefix made the sets of IRIs agree. IRIs are compared by count, and every name of the text
    sent is a full <IRI>."""
    q = (
        "PREFIX z: <d:x&&?o> PREFIX e: <http://x/x> PREFIX d: <http://x/> "
        "SELECT * WHERE { ?s ?p ?o FILTER(?a<d:x&&?o>0) } LIMIT 5"
    )
    with pytest.raises(QueryRefused, match="reads differently"):
        check_query(q, GuardPolicy())
    sent = check_query(
        "PREFIX d: <http://x/> SELECT * WHERE { ?s d:p d:o FILTER(?s != d:z) } LIMIT 5",
        GuardPolicy(),
    ).text
    assert "d:p" not in sent and "<http://x/p>" in sent and "<http://x/z>" in sent


def test_wikidatas_label_service_parameters_still_read_as_names():
    checked = check_query(
        "SELECT ?s WHERE { ?s ?p ?o . SERVICE wikibase:label { bd:serviceParam "
        'wikibase:language "en" } } LIMIT 3',
        GuardPolicy(
            prefixes={
                "wikibase": "http://wikiba.se/ontology#",
                "bd": "http://www.bigdata.com/rdf#",
            },
            services=frozenset({"http://wikiba.se/ontology#label"}),
        ),
    )
    assert "bd:serviceParam" in checked.text


def test_strings_are_sent_as_one_line_literals_of_the_same_value():
    checked = check_query(
        "SELECT ?s WHERE { ?s ?p '''two\nlines # and \"quotes\"''' }", GuardPolicy()
    )
    assert '"two\\nlines # and \\"quotes\\""' in checked.text and "\n" not in checked.text


def test_iris_with_a_fragment_are_sent_as_prefixed_names():
    checked = check_query(
        "SELECT ?x WHERE { ?x <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://e/C> }",
        GuardPolicy(),
    )
    assert "PREFIX ns0: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>" in checked.text
    assert " ns0:type " in checked.text and checked.text.count("#") == 1


PIECES = [
    "?a",
    "?b",
    "<",
    ">",
    "&&",
    "||",
    "#",
    "'''",
    '"""',
    "'",
    '"',
    "\r",
    "\n",
    "\r\n",
    " ",
    "true",
    "(",
    ")",
    "{",
    "}",
    "<http://x/",
    "FILTER(",
    "SERVICE <{url}> {{ ?x ?y ?z }}",
    "1",
    "=",
    "!",
    "x:a\\",
    "\\'",
    "PREFIX x: <http://x/> ",
    "x:a.b.",
    "SERVICEx:y",
    "GRAPH:",
    "PREFIX q: <http://h:8080> q:SERVICE ",
    "<http://x/o#a.b.SERVICE>",
]


@settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=400,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.lists(st.sampled_from(PIECES), min_size=3, max_size=24))
def test_boundary_mixes_never_reach_the_canary(canary, store, pieces):
    url, heard = canary
    before = len(heard)
    middle = "".join(pieces).replace("{url}", url).replace("{{", "{").replace("}}", "}")
    for q in (
        f"SELECT * WHERE {{ VALUES (?a ?b) {{(1 2)}} FILTER({middle}) }} LIMIT 5",
        f"SELECT * WHERE {{ ?a ?b ?c . {middle} }}",
    ):
        run_if_passed(store, q)
    assert len(heard) == before


def test_the_empty_prefix_is_a_prefix_like_any_other():
    """A second outside re-run of #36 found ``:`` queries raising KeyError in the guard."""
    q = "PREFIX : <http://e/> SELECT * WHERE { ?s ?p :a }"
    assert check_query(q, GuardPolicy()).text.startswith("PREFIX : <http://e/> SELECT")
    declared = check_query("SELECT * WHERE { ?s ?p :a }", GuardPolicy(prefixes={"": "http://d/"}))
    assert declared.text.startswith("PREFIX : <http://d/> ")


def test_a_local_stores_query_process_has_no_network_to_federate_with(canary, tmp_path):
    """Below the guard: a SERVICE that reached a local store's query process (as one the guard
    missed would) finds no network there — the process leaves it for an empty one of its own — so
    nothing is fetched."""
    import os

    from tot_mcp.kg_adapters.sparql.store_worker import _no_network
    from tot_mcp.kg_adapters.sparql.workers import StoreSource, _Worker

    probe = os.fork()  # can this system make an unprivileged network namespace at all?
    if probe == 0:
        os._exit(0 if _no_network() else 1)
    if os.waitpid(probe, 0)[1] != 0:
        pytest.skip(
            "this system allows no unprivileged user/network namespace: the guard alone stands"
        )
    url, heard = canary
    before = len(heard)
    data = tmp_path / "g.nt"
    data.write_text("<http://e/a> <http://e/p> <http://e/b> .\n", encoding="utf-8")
    worker = _Worker(StoreSource(file=str(data), media_type="application/n-triples"))
    try:
        assert worker.ready() == {"ready": True, "offline": True}
        answer = worker.ask(
            {
                "query": f"SELECT * WHERE {{ ?s ?p ?o SERVICE <{url}> {{ ?x ?y ?z }} }}",
                "max_rows": 5,
                "hidden": [],
            }
        )
    finally:
        worker.reap()
    assert "error" in answer and len(heard) == before
