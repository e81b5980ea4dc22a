"""What the README and docs/ show — tool names, example results, command lines, flags,
configuration keys — is what the code does: each is read from the pages and checked against the
real server, parsers and models, so a change that makes a page wrong fails here."""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from pathlib import Path

import pytest
from mcp_client import inprocess_client, text_of

from tot_mcp.kg_adapters.bulk_load import build_parser as load_parser
from tot_mcp.server.cli import build_parser as server_parser
from tot_mcp.server.runtime import Runtime
from tot_mcp.strategies.registry import REGISTRY
from tot_mcp.strategies.search_cli import build_parser as search_parser
from tot_mcp.strategies.settings import Config, parse_config

pytest_plugins = ["oxigraph_fixture"]

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
HANDLE = re.compile(r"\br[0-9a-f]{10}\b")
FIXTURES = REPO / "tests" / "fixtures"


def fenced(page: Path, lang: str | None = None) -> list[str]:
    """The page's fenced code blocks (of one language, if given)."""
    blocks = re.findall(r"^```(\w*)\n(.*?)^```", page.read_text(encoding="utf-8"), re.M | re.S)
    return [body for kind, body in blocks if lang is None or kind == lang]


def flags(parser) -> set[str]:
    return {s for action in parser._actions for s in action.option_strings}


# -- tools -------------------------------------------------------------------------------------
async def test_the_tool_list_shown_in_docs_server_md_is_the_real_one(embedded_kg):
    async with inprocess_client(Runtime({"movies": embedded_kg})) as client:
        real = [t.name for t in (await client.list_tools()).tools]
    shown = re.search(
        r"^→ tools: (.*)$", (REPO / "docs" / "server.md").read_text(encoding="utf-8"), re.M
    )
    assert shown, "docs/server.md no longer shows the tools/list answer"
    assert shown.group(1).split(" (")[0].split(", ") == real


async def test_the_readme_tool_table_lists_every_tool_and_no_other(
    wikidata_sparql_url, embedded_kg
):
    """With --tools all and a KG that answers SPARQL, every tool is registered."""
    config = parse_config(
        {"kgs": {"wd": f"wikidata:{wikidata_sparql_url}"}, "server": {"tools": "all"}}
    )
    runtime = Runtime.open(config=config)
    async with inprocess_client(runtime) as client:
        real = {t.name for t in (await client.list_tools()).tools}
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    table = readme[readme.index("| tool | arguments | returns |") :]
    table = table[: table.index("\n\n")]
    listed = {
        name for row in table.splitlines()[2:] for name in re.findall(r"`(\w+)`", row.split("|")[1])
    }
    assert listed == real


def _example_calls(page: str, after: str) -> list[tuple[str, dict, list[str]]]:
    """The ``TOOL {json}`` lines of the first code block after ``after`` on ``page``, each with the
    indented lines under it (its text as shown)."""
    text = (REPO / page).read_text(encoding="utf-8")
    block = text[text.index(after) :]
    block = block[block.index("```") :].split("\n", 1)[1]
    calls: list[tuple[str, dict, list[str]]] = []
    for line in block[: block.index("```")].splitlines():
        if line and not line.startswith(" "):
            tool, _, args = line.partition(" ")
            calls.append((tool, json.loads(args or "{}"), []))
        elif line.strip():
            calls[-1][2].append(line[2:])
    return calls


async def _check_example_calls(runtime: Runtime, page: str, after: str) -> None:
    """Each example call is made; its text is the one shown (``...`` stands for lines left out;
    result handles are compared by shape; ``→ is_error: …`` is the one error line)."""
    calls = _example_calls(page, after)
    assert len(calls) >= 2, f"{page}: no example block after {after!r}"
    async with inprocess_client(runtime) as client:
        for tool, args, expected in calls:
            result = await client.call_tool(tool, args)
            text = text_of(result)
            where = f"{page} example of {tool} {args} drifted:\n{text}"
            if expected[0].startswith("→ is_error: "):
                assert result.is_error and text == expected[0].removeprefix("→ is_error: "), where
                continue
            real = [HANDLE.sub("rHANDLE", x) for x in text.splitlines()]
            shown = [HANDLE.sub("rHANDLE", x) for x in expected]
            if "..." in shown:  # the lines before it, then any lines
                cut = shown.index("...")
                assert real[:cut] == shown[:cut], where
            else:
                assert real == shown, where


