"""SPARQL 1.1 JSON results → rows of typed terms, checked for shape (a mirror may answer with
anything)."""

from __future__ import annotations

from typing import NamedTuple

from ..errors import BackendError


class Term(NamedTuple):
    """One bound value (a NamedTuple: a reasoner's read parses tens of thousands, twice as fast to
    make as a frozen dataclass)."""

    kind: str  # uri | literal | bnode
    value: str
    lang: str | None = None
    datatype: str | None = None


Row = dict[str, Term]


def parse_select(data: dict, endpoint: str) -> list[Row]:
    try:
        bindings = data["results"]["bindings"]
        if not isinstance(bindings, list):
            raise TypeError
        rows: list[Row] = []
        for b in bindings:
            row: Row = {}
            for var, t in b.items():
                kind = t["type"]
                if kind == "typed-literal":  # SPARQL 1.0 JSON, still sent by some servers
                    kind = "literal"
                if kind not in ("uri", "literal", "bnode") or not isinstance(t["value"], str):
                    raise TypeError
                row[var] = Term(
                    kind, t["value"], t.get("xml:lang") or None, t.get("datatype") or None
                )
            rows.append(row)
        return rows
    except (KeyError, TypeError, AttributeError):
        raise BackendError(
            f"{endpoint}: the answer is JSON but not SPARQL SELECT results"
        ) from None
