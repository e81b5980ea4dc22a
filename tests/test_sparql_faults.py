"""How the SPARQL backend behaves when the endpoint misbehaves — against a scripted loopback HTTP
server.

Every error names the endpoint and what happened; waits are kept tiny through the options.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import re
import time

import pytest
from sparql_fault_server import FaultServer, Reply

from tot_mcp.kg_adapters.errors import (
    BackendError,
    BackendTimeout,
    CircuitOpen,
    InvalidInput,
    RateLimited,
)
from tot_mcp.kg_adapters.sparql import EndpointRegistry, open_sparql_kg


@pytest.fixture
def server():
    with FaultServer() as s:
        yield s


def make_kg(server, registry=None, **opts):
    opts = {
        "retries": 2,
        "backoff": 0.01,
        "timeout": 2.0,
        "label_search": "exact",
        "search_api": "none",
        **opts,
    }
    return open_sparql_kg(
        "wd", "wikidata", server.url, registry=registry or EndpointRegistry(), **opts
    )


def generic_kg(server):
    return open_sparql_kg(
        "g", "sparql", server.url, registry=EndpointRegistry(), retries=0, backoff=0.01, timeout=2.0
    )


async def one_request(kg):
    """search_entities with label_search='exact' is exactly one SPARQL request."""
    return await kg.search_entities("Douglas Adams")


# -- etiquette -------------------------------------------------------------------------------------
async def test_requests_carry_a_user_agent_with_project_version_and_contact(server):
    await one_request(make_kg(server, user_agent_contact="ops@example.org"))
    ua = server.seen[0].headers["User-Agent"]
    assert re.match(r"^tot-mcp/\S+ \(ops@example\.org\) python-httpx/\S+$", ua), ua
    assert "sparql-results+json" in server.seen[0].headers["Accept"]


async def test_a_long_query_is_the_post_body_and_an_endpoint_refusing_that_gets_forms_from_then_on(
    server,
):
    """SPARQL 1.1 Protocol: a query POSTed directly needs no percent-encoding (0.5 ms for a 7 KB
    query). An endpoint that answers 415 (or 400) to that, where the same query as a form works, is
    sent forms after it. Wikidata keeps the form WDQS documents (its traffic is small next to its
    latency)."""
    endpoint = generic_kg(server).sparql
    query = (
        "SELECT ?s WHERE { VALUES ?s { " + " ".join(f"<http://x/{i}>" for i in range(300)) + " } }"
    )

    async def ask() -> list[str]:
        before = len(server.seen)
        await endpoint.request("POST", {"query": query}, form=True)
        assert all(s.params["query"] == query for s in server.seen[before:])
        return [s.headers["Content-Type"].split(";")[0] for s in server.seen[before:]]

    assert await ask() == ["application/sparql-query"]
    server.script = [Reply(status=415, body=b"Unsupported Media Type")]
    assert await ask() == [
        "application/sparql-query",
        "application/x-www-form-urlencoded",
    ]  # answered, no error
    assert await ask() == ["application/x-www-form-urlencoded"]  # no second try of the body
    endpoint = make_kg(server, registry=EndpointRegistry(), retries=0).sparql  # Wikidata
    assert await ask() == ["application/x-www-form-urlencoded"]


async def test_a_bad_query_refused_either_way_keeps_the_direct_post(server):
    endpoint = generic_kg(server).sparql
    query = "SELECT ?s WHERE { " + "?s ?p ?o . " * 200 + "BAD }"
    server.script = [Reply(status=400, body=b"parse error"), Reply(status=400, body=b"parse error")]
    with pytest.raises(BackendError, match="HTTP 400"):
        await endpoint.request("POST", {"query": query}, form=True)
    await endpoint.request("POST", {"query": query}, form=True)
    assert server.seen[-1].headers["Content-Type"].startswith("application/sparql-query")


async def test_public_wdqs_defaults_to_one_request_at_a_time_and_rejects_a_timeout_over_its_cap():
    kg = open_sparql_kg("wd", "wikidata", None)
    assert kg.sparql.policy.max_concurrent == 1 and kg.sparql.policy.timeout == 30
    assert (
        kg.search_api is not None
        and kg.search_api.guard.url == "https://www.wikidata.org/w/api.php"
    )
    with pytest.raises(InvalidInput, match="60 s"):
        open_sparql_kg("wd", "wikidata", None, timeout=60)


async def test_concurrent_calls_share_the_endpoint_limit(server):
    server.default = Reply(delay=0.1)
    kg = make_kg(server, max_concurrent=1)
    await asyncio.gather(*(one_request(kg) for _ in range(4)))
    assert server.max_in_flight == 1
    server.max_in_flight = 0
    kg = make_kg(server, max_concurrent=3)
    await asyncio.gather(*(one_request(kg) for _ in range(4)))
    assert server.max_in_flight >= 2  # the limit is what serialised the first run


async def test_more_than_50_ids_are_split_into_batches_of_at_most_50(server):
    ids = [f"wd:Q{i}" for i in range(1, 121)]
    p31 = [
        {
            "e": {"type": "uri", "value": f"http://www.wikidata.org/entity/{i[3:]}"},
            "r": {"type": "uri", "value": "http://www.wikidata.org/entity/P31"},
            "dir": {"type": "literal", "value": "f"},
            "n": {
                "type": "literal",
                "value": "1",
                "datatype": "http://www.w3.org/2001/XMLSchema#integer",
            },
        }
        for i in ids
    ]
    server.default = Reply(
        body=json.dumps(
            {"head": {"vars": ["e", "r", "dir", "n"]}, "results": {"bindings": p31}}
        ).encode()
    )
    kg = make_kg(server, registry=EndpointRegistry())
    rels = await kg.relations(ids)
    assert {i: [(r.id, r.count) for r in rl.relations] for i, rl in rels.items()} == {
        i: [("wd:P31", 1)] for i in ids
    }
    per_request = [set(re.findall(r"wd:Q\d+", s.params["query"])) for s in server.seen]
    assert sorted(len(x) for x in per_request) == [20, 50, 50]  # the batches are read at once
    assert set().union(*per_request) == set(ids)


async def test_long_queries_are_posted_as_a_form(server):
    kg = make_kg(server)
    await kg.initialize(
        "which English rock band from Liverpool had a drummer born in 1940 called Ringo Starr"
    )
    assert server.seen[0].method == "POST" and "VALUES ?ml" in server.seen[0].params["query"]
    await one_request(kg)
    assert server.seen[-1].method == "GET"


# -- 429 -------------------------------------------------------------------------------------------
async def test_429_retry_after_in_seconds_is_honoured(server):
    server.script = [Reply(429, headers={"Retry-After": "0.3"})]
    assert await one_request(make_kg(server)) == []
    first, second = server.seen
    assert second.at - first.at >= 0.28


async def test_429_retry_after_as_an_http_date_is_honoured(server):
    when = email.utils.formatdate(time.time() + 1, usegmt=True)
    server.script = [Reply(429, headers={"Retry-After": when})]
    assert await one_request(make_kg(server)) == []
    first, second = server.seen
    assert 0.0 <= second.at - first.at <= 2.2


async def test_a_retry_after_longer_than_allowed_raises_rate_limited_at_once(server):
    server.script = [Reply(429, headers={"Retry-After": "3600"})]
    started = time.monotonic()
    with pytest.raises(RateLimited, match=re.escape(server.url)) as err:
        await one_request(make_kg(server, max_retry_after=5))
    assert (
        err.value.retry_after == 3600 and time.monotonic() - started < 1 and len(server.seen) == 1
    )


async def test_persistent_429_raises_rate_limited_after_the_retries(server):
    server.default = Reply(429, headers={"Retry-After": "0.05"})
    with pytest.raises(RateLimited, match="still rate limited .* after 3 attempts") as err:
        await one_request(make_kg(server))
    assert len(server.seen) == 3 and err.value.retry_after == pytest.approx(0.05)


async def test_a_429_makes_every_caller_of_that_endpoint_wait(server):
    shared = EndpointRegistry()
    server.script = [Reply(429, headers={"Retry-After": "0.4"})]
    with pytest.raises(RateLimited):
        await one_request(make_kg(server, registry=shared, retries=0))
    other_kg = make_kg(server, registry=shared)  # another KG on the same endpoint
    await one_request(other_kg)
    assert server.seen[1].at - server.seen[0].at >= 0.37


# -- server errors, timeouts, broken answers -------------------------------------------------------
async def test_5xx_is_retried_with_backoff_then_succeeds(server):
    server.script = [Reply(500, body=b"oops"), Reply(503, body=b"busy")]
    kg = make_kg(server, backoff=0.05)
    assert await one_request(kg) == []
    t = [s.at for s in server.seen]
    assert len(t) == 3 and t[1] - t[0] >= 0.045 and t[2] - t[1] >= 0.095


async def test_5xx_that_persists_raises_backend_error_naming_the_endpoint(server):
    """The endpoint's own error page (a stack trace, a server path) stays in the server's log, not
    the message."""
    server.default = Reply(502, body=b"<html>Bad Gateway at /srv/blazegraph/internal.jsp</html>")
    with pytest.raises(
        BackendError,
        match=re.escape(server.url) + r".*HTTP 502 \(the endpoint failed\).*after 3 "
        r"attempts",
    ) as failed:
        await one_request(make_kg(server))
    assert "/srv/blazegraph" not in str(failed.value)


async def test_a_query_the_engine_fails_on_says_why_once_and_leaves_the_breaker_closed(server):
    """Engines answer 500 for a query they cannot run (oxigraph: "The custom function … is not
    supported"): a caller's query is sent once, not three times; the tool error quotes the engine
    and says to change the query or retry; and bad queries do not open the breaker for the traversal
    tools."""
    from tot_mcp.kg_adapters.errors import EndpointFailed
    from tot_mcp.server.app import describe_kg_error

    server.default = Reply(500, body=b"The custom function <http://x/f> is not supported\n")
    kg = make_kg(server, breaker_failures=2, breaker_cooldown=30)
    for _ in range(3):
        with pytest.raises(EndpointFailed) as failed:
            await kg.sparql_query("SELECT ?x WHERE { BIND(<http://x/f>(1) AS ?x) }")
    assert len(server.seen) == 3
    assert describe_kg_error(failed.value) == (
        "backend error (if the endpoint's message names the request, change it; else retry later): "
        f"{server.url}: HTTP 500 (the endpoint failed): the engine does not support part of the "
        "query (near 'http://x/f') (not retried)"
    )
    server.default = Reply()
    assert await one_request(kg) == []  # the circuit stayed closed


async def test_a_read_the_engine_keeps_failing_is_retried_and_its_text_stays_in_the_log(
    server, caplog
):
    """A tool's own query failing says nothing the client can act on: the status reaches it, the
    body the log."""
    server.default = Reply(
        500,
        body=b"java.lang.IllegalStateException: index corrupt\n\tat x.Store.read(Store.java:42)",
    )
    with caplog.at_level("INFO", logger="tot_mcp.sparql"):
        gave_up = r"HTTP 500 \(the endpoint failed\) \(gave up after 3 attempts\)$"
        with pytest.raises(BackendError, match=gave_up) as failed:
            await one_request(make_kg(server))
    assert "IllegalState" not in str(failed.value) and len(server.seen) == 3
    assert "index corrupt" in caplog.text


SECRET_BODIES = [
    line.encode() + b"\n"
    for line in (
        "db password=hunter2 at /srv/app/db.py",
        # read as an engine's message, but carrying the server's insides in shapes no block-list
        # covers (two outside re-runs of #36): nothing of the line is copied, only its kind,
        # position and the query's own text
        "Unexpected error while parsing the query: upstream postgres://admin:hunter2@10.1.2.3:5432/prod",
        "Invalid query: upstream http://hunter2.corp.local:8890/sparql unreachable",
        "Query failed: config /usr/local/hunter2/config.yaml line 3",
        "Unexpected error in query: DB_PASS: hunter2 (env)",
        "Invalid query: login admin:hunter2@dbhost:5432",
        "Invalid query: upstream [fd00::1]:8890 hunter2 refused",
        "Invalid query: user 'admin' identified by 'hunter2'",
        "Invalid query: pаsswоrd hunter2",  # Cyrillic a and o
        "Invalid query: internal host hunter2-7f9c.svc.cluster.local",
        "Invalid query: -----BEGIN RSA PRIVATE KEY----- hunter2",
    )
]


@pytest.mark.parametrize("body", SECRET_BODIES)
@pytest.mark.parametrize("status", [400, 500])
async def test_no_secret_from_an_endpoints_error_body_reaches_the_client(server, status, body):
    """#36: a 5xx body's first line and a 4xx snippet reached the client, through the tools and
    sparql_query."""
    from tot_mcp.server.app import describe_kg_error

    server.default = Reply(status, body=body)
    kg = make_kg(server, retries=0)
    for call in (one_request(kg), kg.sparql_query("SELECT ?x WHERE { ?x ?p ?o }")):
        with pytest.raises(BackendError) as failed:
            await call
        text = describe_kg_error(failed.value)
        assert "hunter2" not in text and "/srv" not in text and f"HTTP {status}" in text, text


async def test_a_parse_error_of_the_callers_own_query_is_quoted_to_that_caller_only(server):
    """The engine's first line helps the caller fix a query it wrote; a tool's query is ours, so it
    is not."""
    server.default = Reply(400, body=b"Parse error: unexpected token '}' at line 1, column 27\n")
    kg = make_kg(server, retries=0)
    quoted = (
        r"HTTP 400 \(the endpoint refused the request\): the engine could not parse the query "
        r"\(line 1, column 27; near '}'\)"
    )
    with pytest.raises(BackendError, match=quoted):
        await kg.sparql_query("SELECT ?x WHERE { ?x ?p ?o }")
    with pytest.raises(BackendError) as tool:
        await one_request(kg)
    assert str(tool.value).endswith("HTTP 400 (the endpoint refused the request)")


async def test_an_engines_quote_is_repeated_only_when_it_is_a_whole_token_of_the_query(server):
    """A third outside re-run of #36 read a 4-digit secret from an engine's line by sending every
    4-digit string in one literal (a substring test said which one the engine quoted): only whole
    tokens are repeated."""
    server.default = Reply(400, body=b"Parse error near '4172' at line 1\n")
    kg = make_kg(server, retries=0)
    with pytest.raises(BackendError) as guessed:
        await kg.sparql_query('SELECT ?x WHERE { ?x ?p "0000417299990000" }')
    assert "4172" not in str(guessed.value) and "line 1" in str(guessed.value)
    server.default = Reply(
        400, body=b"Parse error near <http://e/nope> at line 1\n"
    )  # what was sent
    with pytest.raises(BackendError, match="near 'http://e/nope'"):
        await kg.sparql_query("PREFIX ex: <http://e/> SELECT ?x WHERE { ?x ?p ex:nope }")


async def test_a_4xx_is_a_refusal_the_caller_should_not_retry(server):
    from tot_mcp.kg_adapters.errors import BackendRefused
    from tot_mcp.server.app import describe_kg_error

    server.default = Reply(400, body=b"Parse error: unexpected token")
    with pytest.raises(BackendRefused) as refused:
        await one_request(make_kg(server))
    assert len(server.seen) == 1  # not retried
    assert describe_kg_error(refused.value).startswith(
        "backend refused (change the request; retrying will not help)"
    )


async def test_a_slow_endpoint_times_out_within_the_configured_bound(server):
    """By default a call's deadline is one timeout: a stalled endpoint is not asked again (#36: 3 ×
    30 s)."""
    server.default = Reply(delay=1.5)
    started = time.monotonic()
    with pytest.raises(
        BackendTimeout,
        match=re.escape(server.url) + r": no answer within 0.2 s "
        r"\(gave up after 1 attempt; the call's deadline of 0.2 s passed\)",
    ):
        await one_request(make_kg(server, timeout=0.2, retries=1))
    assert time.monotonic() - started < 1.0 and len(server.seen) == 1


async def test_every_retry_fits_in_the_calls_deadline(server):
    """retries × timeout may exceed the deadline; the call still ends by it (attempts, back-off and
    all)."""
    server.default = Reply(delay=1.5)
    started = time.monotonic()
    deadline = r"gave up after [23] attempts; the call's deadline of 0.5 s passed"
    with pytest.raises(BackendTimeout, match=deadline):
        await one_request(make_kg(server, timeout=0.2, retries=5, deadline=0.5))
    assert time.monotonic() - started < 0.9 and len(server.seen) in (2, 3)


async def test_a_call_queued_behind_a_stalled_one_ends_by_its_deadline_and_leaves_the_breaker(
    server,
):
    """Waiting for a slot counts toward the deadline; a call that never got one says the endpoint
    was busy and does not count as the endpoint failing."""
    server.default = Reply(hold=True)
    kg = make_kg(server, timeout=0.4, retries=0, max_concurrent=1, breaker_failures=1)
    started = time.monotonic()
    first, queued = await asyncio.gather(one_request(kg), one_request(kg), return_exceptions=True)
    assert time.monotonic() - started < 0.9
    assert isinstance(first, BackendTimeout) and "no answer within 0.4 s" in str(first)
    assert isinstance(queued, BackendTimeout)
    assert "no free slot at the endpoint within 0.4 s" in str(queued)
    assert len(server.seen) == 1


async def test_the_endpoints_own_query_timeout_is_not_retried(server):
    server.default = Reply(500, body=b"java.util.concurrent.TimeoutException at com.bigdata...")
    with pytest.raises(BackendTimeout, match="exceeded the endpoint's own time limit"):
        await one_request(make_kg(server))
    assert len(server.seen) == 1


async def test_truncated_and_broken_json_are_retried(server):
    good = b'{"head": {"vars": []}, "results": {"bindings": []}}'
    server.script = [Reply(body=good, cut=20), Reply(body=b'{"head": {"vars": [')]
    assert await one_request(make_kg(server)) == []
    assert len(server.seen) == 3


async def test_json_that_stays_broken_raises_backend_error(server):
    server.default = Reply(body=b'{"results": {"bindings": [{"e": ')
    with pytest.raises(BackendError, match="malformed or truncated JSON"):
        await one_request(make_kg(server))


async def test_json_of_the_wrong_shape_is_a_clear_error(server):
    server.default = Reply(body=b'{"results": {"bindings": [{"e": {"value": 3}}]}}')
    with pytest.raises(BackendError, match="not SPARQL SELECT results"):
        await one_request(make_kg(server))


async def test_a_rejected_query_is_not_retried(server):
    server.default = Reply(400, body=b"Parse error: unexpected token")
    with pytest.raises(BackendError, match=r"HTTP 400 \(the endpoint refused the request\)"):
        await one_request(make_kg(server))
    assert len(server.seen) == 1


# -- circuit breaker -------------------------------------------------------------------------------
async def test_the_breaker_opens_after_consecutive_failures_and_a_probe_closes_it(server):
    server.default = Reply(500)
    kg = make_kg(server, retries=0, breaker_failures=2, breaker_cooldown=0.3)
    for _ in range(2):
        with pytest.raises(BackendError, match="HTTP 500"):
            await one_request(kg)
    with pytest.raises(CircuitOpen, match=re.escape(server.url) + ".*2 consecutive failures"):
        await one_request(kg)
    assert len(server.seen) == 2  # failed fast, the endpoint was left alone
    await asyncio.sleep(0.35)
    server.default = Reply(200)
    assert await one_request(kg) == []  # the half-open probe
    assert await one_request(kg) == []  # closed again
    assert len(server.seen) == 4


async def test_a_failed_probe_opens_the_breaker_again(server):
    server.default = Reply(500)
    kg = make_kg(server, retries=0, breaker_failures=1, breaker_cooldown=0.2)
    with pytest.raises(BackendError):
        await one_request(kg)
    await asyncio.sleep(0.25)
    with pytest.raises(BackendError, match="HTTP 500"):
        await one_request(kg)  # the probe, which fails
    with pytest.raises(CircuitOpen):
        await one_request(kg)
    assert len(server.seen) == 2


# -- wbsearchentities ------------------------------------------------------------------------------
async def test_search_uses_wbsearchentities_when_configured(server):
    api = {
        "searchinfo": {"search": "paris"},
        "search": [
            {
                "id": "Q90",
                "label": "Paris",
                "description": "capital of France",
                "match": {"type": "label", "language": "en", "text": "Paris"},
            },
            {"id": "P999", "label": "paris property"},
            {"id": "Q167646", "label": "Paris", "description": "son of Priam, king of Troy"},
            {
                "id": "Q1234",
                "label": "Paris Hilton",
                "description": "American media personality",
                "match": {"type": "alias", "language": "en", "text": "Paris H."},
            },
        ],
        "success": 1,
    }
    server.default = Reply(body=json.dumps(api).encode())
    kg = open_sparql_kg(
        "wd", "wikidata", server.url, registry=EndpointRegistry(), search_api=server.url
    )
    hits = await kg.search_entities("paris", limit=5)
    assert [(h.entity.id, h.match) for h in hits] == [
        ("wd:Q90", "casefold"),
        ("wd:Q167646", "casefold"),
        ("wd:Q1234", "api"),
    ]
    assert hits[0].entity.description == "capital of France"
    p = server.seen[0].params
    assert (p["action"], p["search"], p["language"], p["type"], p["format"]) == (
        "wbsearchentities",
        "paris",
        "en",
        "item",
        "json",
    )
    linked = await kg.initialize("what is the population of [Paris]?")
    assert linked[0].entity.id == "wd:Q90" and linked[0].mention == "Paris"


async def test_a_wbsearchentities_error_is_a_backend_error(server):
    server.default = Reply(
        body=b'{"error": {"code": "badvalue", "info": "Unrecognized value for parameter"}}'
    )
    kg = open_sparql_kg(
        "wd", "wikidata", server.url, registry=EndpointRegistry(), search_api=server.url
    )
    with pytest.raises(
        BackendError, match="wbsearchentities refused the search: Unrecognized value"
    ):
        await kg.search_entities("paris")


# -- answers that would send the server elsewhere or fill its memory (issue #25) -------------------
async def test_a_redirect_is_not_followed_and_its_target_stays_in_the_log(server):
    with FaultServer() as elsewhere:
        server.script = [
            Reply(status=302, headers={"Location": f"{elsewhere.url}?stolen=1"}, body=b"")
        ]
        with pytest.raises(
            BackendError, match=r"redirects \(HTTP 302; the server log says where\).*not followed"
        ) as refused:
            await one_request(make_kg(server))
        assert "stolen" not in str(
            refused.value
        )  # a Location may carry a server's secrets: logged only
        assert elsewhere.seen == [] and len(server.seen) == 1  # refused at once, never retried


async def test_an_answer_larger_than_the_cap_fails_instead_of_being_held(server, monkeypatch):
    from tot_mcp.kg_adapters.sparql import endpoint

    monkeypatch.setattr(endpoint, "MAX_JSON_BYTES", 10_000)
    big = {
        "head": {"vars": ["e"]},
        "results": {"bindings": [{"e": {"type": "literal", "value": "x" * 100}}] * 500},
    }
    server.default = Reply(body=json.dumps(big).encode())
    with pytest.raises(BackendError, match="larger than 10,000 bytes"):
        await one_request(make_kg(server, retries=0))


# -- fairness: callers' own queries against the traversal tools ------------------------------------
async def test_slow_caller_queries_cannot_take_the_slots_the_tools_need(server):
    """Four slow sparql_query calls on a one-slot endpoint: a tool's lookup still goes out at once,
    in its own lane, instead of queueing behind them (issue #25 item 2)."""
    kg = make_kg(server, max_concurrent=1, timeout=5.0)
    server.default = Reply(delay=0.6)
    slow = [
        asyncio.create_task(kg.sparql_query("SELECT ?s WHERE { ?s ?p ?o }", timeout=5.0))
        for _ in range(4)
    ]
    await asyncio.sleep(
        0.1
    )  # the first caller query is at the endpoint, three wait for the caller lane's slot
    server.default = Reply()
    started = time.monotonic()
    await one_request(kg)
    assert time.monotonic() - started < 0.5  # not behind 4 × 0.6 s
    await asyncio.gather(*slow)


async def test_caller_queries_that_time_out_do_not_open_the_breaker_for_the_tools(server):
    server.default = Reply(delay=0.5)
    kg = make_kg(server, retries=0, breaker_failures=2, breaker_cooldown=30)
    for _ in range(3):
        with pytest.raises(BackendTimeout):
            await kg.sparql_query("SELECT ?s WHERE { ?s ?p ?o }", timeout=0.1)
    server.default = Reply()
    assert (
        await one_request(kg) == []
    )  # the circuit stayed closed: a heavy query is not a sick endpoint


async def test_json_nested_too_deeply_is_that_endpoints_error_only(server):
    """#36 item 7: 200,000 nested arrays raised RecursionError, which no caller treats as a KG's
    error."""
    from tot_mcp.kg_adapters.errors import BackendRefused

    server.default = Reply(
        200,
        body=b"[" * 200_000 + b"]" * 200_000,
        headers={"content-type": "application/sparql-results+json"},
    )
    with pytest.raises(BackendRefused, match="nested too deeply"):
        await one_request(make_kg(server))
    assert len(server.seen) == 1  # not retried: the same answer would come again
