"""Files into a pyoxigraph store: one in one go (:func:`load_into_store`), or big ones with
``tot-mcp load``: into an on-disk store, resumably, with a label index.

Line-based files (``head|relation|tail`` triples, N-Triples, N-Quads; gzipped or not) are loaded in
chunks of whole lines. After each chunk is in the store, the byte offset reached is written to a
small JSON state file beside the store (with the file's size and mtime), so an interrupted load —
Ctrl-C, a crash, a killed machine — resumes from the last committed chunk instead of the beginning.
Re-loading a chunk is harmless because an RDF store is a set; the state file only makes resuming
*cheap*. Other RDF syntaxes (Turtle, RDF/XML, JSON-LD, TriG) cannot be split safely at line
boundaries and are loaded as one unit (skipped on re-runs once done).

``head|relation|tail`` names become IRIs (``urn:tot:e:`` / ``urn:tot:r:`` + percent-encoded name,
with the name as ``rdfs:label``: :func:`~kg_adapters.store_names.name_iri`) in one converter,
:class:`_TripleLineConverter`, whichever way a file goes in.

When the triples are in, every label and alias in the store is copied into a SQLite FTS5 index
(:mod:`kg_adapters.fts_index`) beside the store, so entity search works without reading all labels
into memory.

Files beside a store ``STORE`` (a directory): ``STORE.load-state.json`` and ``STORE.labels.sqlite``.

    tot-mcp load data/kb.txt --into /data/kb.store
    tot-mcp --kg kb=store:/data/kb.store
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pyoxigraph as ox

from .errors import BackendError, InvalidInput, KGError
from .fts_index import FtsLabelIndex, label_index_path
from .rdf_file import METADATA_PREDICATES, RDF_MEDIA_TYPES, RDFS, rdf_format_for
from .store_names import (
    ENTITY_NS,
    META_GRAPH,
    NAME_SAFE,
    RELATION_NS,
    label_rows,
    name_iri,
    read_meta,
    write_meta,
)
from .text import humanize
from .triples_file import is_gzipped, is_triples_file, open_binary

STATE_VERSION = 1
DEFAULT_CHUNK_LINES = 500_000
_LINE_FORMATS = {"nt", "nquads"}
_OX_FORMATS = {name: ox.RdfFormat.from_media_type(media) for name, media in RDF_MEDIA_TYPES.items()}


def state_path(store_dir: Path) -> Path:
    return store_dir.with_name(store_dir.name + ".load-state.json")


def unfinished_load(path: Path) -> str | None:
    """What ``tot-mcp load`` left unfinished in the store at ``path``, per its load state beside it
    (None: nothing, or no state: a store made otherwise). A store a load stopped in half-way holds
    the triples read before the stop, so it is not empty, yet answers short: ``--check`` must not
    call it OK (#36: "2,000 triples … OK")."""
    try:
        state = LoadState.read(state_path(path))
    except InvalidInput as e:
        return str(e)
    left = [Path(f.path).name for f in state.files.values() if not f.done]
    if not left:
        return None
    return (
        f"the load into {path} stopped before the end of {', '.join(left[:3])}"
        + (f" and {len(left) - 3} more" if len(left) > 3 else "")
        + f"; resume it (tot-mcp load FILES --into {path}) or load again with --restart"
    )


@dataclass
class FileProgress:
    path: str
    size: int
    mtime_ns: int
    kind: str  # triples | nt | nquads | rdf:<format>
    offset: int = 0  # bytes of the (decompressed) input committed to the store
    lines: int = 0
    chunks: int = 0
    done: bool = False


@dataclass
class LoadState:
    files: dict[str, FileProgress] = field(default_factory=dict)
    labels_built: bool = False  # the label index is complete for everything loaded
    label_scan_needed: bool = (
        False  # some labels were not fed chunk by chunk: rebuild from the store
    )

    @classmethod
    def read(cls, path: Path) -> "LoadState":
        if not path.is_file():
            return cls()
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            if raw.get("version") != STATE_VERSION:
                raise ValueError(f"version {raw.get('version')}")
            return cls(
                files={k: FileProgress(**v) for k, v in raw["files"].items()},
                labels_built=bool(raw.get("labels_built")),
                label_scan_needed=bool(raw.get("label_scan_needed", True)),
            )
        except (ValueError, KeyError, TypeError) as e:
            raise InvalidInput(
                f"{path}: unreadable load state ({e}); delete it or pass --restart"
            ) from None

    def write(self, path: Path) -> None:
        """Atomically (write + rename), so a crash leaves the old state or the new one, never half a
        file."""
        tmp = path.with_name(path.name + ".tmp")
        data = {
            "version": STATE_VERSION,
            "labels_built": self.labels_built,
            "label_scan_needed": self.label_scan_needed,
            "files": {k: vars(v) for k, v in self.files.items()},
        }
        tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
        os.replace(tmp, path)


@dataclass
class LoadReport:
    store: str
    files: list[FileProgress]
    chunks_loaded: int
    lines_loaded: int
    labels: int
    seconds: float


def _kind(path: Path, fmt: str | None) -> str:
    if fmt is None and is_triples_file(path):
        return "triples"
    rdf = rdf_format_for(path, fmt)
    if rdf is None:
        raise InvalidInput(
            f"{path}: unknown file type; use .txt/.tsv (head|relation|tail), .nt, .nq, .ttl, .rdf, "
            ".jsonld, .trig (optionally .gz) or pass --format"
        )
    return rdf if rdf in _LINE_FORMATS else f"rdf:{rdf}"


def _ascii_quote_table(safe: str) -> dict[int, str]:
    """``str.translate`` table equal to ``urllib.parse.quote(s, safe=safe)`` for ASCII ``s`` (5x
    faster)."""
    keep = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~") | set(safe)
    return {c: f"%{c:02X}" for c in range(128) if chr(c) not in keep}


def _nt_literal(text: str) -> str:
    """An N-Triples plain literal (same parsed value as ``str(pyoxigraph.Literal(text))``, without
    the object)."""
    if "\\" in text or '"' in text or "\n" in text or "\r" in text:
        text = (
            text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
        )
    return f'"{text}"'


class _TripleLineConverter:
    """``head|relation|tail`` lines → N-Triples: each name an IRI (:func:`name_iri`), labelled.

    Names already converted are remembered (up to ``max_names``, then forgotten in one go): each
    then costs a dict lookup instead of percent-encoding, and its ``rdfs:label`` triple is written
    once, not once per edge.
    """

    def __init__(self, source: Path, max_names: int = 4_000_000) -> None:
        self._source = source
        self._table = _ascii_quote_table(NAME_SAFE)
        self._label = f"<{RDFS}label>"
        self._relations: dict[str, str] = {}
        self._iris: dict[str, str] = {}
        self._max_names = max_names
        self._new_names: list[tuple[str, str, str]] = []

    def _entity(self, name: str, out: list[str]) -> str:
        iri = self._iris.get(name)
        return iri if iri is not None else self._new_entity(name, out)

    def _new_entity(self, name: str, out: list[str]) -> str:
        if len(self._iris) >= self._max_names:
            self._iris.clear()
        local = name.translate(self._table) if name.isascii() else name_iri(name, "")
        iri = self._iris[name] = f"<{ENTITY_NS}{local}>"
        out.append(f"{iri} {self._label} {_nt_literal(name)} .\n")
        self._new_names.append((iri[1:-1], name, "label"))
        return iri

    def take_names(self) -> list[tuple[str, str, str]]:
        """``(iri, name, "label")`` rows for the label index, for the names first seen since the
        last call."""
        names, self._new_names = self._new_names, []
        return names

    def convert(self, lines: list[bytes], first_lineno: int) -> bytes:
        """Convert a chunk: one decode and one split for the whole chunk; a line that is not a plain
        ``head|relation|tail`` (tabs, blank, malformed, a bad byte) goes through
        :meth:`_convert_line`, which also names the offending line."""
        try:
            text = b"".join(lines).decode("utf-8")
        except UnicodeDecodeError:
            text = None
        out: list[str] = []
        if text is None or "\t" in text:
            for k, raw in enumerate(lines):
                self._convert_line(raw, first_lineno + k, out)
            return "".join(out).encode("utf-8")
        iris, relations, new_entity = self._iris, self._relations, self._new_entity
        for k, line in enumerate(text.split("\n")):
            parts = line.split("|")
            if len(parts) != 3:
                if line.strip():
                    self._convert_line(line.encode("utf-8"), first_lineno + k, out)
                continue
            h, r, t = parts[0].strip(), parts[1].strip(), parts[2].strip()
            if not (h and r and t):
                self._convert_line(line.encode("utf-8"), first_lineno + k, out)
                continue
            rel = relations.get(r)
            if rel is None:
                rel = self._new_relation(r, out)
            hi = iris.get(h)
            if hi is None:
                hi = new_entity(h, out)
            ti = iris.get(t)
            if ti is None:
                ti = new_entity(t, out)
            out.append(f"{hi} {rel} {ti} .\n")
        return "".join(out).encode("utf-8")

    def _new_relation(self, r: str, out: list[str]) -> str:
        rel = self._relations[r] = f"<{name_iri(r, RELATION_NS)}>"
        out.append(f"{rel} {self._label} {_nt_literal(humanize(r))} .\n")
        return rel

    def _convert_line(self, raw: bytes, lineno: int, out: list[str]) -> None:
        """One line, general path (tab- or pipe-separated, validated; blank ones skipped)."""
        try:
            line = raw.decode("utf-8").rstrip("\r\n")
        except UnicodeDecodeError:
            raise InvalidInput(
                f"{self._source}:{lineno}: not UTF-8 (save the file as UTF-8)"
            ) from None
        if not line.strip():
            return
        parts = line.split("\t") if line.count("\t") == 2 else line.split("|")
        if len(parts) != 3 or not all(p.strip() for p in parts):
            raise InvalidInput(
                f"{self._source}:{lineno}: expected 'head|relation|tail' (or tab-separated), got "
                f"{line[:120]!r}"
            )
        h, r, t = (p.strip() for p in parts)
        rel = self._relations.get(r)
        if rel is None:
            rel = self._new_relation(r, out)
        out.append(f"{self._entity(h, out)} {rel} {self._entity(t, out)} .\n")


class BulkLoader:
    """Load files into the store at ``store_dir``; see the module docstring. Not safe to run twice
    at once on one store (RocksDB's lock makes the second fail with a clear error)."""

    def __init__(
        self,
        store_dir: str | Path,
        *,
        chunk_lines: int = DEFAULT_CHUNK_LINES,
        progress: bool = True,
        build_labels: bool = True,
        description: str | None = None,
        on_chunk: Callable[[FileProgress], None] | None = None,
    ) -> None:
        if chunk_lines < 1:
            raise InvalidInput("chunk_lines must be ≥ 1")
        self.store_dir = Path(store_dir).expanduser()
        self.chunk_lines = chunk_lines
        self.progress = progress
        self.build_labels = build_labels
        self.description = description
        self.on_chunk = (
            on_chunk  # called after each committed chunk (tests interrupt the load here)
        )
        self.state_file = state_path(self.store_dir)
        self.labels_file = label_index_path(self.store_dir)

    def restart(self) -> None:
        """Forget the progress (not the data): the next load re-reads every file from the start."""
        for p in (self.state_file, self.labels_file):
            p.unlink(missing_ok=True)
        for suffix in ("-wal", "-shm"):
            Path(str(self.labels_file) + suffix).unlink(missing_ok=True)

    def _open_store(self):
        self.store_dir.parent.mkdir(parents=True, exist_ok=True)
        try:
            return ox.Store(str(self.store_dir))
        except OSError as e:
            raise BackendError(
                f"cannot open store {self.store_dir} for writing (is a server or load using it?): "
                f"{e}"
            ) from None

    def load(self, sources: list[str | Path], fmt: str | None = None) -> LoadReport:
        if not sources:
            raise InvalidInput("no files to load")
        paths = [Path(s).expanduser() for s in sources]
        for p in paths:
            if not p.exists():
                raise InvalidInput(f"file to load not found: {p}")
            if not p.is_file():  # "not found" would mislead
                raise InvalidInput(
                    f"{p} is not a regular file (a directory, FIFO or device); "
                    "give the files to load"
                )
        kinds = [_kind(p, fmt) for p in paths]
        t0 = time.perf_counter()
        state = LoadState.read(self.state_file)
        store = self._open_store()
        chunks = lines = 0
        labels_index = FtsLabelIndex.create(self.labels_file) if self.build_labels else None
        try:
            for path, kind in zip(paths, kinds):
                key = str(path.resolve())
                st = path.stat()
                prog = state.files.get(key)
                if prog is None or (prog.size, prog.mtime_ns, prog.kind) != (
                    st.st_size,
                    st.st_mtime_ns,
                    kind,
                ):
                    if prog is not None:
                        self._say(
                            f"{path}: changed since the last load; loading it again from the start"
                        )
                    prog = state.files[key] = FileProgress(key, st.st_size, st.st_mtime_ns, kind)
                if prog.done:
                    self._say(f"{path}: already loaded ({prog.lines:,} lines); skipping")
                    continue
                state.labels_built = False
                if kind != "triples" or labels_index is None:
                    state.label_scan_needed = True
                c, n = self._load_file(store, path, prog, state, labels_index)
                chunks += c
                lines += n
            meta = read_meta(store)
            if (
                all(k == "triples" for k in kinds)
                and meta.get("entityBase", ENTITY_NS) == ENTITY_NS
            ):
                bases = (ENTITY_NS, RELATION_NS)
            elif meta.get("entityBase") is not None:
                bases = (meta["entityBase"], meta.get("relationBase", ""))
            else:
                bases = _guess_bases(store)
            # one file: its path alone
            _mark_loaded(store, "; ".join(state.files), bases, self.description)
            labels = 0
            if labels_index is not None:
                if state.label_scan_needed:
                    labels_index.close()
                    labels_index = None
                    build_label_index(store, self.labels_file, progress=self.progress)
                    state.label_scan_needed = False
                elif not state.labels_built:
                    labels_index.optimize()
                state.labels_built = True
                state.write(self.state_file)
                labels = (labels_index or FtsLabelIndex.open(self.labels_file)).count()
        except OSError as e:
            raise BackendError(f"writing to store {self.store_dir} failed: {e}") from e
        finally:
            if labels_index is not None:
                labels_index.close()
            del store  # releases the RocksDB lock
        return LoadReport(
            str(self.store_dir),
            list(state.files.values()),
            chunks,
            lines,
            labels,
            time.perf_counter() - t0,
        )

    def _say(self, msg: str) -> None:
        if self.progress:
            print(msg, file=sys.stderr)

    def _bar(self, path: Path, prog: FileProgress):
        if not self.progress:
            return None
        from tqdm import tqdm

        total = None if is_gzipped(path) else prog.size
        return tqdm(
            total=total,
            initial=prog.offset if total else 0,
            unit="B",
            unit_scale=True,
            file=sys.stderr,
            desc=f"load {path.name}",
            mininterval=1.0,
        )

    def _load_file(
        self, store, path: Path, prog: FileProgress, state: LoadState, labels_index
    ) -> tuple[int, int]:
        if prog.kind.startswith("rdf:"):
            self._say(f"{path}: {prog.kind[4:]} is loaded in one piece (not resumable mid-file)")
            bulk_load_file(store, path, prog.kind[4:])
            prog.done, prog.chunks, prog.offset = True, 1, prog.size
            state.write(self.state_file)
            return 1, 0
        fmt = ox.RdfFormat.N_TRIPLES if prog.kind in ("triples", "nt") else ox.RdfFormat.N_QUADS
        conv = _TripleLineConverter(path) if prog.kind == "triples" else None
        bar = self._bar(path, prog)
        chunks = lines = 0
        # While a chunk is bulk-loaded, one thread reads and converts the next and another puts the
        # chunk's names into the label index: pyoxigraph and SQLite release the GIL, so the three
        # overlap on a multi-core machine. Progress is recorded only when triples and names are in.
        with open_binary(path) as fh, ThreadPoolExecutor(2, thread_name_prefix="tot-load") as pool:
            if prog.offset:
                fh.seek(
                    prog.offset
                )  # gzip: decompresses up to there, still far cheaper than loading
                self._say(f"{path}: resuming at line {prog.lines + 1:,} (byte {prog.offset:,})")
            prepared = _chunks(fh, conv, prog.lines + 1, self.chunk_lines)
            ahead = pool.submit(next, prepared, None)
            try:
                while (chunk := ahead.result()) is not None:
                    ahead = pool.submit(next, prepared, None)
                    indexed = None
                    if labels_index is not None and chunk.names:
                        indexed = pool.submit(labels_index.add, chunk.names)
                    try:
                        if (
                            conv is not None
                        ):  # IRIs we percent-encoded ourselves: skip re-validating them
                            store.bulk_load(input=chunk.data, format=fmt, lenient=True)
                        else:
                            # keep blank-node labels as written (bulk_load would rename them per
                            # call): a node split across chunks stays one node, and a replayed chunk
                            # adds nothing
                            store.bulk_extend(
                                ox.parse(input=chunk.data, format=fmt, rename_blank_nodes=False)
                            )
                    except SyntaxError as e:
                        raise InvalidInput(
                            f"{path}: could not parse lines "
                            f"{prog.lines + 1:,}-{prog.lines + chunk.lines:,}: "
                            f"{str(e).splitlines()[0][:300]}"
                        ) from None
                    finally:
                        if indexed is not None:
                            indexed.result()
                    prog.offset += chunk.nbytes
                    prog.lines += chunk.lines
                    prog.chunks += 1
                    chunks += 1
                    lines += chunk.lines
                    state.write(self.state_file)
                    if bar is not None:
                        bar.update(chunk.nbytes)
                        bar.set_postfix(lines=f"{prog.lines:,}", refresh=False)
                    if self.on_chunk is not None:
                        self.on_chunk(prog)
            finally:  # the pool's exit waits for the chunk being read, then the file closes
                if bar is not None:
                    bar.close()
        prog.done = True
        state.write(self.state_file)
        return chunks, lines


def _chunks(fh, conv: _TripleLineConverter | None, first_lineno: int, chunk_lines: int):
    """Chunks of ``chunk_lines`` whole lines, converted to N-Triples (with the names they
    introduce) when they are ``head|relation|tail`` lines."""
    lineno = first_lineno
    while batch := list(itertools.islice(fh, chunk_lines)):
        nbytes = sum(map(len, batch))
        if conv is not None:
            data = conv.convert(batch, lineno)
            names = conv.take_names()
        else:
            data, names = b"".join(batch), []
        yield _Chunk(data, len(batch), nbytes, names)
        lineno += len(batch)


@dataclass
class _Chunk:
    data: bytes
    lines: int  # input lines (blank ones included): what the byte offset and line numbers count
    nbytes: int  # input bytes (decompressed)
    names: list[tuple[str, str, str]]  # label index rows for the names first seen in this chunk


def build_label_index(store, path: Path, *, progress: bool = False, batch: int = 100_000) -> int:
    """Copy every label and alias literal in the store into the FTS index at ``path``
    (idempotent)."""
    index = FtsLabelIndex.create(path)
    try:
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(
                unit="label", unit_scale=True, file=sys.stderr, desc="label index", mininterval=1.0
            )
        # names of head|rel|tail relations are not entities to link
        entities = (row for row in label_rows(store) if not row[0].startswith(RELATION_NS))
        while rows := list(itertools.islice(entities, batch)):
            index.add(rows)
            if bar is not None:
                bar.update(len(rows))
        if bar is not None:
            bar.close()
        index.optimize()
        return index.count()
    finally:
        index.close()


# -- in one go ------------------------------------------------------------------------------------
def load_into_store(
    source: str | Path,
    store_path: str | Path | None,
    *,
    format: str | None = None,
    description: str | None = None,
) -> ox.Store:
    """Load an RDF file or a ``head|relation|tail`` file into a pyoxigraph store (created if
    missing; ``store_path=None``: in memory) and return it open. Quads keep their named graphs
    (merged at query time). A file that does not parse leaves the store empty."""
    source = Path(source)
    if not source.is_file():
        raise InvalidInput(f"file to load not found: {source}")
    try:
        store = ox.Store(str(store_path)) if store_path is not None else ox.Store()
    except OSError as e:
        raise InvalidInput(f"cannot open oxigraph store at {store_path}: {e}") from None
    try:
        if is_triples_file(source):
            with open_binary(source) as fh:
                for chunk in _chunks(fh, _TripleLineConverter(source), 1, DEFAULT_CHUNK_LINES):
                    store.bulk_load(input=chunk.data, format=ox.RdfFormat.N_TRIPLES, lenient=True)
            bases = (ENTITY_NS, RELATION_NS)
        else:
            fmt = rdf_format_for(source, format)
            if fmt is None:
                raise InvalidInput(
                    f"{source}: unknown file type; pass format= or use .txt/.tsv for triple files"
                )
            bulk_load_file(store, source, fmt)
            bases = _guess_bases(store)
    except InvalidInput:  # a bad line or a parse error: nothing half-loaded is taken for the file
        store.clear()
        raise
    except OSError as e:
        raise BackendError(f"loading {source} into the store failed: {e}") from e
    _mark_loaded(store, str(source.resolve()), bases, description)
    return store


def _mark_loaded(
    store: ox.Store, source: str, bases: tuple[str, str], description: str | None
) -> None:
    """Record in the store's metadata what it holds and the namespaces its IDs are made from."""
    write_meta(
        store,
        source=source,
        entityBase=bases[0],
        relationBase=bases[1],
        loaded="true",
        **({"description": description} if description else {}),
    )
    store.flush()


def bulk_load_file(store: ox.Store, source: Path, fmt: str) -> None:
    """An RDF file, gzipped or not, into the store in one piece, its relative IRIs against the
    file's own; ``fmt`` is a format name (:data:`~kg_adapters.rdf_file.RDF_MEDIA_TYPES`). A parse
    error is an InvalidInput naming the file."""
    base_iri = source.resolve().as_uri()
    try:
        if is_gzipped(source):
            with open_binary(source) as fh:
                store.bulk_load(input=fh, format=_OX_FORMATS[fmt], base_iri=base_iri)
        else:  # from the path: pyoxigraph reads the file itself
            store.bulk_load(path=str(source), format=_OX_FORMATS[fmt], base_iri=base_iri)
    except SyntaxError as e:
        raise InvalidInput(f"{source}: could not parse: {str(e).splitlines()[0][:300]}") from None


def _namespace(iri: str) -> str:
    cut = max(iri.rfind("#"), iri.rfind("/"))
    return iri[: cut + 1] if cut > iri.find(":") else ""


def _guess_bases(store: ox.Store, sample: int = 5000) -> tuple[str, str]:
    """The most common subject namespace and predicate namespace in a sample of the data (ignoring
    vocabularies that only carry labels). Recorded once at load so IDs stay stable afterwards."""
    subj: dict[str, int] = {}
    pred: dict[str, int] = {}
    quads = (
        q for q in store.quads_for_pattern(None, None, None, None) if q.graph_name != META_GRAPH
    )
    for q in itertools.islice(quads, sample):
        if isinstance(q.subject, ox.NamedNode):
            ns = _namespace(q.subject.value)
            subj[ns] = subj.get(ns, 0) + 1
        if q.predicate.value not in METADATA_PREDICATES:
            ns = _namespace(q.predicate.value)
            pred[ns] = pred.get(ns, 0) + 1
    best = lambda d: max(sorted(d), key=d.get) if d else ""  # noqa: E731
    return best(subj), best(pred)


# -- CLI -------------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="tot-mcp load",
        description=(
            "Bulk-load triple or RDF files into an on-disk store (resumable) and build its label "
            "index."
        ),
    )
    ap.add_argument(
        "files",
        nargs="+",
        metavar="PATH",
        help="head|rel|tail (.txt/.tsv) or RDF files, optionally .gz",
    )
    ap.add_argument(
        "--into", required=True, metavar="STORE", help="store directory (created if missing)"
    )
    ap.add_argument(
        "--format",
        help="RDF format for files whose extension does not say (nt, nquads, turtle, ...)",
    )
    ap.add_argument(
        "--chunk-lines",
        type=int,
        default=DEFAULT_CHUNK_LINES,
        help=f"lines per committed chunk of a line-based file (default {DEFAULT_CHUNK_LINES:,})",
    )
    ap.add_argument(
        "--restart", action="store_true", help="ignore saved progress and re-read every file"
    )
    ap.add_argument("--no-labels", action="store_true", help="skip building the label index")
    ap.add_argument("--description", help="description shown by the KG's info tool")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    if args.chunk_lines < 1:
        ap.error("--chunk-lines must be ≥ 1")
    into = Path(args.into).expanduser()
    if into.exists() and not into.is_dir():
        ap.error(
            f"--into {args.into}: exists and is not a directory (a store is a directory; give a "
            "new or existing store directory)"
        )
    loader = BulkLoader(
        args.into,
        chunk_lines=args.chunk_lines,
        progress=not args.quiet,
        build_labels=not args.no_labels,
        description=args.description,
    )
    if args.restart:
        loader.restart()
    try:
        report = loader.load(args.files, args.format)
    except KGError as e:  # bad input exits 2, like argparse's errors; a failed store 1
        print(f"tot-mcp load: error: {e}", file=sys.stderr)
        return 2 if isinstance(e, InvalidInput) else 1
    except KeyboardInterrupt:
        print("\ntot-mcp load: interrupted; run the same command again to resume", file=sys.stderr)
        return 130
    whole = sum(1 for f in report.files if f.kind.startswith("rdf:"))
    parts = (
        [f"{report.lines_loaded:,} lines in {report.chunks_loaded} chunks"]
        if report.lines_loaded or not whole
        else []
    )
    if whole:  # Turtle, RDF/XML, JSON-LD: parsed in one piece, so there are no lines to count
        parts.append(f"{whole} RDF file{'s' if whole > 1 else ''} whole")
    print(
        f"loaded {' and '.join(parts)} into {report.store} ({report.seconds:.1f} s); label index: "
        f"{report.labels:,} names",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
