"""The tool list as a client model reads it, on every turn (issue #24): small, plain, no knob it
cannot judge — and the calls that let it answer a known path in one step. Through the real
``tot-mcp`` process and the SDK client.

The budget (docs/tools.md): on a two-KG server with a SPARQL KG, at most 10 tools and 8,000
characters of names, descriptions and ``json.dumps(inputSchema)``. ``--tools all`` (or ``[server]
tools = "all"``) adds each composite strategy as its own tool with its algorithm knobs, and the
operator tools; ``[strategy.NAME]`` sets the knobs.
"""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from mcp_client import SERVER_CMD, server_env, stdio_session, text_of

TWO_KGS = [
    "--kg",
    "movies=embedded",
    "--kg",
    "wd=wikidata:http://127.0.0.1:9/sparql",
]  # never contacted

#: every argument a model sees, and why it can judge it: the IDs or handle or name to start from,
#: the relation and its direction, paging, which KG, what to search for, the question, who reasons
#: and how wide, which strategy
MODEL_ARGUMENTS = {
    "list_kgs": set(),
    "initialize": {"query", "kg", "limit"},
    "search_entities": {"text", "kg", "limit", "relation"},
    "get_relations": {"entity_ids", "from_result", "search", "kg"},
    "get_edges": {"relation_id", "entity_ids", "from_result", "direction", "limit", "offset"},
    "follow_path": {
        "hops",
        "entity_ids",
        "from_result",
        "start",
        "exclude_start",
        "through_start",
        "limit",
        "offset",
    },
    "describe_entity": {"entity_id", "from_result", "position"},
    "route_query": {"query", "kg", "route", "top_k", "detail"},
    "tree_of_traversals": {"query", "llm", "kg", "k", "detail"},
    "sparql_query": {"query", "kg", "limit"},
}


def size(tool) -> int:
    return len(tool.name) + len(tool.description or "") + len(json.dumps(tool.input_schema))


