"""The TOML configuration: KGs with backend options, link rules between them, limits, server and LLM
settings — and one clear error naming the file and the key for anything wrong."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tot_mcp.kg_adapters.config import open_kgs
from tot_mcp.strategies.settings import load_config, parse_config
from tot_mcp.kg_adapters.errors import InvalidInput
from tot_mcp.kg_adapters.memory import MemoryKG
from tot_mcp.kg_adapters.oxigraph_store import OxigraphKG
from tot_mcp.kg_adapters.spec import make_spec, parse_kg_arg, parse_kg_args
from tot_mcp.server.runtime import Runtime

FIXTURES = Path(__file__).resolve().parent / "fixtures"

LINKED = f"""
[kg.wd]
spec = "{FIXTURES / "linked_wd.ttl"}"
languages = ["en"]

[kg.mb]
spec = "linked_mb.ttl"
store = "mb.store"

[kgs]
movies = "{FIXTURES / "local_movies.nt"}"

[[link]]
from_kg = "wd"
to_kg = "mb"
kind = "property"
relation = "P434"
template = "https://musicbrainz.org/artist/{{value}}"

[[link]]
from_kg = "wd"
to_kg = "mb"
kind = "label"

[limits]
max_edges = 7

[server]
transport = "http"
port = 8123
token_env = "MY_TOKEN"

