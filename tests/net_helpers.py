"""Loopback helpers shared by the SPARQL-server fixture and the fault-recovery tests (a plain
module, not a pytest plugin, so tests can import it without pytest warning about assertion
rewriting)."""

from __future__ import annotations

import socket
import urllib.parse
import urllib.request
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def answers(url: str) -> bool:
    try:
        q = urllib.parse.urlencode({"query": "ASK { ?s ?p ?o }"})
        with urllib.request.urlopen(f"{url}?{q}", timeout=1) as r:
            return r.status == 200
    except OSError:
        return False