def texts(node):
    """Every description in a schema."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "description" and isinstance(value, str):
                yield value
            else:
                yield from texts(value)
    elif isinstance(node, list):
        for value in node:
            yield from texts(value)


async def test_the_default_tool_list_fits_the_budget_and_reads_as_plain_words():
    async with stdio_session(TWO_KGS) as s:
        tools = (await s.list_tools()).tools
    assert len(tools) <= 10 and sum(size(t) for t in tools) <= 8000, [
        (t.name, size(t)) for t in tools
    ]
    assert {t.name: set(t.input_schema.get("properties", {})) for t in tools} == MODEL_ARGUMENTS
    for tool in tools:
        for text in [tool.description, *texts(tool.input_schema)]:
            assert text and "``" not in text and ":mod:" not in text and "`" not in text, (
                tool.name,
                text,
            )
            assert "\n" not in text and "  " not in text, (
                tool.name,
                text,
            )  # no docstring indentation
        schema = json.dumps(tool.input_schema)
        assert '"title"' not in schema and "$ref" not in schema and '"null"' not in schema, (
            tool.name
        )
        assert tool.title, tool.name


async def test_every_tool_says_when_to_use_it_or_what_it_returns():
    async with stdio_session(TWO_KGS) as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        misspelt = await s.call_tool(
            "follow_path", {"strat": "Tom Hanks", "hops": [{"relation_id": "directed_by"}]}
        )
        knob = await s.call_tool(
            "tree_of_traversals", {"query": "[Tom Hanks]", "tau": 0.5}
        )  # a server setting now
    assert (
        misspelt.is_error
        and "unknown 'strat' (valid: " in text_of(misspelt)
        and "start" in text_of(misspelt)
    )
    assert knob.is_error and "unknown 'tau'" in text_of(knob)
    for name in ("initialize", "get_relations", "get_edges"):  # the paper's three steps, in order
        assert re.match(r"Step \d:", tools[name].description), name
    assert "instead of driving the step tools" in tools["tree_of_traversals"].description
    assert "when initialize missed one" in tools["search_entities"].description
    assert (
        "in one call" in tools["follow_path"].description
        and "in one call" in tools["route_query"].description
    )


async def test_all_tools_adds_the_strategies_with_their_knobs_and_the_operator_tools():
    async with stdio_session([*TWO_KGS, "--tools", "all"]) as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
    assert {"ark_retrieve", "beam_search", "rerank_retrieve", "build_index", "router_stats"} <= set(
        tools
    )
    assert set(MODEL_ARGUMENTS) <= set(tools)
    assert {"relevance_margin", "max_frontier"} <= set(
        tools["ark_retrieve"].input_schema["properties"]
    )
    assert "analyser" in tools["route_query"].input_schema["properties"]


async def test_the_servers_strategy_settings_are_the_tools_defaults(tmp_path):
    config = tmp_path / "tot.toml"
    config.write_text(
        "[strategy.ark]\nmax_depth = 2\ninitial_k = 7\n[strategy.router]\ntop_k = 3\n",
        encoding="utf-8",
    )
    async with stdio_session(
        ["--kg", "movies=embedded", "--config", str(config), "--tools", "all"]
    ) as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        routed = await s.call_tool("route_query", {"query": "what movies did [Tom Hanks] star in"})
    props = tools["ark_retrieve"].input_schema["properties"]
    assert (props["max_depth"]["default"], props["initial_k"]["default"]) == (2, 7)
    assert not routed.is_error and routed.structured_content["total"] == 3


@pytest.mark.parametrize(
    "table, needle",
    [
        ("[strategy.ark]\nmax_deep = 2\n", "max_deep"),
        ("[strategy.arc]\nmax_depth = 2\n", "no strategy 'arc'"),
        ("[strategy.tot]\nk = 0\n", "k"),
    ],
)
def test_a_misspelt_strategy_setting_stops_the_server_with_one_line(tmp_path, table, needle):
    config = tmp_path / "tot.toml"
    config.write_text(table, encoding="utf-8")
    done = subprocess.run(
        [*SERVER_CMD, "--kg", "movies=embedded", "--config", str(config), "--check"],
        capture_output=True,
        text=True,
        env=server_env(None),
        timeout=120,
    )
    assert done.returncode == 2 and needle in done.stderr and "Traceback" not in done.stderr, (
        done.stderr
    )


FAMILY = (
    "\n".join(
        [
            "Albert|offspring|Alfred",
            "Albert|offspring|Helena",
            "Alfred|dad|Albert",
            "Helena|dad|Albert",
            "Albert|heir|Edward",
            "Victoria|offspring|Alfred",
            "Edward|offspring|George",
        ]
    )
    + "\n"
)


async def test_a_known_path_is_one_call_from_a_name_and_paths_through_the_start_count(tmp_path):
    """'[Albert]'s offspring's dad's heir' is Albert's heir: the walk passes back through the start,
    and only the final targets leave the start out. follow_path links the name itself and says whom
    it chose."""
    kb = tmp_path / "family.txt"
    kb.write_text(FAMILY, encoding="utf-8")
    async with stdio_session(["--kg", f"fam={kb}"]) as s:
        heir = await s.call_tool(
            "follow_path",
            {
                "start": "Albert",
                "hops": [
                    {"relation_id": "offspring"},
                    {"relation_id": "dad"},
                    {"relation_id": "heir"},
                ],
            },
        )
        siblings = await s.call_tool(
            "follow_path",
            {"start": "Alfred", "hops": [{"relation_id": "dad"}, {"relation_id": "offspring"}]},
        )
        others = await s.call_tool(
            "follow_path",
            {
                "start": "Albert",
                "through_start": False,
                "hops": [
                    {"relation_id": "offspring"},
                    {"relation_id": "dad"},
                    {"relation_id": "heir"},
                ],
            },
        )
        kids = await s.call_tool(
            "follow_path",
            {
                "start": "Albert",
                "hops": [{"relation_id": "offspring"}, {"relation_id": "offspring"}],
            },
        )
        nobody = await s.call_tool(
            "follow_path", {"start": "Zebedee", "hops": [{"relation_id": "dad"}]}
        )
        look_alike = await s.call_tool(
            "follow_path", {"start": "Albert Zebedee Quill", "hops": [{"relation_id": "dad"}]}
        )
        kgs = await s.call_tool("list_kgs", {})
        counted = await s.call_tool(
            "follow_path", {"start": "Albert", "limit": 0, "hops": [{"relation_id": "offspring"}]}
        )  # only the count and a handle for the next step
        grandchildren = await s.call_tool(
            "follow_path",
            {
                "from_result": counted.structured_content["result_id"],
                "hops": [{"relation_id": "offspring"}],
            },
        )
        both = await s.call_tool(
            "follow_path",
            {"start": "Albert", "entity_ids": ["fam:E0"], "hops": [{"relation_id": "dad"}]},
        )
    assert not heir.is_error, text_of(heir)
    assert [t["label"] for t in heir.structured_content["targets"]] == ["Edward"]
    assert text_of(heir).splitlines()[0].startswith("start 'Albert' = fam:")
    assert heir.structured_content["reached"] == [
        2,
        0,
        1,
    ]  # hop 2 reached only the start, which is not counted
    assert [t["label"] for t in siblings.structured_content["targets"]] == [
        "Helena"
    ]  # the start is left out
    assert (
        others.structured_content["targets"] == []
    )  # every walk came back through Albert, and stopped there
    assert kids.structured_content[
        "without_edge"
    ] == 2 and "2 last-hop sources without that edge" in text_of(
        kids
    )  # Alfred and Helena have no offspring: missing data, said so, not a silent empty
    assert nobody.is_error and "no entity matches 'Zebedee'" in text_of(nobody)
    # a look-alike of the name is no start: named, with what to do, and no walk
    assert look_alike.is_error, text_of(look_alike)
    assert "no entity is named 'Albert Zebedee Quill'; the closest is fam:" in text_of(look_alike)
    assert "pass its ID as entity_ids" in text_of(look_alike)
    assert counted.structured_content["targets"] == [] and counted.structured_content["total"] == 2
    assert "2 targets (not listed: limit=0)" in text_of(counted) and "offset=" not in text_of(
        counted
    )
    assert (
        grandchildren.structured_content["total"] == 0
    )  # Alfred and Helena, from the handle: no offspring
    # which way each relation runs, in words: an example edge, subject → object
    examples = kgs.structured_content["examples"]
    assert examples["fam:heir"] == "Albert → Edward" and examples["fam:dad"].endswith("→ Albert")
    assert "fam:heir [1] (Albert → Edward)" in text_of(kgs)
    assert both.is_error and "one of entity_ids, from_result or start" in text_of(both)


async def test_completions_suggest_entities_by_label_and_the_app_is_a_listed_resource():
    from mcp_types import PromptReference, ResourceTemplateReference

    template = ResourceTemplateReference(type="ref/resource", uri="kg://{kg}/entity/{id}")
    async with stdio_session(["--kg", "movies=embedded", "--tools", "all"]) as s:
        ids = await s.complete(
            template, {"name": "id", "value": "Tom Han"}, context_arguments={"kg": "movies"}
        )
        short = await s.complete(
            template, {"name": "id", "value": "T"}, context_arguments={"kg": "movies"}
        )
        unknown = await s.complete(
            template, {"name": "id", "value": "Tom"}, context_arguments={"kg": "nope"}
        )
        mention = await s.complete(
            PromptReference(type="ref/prompt", name="tree_of_traversals"),
            {"name": "question", "value": "what films did [Tom Han"},
        )
        closed = await s.complete(
            PromptReference(type="ref/prompt", name="tree_of_traversals"),
            {"name": "question", "value": "what films did [Tom Hanks] make"},
        )
        resources = [str(r.uri) for r in (await s.list_resources()).resources]
        build = next(t for t in (await s.list_tools()).tools if t.name == "build_index")
    assert ids.completion.values[0] == "movies:E1407"
    assert short.completion.values == [] and unknown.completion.values == []
    assert mention.completion.values[0] == "what films did [Tom Hanks]"
    assert closed.completion.values == []  # nothing open to complete
    assert "ui://tot-mcp/search-tree" in resources
    assert build.annotations.destructive_hint is False and build.annotations.read_only_hint is False


def test_a_description_is_shortened_at_its_parts_and_keeps_a_merged_title_warning():
    from tot_mcp.server.render import first_parts

    text = "release year 1994; directed by Danny Boyle; written by John Hodge; genre Crime"
    assert (
        first_parts(text, 60) == "release year 1994; directed by Danny Boyle; …"
    )  # never "written by John )"
    merged = (
        "release years 2000, 2012; directed by David Riker, Julian Jarrold; genre Drama (may be 2 "
        'things named "X")'
    )
    assert first_parts(merged, 60).endswith('; … (may be 2 things named "X")')
    assert first_parts(text, 200) == text


async def test_route_query_runs_a_forced_strategy_and_says_which_kg_a_local_one_needs(tmp_path):
    from retrieval_fixtures import TRIPLES

    (tmp_path / "mini.txt").write_text(TRIPLES, encoding="utf-8")
    (tmp_path / "other.txt").write_text("A|knows|B\n", encoding="utf-8")
    args = ["--kg", f"mini={tmp_path / 'mini.txt'}", "--kg", f"other={tmp_path / 'other.txt'}"]
    async with stdio_session(
        args, env={"TOT_MCP_CACHE_DIR": str(tmp_path / "c")}, read_timeout=300
    ) as s:
        unsaid = await s.call_tool(
            "route_query", {"query": "adventure films by [Ivo Tan]", "route": "beam"}
        )
        beam = await s.call_tool(
            "route_query",
            {"query": "adventure films by [Ivo Tan]", "route": "beam", "kg": "mini", "top_k": 3},
        )
        auto = await s.call_tool(
            "route_query", {"query": "which films did [Ivo Tan] direct"}
        )  # every KG, linked
    assert unsaid.is_error and "route 'beam' reads every triple of one KG: pass kg" in text_of(
        unsaid
    )
    assert not beam.is_error
    assert beam.structured_content["strategy"].startswith("route beam → ran beam")
    assert beam.structured_content["items"]
    assert not auto.is_error and auto.structured_content["kg"] != "mini", text_of(
        auto
    )  # not "the first KG"
