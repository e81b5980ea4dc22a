"""pytest plugin: real SPARQL servers for the SPARQL backend tests (``oxigraph serve`` on loopback).

Use with ``pytest_plugins = ["tests.oxigraph_fixture"]``. Each server loads one Turtle file into a
temporary store, binds 127.0.0.1 on a free port, and is stopped at the end of the session.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from net_helpers import FIXTURES, answers, free_port


def start_oxigraph(
    data: Path, store: Path, extra: Sequence[str] = ()
) -> tuple[subprocess.Popen, str]:
    """``oxigraph serve-read-only`` over ``data`` loaded into ``store``; ``extra``: more options
    (``--timeout-s``)."""
    exe = shutil.which("oxigraph")
    if exe is None:
        pytest.skip("the oxigraph binary is not installed (pip install oxigraph)")
    subprocess.run(
        [exe, "load", "--location", str(store), "--file", str(data)],
        check=True,
        capture_output=True,
    )
    port = free_port()
    proc = subprocess.Popen(
        [exe, "serve-read-only", "--location", str(store), "--bind", f"127.0.0.1:{port}", *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}/query"
    deadline = time.monotonic() + 15
    while not answers(url):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            err = proc.communicate()[1].decode(errors="replace")
            raise RuntimeError(f"oxigraph did not start on {url}: {err[:500]}")
        time.sleep(0.05)
    return proc, url


def _serve(data: Path, tmp: Path) -> Iterator[str]:
    proc, url = start_oxigraph(data, tmp / "store")
    with proc:  # on exit: closes the stderr pipe and reaps the process
        try:
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()


def serve_turtle(tmp: Path, turtle: str) -> Iterator[str]:
    """``oxigraph serve`` over a test's own Turtle text (written under ``tmp``): for a module-scoped
    fixture, ``yield from serve_turtle(tmp_path_factory.mktemp("name"), TEXT)``."""
    (tmp / "data.ttl").write_text(turtle, encoding="utf-8")
    (tmp / "srv").mkdir()
    yield from _serve(tmp / "data.ttl", tmp / "srv")


@pytest.fixture(scope="session")
def wikidata_sparql_url(tmp_path_factory) -> Iterator[str]:
    """A Wikidata-shaped endpoint serving tests/fixtures/wikidata_sample.ttl."""
    yield from _serve(FIXTURES / "wikidata_sample.ttl", tmp_path_factory.mktemp("oxigraph-wd"))


@pytest.fixture(scope="session")
def generic_sparql_url(tmp_path_factory) -> Iterator[str]:
    """A plain RDF endpoint serving tests/fixtures/generic_sample.ttl."""
    yield from _serve(FIXTURES / "generic_sample.ttl", tmp_path_factory.mktemp("oxigraph-generic"))


@pytest.fixture(scope="session")
def movies_sparql_url(tmp_path_factory) -> Iterator[str]:
    """The shared backend suite's graph (tests/fixtures/local_movies.ttl), for its generic-SPARQL
    run."""
    yield from _serve(FIXTURES / "local_movies.ttl", tmp_path_factory.mktemp("oxigraph-movies"))


@pytest.fixture(scope="session")
def values_url(tmp_path_factory) -> Iterator[str]:
    """A Wikidata-shaped endpoint with full statement nodes (precisions, units, coordinates),
    property labels, aliases and descriptions, and an IMDb ID:
    tests/fixtures/wikidata_values.ttl."""
    yield from _serve(FIXTURES / "wikidata_values.ttl", tmp_path_factory.mktemp("oxigraph-values"))
