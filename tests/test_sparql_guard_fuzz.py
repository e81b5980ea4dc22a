"""Fuzzing the read-only SPARQL guard (``kg_adapters.sparql.guard``) through the real adapter path.

Every query goes through ``SparqlKG.sparql_query`` against a fake endpoint (an
``httpx.MockTransport``) that records exactly what reaches it. The property, for every generated or
mutated query:

* the query is refused with ``InvalidInput`` (one line) and **nothing** reaches the endpoint, or
* exactly one request reaches it, carrying the very text the guard returned, and an oracle written
  independently of the guard (its own string/IRI skipping and keyword scan) finds a read query:
  SELECT/ASK/CONSTRUCT/DESCRIBE first, no update keyword, no comment, no ``\\u`` escape, no SERVICE
  but the allowlisted label service, a top-level LIMIT within the cap.

Any other exception (a traceback) fails. Three generators — grammar-built queries with poison mixed
in, mutations of real Wikidata queries, raw text — plus a hand list of known tricks. Derandomized,
no example database.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tot_mcp.kg_adapters.errors import InvalidInput
from tot_mcp.kg_adapters.sparql import EndpointRegistry, open_sparql_kg
from tot_mcp.kg_adapters.sparql.guard import DEFAULT_MAX_ROWS, WIKIBASE_LABEL_SERVICE

CAP = 20
LABEL = WIKIBASE_LABEL_SERVICE
SENT: list[str] = []
COUNTS = {"generated": 0, "mutated": 0, "raw": 0, "hand": 0}


def _examples(n: int) -> int:
    """``n``, scaled by $GUARD_FUZZ_SCALE (default 1; lower it only to iterate on the guard
    quickly)."""
    return max(1, round(n * float(os.environ.get("GUARD_FUZZ_SCALE", "1"))))


FUZZ = settings(
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=False,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)


def _handler(request: httpx.Request) -> httpx.Response:
    query = request.url.params.get("query")
    if request.headers.get("content-type", "").startswith("application/sparql-query"):
        query = request.content.decode()  # a direct POST
    elif query is None:
        query = dict(x.split("=", 1) for x in request.content.decode().split("&")).get("query", "")
        from urllib.parse import unquote_plus

        query = unquote_plus(query)
    SENT.append(query)
    if "n-triples" in request.headers.get("accept", ""):
        return httpx.Response(200, content=b"", headers={"content-type": "application/n-triples"})
    body = {
        "head": {"vars": ["s"]},
        "results": {"bindings": [{"s": {"type": "uri", "value": "http://x/1"}}]},
        "boolean": True,
    }
    return httpx.Response(
        200, content=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )


LOOP = asyncio.new_event_loop()
KG = open_sparql_kg(
    "wd",
    "wikidata",
    "http://fake.invalid/sparql",
    registry=EndpointRegistry(),
    transport=httpx.MockTransport(_handler),
    retries=0,
    breaker_failures=0,
    sparql_services=[LABEL],
)


# -- the oracle (independent of the guard's lexer) -------------------------------------------------
_IRI = re.compile(r'<[^<>"{}|^`\\\x00-\x20]*>')
_KEYWORD = re.compile(
    r"(?i)(?<![\w?$:\-.@])(insert|delete|load|clear|drop|create|add|move|copy|with|using|service)"
    r"(?![\w:\-])"
)


def _skip_string(text: str, i: int) -> int:
    quote = text[i]
    long = text.startswith(quote * 3, i)
    j = i + (3 if long else 1)
    while j < len(text):
        if text[j] == "\\":
            j += 2
        elif long and text.startswith(quote * 3, j):
            while j + 3 < len(text) and text[j + 3] == quote:  # '''a'''' : the last three close it
                j += 1
            return j + 3
        elif not long and text[j] == quote:
            return j + 1
        else:
            j += 1
    raise AssertionError(f"unterminated string reached the endpoint: {text!r}")


def _skeleton(text: str) -> tuple[str, list[str]]:
    """The query with every string as ``"S"`` and every IRI as ``<I>`` (the IRIs returned in
    order)."""
    out, iris, i = [], [], 0
    while i < len(text):
        c = text[i]
        if c in "\"'":
            i = _skip_string(text, i)
            out.append(' "S" ')
        elif c == "<" and (m := _IRI.match(text, i)):
            iris.append(m.group(0)[1:-1])
            out.append(" <I> ")
            i = m.end()
        else:
            out.append(c)
            i += 1
    return "".join(out), iris


def assert_read_only(text: str) -> None:
    assert not re.search(r"\\[uU]", text), text
    skel, iris = _skeleton(text)
    assert "#" not in skel, f"a comment reached the endpoint: {text!r}"
    rest = re.sub(r"(?i)^\s*((PREFIX\s+[^\s:]*:\s*<I>|BASE\s*<I>)\s*)*", "", skel)
    assert re.match(r"(?i)\s*(SELECT|ASK|CONSTRUCT|DESCRIBE)\b", rest), f"not a read form: {text!r}"
    declared = {
        m.group(1): iris[skel[: m.end()].count("<I>") - 1]
        for m in re.finditer(r"(?i)\bPREFIX\s+([\w.\-]*):\s*<I>", skel)
    }
    for m in _KEYWORD.finditer(skel):
        word = m.group(1).upper()
        assert word == "SERVICE", f"{word} reached the endpoint: {text!r}"
        after = skel[m.end() :]
        iri = re.match(r"(?i)\s*(SILENT\s*)?<I>", after)
        name = re.match(r"(?i)\s*(SILENT\s*)?([\w.\-]*):([\w\-]+)", after)
        if iri:
            target = iris[skel[: m.end() + iri.end()].count("<I>") - 1]
        else:
            assert name and name.group(2) in declared, (
                f"SERVICE without a known IRI reached the endpoint: {text!r}"
            )
            target = declared[name.group(2)] + name.group(3)
        assert target == LABEL, f"SERVICE <{target}> reached the endpoint"
    if not re.match(r"(?i)\s*ASK\b", rest):
        depth, limits = 0, []
        for m in re.finditer(r"[{}()]|(?i:\bLIMIT\s+(\d+))", skel):
            if m.group(0) in "{(":
                depth += 1
            elif m.group(0) in "})":
                depth -= 1
            elif depth == 0:
                limits.append(int(m.group(1)))
        assert len(limits) == 1 and limits[0] <= CAP + 1, (
            f"top-level LIMIT {limits} reached the endpoint: {text!r}"
        )


def attempt(query: str, kind: str) -> bool:
    """Run one query through the adapter; check the property; True when it was accepted."""
    COUNTS[kind] += 1
    before = len(SENT)
    try:
        result = LOOP.run_until_complete(KG.sparql_query(query, limit=CAP))
    except InvalidInput as e:
        assert len(SENT) == before, f"a refused query reached the endpoint: {query!r}"
        assert "\n" not in str(e) and str(e).startswith("refused: "), str(e)
        return False
    sent = SENT[before:]
    assert sent == [result.query], (query, sent)
    assert_read_only(sent[0])
    assert len(result.rows) <= CAP
    return True


# -- 1. grammar-built queries, with poison ---------------------------------------------------------
VARS = st.sampled_from(["?s", "?p", "?o", "?x", "?item", "?label", "$v"])
NODES = st.sampled_from(
    ["wd:Q42", "wd:Q5", "<http://www.wikidata.org/entity/Q64>", "ex:thing", "_:b1", "[]"]
)
PREDICATES = st.sampled_from(
    [
        "wdt:P31",
        "wdt:P26",
        "rdfs:label",
        "schema:description",
        "p:P26",
        "ps:P26",
        "wikibase:rank",
        "a",
        "wdt:P31/wdt:P279*",
        "^wdt:P40",
        "(wdt:P26|wdt:P451)",
    ]
)
LITERALS = st.sampled_from(
    [
        '"Douglas Adams"@en',
        "'x'",
        '"""two\nlines"""',
        "42",
        "3.5",
        "true",
        '"1952-03-11T00:00:00Z"^^xsd:dateTime',
        '"SERVICE <http://evil/> {}"',
        "'# not a comment'",
        '"INSERT DATA { }"',
        "'''it''s'''",
        '"\\"quoted\\""',
    ]
)
# (text, is forbidden): each may land anywhere a group pattern element goes
POISON = st.sampled_from(
    [
        ("SERVICE <http://evil.example/sparql> { ?s ?p ?o }", True),
        ("SERVICE SILENT <http://127.0.0.1:9/> { ?s ?p ?o }", True),
        ("SERVICE ?endpoint { ?s ?p ?o }", True),
        ("SeRvIcE <http://evil.example/> { ?s ?p ?o }", True),
        ('SERVICE wikibase:label { bd:serviceParam wikibase:language "en" }', False),
        ("SERVICE <http://wikiba.se/ontology#label> { ?s rdfs:label ?label }", False),
        ("# SERVICE <http://evil/> in a comment\n?s ?p ?o .", False),
        ("# comment with CR\rSERVICE <http://evil/> { ?s ?p ?o }", True),
        ("?s ?p '\\u0053ERVICE'", True),
        ("\\u0053ERVICE <http://evil/> { ?s ?p ?o }", True),
        ("{ SELECT * { INSERT DATA { <http://a> <http://b> <http://c> } } }", True),
        ("FILTER EXISTS { SERVICE <http://evil/> { ?s ?p ?o } }", True),
        ("FILTER NOT EXISTS { ?s wdt:P31 wd:Q5 }", False),
    ]
)


TRIPLE = st.builds(
    lambda s, p, o: f"{s} {p} {o} .",
    st.one_of(VARS, NODES),
    st.one_of(VARS, PREDICATES),
    st.one_of(VARS, NODES, LITERALS),
)
WRAPPERS = st.sampled_from(
    [
        "{}",
        "OPTIONAL {{ {} }}",
        "{{ {} }} UNION {{ ?s ?p ?o }}",
        "MINUS {{ {} }}",
        "FILTER EXISTS {{ {} }}",
        "FILTER NOT EXISTS {{ {} }}",
        "GRAPH ?g {{ {} }}",
        "{{ SELECT * WHERE {{ {} }} LIMIT 7 }}",
        "{} BIND(STR(?s) AS ?bound)",
        "{} FILTER(isIRI(?s) || ?o > 3)",
        "{} VALUES ?x {{ wd:Q42 wd:Q64 }}",
        "OPTIONAL {{ {{ SELECT ?s WHERE {{ {} }} }} }}",
    ]
)


@st.composite
def built_query(draw) -> tuple[str, bool]:
    """A valid read query from a small grammar (forms, group patterns, modifiers, prologues) with
    0-2 poisons placed in it; ``bad`` says whether a poison is forbidden (then the query must be
    refused)."""
    group = draw(WRAPPERS).format(" ".join(draw(st.lists(TRIPLE, min_size=1, max_size=2))))
    bad = False
    poisons = draw(st.lists(POISON, max_size=2))
    for text, forbidden in poisons:
        group = f"{group} {text}" if draw(st.booleans()) else f"{text}\n{group}"
        bad |= forbidden
    form = draw(
        st.sampled_from(
            [
                "SELECT *",
                "select ?s ?o",
                "SELECT (COUNT(*) AS ?n)",
                "ASK",
                "CONSTRUCT",
                "DESCRIBE ?s",
            ]
        )
    )
    where = f"{{ {group} }}"
    if form == "CONSTRUCT":
        head = f"CONSTRUCT {{ ?s ?p ?o }} WHERE {where}"
    elif form == "ASK":
        head = f"ASK {where}"
    else:
        head = f"{form} WHERE {where}"
    mods = ""
    if form != "ASK":
        if form.startswith("SELECT *") and draw(st.booleans()):
            mods += " ORDER BY ?s"
        if draw(st.booleans()):
            mods += f" LIMIT {draw(st.integers(0, 10**6))}"
        if draw(st.booleans()):
            mods += f" OFFSET {draw(st.integers(0, 100))}"
        if form.startswith("SELECT *") and draw(st.booleans()):
            mods += " VALUES ?o { 1 2 }"
    prologue = "PREFIX ex: <http://example.org/> " + draw(
        st.sampled_from(
            ["", "# leading comment\n", "PREFIX wd: <http://www.wikidata.org/entity/>\n"]
        )
    )
    return prologue + head + mods, bad


@settings(FUZZ, max_examples=_examples(600))
@given(built_query())
def test_generated_queries_are_checked_and_only_read_queries_reach_the_endpoint(case):
    query, bad = case
    accepted = attempt(query, "generated")
    if bad:
        assert not accepted, f"a forbidden query passed: {query!r}"
    elif (
        "\\u" not in query
    ):  # every clean built query is valid SPARQL: the guard must not refuse it
        assert accepted, f"a clean read query was refused: {query!r}"


# -- 2. mutations of real queries ------------------------------------------------------------------
REAL = [
    "SELECT ?item WHERE { ?item wdt:P31 wd:Q146 } LIMIT 10",
    'SELECT ?s ?label WHERE { ?s rdfs:label ?label FILTER(LANG(?label) = "en") }',
    "ASK { wd:Q42 wdt:P26 ?x }",
    "CONSTRUCT { ?s wdt:P26 ?o } WHERE { ?s wdt:P26 ?o }",
    "DESCRIBE wd:Q42",
    "SELECT ?x (COUNT(?y) AS ?n) WHERE { ?x wdt:P40 ?y } GROUP BY ?x ORDER BY DESC(?n)",
    "SELECT * WHERE { ?a wdt:P26 ?b OPTIONAL { ?b wdt:P569 ?d } }",
    (
        "SELECT ?item ?itemLabel WHERE { ?item wdt:P31 wd:Q5 . SERVICE wikibase:label { "
        "bd:serviceParam "
        'wikibase:language "en" } }'
    ),
    "SELECT ?x WHERE { { ?x wdt:P31 wd:Q5 } UNION { ?x wdt:P31 wd:Q515 } } VALUES ?x { wd:Q42 "
    "wd:Q64 }",
    "SELECT ?x WHERE { ?x wdt:P31 wd:Q5 FILTER NOT EXISTS { ?x wdt:P570 ?d } }",
    "PREFIX ex: <http://example.org/#> SELECT ?s WHERE { ?s ex:p 'a#b' } # trailing comment",
]
SNIPPETS = [
    "SERVICE <http://evil/> { ?s ?p ?o }",
    "SERVICE",
    "service",
    "INSERT DATA { <http://a> <http://b> 1 }",
    "INSERT",
    "DELETE WHERE { ?s ?p ?o }",
    "} ; DROP ALL ; SELECT * {",
    "LOAD <http://x>",
    "CLEAR DEFAULT",
    "DROP GRAPH <http://g>",
    "CREATE GRAPH <http://g>",
    "WITH <http://g>",
    "#",
    "\n",
    "\r",
    "\\u0053",
    "\\U00000053",
    "'''",
    '"',
    "'",
    "<",
    ">",
    "{",
    "}",
    "(",
    ")",
    ".",
    ";",
    " LIMIT 999999",
    "LIMIT",
    "OFFSET 5",
    "VALUES",
    "\x00",
    "\u2028",
    "\ufeff",
    "\u00a0",
    "wikibase:label",
    "<http://wikiba.se/ontology#label>",
    "SILENT",
    "?",
    "PREFIX wikibase: <http://evil/>",
    "BASE <http://evil/>",
    "\\",
    "\\'",
    "@en",
    "^^xsd:int",
    "zz:unknown",
]


# Mutations and raw text are derived from one drawn seed (Python's random, seeded by hypothesis): a
# few dozen hypothesis draws per example would cost more than the guard itself, and the examples
# stay reproducible.
HOSTILE = (
    list("{}()<>\"'#;.,?$:@^|\\\n\r\t ")
    + ["\x00", "\x1f", "\x7f", "\u2028", "\u202e", "\ufeff", "\u00a0", "\ud800", "é", "字"]
    + [chr(c) for c in range(ord("a"), ord("z") + 1)]
    + list("SERVICEINSRTLOADUPSQ0123456789")
)


def mutate(seed: int) -> str:
    rnd = random.Random(seed)
    text = rnd.choice(REAL)
    for _ in range(rnd.randint(1, 4)):
        op = rnd.choice(("insert", "insert", "delete", "duplicate", "replace", "case"))
        i = rnd.randint(0, len(text))
        j = rnd.randint(i, min(len(text), i + 12))
        if op == "insert":
            piece = (
                rnd.choice(SNIPPETS)
                if rnd.random() < 0.8
                else "".join(rnd.choices(HOSTILE, k=rnd.randint(1, 4)))
            )
            text = text[:i] + piece + text[i:]
        elif op == "delete":
            text = text[:i] + text[j:]
        elif op == "duplicate":
            text = text[:j] + text[i:j] + text[j:]
        elif op == "replace":
            text = text[:i] + rnd.choice(HOSTILE) + text[i + 1 :]
        else:
            text = text[:i] + text[i:j].swapcase() + text[j:]
    return text


def soup(seed: int) -> str:
    """Random text from hostile characters, SPARQL keywords and the snippets above."""
    rnd = random.Random(seed)
    parts = [
        *SNIPPETS,
        "SELECT",
        "ASK",
        "CONSTRUCT",
        "DESCRIBE",
        "*",
        "WHERE",
        "?s",
        " ",
        "{ ?s ?p ?o }",
    ]
    return "".join(
        rnd.choice(parts) if rnd.random() < 0.6 else rnd.choice(HOSTILE)
        for _ in range(rnd.randint(0, 25))
    )


SEEDS = st.integers(0, 2**63 - 1)


@settings(FUZZ, max_examples=_examples(2500))
@given(SEEDS.map(mutate))
def test_mutations_of_real_queries_never_get_anything_but_a_read_query_through(query):
    attempt(query, "mutated")


# -- 3. raw text -----------------------------------------------------------------------------------
@settings(FUZZ, max_examples=_examples(7000))
@given(st.one_of(st.text(max_size=80), SEEDS.map(soup), SEEDS.map(soup)))
def test_raw_text_is_refused_or_checked(query):
    attempt(query, "raw")


# -- 4. the hand list ------------------------------------------------------------------------------
HAND_REFUSED = [
    ("SELECT * { ?s ?p ?o { SELECT * { SERVICE <http://evil/> { ?a ?b ?c } } } }", "SERVICE"),
    (
        "SELECT * { OPTIONAL { ?s ?p ?o { SELECT ?s { SERVICE <http://evil/> { ?s ?p ?o } } } } }",
        "SERVICE",
    ),
    ("SELECT * { { ?s ?p ?o } UNION { SERVICE <http://evil/> { ?s ?p ?o } } }", "SERVICE"),
    ("SELECT * { ?s ?p ?o FILTER EXISTS { SERVICE <http://evil/> { ?s ?p ?o } } }", "SERVICE"),
    ("SELECT * { ?s ?p ?o FILTER NOT EXISTS { SERVICE <http://evil/> { ?s ?p ?o } } }", "SERVICE"),
    ("SELECT * { BIND(EXISTS { SERVICE <http://evil/> { ?s ?p ?o } } AS ?b) }", "SERVICE"),
    ("SELECT * { MINUS { SERVICE SILENT <http://evil/> { ?s ?p ?o } } }", "SERVICE"),
    ("SELECT * { SERVICE ?where { ?s ?p ?o } }", "SERVICE"),
    (
        "PREFIX wikibase: <http://evil.example/> SELECT * { SERVICE wikibase:label { ?s ?p ?o } }",
        "SERVICE",
    ),
    ("BASE <http://wikiba.se/ontology#> SELECT * { SERVICE <label> { ?s ?p ?o } }", "SERVICE"),
    (
        "SELECT * { { SELECT * { ?s ?p ?o } } INSERT DATA { <http://a> <http://b> <http://c> } }",
        "INSERT",
    ),
    ("SELECT * { { SELECT * WHERE { INSERT { ?s ?p ?o } WHERE { ?s ?p ?o } } } }", "INSERT"),
    ("SELECT * { ?s ?p ?o } # comment\rSERVICE <http://evil/> { }", "SERVICE"),
    # a comment runs to \n or \r only: the rest is comment, dropped, and the query is left
    # unfinished
    ("SELECT * { ?s ?p ?o # comment\u2028 SERVICE <http://evil/> { ?s ?p ?o } }", "not a valid"),
    ("SELECT * { ?s ?p ?o . \\u0053ERVICE <http://evil/> { ?s ?p ?o } }", "\\u"),
    ("SELECT * { ?s ?p '\\U00000053' }", "\\u"),
    ("SELECT * { ?s ?p ?o } ; INSERT DATA { <http://a> <http://b> <http://c> }", "INSERT"),
    ("LOAD <http://evil.example/data.ttl>", "LOAD"),
    ("LOAD <http://evil.example/data.ttl> INTO GRAPH <http://g>", "LOAD"),
    ("CLEAR ALL", "CLEAR"),
    ("CLEAR GRAPH <http://g>", "CLEAR"),
    ("DROP ALL", "DROP"),
    ("DROP SILENT GRAPH <http://g>", "DROP"),
    ("CREATE GRAPH <http://g>", "CREATE"),
    ("DELETE WHERE { ?s ?p ?o }", "DELETE"),
    ("WITH <http://g> DELETE { ?s ?p ?o } WHERE { ?s ?p ?o }", "DELETE"),
    ("COPY DEFAULT TO <http://g>", "COPY"),
    ("ADD <http://a> TO <http://b>", "ADD"),
    ("MOVE <http://a> TO <http://b>", "MOVE"),
    ("SELECT * { ?s ?p ?o }\x00", "control"),
    ("SELECT * { ?s\ufeff?p ?o }", "invisible"),
    ("SELECT * { ?s ?p zz:o }", "unknown prefix"),
    ("", "empty"),
    ("   \n\t ", "empty"),
    ("SELECT * { ?s ?p ?o", "not a valid"),
    ("SELECT * { ?s ?p '" + "x" * 1_000_000 + "' }", "characters"),
    ("SELECT * WHERE { " + "?s <http://example.org/p> ?o . " * 3500 + "}", "characters"),
    ("SELECT * { " + "{ " * 400 + "?s ?p ?o" + " }" * 400 + " }", "nested"),
]


@pytest.mark.parametrize(
    ("query", "why"), HAND_REFUSED, ids=[f"hand{i}" for i in range(len(HAND_REFUSED))]
)
def test_the_hand_list_is_refused_with_one_line_and_nothing_sent(query, why):
    assert not attempt(query, "hand")
    with pytest.raises(InvalidInput) as e:
        LOOP.run_until_complete(KG.sparql_query(query))
    assert why.lower() in str(e.value).lower(), str(e.value)


HAND_ACCEPTED = [
    (
        "SELECT ?item ?itemLabel WHERE { ?item wdt:P31 wd:Q5 . SERVICE wikibase:label { "
        "bd:serviceParam "
        'wikibase:language "[AUTO_LANGUAGE],en" . } }'
    ),
    "SELECT * { ?s ?p 'SERVICE <http://evil/> { } INSERT DATA {}' }",
    "# INSERT DATA { <http://a> <http://b> <http://c> }\nSELECT * { ?s ?p ?o }",
    "PREFIX ex: <http://example.org/#x> SELECT * { ?s ex:p '#not a comment' } # SERVICE <http://evil/>",
    "SELECT * { ?s ?p ?o } LIMIT 100000000",
    "SELECT ?s { ?s ?p ?o } ORDER BY ?s VALUES ?s { wd:Q42 }",
    "SELECT * { ?s ?p '" + "x" * 9000 + "' }",
]


@pytest.mark.parametrize("query", HAND_ACCEPTED, ids=[f"ok{i}" for i in range(len(HAND_ACCEPTED))])
def test_read_queries_with_tricky_text_pass_and_what_is_sent_is_bounded(query):
    assert attempt(query, "hand")


def test_the_endpoint_keeps_serving_after_all_of_it_and_enough_examples_ran():
    before = len(SENT)
    result = LOOP.run_until_complete(KG.sparql_query("SELECT ?s WHERE { ?s ?p ?o }"))
    assert len(SENT) == before + 1 and result.rows and result.limit == DEFAULT_MAX_ROWS + 1
    total = sum(COUNTS.values())
    print(f"\nfuzz examples run: {COUNTS} total {total}")
    if (
        COUNTS["generated"]
        and COUNTS["mutated"]
        and COUNTS["raw"]
        and "GUARD_FUZZ_SCALE" not in os.environ
    ):
        assert total >= 10_000, COUNTS  # the whole module ran at full size
