"""Result handles: a short name for the set of entities a tool result reached, so the next call can
say ``from_result="r1f3a9c07d2"`` instead of pasting 30–70 IDs back.

A handle is derived from the call that made it (tool, arguments, and the served KGs' fingerprint),
never counted up: the same call gives the same handle in every server process. A process that does
not hold a handle — it expired, was evicted, or another process behind a load balancer made it —
refuses it with a message telling the client to repeat that call, which recreates the same handle
wherever it lands. Held in a bounded LRU with an age limit.

With a ``path`` (the server's cache directory, ``handles.sqlite``) every handle is also kept on
disk, bounded and with the same age limit, keyed by the fingerprint of what is served: a later
process serving the same KGs (same files, unchanged; same endpoints) resolves it too. Clients that
start a server per call (LangChain's default ``MultiServerMCPClient`` over stdio) and restarts keep
their handles. Disk trouble never fails a call: the store then keeps to memory and says so once in
the log.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import queue
import re
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tot_mcp.kg_adapters.errors import InvalidInput
from tot_mcp.kg_adapters.lru import LRU
from tot_mcp.strategies.settings import SERVER_DEFAULTS

HANDLE_RE = re.compile(r"^r[0-9a-f]{10}$")
_CANONICAL = json.JSONEncoder(
    sort_keys=True, default=str, ensure_ascii=False
)  # one call's arguments, canonical
_GATHER_SECONDS = (
    0.05  # the disk writer waits this long after a first queued handle before committing
)
log = logging.getLogger("tot_mcp.handles")


@dataclass(frozen=True)
class ResultSet:
    handle: str
    tool: str
    entity_ids: tuple[str, ...]
    created: float


class UnknownHandle(InvalidInput):
    """A handle this process does not hold (expired, evicted, or made elsewhere)."""


class HandleStore:
    def __init__(
        self,
        fingerprint: str,
        max_entries: int = SERVER_DEFAULTS.handles,
        ttl_seconds: float = SERVER_DEFAULTS.handle_ttl,
        path: Path | None = None,
    ) -> None:
        if max_entries < 1 or ttl_seconds <= 0:
            raise InvalidInput("the result-handle store needs a size ≥ 1 and an age limit > 0")
        self._salted = hashlib.blake2b(fingerprint.encode(), digest_size=5)
        self.ttl = ttl_seconds
        self._sets: LRU[ResultSet] = LRU(
            max_entries, ttl=ttl_seconds
        )  # an age counted from the call
        # on disk as many as in memory, per set of served KGs: --handles bounds both
        self._disk = (
            _DiskHandles(path, fingerprint, max_entries, ttl_seconds) if path is not None else None
        )

    def derive(self, tool: str, args: dict[str, Any]) -> str:
        """The same call under the same fingerprint gives the same handle in every process (the
        fingerprint, a few hundred bytes, is hashed once: it was most of each call's hashing)."""
        h = self._salted.copy()
        h.update(_CANONICAL.encode([tool, args]).encode())
        return "r" + h.hexdigest()

    def put(self, tool: str, args: dict[str, Any], entity_ids: Sequence[str]) -> ResultSet:
        """Keep the entities a call reached under the handle derived from the call."""
        handle = self.derive(tool, args)
        rs = ResultSet(handle, tool, tuple(dict.fromkeys(entity_ids)), time.monotonic())
        self._sets.put(handle, rs, born=rs.created)
        if self._disk is not None:
            self._disk.put(rs)
        return rs

    def remember(self, tool: str, entity_ids: Sequence[str], /, **args: Any) -> str | None:
        """The handle of the entities a call reached, derived from the arguments given (those not
        None); None when it reached none."""
        if not entity_ids:
            return None
        return self.put(tool, {k: v for k, v in args.items() if v is not None}, entity_ids).handle

    def close(self) -> None:
        """Write what is queued for the disk (also done at exit)."""
        if self._disk is not None:
            self._disk.flush()

    def get(self, handle: str) -> ResultSet:
        if not isinstance(handle, str) or not HANDLE_RE.match(handle.strip()):
            raise InvalidInput(
                f"from_result {handle!r} is not a result handle (they look like 'r1f3a9c07d2')"
            )
        handle = handle.strip()
        rs = self._sets.get(handle)
        if rs is None and self._disk is not None:
            rs = self._disk.get(handle)
            if rs is not None:
                self._sets.put(
                    handle, rs, born=rs.created
                )  # its age carries over from the process that made it
        if rs is None:
            raise UnknownHandle(
                f"result {handle} is unknown here (expired after {self.ttl:.0f} s, evicted, or "
                "made by another server process): repeat the call that returned it, which gives "
                "the same handle, then use it again"
            )
        return rs


class _DiskHandles:
    """Handles in one SQLite file shared by every server process on the machine (WAL: readers never
    wait). ``created`` is wall-clock time here, since it must mean the same in two processes.

    Writes leave the calling thread: a commit costs ~0.2 ms, which on the event loop was a tenth of
    a stdio round trip. ``put`` queues the row and a writer thread commits whatever is queued in one
    transaction, 50 ms later (a burst of calls is one commit, and a queued row wakes no thread); a
    handle the same process made recently (same entities, under a tenth of the age limit) is not
    written again. The queue is flushed before this process reads the file and when it exits, so a
    server started per call (LangChain over stdio) still leaves its handles to the next one."""

    def __init__(self, path: Path, fingerprint: str, max_entries: int, ttl: float) -> None:
        self.path, self.fingerprint, self.max_entries, self.ttl = (
            Path(path),
            fingerprint,
            max_entries,
            ttl,
        )
        self._lock = threading.Lock()  # the connection
        self._db: sqlite3.Connection | None = None
        self._broken = False
        # pruning sorts the set's rows (~0.4 ms at 2,000): done once per tenth of the bound, not on
        # every call, so the file holds at most max_entries + max_entries // 10 rows per set of KGs
        # between prunes
        self._prune_every = max(1, max_entries // 10)
        self._since_prune = self._prune_every  # the first put prunes what earlier processes left
        self._pending: queue.SimpleQueue[tuple[str, str, str, tuple[str, ...], float]] = (
            queue.SimpleQueue()
        )
        # taken off the queue by the writer, not written yet
        self._held: list[tuple[str, str, str, tuple[str, ...], float]] = []
        self._written: dict[
            str, tuple[tuple[str, ...], float]
        ] = {}  # handle → (ids, when written), bounded
        self._writer: threading.Thread | None = None
        atexit.register(self.flush)

    def _conn(self) -> sqlite3.Connection | None:
        if self._db is None and not self._broken:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(
                    self.path, timeout=2.0, check_same_thread=False, isolation_level=None
                )
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                db.execute(
                    "CREATE TABLE IF NOT EXISTS handles (handle TEXT, fingerprint TEXT, tool TEXT, "
                    "ids TEXT, created REAL, PRIMARY KEY (handle, fingerprint))"
                )
                db.execute("CREATE INDEX IF NOT EXISTS handles_created ON handles (created)")
                self._db = db
            except (OSError, sqlite3.Error) as e:
                self._fail(e)
        return self._db

    def _fail(self, e: Exception) -> None:
        if not self._broken:
            log.warning("result handles stay in memory only (%s: %s)", self.path, e)
        self._broken, self._db = True, None

    def put(self, rs: ResultSet) -> None:
        if self._broken:
            return
        now = time.time()
        seen = self._written.get(rs.handle)
        if seen is not None and seen[0] == rs.entity_ids and now - seen[1] < self.ttl / 10:
            return
        if len(self._written) >= 4 * self.max_entries:
            self._written.clear()
        self._written[rs.handle] = (rs.entity_ids, now)
        self._pending.put(
            (rs.handle, self.fingerprint, rs.tool, rs.entity_ids, now)
        )  # as JSON when written
        if self._writer is None:
            self._writer = threading.Thread(
                target=self._write_loop, name="tot-mcp-handles", daemon=True
            )
            self._writer.start()

    def _write_loop(self) -> None:
        while True:
            first = self._pending.get()
            with self._lock:
                self._held.append(first)  # a flush meanwhile (exit, a read) writes it
            time.sleep(
                _GATHER_SECONDS
            )  # the calls of the next moment join this transaction without waking us
            self.flush()

    def flush(self) -> None:
        """Commit every queued handle (one transaction)."""
        with self._lock:
            rows, self._held = self._held, []
            while True:
                try:
                    rows.append(self._pending.get_nowait())
                except queue.Empty:
                    break
            if not rows:
                return
            db = self._conn()
            if db is None:
                return
            try:
                with db:  # one transaction
                    db.execute("BEGIN")
                    db.executemany(
                        "INSERT OR REPLACE INTO handles VALUES (?, ?, ?, ?, ?)",
                        [(h, f, t, json.dumps(ids), c) for h, f, t, ids, c in rows],
                    )
                    self._since_prune += len(rows)
                    if self._since_prune >= self._prune_every:
                        self._since_prune = 0
                        db.execute(
                            "DELETE FROM handles WHERE rowid IN (SELECT rowid FROM handles WHERE "
                            "fingerprint = ? ORDER BY created DESC LIMIT -1 OFFSET ?) OR created < "
                            "?",
                            (self.fingerprint, self.max_entries, rows[-1][4] - self.ttl),
                        )
            except sqlite3.Error as e:
                self._fail(e)

    def get(self, handle: str) -> ResultSet | None:
        self.flush()  # this process's own queued handles first
        with self._lock:
            db = self._conn()
            if db is None:
                return None
            try:
                row = db.execute(
                    "SELECT tool, ids, created FROM handles WHERE handle = ? AND fingerprint = ?",
                    (handle, self.fingerprint),
                ).fetchone()
            except sqlite3.Error as e:
                self._fail(e)
                return None
        age = (
            time.time() - row[2] if row is not None else None
        )  # counted from the call, in whichever process
        if age is None or age > self.ttl:
            return None
        return ResultSet(handle, row[0], tuple(json.loads(row[1])), time.monotonic() - age)
