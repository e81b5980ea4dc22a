"""Distribution (issue #14): the wheel, the Claude Desktop bundle (``manifest.json``) and the MCP
Registry entry (``server.json``).

Specification:

* the wheel built from ``pyproject.toml`` holds every file of the packages it ships, the run-time
  data included (the embedded KB, the prompt templates), and installed into a fresh environment it
  runs on its own: ``tot-mcp --check`` opens the embedded KG and one MCP call over stdio answers,
  with every module loaded from that environment, never from this checkout;
* ``manifest.json`` is a valid MCP Bundle (checked with the official ``mcpb`` CLI when it is in the
  npm cache), ``scripts/pack_mcpb.sh`` packs it with what the server needs, and its tool list is
  exactly the tools the server registers;
* ``server.json``, ``manifest.json``, the README's ``mcp-name`` line and ``pyproject.toml`` agree on
  the name, version, entry point and owner, so none of them can drift.

No network: the wheel is built with ``--no-build-isolation --no-index`` from the installed
setuptools, installed with ``--no-deps`` into a venv that reuses the running environment's
dependencies (a ``.pth`` file), and the ``mcpb`` CLI runs with ``npx --offline``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = PYPROJECT["project"]
VERSION = PROJECT["version"]
MANIFEST = json.loads((REPO / "manifest.json").read_text(encoding="utf-8"))
SERVER_JSON = json.loads((REPO / "server.json").read_text(encoding="utf-8"))
MCPB_CLI = "@anthropic-ai/mcpb@2.1.2"
REGISTRY_SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo", "*.egg-info")


PACKAGE_DIRS: dict[str, str] = PYPROJECT["tool"]["setuptools"][
    "package-dir"
]  # tot_mcp.server → server, …


def shipped_packages() -> list[Path]:
    """The repository directories ``[tool.setuptools.package-dir]`` installs under ``tot_mcp``."""
    return sorted(REPO / d for d in set(PACKAGE_DIRS.values()))


def package_files(root: Path = REPO) -> set[str]:
    """Every file of the shipped packages under ``root``, as repository paths, caches left out."""
    files = set()
    for pkg in shipped_packages():
        for path in (root / pkg.name).rglob("*"):
            rel = path.relative_to(root)
            if path.is_file() and not any(IGNORED(str(path.parent), [part]) for part in rel.parts):
                files.add(rel.as_posix())
    return files


def wheel_path(repo_path: str) -> str:
    """Where a repository file lands in the wheel: ``server/cli.py`` → ``tot_mcp/server/cli.py``."""
    top, _, rest = repo_path.partition("/")
    package = next(p for p, d in PACKAGE_DIRS.items() if d == top)
    return f"{package.replace('.', '/')}/{rest}"


def run(
    cmd: list[str], *, cwd: Path, env: dict[str, str] | None = None, timeout: float = 180
) -> subprocess.CompletedProcess:
    """Run a command and capture its output; the caller checks the exit code (and shows the output
    on failure)."""
    return subprocess.run(
        cmd,
        check=False,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def script_target(name: str) -> tuple[str, str]:
    """``[project.scripts] name = "module:function"`` → (module, function)."""
    module, _, function = PROJECT["scripts"][name].partition(":")
    return module, function


# -- the wheel -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def src(tmp_path_factory) -> Path:
    """A copy of what the wheel is built from, so no build/ or egg-info lands in the checkout."""
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    for pkg in shipped_packages():
        shutil.copytree(pkg, src / pkg.name, ignore=IGNORED)
    return src


@pytest.fixture(scope="module")
def wheel(src, tmp_path_factory) -> Path:
    """The wheel, built offline (no build isolation, no index) with the installed setuptools."""
    dist = tmp_path_factory.mktemp("dist")
    built = run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--disable-pip-version-check",
            "-w",
            str(dist),
            str(src),
        ],
        cwd=src,
    )
    assert built.returncode == 0, (
        f"pip wheel failed (setuptools>=77 installed?):\n{built.stdout}\n{built.stderr}"
    )
    wheels = list(dist.glob("tot_mcp-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh venv with only the wheel installed in it; the dependencies come from the environment
    running the tests (its site-packages directories, listed in a ``.pth`` file — not
    ``--system-site-packages``, which gives the *base* interpreter's packages and misses everything
    when the tests run in a virtual environment). Listed paths are added after the venv's own, and
    their ``.pth`` files are not run, so no editable install of the checkout leaks in."""
    import site

    root = tmp_path_factory.mktemp("venv")
    made = run([sys.executable, "-m", "venv", "--without-pip", str(root)], cwd=root)
    assert made.returncode == 0, made.stderr
    python = root / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    own = run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=root
    )
    parents = [p for p in [*site.getsitepackages(), site.getusersitepackages()] if Path(p).is_dir()]
    Path(own.stdout.strip(), "_tests_parent_env.pth").write_text(
        "\n".join(parents) + "\n", encoding="utf-8"
    )
    installed = run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-deps",
            "--no-index",
            "--ignore-installed",
            "--disable-pip-version-check",
            str(wheel),
        ],
        cwd=root,
    )
    assert installed.returncode == 0, f"{installed.stdout}\n{installed.stderr}"
    return root


