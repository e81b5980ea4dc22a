"""``tot-mcp`` command line: exit codes and messages. Bad input → one line on stderr, exit code 2,
no traceback."""

from __future__ import annotations

import socket
import subprocess

import pytest
from mcp_client import REPO, SERVER_CMD, server_env

from tot_mcp.server import __version__
from tot_mcp.server.cli import main


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*SERVER_CMD, *args],
        cwd=REPO,
        env=server_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def test_version():
    result = run("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"tot-mcp {__version__}"


def test_check_summarises_the_default_embedded_kg_and_exits_0():
    result = run("--check", "--max-edges", "20")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "movies (memory): 43,234 entities, 133,582 triples, 9 relations"
    assert any(line.startswith("  relations: movies:starred_actors [33,718]") for line in lines)
    assert "max_edges=20" in result.stdout and lines[-1] == "OK"


def test_check_reads_kgs_and_limits_from_a_toml_config(tmp_path):
    kb = tmp_path / "tiny.txt"
    kb.write_text("Ada Lovelace|collaborated_with|Charles Babbage\n")
    config = tmp_path / "tot.toml"
    config.write_text('[kgs]\ntiny = "tiny.txt"\n\n[limits]\nmax_ids = 7\nmax_edges = 9\n')
    result = run("--config", str(config), "--check", "--max-edges", "11")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(
        "tiny (memory): 2 entities, 1 triples, 1 relations"
    )  # path relative to config
    assert (
        "max_ids=7" in result.stdout and "max_edges=11" in result.stdout
    )  # flags win over the file


def _busy_port() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    return sock


@pytest.mark.parametrize(
    "args,message",
    [
        (["--no-such-flag"], "unrecognized arguments: --no-such-flag"),
        (["--kg", "movies"], "give NAME=SPEC, e.g. movies=embedded"),
        (["--kg", "=embedded"], "NAME is empty"),
        (["--kg", "1bad=embedded"], "KG name '1bad'"),
        (["--kg", "x=/no/such/file.ttl"], "no such file"),
        (["--kg", "x=sparql:ftp://example.org"], "must be an http(s) URL"),
        (["--kg", "a=embedded", "--kg", "a=embedded"], "given twice"),
        (["--transport", "carrier-pigeon"], "invalid choice: 'carrier-pigeon'"),
        (["--transport", "http", "--port", "70000"], "port 70000 is out of range"),
        (["--transport", "http", "--port", "eighty"], "port 'eighty' is not an integer"),
        (["--max-edges", "0"], "0 must be ≥ 1"),
        (["--config", "/no/such/config.toml"], "no such config file"),
        (["--log-level", "LOUD"], "invalid choice"),
    ],
)
def test_bad_arguments_give_one_clear_line_and_exit_2(args, message, capsys):
    code = main(
        args
    )  # in-process: the same code path as the console script, minus the interpreter start
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    err = err.strip()
    assert err.startswith("tot-mcp: error: ") and message in err, err
    assert "\n" not in err and "Traceback" not in err
    assert out == ""


def test_the_console_script_exits_with_code_2_on_bad_arguments():
    result = run("--kg", "movies")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == (
        "tot-mcp: error: --kg movies: no such file, nor a KG kind (embedded, store:PATH, "
        "sparql:URL, wikidata, wikidata:URL); to name a KG, give NAME=SPEC, e.g. movies=embedded\n"
    )


def test_bad_config_file_and_unknown_limit_key(tmp_path):
    broken = tmp_path / "broken.toml"
    broken.write_text("[limits\nmax_ids = 3\n")
    unknown = tmp_path / "unknown.toml"
    unknown.write_text("[limits]\nmax_widgets = 3\n")
    for path, message in [(broken, "invalid TOML"), (unknown, "limits.max_widgets: unknown key")]:
        result = run("--config", str(path), "--check")
        assert (
            result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr
        )
        assert len(result.stderr.strip().splitlines()) == 1


def test_a_port_already_in_use_is_a_clear_error():
    busy = _busy_port()
    try:
        result = run("--transport", "http", "--port", str(busy.getsockname()[1]))
    finally:
        busy.close()
    assert result.returncode == 2
    assert "cannot listen on 127.0.0.1:" in result.stderr and "Traceback" not in result.stderr


def test_a_bare_kg_file_is_served_named_after_the_file_as_tot_search_names_it():
    """``--kg PATH`` works as in ``tot-search`` (one parser): the KG is named after its file."""
    fixture = REPO / "tests" / "fixtures" / "local_movies.nt"
    result = run("--kg", str(fixture), "--check")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("local_movies (memory): ")


def test_a_malformed_triples_file_is_reported_with_its_line(tmp_path):
    kb = tmp_path / "bad.txt"
    kb.write_text("a|r|b\njust one field\n")
    result = run("--kg", f"bad={kb}", "--check")
    assert result.returncode == 2
    assert f"{kb}:2" in result.stderr and "Traceback" not in result.stderr


def test_check_fails_for_an_endpoint_that_does_not_answer():
    """`--check` is the one command that says whether the configured KGs work: an endpoint nobody
    answers on is a FAILED line and exit 1, not 'endpoint not answering' followed by OK."""
    import socket

    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = run("--kg", f"down=sparql:http://127.0.0.1:{port}/query", "--check", timeout=180)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "down: FAILED: endpoint not answering" in result.stdout
    assert "opened" not in result.stdout  # no line that reads as success after the failure
    assert (
        result.stdout.rstrip().endswith("1 KG(s) or link rule(s) failed")
        and "Traceback" not in result.stderr
    )


def test_check_fails_for_the_empty_store_a_failed_load_leaves(tmp_path):
    """A load that stops at a syntax error exits 2; the store it created is empty, and --check says
    so instead of OK (every call on it would find nothing)."""
    bad = tmp_path / "bad.nt"
    bad.write_text('<a> <b> <c> .\n<a> <b> "unterminated .\n', encoding="utf-8")
    store = tmp_path / "kg.store"
    loaded = run("load", str(bad), "--into", str(store), "--quiet")
    checked = run("--kg", f"x=store:{store}", "--check")
    assert loaded.returncode == 2 and "could not parse" in loaded.stderr
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert (
        "x: FAILED: the KG is empty (0 triples)" in checked.stdout
        and "Traceback" not in checked.stderr
    )


def test_check_fails_for_a_store_whose_load_stopped_half_way(tmp_path):
    """#36 (low): a load that committed 2,000 triples and then stopped at a bad line passed --check
    ("OK")."""
    bad = tmp_path / "half.nt"
    good = "".join(f"<http://x/e{i}> <http://x/r> <http://x/e{i + 1}> .\n" for i in range(2000))
    bad.write_text(good + '<a> <b> "unterminated .\n', encoding="utf-8")
    store = tmp_path / "kg.store"
    loaded = run("load", str(bad), "--into", str(store), "--quiet", "--chunk-lines", "500")
    checked = run("--kg", f"x=store:{store}", "--check")
    assert loaded.returncode == 2, loaded.stderr
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert f"x: FAILED: the load into {store} stopped before the end of half.nt" in checked.stdout
    assert "\nOK" not in checked.stdout
