"""In-memory indexes over a set of triples: by subject, by object and by relation, built once at
load.

Nodes and relations are interned to ints; each node keeps ``{relation: [neighbours]}`` in both
directions, so a ``get_edges`` lookup is two dict hits and a slice. Literals are nodes too (flagged,
with datatype/lang) so that "which films were released in 1999" can walk backward from a literal,
exactly as from an entity.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .text import humanize

_SAFE_REL = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]{0,99}$")


@dataclass
class NodeData:
    key: str  # name in a triple file, IRI in RDF, lexical form for a literal
    label: str
    description: str | None = None
    datatype: str | None = None
    lang: str | None = None
    is_literal: bool = False
    aliases: list[str] = field(default_factory=list)


class TripleIndex:
    def __init__(self) -> None:
        self.nodes: list[NodeData] = []
        self._node_ids: dict[tuple[str, bool, str | None, str | None], int] = {}
        self.rel_keys: list[str] = []
        self.rel_labels: list[str] = []
        self.rel_local_ids: list[str] = []
        self._rel_ids: dict[str, int] = {}
        self._rel_by_local: dict[str, int] = {}
        self.out: list[dict[int, list[int]]] = []
        self.inc: list[dict[int, list[int]]] = []
        self.rel_counts: list[int] = []
        self.triples = 0
        self._seen: set[tuple[int, int, int]] | None = set()
        self._literals: dict[str, int] | None = (
            None  # lexical form → node, built on first find_literal
        )

    # -- building ----------------------------------------------------------------------------------
    def node(
        self,
        key: str,
        label: str | None = None,
        *,
        is_literal: bool = False,
        datatype: str | None = None,
        lang: str | None = None,
    ) -> int:
        k = (key, is_literal, datatype, lang)
        i = self._node_ids.get(k)
        if i is None:
            i = len(self.nodes)
            self._node_ids[k] = i
            self.nodes.append(
                NodeData(key, label if label is not None else key, None, datatype, lang, is_literal)
            )
            self.out.append({})
            self.inc.append({})
        return i

    def relation(self, key: str, label: str | None = None, *, local_hint: str | None = None) -> int:
        """Intern a relation. Its local ID is ``key`` if that is a safe token, else ``local_hint``
        (an IRI's local name) if safe and free, else ``R<n>``."""
        r = self._rel_ids.get(key)
        if r is None:
            r = len(self.rel_keys)
            self._rel_ids[key] = r
            self.rel_keys.append(key)
            self.rel_labels.append(label or humanize(key))
            taken = self._rel_by_local
            free = [c for c in (key, local_hint) if c and _SAFE_REL.match(c) and c not in taken]
            local, n = (free[0] if free else f"R{r}"), r
            while local in taken:
                n += 1
                local = f"R{n}"
            self.rel_local_ids.append(local)
            self._rel_by_local[local] = r
            self.rel_counts.append(0)
        return r

    def add(self, s: int, r: int, o: int) -> bool:
        """Add one triple; duplicates are ignored. Returns whether it was new."""
        if self._seen is not None:
            t = (s, r, o)
            if t in self._seen:
                return False
            self._seen.add(t)
        self.out[s].setdefault(r, []).append(o)
        self.inc[o].setdefault(r, []).append(s)
        self.rel_counts[r] += 1
        self.triples += 1
        return True

    def freeze(self) -> None:
        """Drop build-only structures (the duplicate filter) once loading is done."""
        self._seen = None

    # -- lookups -----------------------------------------------------------------------------------
    def find_node(self, key: str) -> int | None:
        return self._node_ids.get((key, False, None, None))

    def find_literal(self, value: str) -> int | None:
        """A literal node with this lexical form (any datatype or language; the first loaded
        wins)."""
        if self._literals is None:
            self._literals = {}
            for i, n in enumerate(self.nodes):
                if n.is_literal:
                    self._literals.setdefault(n.key, i)
        return self._literals.get(value)

    def relation_by_local_id(self, local: str) -> int | None:
        return self._rel_by_local.get(local)

    def relation_by_key(self, key: str) -> int | None:
        return self._rel_ids.get(key)