async def test_the_readme_example_results_are_what_the_tools_return(embedded_kg):
    await _check_example_calls(
        Runtime({"movies": embedded_kg}), "README.md", "Example calls and results (real, on the"
    )


LINKED_FIXTURES = {
    "kg": {
        "wd": {"spec": str(FIXTURES / "linked_wd.ttl"), "backend": "memory"},
        "mb": {"spec": str(FIXTURES / "linked_mb.ttl"), "store": "memory"},
    },
    "link": [
        {"from_kg": "wd", "to_kg": "mb", "kind": "same_as"},
        {
            "from_kg": "wd",
            "to_kg": "mb",
            "kind": "property",
            "relation": "P434",
            "template": "https://musicbrainz.org/artist/{value}",
        },
        {"from_kg": "wd", "to_kg": "mb", "kind": "label"},
    ],
}


@pytest.mark.parametrize(
    ("page", "after"),
    [
        ("docs/server.md", "Real text on the linked test fixtures"),
        ("docs/local-and-linked-kgs.md", "Real results on `tests/fixtures/linked_wd.ttl`"),
    ],
)
async def test_the_linked_examples_are_what_the_tools_return_on_the_fixtures(page, after):
    """The pages' examples over two linked KGs: the Wikidata- and MusicBrainz-shaped fixtures,
    linked by the three rules of docs/local-and-linked-kgs.md."""
    await _check_example_calls(Runtime.open(config=parse_config(LINKED_FIXTURES)), page, after)


SERVER_EXAMPLE = re.compile(
    r"Call: `(\w+)` with `(\{.*?\})`\n\nText content:\n```\n(.*?)\n```"
    r"(?:\n\nStructured content \(`structured_content`(?:, cut at (\d+) characters)?\):\n"
    r"```json\n(.*?)\n```)?",
    re.S,
)


async def test_the_example_results_in_docs_server_md_are_what_the_tools_return(embedded_kg):
    """Each ``Call: `TOOL` with `{json}``` of docs/server.md is called on the embedded KG: its text
    content is the one shown, and so is its structured content (or the part shown, when cut). A
    call on another KG (``wd:Q1299``, tests/test_server_sparql.py's fixture) is left to its test."""
    page = (REPO / "docs" / "server.md").read_text(encoding="utf-8")
    examples = [m for m in SERVER_EXAMPLE.finditer(page) if "wd:Q1299" not in m.group(2)]
    assert len(examples) >= 8
    async with inprocess_client(Runtime({"movies": embedded_kg})) as client:
        for m in examples:
            tool, args, text, cut, structured = m.groups()
            result = await client.call_tool(tool, json.loads(args))
            where = f"docs/server.md: {tool} {args}"
            assert HANDLE.sub("rH", text_of(result)) == HANDLE.sub("rH", text), where
            if structured:
                real = json.dumps(result.structured_content)
                real = real[: int(cut)] + " …" if cut else real
                assert HANDLE.sub("rH", real) == HANDLE.sub("rH", structured), where


