"""The integer-indexed view of a KG held in memory: what needs a *global* view of one KG works on —
the retrieval strategies (every entity, its verbalised neighbourhood, degrees, hubs, a content hash
for on-disk caches) and the offline reasoner's walks. The KG that holds the index owns it and its ID
scheme (:meth:`MemoryKG.local_graph`), so nothing outside ``kg_adapters`` reaches into a
``TripleIndex`` or spells an entity ID."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from .models import Direction

if TYPE_CHECKING:
    from .memory import MemoryKG


class LocalGraph:
    """Read-only, integer-indexed view of a KG held in memory (its ``TripleIndex``), with the KG's
    own ID scheme. Built once per KG by :meth:`MemoryKG.local_graph`."""

    def __init__(self, kg: MemoryKG) -> None:
        index = kg.index
        self.kg = kg
        self.name = kg.name
        self.index = index
        self.n = len(index.nodes)
        self.out: list[dict[int, list[int]]] = index.out
        self.inc: list[dict[int, list[int]]] = index.inc
        self.rel_labels: list[str] = list(index.rel_labels)
        self.rel_ids: list[str] = [f"{kg.name}:{x}" for x in index.rel_local_ids]
        self._hash: str | None = None
        self._degree: np.ndarray | None = None
        self._hubs: tuple | None = None

    # identity: the KG's own scheme (MemoryKG.node_id / node_of)
    def entity_id(self, i: int) -> str:
        return self.kg.node_id(i)

    def node_of(self, entity_id: str) -> int | None:
        return self.kg.node_of(entity_id)

    def label(self, i: int) -> str:
        return self.index.nodes[i].label

    def description(self, i: int) -> str | None:
        return self.index.nodes[i].description

    def is_literal(self, i: int) -> bool:
        return bool(self.index.nodes[i].is_literal)

    # structure
    def neighbours(self, i: int) -> Iterator[tuple[int, Direction, int]]:
        for r, objs in self.out[i].items():
            for j in objs:
                yield r, Direction.forward, j
        for r, subs in self.inc[i].items():
            for j in subs:
                yield r, Direction.backward, j

    def degrees(self) -> np.ndarray:
        if self._degree is None:
            self._degree = np.array(
                [
                    sum(map(len, o.values())) + sum(map(len, n.values()))
                    for o, n in zip(self.out, self.inc)
                ],
                dtype=np.int64,
            )
        return self._degree

    def hubs(self, min_degree: int = 50, quantile: float = 0.995) -> np.ndarray:
        """Boolean mask of hub nodes: degree above both ``min_degree`` and the ``quantile`` of all
        degrees. In a movie KB these are genres, years, languages, popular tags: attribute values
        that connect everything, so a path through one says little."""
        key = (min_degree, quantile)
        if self._hubs is None or self._hubs[0] != key:
            deg = self.degrees()
            limit = (
                max(float(min_degree), float(np.quantile(deg, quantile)))
                if len(deg)
                else float(min_degree)
            )
            self._hubs = (key, deg > limit)
        return self._hubs[1]

    def triples(self) -> Iterator[tuple[int, int, int]]:
        for s, rels in enumerate(self.out):
            for r, objs in rels.items():
                for o in objs:
                    yield s, r, o

    def content_hash(self) -> str:
        """Stable hash of labels and triples: the key of every on-disk cache for this KG."""
        if self._hash is None:
            h = hashlib.sha256()
            for node in self.index.nodes:
                h.update(node.label.encode("utf-8", "replace"))
                h.update(b"\x00")
            h.update("\x01".join(self.rel_labels).encode())
            for s, rels in enumerate(self.out):
                for r in sorted(rels):
                    h.update(np.asarray([s, r, *rels[r]], dtype=np.int64).tobytes())
            self._hash = h.hexdigest()[:20]
        return self._hash

    # text
    def neighbourhood_lines(self, i: int, limit: int = 8) -> list[str]:
        """``"directed by Clark Gregg"`` / ``"directed (inverse of directed by) Choke"``: the node's
        edges as short phrases, at most ``limit``, spread over relations so one huge relation cannot
        fill them all."""
        groups = [(self.rel_labels[r], objs) for r, objs in self.out[i].items()]
        groups += [(f"{self.rel_labels[r]} of", subs) for r, subs in self.inc[i].items()]
        per = max(1, limit // max(1, len(groups)))
        lines = [f"{text} {self.label(j)}" for text, targets in groups for j in targets[:per]]
        more = (
            f"{text} {self.label(j)}"
            for text, targets in groups
            for j in targets[per : per + limit]
        )
        lines.extend(itertools.islice(more, max(0, limit - len(lines))))  # then the rest, in order
        return lines[:limit]

    def descriptor(self, i: int, neighbours: int = 8, max_chars: int = 240) -> str:
        """Label + description + verbalised neighbourhood; what BM25 and the dense indexes see for
        an entity."""
        parts = [self.label(i)]
        desc = self.description(i)
        if desc:
            parts.append(desc)
        parts.extend(self.neighbourhood_lines(i, neighbours))
        return "; ".join(parts)[:max_chars]
