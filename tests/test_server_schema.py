"""The lean output schemas the server publishes accept and reject exactly what pydantic's schemas
do."""

from __future__ import annotations

import copy

import pytest
from jsonschema import validators

from tot_mcp.kg_adapters.models import (
    Direction,
    Edge,
    EdgePage,
    Entity,
    EntityDescription,
    Literal,
    Relation,
)
from tot_mcp.server.schema import lean_schema
from tot_mcp.server.tools.kg import EntityMatches, KGList, RelationsResult


def _valid_page() -> dict:
    tom = Entity(id="movies:E1", label="Tom Hanks", kg="movies")
    film = Entity(id="movies:E2", label="Big", description="1988 film", kg="movies")
    return EdgePage(
        edges=[
            Edge(
                source="movies:E1",
                relation="movies:starred_actors",
                direction=Direction.backward,
                target="movies:E2",
            ),
            Edge(
                source="movies:E2",
                relation="movies:release_year",
                value=Literal(value="1988", datatype="xsd:gYear"),
            ),
        ],
        entities={"movies:E1": tom, "movies:E2": film},
        truncated=True,
        next_offset=2,
        relation=Relation(
            id="movies:starred_actors", label="starred actors", direction=Direction.backward
        ),
    ).model_dump(mode="json")


def _mutations(doc: dict) -> list[dict]:
    out = []
    for path, value in [
        (("edges", 0, "target"), 42),
        (("edges", 0, "direction"), "sideways"),
        (("edges", 0, "direction"), None),
        (("edges", 1, "value"), "1988"),
        (("edges", 1, "value", "lang"), 3),
        (("entities", "movies:E2", "description"), ["x"]),
        (("next_offset",), "2"),
        (("edges", 0, "extra"), 1),
        (("relation", "label"), 3),
        (("relation", "direction"), "sideways"),
    ]:
        bad = copy.deepcopy(doc)
        node = bad
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        out.append(bad)
    missing = copy.deepcopy(doc)
    del missing["edges"][0]["source"]
    out.append(missing)
    return out


@pytest.mark.parametrize(
    "model", [EdgePage, EntityMatches, RelationsResult, KGList, EntityDescription, Relation]
)
def test_lean_schema_has_no_refs_and_is_a_valid_schema(model):
    lean = lean_schema(model.model_json_schema())
    assert "$ref" not in str(lean) and "$defs" not in lean
    validators.validator_for(lean).check_schema(lean)


def test_lean_and_original_edge_page_schemas_agree_on_valid_and_invalid_documents():
    original = EdgePage.model_json_schema()
    lean = lean_schema(original)
    v_orig = validators.validator_for(original)(original)
    v_lean = validators.validator_for(lean)(lean)
    good = _valid_page()
    assert v_orig.is_valid(good) and v_lean.is_valid(good)
    older = {
        k: v for k, v in good.items() if k != "relation"
    }  # pages without the relation stay valid
    assert v_orig.is_valid(older) and v_lean.is_valid(older)
    for bad in _mutations(good):
        assert v_orig.is_valid(bad) == v_lean.is_valid(bad) is False, bad


def test_a_recursive_schema_keeps_its_definitions():
    schema = {
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"child": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}},
            }
        },
        "$ref": "#/$defs/Node",
    }
    lean = lean_schema(schema)
    validator = validators.validator_for(lean)(lean)
    assert validator.is_valid({"child": {"child": {"child": None}}})
    assert not validator.is_valid({"child": {"child": 3}})


async def test_the_tool_list_is_made_lean_once_per_tool_and_again_only_for_a_tool_registered_anew(
    embedded_kg,
):
    from tot_mcp.server.app import build_server
    from tot_mcp.server.runtime import Runtime

    server = build_server(Runtime({"movies": embedded_kg}))
    first, second = await server.list_tools(), await server.list_tools()
    assert first == second
    assert all(
        a.input_schema is b.input_schema for a, b in zip(first, second)
    )  # reused, not recomputed
    assert all("$defs" not in t.input_schema and "title" not in t.input_schema for t in first)

    def get_edges(entity_ids: list[str], note: str | None = None) -> str:
        """A replacement with another signature."""
        return ""

    server.remove_tool("get_edges")
    server.add_tool(get_edges)
    replaced = {t.name: t for t in await server.list_tools()}["get_edges"]
    assert set(replaced.input_schema["properties"]) == {"entity_ids", "note"}
    assert replaced.input_schema["properties"]["note"] == {
        "type": "string"
    }  # lean: no null, no default, no title
