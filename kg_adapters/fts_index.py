"""An on-disk label index for KGs too big to hold their labels in Python: SQLite FTS5, one file
beside the store.

Why SQLite FTS5 and not tantivy: it ships with Python (``sqlite3``), so there is no extra dependency
or native wheel to match; the whole index is one file that any tool can open; inserts are
transactional, so the bulk loader can commit a chunk of labels atomically and a killed load resumes
without duplicates or half-written segments; and the same file answers exact and case-insensitive
lookups with an ordinary B-tree (``norm = ?``), which FTS engines do poorly. FTS5 gives BM25 ranking
and prefix queries (``"mar"*``) with a prefix index. Tantivy would be faster on hundreds of millions
of labels, but at the 10M-triple scale a query here takes well under a millisecond for exact hits
and a few milliseconds for BM25.

The tokenizer is ``unicode61 remove_diacritics 2`` (words, case- and accent-folded) with 2- and
3-character prefix indexes, rather than ``trigram``: trigram indexes are ~3x larger and rank
substrings, not words, and entity search is about names made of words. Typos are handled by falling
back to BM25 over the remaining words.

Rows are ``(key, label, kind)``: ``key`` is whatever the adapter uses to address the node (an IRI
for the oxigraph store); an entity may have several rows (label, aliases, a name derived from its
IRI). Searches return one :class:`KeyHit` per key, best match first, with the same scores and match
names as the in-memory :class:`~kg_adapters.label_index.LabelIndex` so results from both backends
rank alike.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .errors import BackendError, InvalidInput
from .label_index import _STOP, ngram_spans
from .text import bracketed_mentions, key, longest_spans, tokens

SCHEMA_VERSION = 1

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT);
CREATE TABLE IF NOT EXISTS names (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL,
    label TEXT NOT NULL,
    norm TEXT NOT NULL,
    kind TEXT NOT NULL DEFAULT 'label',
    UNIQUE (key, label)
);
CREATE INDEX IF NOT EXISTS names_norm ON names(norm);
CREATE VIRTUAL TABLE IF NOT EXISTS names_fts USING fts5(
    label, content='names', content_rowid='id',
    tokenize='unicode61 remove_diacritics 2', prefix='2 3'
);
INSERT OR IGNORE INTO meta VALUES ('schema_version', '{SCHEMA_VERSION}');
"""


@dataclass(frozen=True)
class KeyHit:
    """A name that matched, by the key of the node it names: what an entity search over keys (this
    index, and the in-memory one of :mod:`kg_adapters.oxigraph_store`) answers."""

    key: str  # whatever the adapter addresses the node by: an IRI, or ``_:id`` for a blank node
    label: str  # the name that matched (may be an alias)
    score: float
    match: str  # exact | casefold | prefix | bm25 | mention
    mention: str | None = None


def label_index_path(store_dir: str | Path) -> Path:
    """Where the label index of the store at ``store_dir`` lives: ``STORE.labels.sqlite`` beside
    it."""
    store_dir = Path(store_dir)
    return store_dir.with_name(store_dir.name + ".labels.sqlite")


def _fts_phrase(tok: str) -> str:
    return '"' + tok.replace('"', '""') + '"'


def _named_hits(label: str, rows: Iterable[tuple[str, str]], limit: int) -> list[KeyHit]:
    """(key, name) rows sharing ``label``'s normalised name as hits: exact (1.0) or casefold (0.95),
    one per key, best first."""
    text = label.strip()
    hits: dict[str, KeyHit] = {}
    for k, found in rows:
        hit = KeyHit(
            k, found, 1.0 if found == text else 0.95, "exact" if found == text else "casefold"
        )
        if k not in hits or hits[k].score < hit.score:
            hits[k] = hit
    return sorted(hits.values(), key=lambda h: (-h.score, len(h.label), h.key))[:limit]


