"""The resource template ``kg://{kg}/entity/{id}`` end to end: the real ``tot-mcp`` process over
stdio, driven by the MCP SDK's client, over the embedded movie KG.

* ``resources/templates/list`` shows the template;
* ``resources/read`` returns the text ``describe_entity`` returns, for the full ID and for its local
  part;
* ``completion/complete`` of ``kg`` offers the configured KG names;
* an unknown KG or entity is a one-line ``resources/read`` error.
"""

from __future__ import annotations

import pytest
from mcp.shared.exceptions import MCPError
from mcp_client import stdio_session, text_of
from mcp_types import ResourceTemplateReference

TEMPLATE = "kg://{kg}/entity/{id}"
TOM_HANKS = "movies:E1407"


async def test_the_entity_template_is_listed_reads_like_describe_entity_and_completes_kg():
    async with stdio_session(["--kg", "movies=embedded"]) as session:
        templates = (await session.list_resource_templates()).resource_templates
        tool = await session.call_tool("describe_entity", {"entity_id": TOM_HANKS})
        full = await session.read_resource(f"kg://movies/entity/{TOM_HANKS}")
        local = await session.read_resource("kg://movies/entity/E1407")
        completed = await session.complete(
            ResourceTemplateReference(uri=TEMPLATE), {"name": "kg", "value": "mo"}
        )
        nothing = await session.complete(
            ResourceTemplateReference(uri=TEMPLATE), {"name": "kg", "value": "x"}
        )

    (entity,) = [t for t in templates if t.uri_template == TEMPLATE]
    assert entity.mime_type == "text/plain" and "describe_entity" in (entity.description or "")

    (content,) = full.contents
    assert content.uri == f"kg://movies/entity/{TOM_HANKS}" and content.mime_type == "text/plain"
    assert content.text.startswith(f"{TOM_HANKS}: Tom Hanks")
    assert "relations:" in content.text
    assert content.text == text_of(tool)  # the same adapter call, the same renderer
    assert local.contents[0].text == content.text

    assert completed.completion.values == ["movies"]
    assert nothing.completion.values == []


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("kg://movies/entity/movies:E99999999", "not found: "),
        ("kg://nope/entity/E1407", "unknown KG: no KG named 'nope'; configured: movies"),
    ],
    ids=["unknown-entity", "unknown-kg"],
)
async def test_an_unknown_entity_or_kg_is_a_one_line_read_error(uri, message):
    async with stdio_session(["--kg", "movies=embedded"]) as session:
        with pytest.raises(MCPError) as caught:
            await session.read_resource(uri)
        still = await session.read_resource(
            f"kg://movies/entity/{TOM_HANKS}"
        )  # the server keeps serving

    error = str(caught.value)
    assert message in error and "\n" not in error, error
    assert still.contents[0].text.startswith(TOM_HANKS)
