"""Shared fixtures, kept minimal: where the benchmark data is, and the embedded KG loaded once per
session."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
SHARED = REPO.parent / "shared"
BENCHMARKS = SHARED / "benchmarks"

if str(TESTS) not in sys.path:  # so tests can `from mcp_client import stdio_session`
    sys.path.insert(0, str(TESTS))


def require_benchmarks(*parts: str) -> Path:
    """The path ``../shared/benchmarks/<parts>``, or skip the test with the reason if it is not
    there."""
    path = BENCHMARKS.joinpath(*parts)
    if not path.exists():
        pytest.skip(
            f"benchmark data not found at {path} (expected ../shared/benchmarks beside the repo)"
        )
    return path


@pytest.fixture(scope="session")
def benchmarks_dir() -> Path:
    return require_benchmarks()


@pytest.fixture(scope="session")
def embedded_kg():
    """The shipped MetaQA movie KG as ``movies`` (a MemoryKG behind its Graph; ~3 s to load, so once
    per session)."""
    from tot_mcp.kg_adapters.embedded import load_embedded
    from tot_mcp.kg_adapters.graph import Graph

    return Graph(load_embedded())
