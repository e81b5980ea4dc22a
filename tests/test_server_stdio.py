"""The real ``tot-mcp`` process over stdio, driven by the SDK's stdio client (as Claude Desktop
would)."""

from __future__ import annotations

from mcp_client import stdio_session, text_of

TOM_HANKS = "movies:E1407"


async def test_default_server_offers_tools_resource_and_prompt_and_walks_the_embedded_kg():
    updates = []

    async def on_progress(progress, total, message):
        updates.append((progress, total, message))

    async with stdio_session() as session:
        tools = {t.name for t in (await session.list_tools()).tools}
        resources = [str(r.uri) for r in (await session.list_resources()).resources]
        prompts = [p.name for p in (await session.list_prompts()).prompts]

        linked = await session.call_tool(
            "initialize", {"query": "what films did [Tom Hanks] act in"}
        )
        actor = linked.structured_content["entities"][0]["entity"]["id"]
        relations = await session.call_tool("get_relations", {"entity_ids": [actor]})
        films = await session.call_tool(
            "get_edges",
            {
                "entity_ids": [actor],
                "relation_id": "movies:starred_actors",
                "direction": "backward",
            },
        )
        await session.call_tool("list_kgs", {}, progress_callback=on_progress)
    assert updates == [
        (1.0, 1.0, "movies answered")
    ]  # progress notifications reach the stdio client
    assert {
        "initialize",
        "search_entities",
        "get_relations",
        "get_edges",
        "describe_entity",
        "list_kgs",
    } <= tools
    assert resources == ["kg://movies", "ui://tot-mcp/search-tree"]
    assert "tree_of_traversals" in prompts
    assert actor == TOM_HANKS
    assert "movies:starred_actors (backward) [32]" in text_of(relations)
    titles = {e["label"] for e in films.structured_content["entities"].values()}
    assert {"Forrest Gump", "Philadelphia", "Larry Crowne"} <= titles
    assert "starred_actors (inverse) [32]: " in text_of(films)


async def test_errors_come_back_as_tool_errors_and_the_process_keeps_serving():
    async with stdio_session() as session:
        bad_calls = [
            (
                "get_edges",
                {"entity_ids": ["movies:E99999999"], "relation_id": "movies:starred_actors"},
            ),
            ("get_edges", {"entity_ids": ["not an id"], "relation_id": "movies:starred_actors"}),
            ("get_relations", {"entity_ids": ["wd:Q42"]}),
            ("get_edges", {"entity_ids": [TOM_HANKS], "relation_id": "movies:no_such_relation"}),
            ("initialize", {"query": ""}),
            ("get_relations", {"entity_ids": [f"movies:E{i}" for i in range(5000)]}),
            ("initialize", {"query": "'; DROP TABLE kg; -- ${jndi:ldap://x} {{7*7}}"}),
        ]
        results = [await session.call_tool(name, args) for name, args in bad_calls]
        after = await session.call_tool("describe_entity", {"entity_id": TOM_HANKS})
    errors = [r for r in results[:-1]]
    assert all(r.is_error for r in errors)
    assert all("\n" not in text_of(r) and "Traceback" not in text_of(r) for r in errors)
    assert not results[-1].is_error  # injection-looking text is just a query
    assert not after.is_error and after.structured_content["entity"]["label"] == "Tom Hanks"


async def test_a_triples_file_kg_served_beside_the_embedded_one(tmp_path):
    kb = tmp_path / "tiny.txt"
    kb.write_text("Ada Lovelace|collaborated_with|Charles Babbage\n")
    async with stdio_session(
        ["--kg", f"tiny={kb}", "--kg", "movies=embedded", "--max-edges", "3"]
    ) as session:
        kgs = await session.call_tool("list_kgs", {})
        linked = await session.call_tool("initialize", {"query": "[Ada Lovelace]", "kg": "tiny"})
        ada = linked.structured_content["entities"][0]["entity"]["id"]
        edges = await session.call_tool(
            "get_edges", {"entity_ids": [ada], "relation_id": "tiny:collaborated_with"}
        )
        capped = await session.call_tool(
            "get_edges",
            {
                "entity_ids": [TOM_HANKS],
                "relation_id": "movies:starred_actors",
                "direction": "backward",
            },
        )
    assert [k["name"] for k in kgs.structured_content["kgs"]] == ["tiny", "movies"]
    assert text_of(edges) == (
        f"{ada} Ada Lovelace:\n  collaborated_with [1]: tiny:E1 Charles Babbage\n1 distinct target"
    )
    assert (
        len(capped.structured_content["edges"]) == 3
        and capped.structured_content["next_offset"] == 3
    )


def test_a_malformed_line_over_stdio_gets_a_jsonrpc_error_and_the_session_goes_on():
    """The SDK's stdio reader dropped a line that is not a JSON-RPC message, so the client waited
    forever; now it gets -32700 (not JSON) or -32600 with its id (JSON, but params as an array), as
    over HTTP."""
    import json
    import subprocess

    from mcp_client import REPO, SERVER_CMD, server_env

    p = subprocess.Popen(
        [*SERVER_CMD, "--kg", "movies=embedded"],
        cwd=REPO,
        env=server_env(),
        text=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )

    def send(message) -> None:
        p.stdin.write((message if isinstance(message, str) else json.dumps(message)) + "\n")
        p.stdin.flush()

    def reply() -> dict:
        return json.loads(p.stdout.readline())

    try:
        send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            }
        )
        assert reply()["id"] == 1
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send("{this is not json")
        assert reply() == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32700, "message": "Parse error: the line is not JSON"},
        }
        send({"jsonrpc": "2.0", "id": 904, "method": "tools/call", "params": ["x"]})
        bad = reply()
        assert bad["id"] == 904 and bad["error"]["code"] == -32600
        send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        assert reply() == {"jsonrpc": "2.0", "id": 2, "result": {}}
    finally:
        p.kill()
        p.wait(timeout=10)


