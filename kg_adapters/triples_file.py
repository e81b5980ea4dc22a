"""Plain ``head|relation|tail`` (or tab-separated) triple files: the MetaQA / PathQuestion
format."""

from __future__ import annotations

import gzip
import io
from pathlib import Path
from typing import BinaryIO

from .errors import InvalidInput
from .triple_index import TripleIndex

TRIPLE_SUFFIXES = (".txt", ".tsv", ".txt.gz", ".tsv.gz")


def is_triples_file(path: Path) -> bool:
    return path.name.lower().endswith(TRIPLE_SUFFIXES)


def is_gzipped(path: Path) -> bool:
    """Whether a data file is read through gzip: its name ends in ``.gz``, in any case."""
    return path.name.lower().endswith(".gz")


def open_binary(path: Path) -> BinaryIO:
    """A data file's bytes, decompressed when it is gzipped (:func:`is_gzipped`)."""
    if is_gzipped(path):
        return gzip.open(path, "rb")  # type: ignore[return-value]  # a GzipFile reads as a BinaryIO
    return open(path, "rb")


def iter_triples(path: Path):
    """``(head, relation, tail)`` per non-blank line. The separator is a tab if the line has exactly
    two, else ``|``.

    A malformed line raises :class:`InvalidInput` naming the file and line, rather than being
    silently dropped.
    """
    with io.TextIOWrapper(open_binary(path), encoding="utf-8") as fh:
        try:
            for lineno, line in enumerate(fh, 1):
                line = line.rstrip("\r\n")
                if not line.strip():
                    continue
                parts = line.split("\t") if line.count("\t") == 2 else line.split("|")
                if len(parts) != 3 or not all(p.strip() for p in parts):
                    raise InvalidInput(
                        f"{path}:{lineno}: expected 'head|relation|tail' (or tab-separated), got "
                        f"{line[:120]!r}"
                    )
                h, r, t = (p.strip() for p in parts)
                yield h, r, t
        except (
            UnicodeDecodeError
        ):  # decoded a block at a time: find the line, as `tot-mcp load` names it
            raise InvalidInput(
                f"{path}:{_first_undecodable_line(path)}: not UTF-8 (save the file as UTF-8)"
            ) from None


def _first_undecodable_line(path: Path) -> int:
    with open_binary(path) as fh:
        for lineno, raw in enumerate(fh, 1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                return lineno
    return 0


def load_triples_file(path: str | Path, index: TripleIndex | None = None) -> TripleIndex:
    """Read a triple file into an in-memory index (see :func:`iter_triples` for the format)."""
    path = Path(path)
    if not path.is_file():
        raise InvalidInput(f"triple file not found: {path}")
    index = index or TripleIndex()
    for h, r, t in iter_triples(path):
        index.add(index.node(h), index.relation(r), index.node(t))
    index.freeze()
    return index