async def test_the_tool_list_sizes_in_docs_tools_md_and_the_readme_are_measured(embedded_kg):
    """docs/tools.md's table of tool-list sizes (names + descriptions + input schemas) is what
    the server lists now, and the README quotes its default row."""
    page = (REPO / "docs" / "tools.md").read_text(encoding="utf-8")
    table = page[page.index("| server | tools | characters |") :]
    rows = [
        (cells[0].strip(), int(cells[1].strip(" *")), int(cells[2].strip(" *").replace(",", "")))
        for cells in (line.split("|")[1:4] for line in table.split("\n\n")[0].splitlines()[2:])
        if "before" not in cells[0]  # the old list, kept for comparison
    ]
    wd = {"wd": "wikidata:http://127.0.0.1:9/sparql"}  # configured, never contacted
    setups = {
        "the same, `default`": ({"movies": "embedded", **wd}, "default"),
        "the same, `--tools all`": ({"movies": "embedded", **wd}, "all"),
        "`--kg movies=embedded`, `default`": ({"movies": "embedded"}, "default"),
    }
    assert len(rows) >= 3
    for label, tools, chars in rows:
        kgs, profile = setups[label]
        runtime = Runtime.open(config=parse_config({"kgs": kgs, "server": {"tools": profile}}))
        async with inprocess_client(runtime) as client:
            listed = (await client.list_tools()).tools
        size = sum(
            len(t.name) + len(t.description or "") + len(json.dumps(t.input_schema)) for t in listed
        )
        assert (len(listed), size) == (tools, chars), f"docs/tools.md row {label}"
    default = next(
        f"{n} tools, {c:,} characters" for lb, n, c in rows if lb == "the same, `default`"
    )
    assert default in (REPO / "README.md").read_text(encoding="utf-8")


# -- command lines -----------------------------------------------------------------------------
def _command_lines() -> list[tuple[Path, str]]:
    """Every ``tot-mcp …`` / ``tot-search …`` line in a code block of the README and docs/
    (continuations joined, comments and a ``$`` prompt dropped)."""
    found = []
    for page in PAGES:
        for body in fenced(page):
            joined = re.sub(r"\\\n\s*", " ", body)
            for line in joined.splitlines():
                line = line.strip().removeprefix("$ ").split("  #")[0].strip()
                if re.match(r"(tot-mcp|tot-search)( |$)", line):
                    found.append((page, line))
    return found


def test_every_flag_in_a_documented_command_line_exists():
    parsers = {
        "tot-mcp": flags(server_parser()),
        "tot-search": flags(search_parser()),
        "tot-mcp load": flags(load_parser()),
    }
    lines = _command_lines()
    assert len(lines) > 20
    for page, line in lines:
        program = "tot-mcp load" if line.startswith("tot-mcp load") else line.split()[0]
        for token in shlex.split(line.replace("[", " ").replace("]", " "), posix=False):
            flag = token.split("=")[0]
            if flag.startswith("--") and len(flag) > 2:
                assert flag in parsers[program], f"{page.name}: {line!r}: {program} has no {flag}"


