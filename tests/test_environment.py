"""The environment variables are read in one place (kg_adapters/environment.py) and come last: a
flag wins over the config, the config over the variable, the variable over the built-in default. An
empty variable is unset."""

from __future__ import annotations

import argparse
from pathlib import Path

from tot_mcp.strategies.settings import parse_config
from tot_mcp.kg_adapters.environment import Environment
from tot_mcp.kg_adapters.oxigraph_store import default_store_dir
from tot_mcp.server.cli import resolve_token
from tot_mcp.strategies.system import assemble

ROOT = Path(__file__).resolve().parents[1]


def test_the_cache_directory_is_the_variable_else_xdg_else_home(tmp_path):
    assert (
        Environment({"TOT_MCP_CACHE_DIR": str(tmp_path / "c"), "XDG_CACHE_HOME": "/x"}).cache_dir
        == tmp_path / "c"
    )
    assert Environment({"XDG_CACHE_HOME": str(tmp_path)}).cache_dir == tmp_path / "tot-mcp"
    assert (
        Environment({"TOT_MCP_CACHE_DIR": "", "XDG_CACHE_HOME": ""}).cache_dir
        == Path.home() / ".cache" / "tot-mcp"
    )


def test_stores_of_large_files_live_in_the_same_cache_directory(tmp_path):
    source = tmp_path / "big.nt"
    source.write_text("")
    store = default_store_dir(
        source, Environment({"TOT_MCP_CACHE_DIR": str(tmp_path / "c")}).cache_dir
    )
    assert store.parent == tmp_path / "c" / "stores" and store.name.startswith("big-")


def test_the_config_wins_over_the_environment_which_wins_over_the_default(embedded_kg, tmp_path):
    env = Environment(
        {"TOT_MCP_CACHE_DIR": str(tmp_path / "env"), "TOT_MCP_CROSS_ENCODER": "/env/ce"}
    )
    from_env = assemble({"movies": embedded_kg}, environment=env)
    assert (
        from_env.services.cache_dir == tmp_path / "env"
        and from_env.services.cross_encoder_path == "/env/ce"
    )
    config = parse_config(
        {"retrieval": {"cache_dir": "idx", "cross_encoder_path": "/cfg/ce"}}, base_dir=tmp_path
    )
    from_config = assemble({"movies": embedded_kg}, config, environment=env)
    assert from_config.services.cache_dir == tmp_path / "idx"
    assert from_config.services.cross_encoder_path == "/cfg/ce"
    unset = assemble(
        {"movies": embedded_kg}, environment=Environment({"XDG_CACHE_HOME": str(tmp_path)})
    )
    assert (
        unset.services.cross_encoder_path is None
        and unset.services.cache_dir == tmp_path / "tot-mcp"
    )


def test_the_token_is_the_flag_else_tot_mcp_token_else_the_variable_the_config_names():
    config = parse_config({"server": {"token_env": "MY_TOKEN"}})
    env = Environment({"TOT_MCP_TOKEN": "t1", "MY_TOKEN": "t2"})
    assert resolve_token(argparse.Namespace(token="flag"), config, env) == "flag"
    assert resolve_token(argparse.Namespace(token=None), config, env) == "t1"
    assert (
        resolve_token(argparse.Namespace(token=None), config, Environment({"MY_TOKEN": "t2"}))
        == "t2"
    )
    assert (
        resolve_token(argparse.Namespace(token=None), config, Environment({"TOT_MCP_TOKEN": ""}))
        is None
    )


def test_no_other_module_reads_the_environment():
    """Only environment.py reads variables; http_child copies them for a child process, embeddings
    sets defaults."""
    readers = []
    for folder in ("server", "kg_adapters", "strategies"):
        for path in (ROOT / folder).rglob("*.py"):
            for line in path.read_text(encoding="utf-8").splitlines():
                if ("os.environ" in line or "getenv" in line) and "setdefault" not in line:
                    readers.append(f"{path.relative_to(ROOT)}: {line.strip()}")
    assert all(
        r.startswith(("kg_adapters/environment.py", "server/http_child.py")) for r in readers
    ), readers
