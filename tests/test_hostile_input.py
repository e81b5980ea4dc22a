"""Input from outside that must not exhaust or confuse the server (issue #25): a config path that is
a device or a huge file, a --kg path that is a directory, a NaN handle lifetime, the Bearer scheme
in any case."""

from __future__ import annotations

import pytest

from tot_mcp.strategies.settings import MAX_CONFIG_BYTES, load_config
from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.errors import InvalidInput
from tot_mcp.kg_adapters.spec import make_spec
from tot_mcp.server.auth import BearerTokenMiddleware
from tot_mcp.server.cli import main


@pytest.mark.parametrize("path", ["/dev/zero", "/dev/null-dir-that-is-a-dir"])
def test_a_config_that_is_not_a_regular_file_is_refused_without_reading_it(path, tmp_path):
    target = path if path == "/dev/zero" else str(tmp_path)
    with pytest.raises(InvalidInput, match="not a regular file"):
        load_config(target)


def test_a_huge_config_is_refused_after_reading_its_cap(tmp_path):
    big = tmp_path / "big.toml"
    big.write_bytes(b"# " + b"x" * (MAX_CONFIG_BYTES + 10) + b"\n")
    with pytest.raises(InvalidInput, match="larger than 1024 KiB"):
        load_config(big)


def test_a_kg_path_that_is_a_directory_says_so(tmp_path):
    with pytest.raises(InvalidInput, match="a directory .*store:PATH"):
        make_spec("x", str(tmp_path))


@pytest.mark.parametrize("name", ["legacy.txt", "legacy.txt.gz"])
def test_a_triples_file_that_is_not_utf8_names_its_line_and_exits_2(name, tmp_path, capsys):
    """A Latin-1 file (common for old exports) was a UnicodeDecodeError traceback from --check and
    tot-search."""
    import gzip

    data = b"A|directed_by|B\n\nCaf\xe9 Noir|directed_by|C\n"
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    assert main(["--kg", f"x={path}", "--check"]) == 2
    assert f"{path}:3: not UTF-8 (save the file as UTF-8)" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0"])
def test_handle_ttl_must_be_a_finite_positive_number(value, capsys):
    assert main(["--handle-ttl", value, "--check"]) == 2
    assert "--handle-ttl must be a number of seconds > 0" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["inf", "nan", "-1.0", "0.0"])
def test_handle_ttl_in_the_config_must_be_finite_and_positive(value, tmp_path, capsys):
    """#36: ``[server] handle_ttl = inf`` was accepted (handles that never expire)."""
    config = tmp_path / "tot.toml"
    config.write_text(
        f'[kgs]\nmovies = "embedded"\n[server]\nhandle_ttl = {value}\n', encoding="utf-8"
    )
    assert main(["--config", str(config), "--check"]) == 2
    assert "handle_ttl" in capsys.readouterr().err


async def test_the_bearer_scheme_is_case_insensitive_and_the_token_is_not():
    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    guard = BearerTokenMiddleware(app, "s3cret")

    async def status(header: bytes | None) -> int:
        sent = []

        async def send(msg):
            sent.append(msg)

        headers = [(b"authorization", header)] if header is not None else []
        await guard({"type": "http", "headers": headers}, None, send)
        return sent[0]["status"]

    assert await status(b"Bearer s3cret") == 200
    assert await status(b"bearer s3cret") == 200 and await status(b"BEARER  s3cret") == 200
    assert await status(b"Bearer S3CRET") == 401 and await status(b"Basic s3cret") == 401
    assert await status(None) == 401 and await status(b"s3cret") == 401


def test_load_into_a_file_is_a_usage_error(tmp_path, capsys):
    from tot_mcp.kg_adapters.bulk_load import main as load_main

    data, target = tmp_path / "x.txt", tmp_path / "not-a-dir"
    data.write_text("a|r|b\n", encoding="utf-8")
    target.write_text("", encoding="utf-8")
    with pytest.raises(SystemExit) as exit_:
        load_main([str(data), "--into", str(target)])
    assert exit_.value.code == 2 and "exists and is not a directory" in capsys.readouterr().err


def test_a_query_with_too_many_tokens_is_refused_before_it_is_parsed():
    """A 10,000-character COALESCE of 4,920 arguments took 8 s to check: now one line, at once."""
    import time

    from tot_mcp.kg_adapters.sparql.guard import MAX_TOKENS, GuardPolicy, QueryRefused, check_query

    q = "SELECT * WHERE { ?s ?p ?o FILTER(COALESCE(" + ",".join(["1"] * 4920) + ")) }"
    check_query(
        "SELECT * WHERE { ?s ?p ?o }", GuardPolicy(max_chars=10_000)
    )  # the parser's first use, untimed
    started = time.perf_counter()
    with pytest.raises(QueryRefused, match=f"tokens; at most {MAX_TOKENS:,}"):
        check_query(q, GuardPolicy(max_chars=10_000))
    # milliseconds alone; the bound only has to tell "refused before parsing" from the 8 s parse on
    # a busy 2-core CI
    assert time.perf_counter() - started < 2.0


async def test_the_guard_checks_a_long_query_off_the_event_loop():
    """Other calls go on while a query near the token cap is being checked (the parse runs in a
    worker thread)."""
    import asyncio
    import time

    from tot_mcp.kg_adapters.sparql.guard import GuardPolicy, check_query_async

    q = "SELECT * WHERE { ?s ?p ?o FILTER(COALESCE(" + ",".join(["1"] * 480) + ")) }"
    ticks: list[float] = []

    async def ticker() -> None:
        while True:
            ticks.append(time.perf_counter())
            await asyncio.sleep(0.005)

    task = asyncio.create_task(ticker())
    started = time.perf_counter()
    checked = await check_query_async(q, GuardPolicy(max_chars=10_000))
    took = time.perf_counter() - started
    task.cancel()
    assert checked.form == "SELECT"
    gaps = [b - a for a, b in zip(ticks, ticks[1:])]
    assert took > 0.1 and max(gaps) < max(0.1, took / 3), (took, max(gaps))


async def test_queries_checked_at_the_same_time_are_each_judged_on_their_own():
    """The parser is not thread-safe: checks in worker threads at once must not refuse valid
    queries."""
    import asyncio

    from tot_mcp.kg_adapters.sparql.guard import GuardPolicy, check_query_async

    queries = [f"SELECT ?s WHERE {{ ?s ?p ?o }} LIMIT {n}" for n in range(1, 13)]
    checked = await asyncio.gather(
        *(check_query_async(q, GuardPolicy(max_rows=100)) for q in queries)
    )
    assert [c.form for c in checked] == ["SELECT"] * 12


async def test_tree_of_traversals_refuses_a_huge_query_before_loading_any_model(tmp_path):
    """A 10,000-character question was checked only after the embedder loaded (15 s, +366 MB)."""
    from retrieval_fixtures import run_strategy

    from tot_mcp.kg_adapters.files import open_file_kg
    from tot_mcp.strategies.services import Services

    data = tmp_path / "kb.txt"
    data.write_text("Heat|directed_by|Michael Mann\n", encoding="utf-8")
    kg = Graph(open_file_kg("m", data))

    def no_model():
        raise AssertionError("the embedder was loaded for a query that is refused anyway")

    with pytest.raises(InvalidInput, match="query is 10000 characters; at most 2000"):
        await run_strategy("tot", Services([kg], embedder_factory=no_model), kg, "x" * 10_000)