@pytest.mark.parametrize(
    ("heading", "parser"), [("### `tot-mcp`", server_parser), ("### `tot-search`", search_parser)]
)
def test_the_readme_flag_tables_are_the_parsers_flags(heading, parser):
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index(heading) :]
    table = section[section.index("| flag |") :]
    table = table[: table.index("\n\n")]
    cells = [re.split(r"(?<!\\)\|", row)[1] for row in table.splitlines()[2:]]
    cells = [c for c in cells if not c.strip().startswith("`load ")]  # tot-mcp load: its own parser
    listed = {f for cell in cells for f in re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", cell)}
    real = flags(parser()) - {"-h", "--help"}
    assert listed - real == set(), "flags in the README that the command does not have"
    assert real - listed == set(), "flags of the command missing from the README table"


def _transcripts() -> list:
    """Every ``$ tot-search …`` / ``$ tot-mcp …`` line in a code block of the README and docs/
    (continuations joined) with the output lines shown under it."""
    found = []
    for page in PAGES:
        for body in fenced(page):
            lines = re.sub(r"\\\n\s*", " ", body).splitlines()
            for i, line in enumerate(lines):
                if not re.match(r"\$ (tot-search|tot-mcp) ", line):
                    continue
                shown = []
                for out in lines[i + 1 :]:
                    if out.startswith("$ "):
                        break
                    shown.append(out)
                argv = shlex.split(line[2:])
                if any(
                    re.fullmatch(r"[\w./-]+\.toml", a) and not (REPO / a).exists() for a in argv
                ):
                    continue  # runs on a file of the reader's (a tot.toml shown beside it)
                where = f"{page.name}: {line}"
                found.append(pytest.param(where, argv, shown, id=where[:70]))
    return found


def _same_lines(shown: list[str], real: list[str]) -> bool:
    """``shown`` is how ``real`` begins: a line ``...`` stands for any lines, a line ending in
    ``...`` for any line that begins with the rest, and a latency for any latency."""

    def norm(line: str) -> str:
        return re.sub(r"latency: [\d.]+s", "latency: Ns", HANDLE.sub("rHANDLE", line))

    def same(want: str, got: str) -> bool:
        want, got = norm(want), norm(got)
        if want.endswith("..."):
            return got.startswith(want[:-3].rstrip())
        return want == got

    segments: list[list[str]] = [[]]
    for line in shown:
        if line.strip() == "...":
            segments.append([])
        else:
            segments[-1].append(line)
    at = 0
    for n, segment in enumerate(segments):
        starts = [at] if n == 0 else range(at, len(real) - len(segment) + 1)
        for start in starts:
            if all(
                start + k < len(real) and same(w, real[start + k]) for k, w in enumerate(segment)
            ):
                at = start + len(segment)
                break
        else:
            return False
    return True


@pytest.mark.parametrize(("where", "argv", "shown"), _transcripts())
def test_every_shown_command_transcript_is_what_the_command_prints(
    where, argv, shown, capsys, monkeypatch
):
    """A transcript (``$ tot-search "…"`` and the lines it printed) is run as written, from the
    repository: its lines are the real output's (those of ``../shared`` data need it beside the
    repository)."""
    import tot_mcp.server.cli as server_cli
    import tot_mcp.strategies.search_cli as search_cli

    monkeypatch.chdir(REPO)
    for arg in argv[1:]:
        value = arg.split("=", 1)[-1]
        if value.startswith("../shared/") and not Path(value).exists():
            pytest.skip(f"{value} is not beside the repository")
    program = search_cli if argv[0] == "tot-search" else server_cli
    monkeypatch.setattr(program, "freeze_loaded_objects", lambda: 0, raising=False)
    code = program.main(argv[1:])
    out, err = capsys.readouterr()
    real = (out if code == 0 else err).splitlines()
    assert _same_lines(shown, real), f"{where} drifted; it prints:\n" + "\n".join(real[:20])


# -- configuration keys ------------------------------------------------------------------------
def test_every_toml_example_in_the_docs_is_a_valid_config():
    examples = [(p, body) for p in PAGES for body in fenced(p, "toml")]
    examples += [(p, p.read_text(encoding="utf-8")) for p in (REPO / "examples").glob("*.toml")]
    assert len(examples) > 5
    for page, body in examples:
        data = tomllib.loads(body)
        if not set(data) <= set(
            Config.model_fields
        ):  # a different file (pyproject, --prices): not ours
            continue
        parse_config(data, f"{page.name} example")


def test_every_table_key_named_in_the_docs_exists():
    """``[server] max_sessions``, ``[llm] client_calls``, ``[strategy.tot] k``… written in prose."""
    tables = {key: field.annotation for key, field in Config.model_fields.items()}
    strategies = {s.name: s.options for s in REGISTRY.all()}
    named = 0
    for page in PAGES:
        for table, keys in re.findall(
            r"`\[([\w.]+)\] ([\w, ]+?)(?: =[^`]*)?`", page.read_text(encoding="utf-8")
        ):
            head, _, sub = table.partition(".")
            if head == "strategy":
                model = strategies.get(sub)
            elif head in ("kg", "kgs"):
                continue  # backend options and KG names
            else:
                model = tables.get(head)
            assert model is not None, f"{page.name}: no table [{table}]"
            for key in re.split(r",\s*", keys):
                named += 1
                assert key in model.model_fields, f"{page.name}: [{table}] has no key {key!r}"
    assert named > 5
