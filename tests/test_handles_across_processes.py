"""Result handles outlive the server process (issue #23 item 3): a client that starts a server per
call (LangChain's ``MultiServerMCPClient`` over stdio does) or a restarted server resolves a handle
made by an earlier process serving the same KGs — and only those: a changed file, other KGs or an
expired handle are refused with the usual advice."""

from __future__ import annotations

import time

from mcp_client import stdio_session, text_of

from tot_mcp.server.handles import HandleStore, UnknownHandle

STARRED = {"relation_id": "movies:starred_actors", "direction": "backward"}


async def films_handle(args: list[str], env: dict[str, str]) -> str:
    async with stdio_session(args, env=env) as s:
        films = await s.call_tool("get_edges", {"entity_ids": ["movies:E1407"], **STARRED})
    return films.structured_content["result_id"]


async def test_a_handle_made_by_one_server_process_resolves_in_the_next(tmp_path):
    env = {"TOT_MCP_CACHE_DIR": str(tmp_path / "cache")}
    handle = await films_handle(["--kg", "movies=embedded"], env)
    async with stdio_session(["--kg", "movies=embedded"], env=env) as s:  # a new process
        rels = await s.call_tool("get_relations", {"from_result": handle})
    assert not rels.is_error, text_of(rels)
    assert "[33; 32 of 32 entities]" in text_of(
        rels
    )  # Tom Hanks's 32 films, as the first process reached them


async def test_a_changed_file_or_other_kgs_do_not_resolve_an_old_handle(tmp_path):
    kb = tmp_path / "kb.txt"
    kb.write_text(
        "Big|starred_actors|Tom Hanks\nSplash|starred_actors|Tom Hanks\n", encoding="utf-8"
    )
    env = {"TOT_MCP_CACHE_DIR": str(tmp_path / "cache")}
    args = ["--kg", f"movies={kb}"]
    async with stdio_session(args, env=env) as s:
        tom = (await s.call_tool("initialize", {"query": "[Tom Hanks]"})).structured_content[
            "entities"
        ][0]
        handle = (
            await s.call_tool("get_edges", {"entity_ids": [tom["entity"]["id"]], **STARRED})
        ).structured_content["result_id"]
    async with stdio_session([*args, "--kg", "more=embedded"], env=env) as s:  # other KGs served
        other_kgs = await s.call_tool("get_relations", {"from_result": handle})
    time.sleep(0.01)
    kb.write_text(
        "Big|starred_actors|Tom Hanks\nCast Away|starred_actors|Tom Hanks\n", encoding="utf-8"
    )
    async with stdio_session(args, env=env) as s:  # the same KG name and path, other content
        changed = await s.call_tool("get_relations", {"from_result": handle})
    for result in (other_kgs, changed):
        assert result.is_error and "repeat the call that returned it" in text_of(result), text_of(
            result
        )


def test_a_handle_on_disk_expires_like_one_in_memory_and_the_disk_stays_bounded(tmp_path):
    path = tmp_path / "handles.sqlite"
    first = HandleStore("kgs", max_entries=50, ttl_seconds=0.5, path=path)
    made = [first.put("get_edges", {"n": i}, [f"m:E{i}"]).handle for i in range(200)]
    other = HandleStore("other kgs", max_entries=50, ttl_seconds=0.5, path=path)
    other.put("get_edges", {}, ["x:E1"])
    first.close(), other.close()  # as at exit: what was queued for the disk is written
    later = HandleStore("kgs", max_entries=50, ttl_seconds=0.5, path=path)
    assert later.get(made[-1]).entity_ids == ("m:E199",)
    import sqlite3

    rows = sqlite3.connect(path).execute(
        "SELECT fingerprint, COUNT(*) FROM handles GROUP BY fingerprint"
    )
    counts = dict(
        rows.fetchall()
    )  # --handles bounds each set of KGs on disk too (pruned every tenth of it)
    assert 50 <= counts["kgs"] <= 55 and counts["other kgs"] == 1
    try:
        later.get(made[0])
    except UnknownHandle:
        pass
    else:
        raise AssertionError("a handle beyond the bound resolved")
    time.sleep(0.6)
    again = HandleStore("kgs", max_entries=50, ttl_seconds=0.5, path=path)
    try:
        again.get(made[-2])
    except UnknownHandle as e:
        assert "expired" in str(e)
    else:
        raise AssertionError("an expired handle resolved")


def test_an_unwritable_cache_keeps_handles_in_memory(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    store = HandleStore("kgs", path=blocker / "handles.sqlite")  # its directory is a file: no disk
    handle = store.put("get_edges", {}, ["m:E1"]).handle
    assert store.get(handle).entity_ids == ("m:E1",)
