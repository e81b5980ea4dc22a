"""One composition root (strategies/system.py): tot-mcp, tot-search and the benchmarks build the
same system from the same --config — the same KGs with their options, limits and result cache, the
same link rules, the same retrieval settings."""

from __future__ import annotations

from pathlib import Path

from tot_mcp.strategies.settings import load_config
from tot_mcp.server.runtime import Runtime
from tot_mcp.strategies import search_cli
from tot_mcp.strategies.system import build_system

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def shape(kgs, graph, services, limits):
    return {
        "kgs": {
            n: (type(k).__name__, type(k.store).__name__, k.cache is not None, k.backend, k.limits)
            for n, k in kgs.items()
        },
        "rules": [r.describe() for r in graph.linker.rules],
        "limits": limits,
        "cross_encoder": services.cross_encoder_path,
        "build_limit": services.build_limit,
        "cache_dir": services.cache_dir,
    }


async def test_the_server_and_tot_search_build_the_same_system_from_one_config(
    tmp_path, monkeypatch
):
    monkeypatch.delenv("TOT_MCP_CROSS_ENCODER", raising=False)
    config_file = tmp_path / "kgs.toml"
    config_file.write_text(
        f"""
[kg.movies]
spec = "{FIXTURES / "local_movies.ttl"}"
backend = "oxigraph"
store = "memory"
[kg.mini]
spec = "{FIXTURES / "local_movies.nt"}"
[[link]]
from_kg = "movies"
to_kg = "mini"
kind = "label"
[limits]
max_edges = 77
[retrieval]
cross_encoder_path = "/models/ce"
build_limit = 123
cache_dir = "idx"
""",
        encoding="utf-8",
    )
    config = load_config(config_file)
    runtime = Runtime.open([], None, config)
    cli_args = search_cli.build_parser().parse_args(["q [x]", "--config", str(config_file)])
    cli = search_cli.open_system(cli_args, search_cli.load_cli_config(cli_args))
    bench = build_system(config=config)
    try:
        server_shape = shape(runtime.kgs, runtime.graph, runtime.services, runtime.limits)
        assert server_shape == shape(cli.kgs, cli.graph, cli.services, cli.limits)
        assert server_shape == shape(bench.kgs, bench.graph, bench.services, bench.limits)
        # the store does I/O: it reads through the result cache; the RDF file, in memory, without it
        assert server_shape["kgs"]["movies"][:3] == ("Graph", "OxigraphKG", True)
        assert server_shape["kgs"]["mini"][:3] == ("Graph", "RdfFileKG", False)
        assert (
            server_shape["limits"].max_edges == 77 and server_shape["cross_encoder"] == "/models/ce"
        )
        assert (
            server_shape["cache_dir"] == tmp_path / "idx"
        )  # relative to the config file, in every entry point
    finally:
        await runtime.aclose()
        await cli.aclose()
        await bench.aclose()


def test_the_kgs_opened_and_the_kgs_stamped_are_the_same_ones(tmp_path):
    """open_configured and content_stamp both ask served_kgs: a --kg replaces the config's KG of its
    name in both, and with no KG named anywhere both mean the embedded one."""
    import pytest

    from tot_mcp.kg_adapters.config import served_kgs
    from tot_mcp.strategies.settings import parse_config
    from tot_mcp.kg_adapters.errors import InvalidInput
    from tot_mcp.kg_adapters.spec import make_spec
    from tot_mcp.strategies.system import content_stamp, open_configured

    config = parse_config({"kgs": {"m": str(FIXTURES / "local_movies.ttl")}})
    flag = make_spec("m", str(FIXTURES / "local_movies.nt"))
    assert served_kgs([flag], config)["m"] == (flag, {})
    assert "local_movies.nt" in content_stamp(
        [flag], config
    ) and "local_movies.ttl" not in content_stamp([flag], config)
    opened = open_configured([flag], config, cache_weight=0)["m"]
    assert opened.store.source.name == "local_movies.nt"
    assert list(served_kgs()) == ["movies"] and content_stamp().startswith("movies=embedded")
    with pytest.raises(InvalidInput, match="given twice"):
        served_kgs([flag, flag])