class FtsLabelIndex:
    """Search and link entity names stored in one SQLite file.

    Thread-safe (one connection, a lock): the MCP server calls it from the event loop's worker
    threads. Open with :meth:`open` (read) or :meth:`create` (write, used by the bulk loader).
    """

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._conn = conn
        self.path = path
        self._lock = threading.Lock()

    # -- lifecycle ---------------------------------------------------------------------------------
    @classmethod
    def create(cls, path: str | Path) -> "FtsLabelIndex":
        """Open for writing, creating the file and schema if needed."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA temp_store=MEMORY")
        conn.executescript(_SCHEMA)
        return cls(conn, path)

    @classmethod
    def for_store(cls, store_dir: str | Path) -> "FtsLabelIndex | None":
        """The index ``tot-mcp load`` built beside ``store_dir``, or None (the store then searches
        in memory).

        Hits have the ``key``/``label``/``score``/``match``/``mention`` shape that
        :class:`~kg_adapters.oxigraph_store.OxigraphKG`'s ``label_search`` seam expects (keys are
        IRIs, ``_:id`` for blank nodes)."""
        path = label_index_path(store_dir)
        return cls.open(path) if path.is_file() else None

    @classmethod
    def open(cls, path: str | Path) -> "FtsLabelIndex":
        """Open an existing index read-only; a clear error if it is missing or not an index."""
        path = Path(path)
        if not path.is_file():
            raise InvalidInput(
                f"label index not found: {path} (build it with 'tot-mcp load ... --into STORE')"
            )
        try:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
            conn.execute("PRAGMA query_only=1")
            row = conn.execute("SELECT v FROM meta WHERE k='schema_version'").fetchone()
        except sqlite3.DatabaseError as e:
            raise InvalidInput(f"{path} is not a label index: {e}") from e
        if not row or int(row[0]) != SCHEMA_VERSION:
            raise InvalidInput(
                f"{path}: label index schema {row and row[0]}, expected {SCHEMA_VERSION}; rebuild "
                "it"
            )
        return cls(conn, path)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # -- writing -----------------------------------------------------------------------------------
    def add(self, rows: Iterable[tuple[str, str, str]]) -> int:
        """Add ``(key, label, kind)`` rows in one transaction; re-adding a row is a no-op. Returns
        rows added.

        The FTS table is fed only the rows this call created (ids above the previous maximum), so a
        chunk that is replayed after a crash leaves the index exactly as one clean load would.
        """
        prepared = []
        for k, label, kind in rows:
            label = label.strip()
            if not label or not k:
                continue
            norm = key(label)
            if norm:
                prepared.append((k, label[:500], norm[:500], kind))
        if not prepared:
            return 0
        with self._lock:
            c = self._conn
            try:
                c.execute("BEGIN IMMEDIATE")
                (before,) = c.execute("SELECT coalesce(max(id), 0) FROM names").fetchone()
                c.executemany(
                    "INSERT OR IGNORE INTO names(key, label, norm, kind) VALUES (?,?,?,?)", prepared
                )
                c.execute(
                    "INSERT INTO names_fts(rowid, label) SELECT id, label FROM names WHERE id > ?",
                    (before,),
                )
                (after,) = c.execute("SELECT coalesce(max(id), 0) FROM names").fetchone()
                c.execute("COMMIT")
            except BaseException:
                c.execute("ROLLBACK")
                raise
        return after - before

    def optimize(self) -> None:
        """Merge FTS segments once loading is done: smaller file, faster queries."""
        with self._lock:
            self._conn.execute("INSERT INTO names_fts(names_fts) VALUES ('optimize')")
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    # -- reading -----------------------------------------------------------------------------------
    def _rows(self, sql: str, params: Iterable) -> list[tuple]:
        try:
            with self._lock:
                return self._conn.execute(sql, tuple(params)).fetchall()
        except sqlite3.Error as e:
            raise BackendError(f"label index {self.path.name}: {e}") from e

    def count(self) -> int:
        return self._rows("SELECT count(*) FROM names", ())[0][0]

    def named_many(self, labels: Iterable[str], limit: int = 20) -> dict[str, list[KeyHit]]:
        """Names equal to each label once case, accents, spacing and punctuation are set aside
        (the indexed ``norm`` column): what a label link needs, without :meth:`search`'s
        full-text stages. A query per 500 distinct normalised names; a label named nowhere is
        left out."""
        by_norm: dict[str, list[str]] = {}
        for label in dict.fromkeys(labels):
            if norm := key(label):
                by_norm.setdefault(norm, []).append(label)
        rows = self._by_norm(list(by_norm))
        return {
            label: _named_hits(label, found, limit)
            for norm, found in rows.items()
            for label in by_norm[norm]
        }

    def _by_norm(self, norms: list[str]) -> dict[str, list[tuple[str, str]]]:
        """Every (key, name) whose normalised name is one of ``norms``, by that name: a query
        per 500."""
        rows: dict[str, list[tuple[str, str]]] = {}
        for i in range(0, len(norms), 500):
            part = norms[i : i + 500]
            q = f"SELECT norm, key, label FROM names WHERE norm IN ({','.join('?' * len(part))})"
            for norm, k, label in self._rows(q, part):
                rows.setdefault(norm, []).append((k, label))
        return rows

    def search(self, text: str, limit: int = 10) -> list[KeyHit]:
        """Best first: exact label (1.0), case/accent-insensitive (0.95), names with all the
        (non-stop) words, the last as a prefix (≤ 0.9, BM25-ordered); only when none of these match,
        names with any of the words (≤ 0.8, BM25). One hit per key."""
        norm = key(text)
        if limit < 1 or not norm:
            return []
        rows = self._rows("SELECT key, label FROM names WHERE norm = ? LIMIT ?", (norm, limit * 4))
        hits = {
            h.key: h for h in _named_hits(text, rows, limit * 4)
        }  # the exact and case-folded names

        def add(k: str, label: str, score: float, match: str) -> None:
            if k not in hits or hits[k].score < score:
                hits[k] = KeyHit(k, label, score, match)

        words = [t for t in tokens(text) if any(ch.isalnum() for ch in t)]
        # stopwords ("the", "of", "film") are in a third of all names: leaving them out of FTS
        # queries keeps a query's cost proportional to its rare words, not to the size of the KG
        content = [w for w in words if w not in _STOP] or words
        if len(hits) < limit and content:
            last = words[-1] if words else content[-1]
            head = [w for w in content if w != last] if last not in _STOP else content
            q = " ".join(_fts_phrase(w) for w in head)
            q = (q + " " if q else "") + (
                _fts_phrase(last) + "*" if last not in _STOP or not head else ""
            )
            self._ranked(q.strip(), limit * 4, 0.9, "prefix", add, words)
        if not hits and content:  # nothing has all the words: rank names sharing any of them
            self._ranked(
                " OR ".join(_fts_phrase(w) for w in content), limit * 4, 0.8, "bm25", add, words
            )
        ranked = sorted(hits.values(), key=lambda h: (-h.score, len(h.label), h.key))
        return ranked[:limit]

    def _ranked(self, match: str, limit: int, top: float, kind: str, add, words: list[str]) -> None:
        """Candidates by BM25, re-scored half by BM25 and half by word overlap with the whole query
        (stopwords included, so "the silent harbour film" prefers "The Silent Harbour (film)" to
        "Silent Harbour Award")."""
        rows = self._rows(
            "SELECT n.key, n.label, bm25(names_fts) AS s FROM names_fts JOIN names n ON n.id = "
            "names_fts.rowid WHERE names_fts MATCH ? ORDER BY s LIMIT ?",
            (match, limit),
        )
        if not rows:
            return
        best = -rows[0][2] or 1.0  # bm25() is negative, more negative is better
        q = set(words)
        for k, label, s in rows:
            rel = max(0.0, min(1.0, -s / best)) if best > 0 else 1.0
            lw = {t for t in tokens(label) if any(ch.isalnum() for ch in t)}
            overlap = len(q & lw) / len(q | lw) if q | lw else 0.0
            add(k, label, round(top * (0.5 * rel + 0.5 * overlap), 4), kind)

    def link(self, query: str, limit: int = 10) -> list[KeyHit]:
        """Entity linking for ``initialize``: explicit ``[mentions]`` first; otherwise the longest
        n-grams of the query that are some entity's name (one indexed lookup for all n-grams);
        otherwise a plain search."""
        mentions = bracketed_mentions(query)
        if mentions:
            out: dict[str, KeyHit] = {}
            for m in mentions:
                for h in self.search(m, limit):
                    out.setdefault(h.key, KeyHit(h.key, h.label, h.score, h.match, mention=m))
            return sorted(out.values(), key=lambda h: -h.score)[:limit]
        toks = tokens(query)
        grams: dict[str, tuple[int, int]] = {}
        for start, end in ngram_spans(toks):
            grams.setdefault(" ".join(toks[start:end]), (start, end))
        found = self._by_norm(list(grams))
        hits: dict[str, KeyHit] = {}
        for _, _, gram, weight in longest_spans(((*grams[g], g) for g in found), len(toks)):
            for k, label in found[gram]:
                exact = 1.0 if label.casefold() in query.casefold() else 0.9
                score = round(weight, 4) * exact
                if k not in hits or hits[k].score < score:
                    hits[k] = KeyHit(k, label, score, "mention", gram)
        if not hits:
            return [
                KeyHit(h.key, h.label, round(h.score * 0.8, 4), h.match)
                for h in self.search(query, limit)
            ]
        return sorted(hits.values(), key=lambda h: (-h.score, len(h.label), h.key))[:limit]
