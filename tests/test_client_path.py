"""The client model's path: result handles instead of pasted IDs, follow_path for a known chain, and
results that explain themselves — through the real ``tot-mcp`` process and the MCP SDK's clients
(stdio and HTTP)."""

from __future__ import annotations

from mcp_client import http_server, http_session, stdio_session, text_of

TOM_HANKS = "movies:E1407"
STARRED = {"relation_id": "movies:starred_actors", "direction": "backward"}
DIRECTED = {"relation_id": "movies:directed_by", "direction": "forward"}


async def call(session, tool: str, **args):
    result = await session.call_tool(tool, args)
    assert not result.is_error, text_of(result)
    return result


async def test_a_handle_stands_for_every_entity_a_result_reached():
    async with stdio_session(["--kg", "movies=embedded"]) as s:
        films = await call(s, "get_edges", entity_ids=[TOM_HANKS], **STARRED)
        handle = films.structured_content["result_id"]
        assert f"result {handle} = 32 entities (from_result)" in text_of(films)
        assert "32 distinct targets" in text_of(films)
        by_handle = await call(s, "get_edges", from_result=handle, **DIRECTED, limit=200)
        by_ids = await call(
            s,
            "get_edges",
            entity_ids=[e["target"] for e in films.structured_content["edges"]],
            **DIRECTED,
            limit=200,
        )
        assert by_handle.structured_content["edges"] == by_ids.structured_content["edges"]
        rels = await call(s, "get_relations", from_result=handle)
        described = await call(s, "describe_entity", from_result=handle, position=1)
    directed = next(
        r for r in rels.structured_content["relations"] if r["id"] == "movies:directed_by"
    )
    assert directed["entities"] == 32  # how many of the 32 films have it
    assert "[33; 32 of 32 entities]" in text_of(rels)
    assert (
        described.structured_content["entity"]["id"]
        == films.structured_content["edges"][1]["target"]
    )


async def test_a_handle_lifts_the_50_id_cap_and_pages_like_any_result():
    """The films of the films' directors: more than 50 sources, which entity_ids would refuse."""
    async with stdio_session(["--kg", "movies=embedded"]) as s:
        films = await call(s, "get_edges", entity_ids=[TOM_HANKS], **STARRED)
        directors = await call(
            s, "get_edges", from_result=films.structured_content["result_id"], **DIRECTED
        )
        their_films = await call(
            s,
            "get_edges",
            from_result=directors.structured_content["result_id"],
            relation_id="movies:directed_by",
            direction="backward",
            limit=200,
        )
        ids = [e["target"] for e in their_films.structured_content["edges"]]
        too_many = await s.call_tool("get_relations", {"entity_ids": ids[:60]})
        page1 = await call(
            s,
            "get_edges",
            from_result=their_films.structured_content["result_id"],
            **DIRECTED,
            limit=100,
        )
        page2 = await call(
            s,
            "get_edges",
            from_result=their_films.structured_content["result_id"],
            **DIRECTED,
            limit=100,
            offset=100,
        )
    assert len(ids) > 60
    assert too_many.is_error and "at most 50 per call (pass from_result" in text_of(too_many)
    assert page1.structured_content["truncated"] and page1.structured_content["next_offset"] == 100
    first, second = page1.structured_content["edges"], page2.structured_content["edges"]
    assert (
        first
        and second
        and not {(e["source"], e["target"]) for e in first}
        & {(e["source"], e["target"]) for e in second}
    )


async def test_follow_path_walks_a_known_chain_in_one_call():
    async with stdio_session(["--kg", "movies=embedded"]) as s:
        path = await call(
            s, "follow_path", entity_ids=[TOM_HANKS], hops=[STARRED, DIRECTED], limit=3
        )
        rest = await call(
            s, "follow_path", entity_ids=[TOM_HANKS], hops=[STARRED, DIRECTED], limit=100, offset=3
        )
        with_start = await call(
            s,
            "follow_path",
            entity_ids=[TOM_HANKS],
            hops=[STARRED, DIRECTED],
            exclude_start=False,
            limit=100,
        )
    got = path.structured_content
    assert (
        got["reached"] == [32, 25] and got["total"] == 25
    )  # Tom Hanks directed two of his films: not counted
    top = got["targets"][0]
    assert (top["label"], top["paths"]) == (
        "Steven Spielberg",
        3,
    )  # three Spielberg films starring Tom Hanks
    assert top["example"][0] == TOM_HANKS and len(top["example"]) == 3
    assert (
        got["truncated"]
        and got["next_offset"] == 3
        and len(rest.structured_content["targets"]) == 22
    )
    assert "Steven Spielberg [3] via" in text_of(path)
    assert TOM_HANKS in {t["id"] for t in with_start.structured_content["targets"]}
    assert with_start.structured_content["total"] == 26


