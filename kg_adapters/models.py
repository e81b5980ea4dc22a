"""Typed values that cross the adapter boundary.

IDs are namespaced by KG (``movies:E42``, ``wd:Q42``) so several KGs can be combined without clashes; the part
after the first colon belongs to the adapter, which validates it before it goes anywhere near a query.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import Enum
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field

from .errors import InvalidInput

KG_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
_ID_RE = re.compile(r"^([A-Za-z][A-Za-z0-9_-]{0,31}):(\S{1,512})$")


def split_id(qualified_id: str) -> tuple[str, str]:
    """``"wd:Q42"`` → ``("wd", "Q42")``; raise :class:`InvalidInput` for anything else."""
    if not isinstance(qualified_id, str):
        raise InvalidInput(f"ID must be a string, got {type(qualified_id).__name__}")
    m = _ID_RE.match(qualified_id)
    if not m:
        shown = qualified_id if len(qualified_id) <= 80 else qualified_id[:77] + "..."
        raise InvalidInput(f"malformed ID {shown!r}: expected 'kg:local_id', e.g. 'movies:E12' or 'wd:Q42'")
    return m.group(1), m.group(2)


def make_id(kg: str, local: str) -> str:
    return f"{kg}:{local}"


# The value of an edge to a node with no name and no ID of its own (an unlabelled blank node over SPARQL); its
# properties come as the edge's qualifiers.
STRUCTURED_VALUE = "(structured value)"


class Direction(str, Enum):
    """``forward``: the entity is the subject (e —r→ x); ``backward``: the entity is the object (x —r→ e)."""

    forward = "forward"
    backward = "backward"

    def flip(self) -> Direction:
        return Direction.backward if self is Direction.forward else Direction.forward


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    @classmethod
    def model_construct(cls, _fields_set: set[str] | None = None, **values: Any) -> Self:
        """Unvalidated construction for the adapters' hot paths, with the ``default_factory`` fields left out filled
        here: pydantic inspects a factory's signature on every construct (~0.2 ms for ``list``, 80× a validated
        construct), which made linking ten matches cost milliseconds."""
        factories = cls.__dict__.get("_factories")
        if factories is None:
            factories = {n: f.default_factory for n, f in cls.model_fields.items() if f.default_factory is not None}
            cls._factories = factories  # type: ignore[misc]
        if factories:
            if _fields_set is None:
                _fields_set = set(values)
            for name, make in factories.items():
                if name not in values:
                    values[name] = make()  # type: ignore[call-arg]
        return super().model_construct(_fields_set, **values)


class Entity(_Model):
    id: str = Field(description="Namespaced ID, e.g. 'movies:E12' or 'wd:Q42'.")
    label: str
    description: str | None = Field(default=None, exclude_if=lambda v: v is None)
    kg: str


class Relation(_Model):
    id: str = Field(description="Namespaced relation ID, e.g. 'movies:directed_by' or 'wd:P57'.")
    label: str
    inverse_label: str | None = Field(default=None, description="How to read the relation backward.")
    direction: Direction = Direction.forward
    count: int | None = Field(default=None, description="Edges the queried entities have with it, if known.")
    kg: str | None = Field(default=None, description="The KG it belongs to, when several linked KGs answered.")
    entities: int | None = Field(default=None, description="How many of the queried entities have it, if known.")


class Literal(_Model):
    value: str
    datatype: str | None = None
    lang: str | None = None


class Qualifier(_Model):
    relation: Relation
    target: str | None = None
    value: Literal | None = None


class Edge(_Model):
    """One edge seen from ``source`` (the entity that was expanded) along ``relation`` in ``direction``.

    ``target`` is the ID of the node reached; ``value`` is set when that node is a literal (with its datatype).
    Backends that cannot address literals (SPARQL) set only ``value``.
    """

    source: str
    relation: str
    direction: Direction = Direction.forward
    # a page holds hundreds of edges: what an edge lacks is left out of its JSON (absent means none)
    target: str | None = Field(default=None, exclude_if=lambda v: v is None)
    value: Literal | None = Field(default=None, exclude_if=lambda v: v is None)
    qualifiers: list[Qualifier] = Field(default_factory=list, exclude_if=lambda q: not q)
    via: str | None = Field(
        default=None, exclude_if=lambda v: v is None,
        description="The entity asked about, when the edge was followed from its linked equivalent `source` in "
        "another KG.",
    )

    def triple(self) -> tuple[str, str, str | Literal]:
        """The edge as the KG stores it: (subject, relation, object)."""
        other: str | Literal = self.target if self.target is not None else self.value  # type: ignore[assignment]
        if self.direction is Direction.forward:
            return (self.source, self.relation, other)
        return (other, self.relation, self.source)  # type: ignore[return-value]

    def qualifier_text(self, node_text: Callable[[Qualifier], str], shown: int, more: bool = True) -> str:
        """`` {start time: 1999; end time: 2004}`` to follow the target in a text: the first ``shown`` qualifiers
        (a statement's, or a blank node's own properties), each as ``label: node_text(q)``, then ``+N more``
        unless ``more`` is False; empty when there are none."""
        if not self.qualifiers:
            return ""
        parts = [f"{q.relation.label}: {node_text(q)}" for q in self.qualifiers[:shown]]
        if more and len(self.qualifiers) > shown:
            parts.append(f"+{len(self.qualifiers) - shown} more")
        return " {" + "; ".join(parts) + "}"


class EntityMatch(_Model):
    entity: Entity
    score: float = Field(description="Higher is better; 1.0 is an exact label match.")
    match: str = Field(description="How it matched: exact, casefold, fuzzy, bm25, mention, api.")
    mention: str | None = Field(default=None, description="The query text this entity was linked from.")
    same_as: list[str] = Field(default_factory=list, description="The same entity in the other linked KGs.")


class RelationList(_Model):
    relations: list[Relation]
    truncated: bool = False
    partial: bool = Field(default=False, description="True when some backend failed and its part is missing.")
    warnings: list[str] = Field(default_factory=list)


class EdgePage(_Model):
    edges: list[Edge]
    entities: dict[str, Entity] = Field(default_factory=dict, description="Labels for every ID in edges.")
    truncated: bool = False
    next_offset: int | None = Field(default=None, description="Pass as offset to fetch the next page.")
    partial: bool = False
    warnings: list[str] = Field(default_factory=list)
    relation: Relation | None = Field(
        default=None,
        description="The relation followed, with its label, in the direction asked (IDs alone can be opaque, "
        "e.g. 'wd:P57'); None when the backend could not say.",
    )


class EntityDescription(_Model):
    entity: Entity
    aliases: list[str] = Field(default_factory=list)
    relations: list[Relation] = Field(default_factory=list)
    same_as: list[str] = Field(default_factory=list, description="IDs of this entity in other linked KGs.")
    iri: str | None = None


class KGInfo(_Model):
    name: str
    backend: str
    description: str = ""
    entities: int | None = None
    triples: int | None = None
    relations: int | None = None
    relation_sample: list[Relation] = Field(default_factory=list)
    unreachable: str | None = Field(default=None, description="Why the KG could not be asked (its endpoint did not "
                                                              "answer); None when it answered.")


def backward(label: str) -> str:
    """How a relation followed backward reads in every result a client sees: ``directed by (inverse)``. (The tree
    search's prompts say :func:`inverse_of`, wording a real model was checked on: prompts/.)"""
    return f"{label} (inverse)"


def inverse_of(label: str) -> str:
    """How a relation followed backward reads where a sentence names it (``Relation.inverse_label`` and the tree
    search's prompts): ``inverse of directed by``. The one place this wording is made."""
    return f"inverse of {label}"