def bin_of(venv: Path, name: str) -> Path:
    return (
        venv
        / ("Scripts" if os.name == "nt" else "bin")
        / (name + (".exe" if os.name == "nt" else ""))
    )


def clean_env() -> dict[str, str]:
    """This environment without anything that would point an interpreter at the checkout."""
    drop = {"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "TOT_MCP_TOKEN"}
    return {k: v for k, v in os.environ.items() if k not in drop}


def test_wheel_holds_every_package_file_and_the_runtime_data(src, wheel):
    dist_info = f"tot_mcp-{VERSION}.dist-info/"
    with zipfile.ZipFile(wheel) as zf:
        content = {n for n in zf.namelist() if not n.startswith(dist_info)}
        entry_points = zf.read(dist_info + "entry_points.txt").decode()
        metadata = zf.read(dist_info + "METADATA").decode()
    expected = {wheel_path(f) for f in package_files(src)}
    assert content == expected, (
        f"missing from the wheel: {sorted(expected - content)}; "
        f"unexpected: {sorted(content - expected)}"
    )
    # one package of our own: nothing generic (server, prompts, …) at the top of site-packages
    assert {n.split("/")[0] for n in content} == {"tot_mcp"}
    # What the code opens at run time through importlib.resources (kg_adapters/embedded.py,
    # prompts/__init__.py):
    prompts = {wheel_path(p.relative_to(REPO).as_posix()) for p in (REPO / "prompts").glob("*.txt")}
    assert prompts and prompts <= content
    assert {
        "tot_mcp/kg_adapters/data/metaqa_kb.txt.gz",
        "tot_mcp/kg_adapters/data/NOTICE.md",
        "tot_mcp/prompts/tot_system.txt",
    } <= content
    for name, target in PROJECT["scripts"].items():
        assert f"{name} = {target}" in entry_points
    assert f"Version: {VERSION}" in metadata
    # The README is the PyPI description, where the MCP Registry looks for the ownership line.
    assert f"mcp-name: {SERVER_JSON['name']}" in metadata


def test_install_md_states_the_wheels_size(wheel):
    page = (REPO / "docs" / "install.md").read_text(encoding="utf-8")
    stated = re.search(r"The wheel \(≈([\d.]+) MB", page)
    assert stated, "docs/install.md no longer states the wheel's size"
    # "≈": within a tenth of a megabyte, so a size near a rounding edge does not flip the page
    assert abs(float(stated.group(1)) - wheel.stat().st_size / 1e6) <= 0.1


def test_installed_wheel_runs_from_its_own_environment(venv, tmp_path):
    env = clean_env()
    probe = (
        "import importlib.metadata as md, importlib.util as iu, json; "
        "from tot_mcp import kg_adapters, prompts, server, strategies; import tot_mcp.server.cli "
        "as cli; print(json.dumps({'modules': [m.__file__ for m in (kg_adapters, prompts, server, "
        "cli, strategies)], 'generic': [n for n in ('server', 'prompts', 'strategies', "
        "'kg_adapters') if iu.find_spec(n)], 'dist': "
        "str(md.distribution('tot-mcp').locate_file('')), 'version': md.version('tot-mcp')}))"
    )
    out = run([str(bin_of(venv, "python")), "-c", probe], cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    assert found["generic"] == []  # another distribution's `server` cannot collide with ours
    root = venv.resolve()
    for path in [*found["modules"], found["dist"]]:
        assert Path(path).resolve().is_relative_to(root), f"{path} is not from the venv {root}"
        assert not Path(path).resolve().is_relative_to(REPO)
    assert found["version"] == VERSION

    version = run([str(bin_of(venv, "tot-mcp")), "--version"], cwd=tmp_path, env=env)
    assert version.returncode == 0 and version.stdout.strip() == f"tot-mcp {VERSION}"

    check = run([str(bin_of(venv, "tot-mcp")), "--check"], cwd=tmp_path, env=env)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "movies (memory): 43,234 entities, 133,582 triples" in check.stdout
    assert check.stdout.strip().splitlines()[-1] == "OK"


async def test_installed_wheel_answers_an_mcp_call_over_stdio(venv, tmp_path):
    params = StdioServerParameters(
        command=str(bin_of(venv, "tot-mcp")),
        args=["--kg", "movies=embedded"],
        env=clean_env(),
        cwd=str(tmp_path),
    )
    with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog:
        try:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                tools = {t.name for t in (await session.list_tools()).tools}
                result = await session.call_tool(
                    "initialize", {"query": "what movies did [Tom Hanks] star in", "limit": 3}
                )
        except BaseException:
            errlog.seek(0)
            sys.stderr.write("---- installed tot-mcp stderr ----\n" + errlog.read()[-4000:])
            raise
    # the embedded KG offers every tool but the SPARQL ones (no SPARQL there); the manifest lists
    # those too
    assert tools == {t["name"] for t in MANIFEST["tools"]} - {"sparql_query"}
    assert not result.is_error
    top = result.structured_content["entities"][0]["entity"]
    assert (top["id"], top["label"]) == ("movies:E1407", "Tom Hanks")


# -- the Claude Desktop bundle ---------------------------------------------------------------------
async def test_manifest_lists_exactly_the_tools_the_server_registers(tmp_path):
    from mcp_client import inprocess_client

    from tot_mcp.kg_adapters.graph import Graph
    from tot_mcp.kg_adapters.memory import MemoryKG
    from tot_mcp.kg_adapters.triples_file import load_triples_file
    from tot_mcp.server.runtime import Runtime

    from tot_mcp.kg_adapters.sparql import EndpointRegistry, open_sparql_kg

    path = tmp_path / "mini.txt"
    path.write_text("Ada Lovelace|collaborated_with|Charles Babbage\n", encoding="utf-8")
    # a bundle user may configure a SPARQL KG (wd=wikidata), which adds the SPARQL tools: the
    # manifest lists those too (the endpoint is configured, never contacted)
    wd = Graph(
        open_sparql_kg("wd", "wikidata", "http://127.0.0.1:9/sparql", registry=EndpointRegistry())
    )
    mini = Graph(MemoryKG("mini", load_triples_file(path)))
    async with inprocess_client(Runtime({"mini": mini, "wd": wd})) as client:
        tools = (await client.list_tools()).tools
    registered = [t.name for t in tools]
    listed = [t["name"] for t in MANIFEST["tools"]]
    assert len(listed) == len(set(listed)), "a tool is listed twice in manifest.json"
    assert set(listed) == set(registered), (
        f"add to manifest.json: {sorted(set(registered) - set(listed))}; "
        f"remove: {sorted(set(listed) - set(registered))}"
    )
    titles = {
        t.name: f"{t.title}." for t in tools
    }  # each tool described by its title in the server
    assert {t["name"]: t["description"] for t in MANIFEST["tools"]} == titles


def test_manifest_agrees_with_pyproject():
    assert MANIFEST["name"] == PROJECT["name"]
    assert MANIFEST["version"] == VERSION
    assert MANIFEST["manifest_version"] == "0.4"  # the first with server type "uv" (mcpb 2.1.2)
    assert MANIFEST["license"] == PROJECT["license"]
    server = MANIFEST["server"]
    assert (
        server["type"] == "uv"
    )  # Claude Desktop installs the dependencies from the bundled pyproject.toml
    module, function = script_target("tot-mcp")
    package, _, name = module.rpartition(
        "."
    )  # tot_mcp.server.cli → server/cli.py, the bundle's repository layout
    assert server["entry_point"] == f"{PACKAGE_DIRS[package]}/{name}.py"
    assert (REPO / server["entry_point"]).is_file()
    import importlib

    assert callable(getattr(importlib.import_module(module), function))
    config = server["mcp_config"]
    assert config["command"] == "uv"
    args = config["args"]
    assert (
        args[:3] == ["run", "--directory", "${__dirname}"] and args[3] == "tot-mcp"
    )  # the [project.scripts] name
    assert args[4:] == ["--kg", "${user_config.kg}"]
    assert MANIFEST["compatibility"]["runtimes"]["python"] == PROJECT["requires-python"]


def test_manifest_user_config_maps_into_the_server():
    from tot_mcp.kg_adapters.spec import parse_kg_arg
    from tot_mcp.server.cli import TOKEN_ENV

    user = MANIFEST["user_config"]
    config = MANIFEST["server"]["mcp_config"]
    used = set(re.findall(r"\$\{user_config\.(\w+)\}", json.dumps(config)))
    assert used == set(user), (
        f"user_config keys never used: {set(user) - used}; undefined: {used - set(user)}"
    )
    kg = user["kg"]
    assert kg["type"] == "string" and kg["required"] is True and kg["default"] == "movies=embedded"
    assert parse_kg_arg(kg["default"]).kind == "embedded"
    assert (
        config["env"][TOKEN_ENV] == "${user_config.token}"
    )  # the variable server/cli.py reads the token from
    assert user["token"]["sensitive"] is True and user["token"].get("required") is False
    assert config["env"]["ANTHROPIC_API_KEY"] == "${user_config.anthropic_api_key}"
    assert user["anthropic_api_key"]["sensitive"] is True
    # llm=openai reads these three (strategies/llm/openai_llm.py); the key is a secret, the others
    # are not
    assert {
        k: config["env"][k] for k in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "TOT_OPENAI_MODEL")
    } == {
        "OPENAI_API_KEY": "${user_config.openai_api_key}",
        "OPENAI_BASE_URL": "${user_config.openai_base_url}",
        "TOT_OPENAI_MODEL": "${user_config.openai_model}",
    }
    assert (
        user["openai_api_key"]["sensitive"] is True and "sensitive" not in user["openai_base_url"]
    )


def _mcpb_command() -> list[str]:
    """``npx --offline`` running the pinned mcpb CLI from the npm cache, or skip saying how to get
    it there."""
    npx = shutil.which("npx")
    if npx is None:
        pytest.skip("npx (Node.js) is not installed: the MCP Bundle CLI cannot run")
    cmd = [npx, "--offline", "-y", MCPB_CLI]
    probe = run([*cmd, "--version"], cwd=REPO, timeout=120)
    if probe.returncode != 0 or probe.stdout.strip() != MCPB_CLI.rsplit("@", 1)[1]:
        pytest.skip(
            f"{MCPB_CLI} is not in the npm cache (tests stay offline): run `npx -y {MCPB_CLI} "
            "--help` once"
        )
    return cmd


def test_mcpb_cli_validates_the_manifest(tmp_path):
    cmd = _mcpb_command()
    ok = run([*cmd, "validate", str(REPO / "manifest.json")], cwd=tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "Manifest schema validation passes" in ok.stdout
    broken = dict(
        MANIFEST, server=dict(MANIFEST["server"], type="ruby")
    )  # the validator does reject
    (tmp_path / "manifest.json").write_text(json.dumps(broken), encoding="utf-8")
    assert run([*cmd, "validate", str(tmp_path / "manifest.json")], cwd=tmp_path).returncode != 0


def test_pack_script_bundles_what_the_server_needs(tmp_path):
    cmd = _mcpb_command()
    before = (REPO / "server.json").read_bytes()
    out = tmp_path / "tot-mcp.mcpb"
    env = dict(os.environ, MCPB=" ".join(cmd), PYTHON=sys.executable)
    packed = run(
        ["bash", str(REPO / "scripts" / "pack_mcpb.sh"), "--out", str(out), "--no-record"],
        cwd=tmp_path,
        env=env,
    )
    assert packed.returncode == 0, packed.stdout + packed.stderr
    assert (
        REPO / "server.json"
    ).read_bytes() == before  # --no-record leaves the registry entry alone
    with zipfile.ZipFile(out) as zf:
        names = set(zf.namelist())
        assert json.loads(zf.read("manifest.json")) == MANIFEST
        assert tomllib.loads(zf.read("pyproject.toml").decode())["project"] == PROJECT
    assert {"README.md", "pyproject.toml", "manifest.json"} | package_files() == names


# -- the MCP Registry entry ------------------------------------------------------------------------
def test_server_json_agrees_with_pyproject_manifest_and_readme():
    s = SERVER_JSON
    assert s["$schema"] == REGISTRY_SCHEMA
    assert re.fullmatch(r"[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+", s["name"]) and 3 <= len(s["name"]) <= 200
    owner = re.fullmatch(r"io\.github\.([A-Za-z0-9-]+)/" + re.escape(PROJECT["name"]), s["name"])
    assert owner, f"name {s['name']!r} is not io.github.<owner>/{PROJECT['name']}"
    owner = owner.group(1)
    assert 1 <= len(s["description"]) <= 100
    assert s["version"] == VERSION
    repo_url = f"https://github.com/{owner}/{PROJECT['name']}"
    assert s["repository"] == {"url": repo_url, "source": "github"}
    assert MANIFEST["repository"]["url"] == repo_url

    by_type = {p["registryType"]: p for p in s["packages"]}
    assert len(by_type) == len(s["packages"]) == 2
    pypi = by_type["pypi"]
    assert pypi["identifier"] == PROJECT["name"] and pypi["version"] == VERSION
    assert pypi["runtimeHint"] == "uvx" and pypi["transport"] == {"type": "stdio"}
    assert pypi.get("registryBaseUrl", "https://pypi.org") == "https://pypi.org"
    assert [a["name"] for a in pypi["packageArguments"]] == ["--kg"]
    bundle = by_type["mcpb"]
    assert bundle["identifier"] == f"{repo_url}/releases/download/v{VERSION}/tot-mcp.mcpb"
    assert "mcp" in bundle["identifier"]  # the registry's rule for bundle URLs
    assert re.fullmatch(
        r"[a-f0-9]{64}", bundle["fileSha256"]
    )  # required for mcpb; scripts/pack_mcpb.sh writes it
    assert bundle.get("version", VERSION) == VERSION and bundle["transport"] == {"type": "stdio"}

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    names = re.findall(r"mcp-name:\s*([^\s<>]+?)(?=\s|-->|<|$)", readme)
    assert names == [s["name"]], f"README mcp-name lines {names} != server.json name {s['name']!r}"