async def test_an_empty_result_says_why_and_what_to_call():
    async with stdio_session(["--kg", "movies=embedded"]) as s:
        wrong_way = await call(
            s, "get_edges", entity_ids=[TOM_HANKS], relation_id="movies:starred_actors"
        )
        two = await call(
            s, "get_edges", entity_ids=[TOM_HANKS, "movies:E3198"], relation_id="movies:directed_by"
        )
    assert wrong_way.structured_content["edges"] == []
    assert 'it runs backward (32 edges): call get_edges again with direction="backward"' in text_of(
        wrong_way
    )
    # Tom Hanks directs nothing as a subject; the film does: the source without edges is named in
    # one line
    assert two.structured_content["sources_without_edges"] == [TOM_HANKS]
    assert f"no such edge from: {TOM_HANKS}" in text_of(two)


BAD = [
    ("get_edges", {"from_result": "r0123456789", **DIRECTED}, "is unknown here"),
    ("get_edges", {"from_result": "Tom Hanks", **DIRECTED}, "is not a result handle"),
    (
        "get_edges",
        {"from_result": "r0123456789", "entity_ids": [TOM_HANKS], **DIRECTED},
        "not both",
    ),
    ("get_relations", {}, "pass entity_ids, or from_result"),
    ("follow_path", {"entity_ids": [TOM_HANKS], "hops": []}, "at least 1"),
    ("follow_path", {"entity_ids": [TOM_HANKS], "hops": [DIRECTED] * 5}, "at most 4"),
    (
        "follow_path",
        {"entity_ids": [TOM_HANKS], "hops": [{"relation_id": "movies:acted_in"}]},
        "no relation 'movies:acted_in'",
    ),
    ("describe_entity", {"from_result": "r0123456789"}, "is unknown here"),
]


async def test_bad_handles_and_paths_are_one_clear_error_and_the_server_keeps_serving():
    async with stdio_session(["--kg", "movies=embedded"]) as s:
        for tool, args, message in BAD:
            bad = await s.call_tool(tool, args)
            assert (
                bad.is_error and message in text_of(bad) and len(text_of(bad).splitlines()) == 1
            ), (tool, args)
            assert not (await s.call_tool("get_relations", {"entity_ids": [TOM_HANKS]})).is_error


async def test_handles_are_derived_from_the_call_so_any_server_process_can_recreate_them(tmp_path):
    """Two processes behind a load balancer (two machines: no disk in common): the second does not
    hold the first's handle and says how to get it; repeating the call there gives the same handle,
    which then works."""
    async with (
        http_server([], env={"TOT_MCP_CACHE_DIR": str(tmp_path / "a")}) as url_a,
        http_server([], env={"TOT_MCP_CACHE_DIR": str(tmp_path / "b")}) as url_b,
    ):
        async with http_session(url_a) as a, http_session(url_b) as b:
            made = await call(a, "get_edges", entity_ids=[TOM_HANKS], **STARRED)
            handle = made.structured_content["result_id"]
            refused = await b.call_tool("get_edges", {"from_result": handle, **DIRECTED})
            again = await call(b, "get_edges", entity_ids=[TOM_HANKS], **STARRED)
            works = await call(b, "get_edges", from_result=handle, **DIRECTED)
    assert refused.is_error and "repeat the call that returned it" in text_of(refused)
    assert again.structured_content["result_id"] == handle
    assert works.structured_content["edges"]


async def test_handles_expire_and_the_store_is_bounded():
    async with stdio_session(
        ["--kg", "movies=embedded", "--handles", "1", "--handle-ttl", "3600"]
    ) as s:
        first = await call(s, "get_edges", entity_ids=[TOM_HANKS], **STARRED)
        await call(
            s, "initialize", query="[Forrest Gump] and [Tom Hanks]"
        )  # a second handle evicts the first
        evicted = await s.call_tool(
            "get_relations", {"from_result": first.structured_content["result_id"]}
        )
    assert evicted.is_error and "is unknown here" in text_of(evicted)
