"""Result handles: a short name for the set of entities a tool result reached, so the next call can say
``from_result="r1f3a9c07d2"`` instead of pasting 30–70 IDs back.

A handle is derived from the call that made it (tool, arguments, and the served KGs' fingerprint), never counted
up: the same call gives the same handle in every server process. A process that does not hold a handle — it
expired, was evicted, or another process behind a load balancer made it — refuses it with a message telling the
client to repeat that call, which recreates the same handle wherever it lands. Held in a bounded LRU with an age
limit.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kg_adapters.errors import InvalidInput

HANDLE_RE = re.compile(r"^r[0-9a-f]{10}$")


@dataclass(frozen=True)
class ResultSet:
    handle: str
    tool: str
    entity_ids: tuple[str, ...]
    created: float


class UnknownHandle(InvalidInput):
    """A handle this process does not hold (expired, evicted, or made elsewhere)."""


class HandleStore:
    def __init__(self, fingerprint: str, max_entries: int = 2000, ttl_seconds: float = 3600.0) -> None:
        if max_entries < 1 or ttl_seconds <= 0:
            raise InvalidInput("the result-handle store needs a size ≥ 1 and an age limit > 0")
        self.fingerprint = fingerprint
        self.max_entries = max_entries
        self.ttl = ttl_seconds
        self._sets: OrderedDict[str, ResultSet] = OrderedDict()

    def derive(self, tool: str, args: dict[str, Any]) -> str:
        canonical = json.dumps([self.fingerprint, tool, args], sort_keys=True, default=str, ensure_ascii=False)
        return "r" + hashlib.blake2b(canonical.encode(), digest_size=5).hexdigest()

    def put(self, tool: str, args: dict[str, Any], entity_ids: Sequence[str]) -> ResultSet:
        """Keep the entities a call reached under the handle derived from the call."""
        handle = self.derive(tool, args)
        rs = ResultSet(handle, tool, tuple(dict.fromkeys(entity_ids)), time.monotonic())
        self._sets[handle] = rs
        self._sets.move_to_end(handle)
        while len(self._sets) > self.max_entries:
            self._sets.popitem(last=False)
        return rs

    def get(self, handle: str) -> ResultSet:
        if not isinstance(handle, str) or not HANDLE_RE.match(handle.strip()):
            raise InvalidInput(f"from_result {handle!r} is not a result handle (they look like 'r1f3a9c07d2')")
        handle = handle.strip()
        rs = self._sets.get(handle)
        if rs is not None and time.monotonic() - rs.created > self.ttl:
            del self._sets[handle]
            rs = None
        if rs is None:
            raise UnknownHandle(
                f"result {handle} is unknown here (expired after {self.ttl:.0f} s, evicted, or made by another "
                "server process): repeat the call that returned it, which gives the same handle, then use it again"
            )
        self._sets.move_to_end(handle)
        return rs