[llm]
backend = "anthropic"
model = "claude-sonnet-4-5"
"""


@pytest.mark.parametrize(
    ("arg", "name", "kind"),
    [
        ("movies=embedded", "movies", "embedded"),
        ("embedded", "movies", "embedded"),  # the embedded KG's name wherever it is served
        ("wikidata", "wikidata", "wikidata"),
        (f"films={FIXTURES / 'local_movies.nt'}", "films", "file"),
        (str(FIXTURES / "local_movies.nt"), "local_movies", "file"),  # named after its file
        ("store:/data/kb.store", "kb", "store"),
        ("sparql:http://127.0.0.1:9/q?graph=x", None, "sparql"),  # '=' in a URL names nothing
    ],
)
def test_a_kg_flag_is_name_equals_spec_or_a_bare_spec(arg, name, kind):
    """``tot-mcp --kg`` and ``tot-search --kg`` take the same forms, through this one parser."""
    spec = parse_kg_arg(arg)
    assert spec.kind == kind and (name is None or spec.name == name), spec


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["movies"], "--kg movies: no such file, nor a KG kind"),
        (["movies"], "to name a KG, give NAME=SPEC, e.g. movies=embedded"),
        (["=embedded"], "--kg '=embedded': NAME is empty"),
        (["1bad=embedded"], "KG name '1bad': use a letter"),
        (["/no/such/graph.ttl"], "--kg /no/such/graph.ttl: no such file"),  # as typed
        (["a/g.nt", "b/g.nt"], "KG name 'g' is given twice"),
    ],
)
def test_a_bad_kg_flag_is_one_line_quoting_it_as_typed(args, message, tmp_path):
    for arg in args:  # two files of one name in two folders
        if "/" in arg and not arg.startswith("/"):
            (tmp_path / arg).parent.mkdir(exist_ok=True)
            (tmp_path / arg).write_text((FIXTURES / "local_movies.nt").read_text())
    paths = [str(tmp_path / a) if "/" in a and not a.startswith("/") else a for a in args]
    with pytest.raises(InvalidInput) as e:
        parse_kg_args(paths)
    assert message in str(e.value), e.value


def write(tmp_path: Path, text: str, name: str = "tot.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_full_config_opens_every_kg_and_links_them_by_its_rules(tmp_path):
    (tmp_path / "linked_mb.ttl").write_bytes(
        (FIXTURES / "linked_mb.ttl").read_bytes()
    )  # relative to the config
    config = load_config(write(tmp_path, LINKED))
    assert (
        config.server.transport == "http"
        and config.server.port == 8123
        and config.server.token_env == "MY_TOKEN"
    )
    assert config.llm.model == "claude-sonnet-4-5"
    kgs = open_kgs(config=config)
    assert list(kgs) == ["movies", "wd", "mb"]  # no extra KG: the members themselves are linked
    assert isinstance(kgs["wd"].store, MemoryKG) and isinstance(kgs["mb"].store, OxigraphKG)
    assert (
        tmp_path / "mb.store"
    ).is_dir()  # the store path was resolved against the config's folder
    assert kgs["wd"].limits.max_edges == 7
    linked = Runtime(kgs, config=config).graph
    assert [r.kind for r in linked.linker.rules] == [
        "property",
        "label",
    ]  # the explicit rules, no default
    beatles = asyncio.run(linked.initialize("[The Beatles]"))[0].entity.id
    assert beatles.startswith("wd:")
    assert asyncio.run(linked.describe_entity(beatles)).same_as == [
        "mb:b10bbbfc-cf9e-42e0-be17-e2c3e1d2600d"
    ]


def test_command_line_kgs_replace_configured_ones_of_the_same_name(tmp_path):
    config = parse_config(
        {
            "kg": {
                "movies": {
                    "spec": str(FIXTURES / "local_movies.ttl"),
                    "backend": "oxigraph",
                    "store": "memory",
                }
            }
        }
    )
    kgs = open_kgs([make_spec("movies", str(FIXTURES / "local_movies.nt"))], config)
    assert isinstance(kgs["movies"].store, MemoryKG)


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('[kg.x]\nspec = "embedded"\n[limits]\nmax_edgez = 3\n', r"limits.max_edgez: unknown key"),
        ("[limits]\nmax_edges = 0\n", r"limits.max_edges: .*greater than or equal to 1"),
        ('[server]\ntransport = "carrier-pigeon"\n', r"server.transport"),
        ("[server]\nport = 70000\n", r"server.port"),
        ("[surprise]\nx = 1\n", r"surprise: unknown key"),
        ('[kg.x]\nbackend = "memory"\n', r"kg.x.spec: missing \(required\)"),
        ("[limits]\nmax_edgse = 3\n", r"limits.max_edgse: unknown key; did you mean max_edges\?"),
        ("[sever]\nport = 1\n", r"sever: unknown key; did you mean server\?"),
        (
            '[kg.m]\nspce = "embedded"\n',
            r"kg.m.spec: missing; kg.m.spce is there — a misspelling of spec\?",
        ),
        (
            '[kgs.m]\nspec = "embedded"\n',
            r"kgs.m: expected a string in quotes, got a table .*\[kg.m\] table",
        ),
        ('[server]\nport = "eighty"\n', r"server.port: expected a whole number, got 'eighty'"),
        ('[server]\nlog_level = "loud"\n', r"server.log_level: .*DEBUG, INFO"),
        ('[[link]]\nfrom_kg = "a"\nto_kg = "b"\nkind = "property"\n', r"link.0: .*relation"),
        ('[kg."bad name"]\nspec = "embedded"\n', r"KG name 'bad name'"),
        ("this is = not toml [", r"invalid TOML"),
        ('[llm]\nbackend = "antropic"\n', r"llm.backend: no LLM backend 'antropic'; did you mean"),
        ('[llm]\nbackend = "gpt"\n', r"llm.backend: .*\(known: anthropic, openai, sampling"),
    ],
)
def test_bad_configs_name_the_file_and_the_key(tmp_path, toml, message):
    path = write(tmp_path, toml)
    with pytest.raises(InvalidInput, match=message) as err:
        load_config(path)
    assert str(path) in str(err.value)


def test_bad_backend_options_and_links_fail_when_opening(tmp_path):
    bad_option = parse_config(
        {"kg": {"m": {"spec": str(FIXTURES / "local_movies.ttl"), "colour": "blue"}}}
    )
    with pytest.raises(InvalidInput, match="unknown option.*colour"):
        open_kgs(config=bad_option)
    dangling = parse_config(
        {
            "kgs": {"m": str(FIXTURES / "local_movies.ttl")},
            "link": [{"from_kg": "m", "to_kg": "other", "kind": "label"}],
        }
    )
    with pytest.raises(InvalidInput, match="names KG 'other', which is not configured"):
        Runtime(open_kgs(config=dangling), config=dangling)
    with pytest.raises(InvalidInput, match="no such config file"):
        load_config(tmp_path / "missing.toml")
    with pytest.raises(InvalidInput, match="no such file"):
        open_kgs(config=parse_config({"kgs": {"m": "nowhere.ttl"}}, base_dir=tmp_path))


def test_every_backend_refuses_a_misspelt_option_and_names_the_valid_ones(tmp_path):
    """One kind of option model for every KG backend (kg_adapters/backends.py), the embedded KG
    included."""
    store = tmp_path / "store"
    store.mkdir()
    for spec in (
        "embedded",
        str(FIXTURES / "local_movies.ttl"),
        "sparql:http://127.0.0.1:9/q",
        f"store:{store}",
    ):
        config = parse_config({"kg": {"m": {"spec": spec, "langauges": ["en"]}}})
        with pytest.raises(
            InvalidInput,
            match=r"\[kg.m\]: unknown option 'langauges'(; did you mean languages\?)? \(valid ",
        ):
            open_kgs(config=config)


def test_a_third_party_backend_is_one_registration(tmp_path):
    """A new KG kind: one Backend object, registered (or named in the entry-point group
    tot_mcp.kg_backends); specs, options and --config then work as for the built-in ones."""
    from tot_mcp.kg_adapters.backends import Backend, Backends, NoOptions
    from tot_mcp.kg_adapters.files import open_file_kg

    backends = Backends()
    opened = []
    data = tmp_path / "echo.txt"
    data.write_text("Echo|says|hello\n", encoding="utf-8")

    def open_echo(name, target, limits, options):
        opened.append(target)
        return open_file_kg(name, data, limits)

    backends.register(
        Backend(kind="echo", summary="test", target="url", options=NoOptions, open=open_echo)
    )
    assert backends.resolve("e", "echo:https://example.org") == ("echo", "https://example.org")
    assert backends.split("./echo.ttl") == ("file", "./echo.ttl")
    with pytest.raises(InvalidInput, match="endpoint must be an http"):
        backends.resolve("e", "echo:ftp://x")
    kg = backends.get("echo").open("e", "https://example.org", None, NoOptions())
    assert opened == ["https://example.org"] and kg.name == "e"
