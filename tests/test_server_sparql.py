"""The real ``tot-mcp`` process over stdio serving a Wikidata-shaped SPARQL endpoint (``oxigraph
serve`` on 127.0.0.1): what an agent reads from ``get_edges`` names the relation by its label, not
only by its opaque ID, and shows the statements' qualifiers."""

from __future__ import annotations

from mcp_client import stdio_session, text_of

pytest_plugins = ["oxigraph_fixture"]


async def test_get_edges_text_shows_the_relation_label_next_to_its_id(wikidata_sparql_url):
    async with stdio_session(["--kg", f"wd=wikidata:{wikidata_sparql_url}"]) as session:
        spouse = await session.call_tool(
            "get_edges", {"entity_ids": ["wd:Q42"], "relation_id": "wd:P26"}
        )
        members = await session.call_tool(
            "get_edges",
            {"entity_ids": ["wd:Q1299"], "relation_id": "wd:P463", "direction": "backward"},
        )
    assert not spouse.is_error and not members.is_error
    assert text_of(spouse) == (  # the statement's qualifiers follow the target, in braces
        "wd:Q42 Douglas Adams:\n  P26 spouse [1]: wd:Q14623681 Jane Belson "
        '{start time: "1991-11-25T00:00:00Z" (dateTime); end time: "2001-05-11T00:00:00Z" '
        "(dateTime)}\n"
        "1 distinct target"
    )
    assert text_of(members).startswith(
        "wd:Q1299 The Beatles:\n  P463 member of (inverse) [4]: wd:Q1203 John Lennon"
    )
    relation = spouse.structured_content["relation"]
    assert (relation["id"], relation["label"], relation["direction"]) == (
        "wd:P26",
        "spouse",
        "forward",
    )