def _initialize(request_id: int = 1) -> dict:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }


def test_over_pipes_a_long_line_a_burst_unread_and_eof_are_served_whole():
    """Pipes are served from the event loop (server/stdio_pipes.py), not a thread per line: a 3 MB
    request is read whole, 300 requests sent before any answer is read are all answered in order,
    and closing stdin ends the server with exit code 0."""
    import json
    import subprocess

    from mcp_client import REPO, SERVER_CMD, server_env

    p = subprocess.Popen(
        [*SERVER_CMD, "--kg", "movies=embedded"],
        cwd=REPO,
        env=server_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        lines = [
            _initialize(),
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "ping",
                "params": {"_meta": {"pad": "é" * 1_500_000}},
            },
            *({"jsonrpc": "2.0", "id": 100 + i, "method": "ping"} for i in range(300)),
        ]
        p.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in lines))
        p.stdin.close()
        replies = [json.loads(line) for line in p.stdout]
        assert p.wait(timeout=60) == 0
    finally:
        p.kill()
    assert [r["id"] for r in replies] == [1, 2, *range(100, 400)]
    assert all(r.get("result") == {} for r in replies[1:])


def test_a_regular_file_as_stdin_is_served_too(tmp_path):
    """A file is not a pipe: the SDK's own (threaded) files serve it, with the same answers."""
    import json
    import subprocess

    from mcp_client import REPO, SERVER_CMD, server_env

    requests = tmp_path / "requests.jsonl"
    requests.write_text(
        "".join(
            json.dumps(m) + "\n"
            for m in (
                _initialize(),
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "ping"},
            )
        )
        + "{not json\n"
    )
    out = tmp_path / "out.jsonl"
    with requests.open("rb") as stdin, out.open("wb") as stdout:
        code = subprocess.run(
            [*SERVER_CMD, "--kg", "movies=embedded"],
            cwd=REPO,
            env=server_env(),
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.DEVNULL,
            timeout=120,
        ).returncode
    replies = [json.loads(line) for line in out.read_text().splitlines()]
    assert code == 0
    assert [r["id"] for r in replies] == [1, 2, None] and replies[2]["error"]["code"] == -32700


def _initialized_server():
    """``tot-mcp`` on the embedded KG over pipes, its session initialized (the reply read)."""
    import json
    import subprocess

    from mcp_client import REPO, SERVER_CMD, server_env

    p = subprocess.Popen(
        [*SERVER_CMD, "--kg", "movies=embedded"],
        cwd=REPO,
        env=server_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    p.stdin.write(json.dumps(_initialize()).encode() + b"\n")
    p.stdin.flush()
    assert json.loads(p.stdout.readline())["id"] == 1
    return p


def test_a_line_over_the_cap_is_dropped_as_it_arrives_and_answered_with_one_error():
    """#36: one 200 MB line cost +784 MB. A line over ``MAX_LINE`` (16 MiB) is dropped as it is
    read, answered with a JSON-RPC -32600 (id null: it was never parsed), and the session goes on;
    the server's peak RSS grows by far less than the line."""
    import json

    p = _initialized_server()
    try:

        def peak_mb() -> float:
            with open(f"/proc/{p.pid}/status") as f:
                return next(int(ln.split()[1]) for ln in f if ln.startswith("VmHWM:")) / 1024

        before = peak_mb()
        head = b'{"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {"_meta": {"pad": "'
        chunk = head + b"x" * (1 << 20)
        p.stdin.write(chunk + b"x" * (1 << 20) * 199 + b'"}}}\n')  # ~200 MB on one line
        p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 8, "method": "ping"}).encode() + b"\n")
        p.stdin.flush()
        dropped = json.loads(p.stdout.readline())
        after = json.loads(p.stdout.readline())
        grew = peak_mb() - before
    finally:
        p.kill()
        p.wait(timeout=10)
    assert dropped["id"] is None and dropped["error"]["code"] == -32600
    assert "longer than 16,777,216 bytes" in dropped["error"]["message"]
    assert after == {"jsonrpc": "2.0", "id": 8, "result": {}}
    assert grew < 100, f"the server's peak RSS grew {grew:.0f} MB"


def test_a_request_whose_id_is_not_a_string_or_integer_is_answered_not_dropped():
    """#36: a request whose ``id`` was an object or a fraction got no reply, so its client waited
    forever; it is answered with one JSON-RPC -32600 (id null), and the next request is served."""
    import json

    p = _initialized_server()
    try:
        for odd in ({"a": 1}, 1.5, [2], True):
            p.stdin.write(
                json.dumps({"jsonrpc": "2.0", "id": odd, "method": "ping"}).encode() + b"\n"
            )
        p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 9, "method": "ping"}).encode() + b"\n")
        p.stdin.flush()
        replies: list[dict] = []

        def read() -> None:  # in a thread: a server that drops the odd requests never answers them
            while not replies or replies[-1].get("id") != 9:
                replies.append(json.loads(p.stdout.readline()))

        import threading

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(timeout=60)
    finally:
        p.kill()
        p.wait(timeout=10)
    assert [r["id"] for r in replies] == [None, None, None, None, 9]
    assert all(r["error"]["code"] == -32600 for r in replies[:4])
