"""Typed values that cross the adapter boundary.

IDs are namespaced by KG (``movies:E42``, ``wd:Q42``) so several KGs can be combined without
clashes; the part after the first colon belongs to the adapter, which validates it before it goes
anywhere near a query.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from enum import Enum
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, Field

from .errors import InvalidInput

KG_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
_ID_RE = re.compile(r"^([A-Za-z][A-Za-z0-9_-]{0,31}):(\S{1,512})$")


def split_id(qualified_id: str) -> tuple[str, str]:
    """``"wd:Q42"`` → ``("wd", "Q42")``; raise :class:`InvalidInput` for anything else."""
    if not isinstance(qualified_id, str):
        raise InvalidInput(f"ID must be a string, got {type(qualified_id).__name__}")
    if len(qualified_id) > _REMEMBERED:
        return _split.__wrapped__(qualified_id)
    return _split(qualified_id)


#: the longest ID whose split is remembered: 16,384 such splits hold ~8 MB at most (measured)
_REMEMBERED = 100


@lru_cache(maxsize=1 << 14)
def _split(qualified_id: str) -> tuple[str, str]:
    """:func:`split_id` of a string, remembered: routing and linking split each ID of a frontier
    several times a question (233,000 splits in ten 3-hop questions over three KGs)."""
    m = _ID_RE.match(qualified_id)
    if not m:
        shown = qualified_id if len(qualified_id) <= 80 else qualified_id[:77] + "..."
        raise InvalidInput(
            f"malformed ID {shown!r}: expected 'kg:local_id', e.g. 'movies:E12' or 'wd:Q42'"
        )
    return m.group(1), m.group(2)


# The value of an edge to a node with no name and no ID of its own (an unlabelled blank node over
# SPARQL); its properties come as the edge's qualifiers.
STRUCTURED_VALUE = "(structured value)"


class Direction(str, Enum):
    """``forward``: the entity is the subject (e —r→ x); ``backward``: the entity is the object (x
    —r→ e)."""

    forward = "forward"
    backward = "backward"

    def flip(self) -> Direction:
        return Direction.backward if self is Direction.forward else Direction.forward


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    # the construct plan, set on each class by its first model_construct (a ClassVar: no field)
    _construct_plan: ClassVar[tuple[tuple[str, Any, Any], ...]]

    @classmethod
    def model_construct(  # type: ignore[override]  # pydantic's plugin drops **values (no fields)
        cls, _fields_set: set[str] | None = None, **values: Any
    ) -> Self:
        """Unvalidated construction for the adapters' hot paths (an edge page builds one model per
        edge and target): pydantic's own walks every field's alias settings and deep-copies its
        default on each call, and inspects a ``default_factory``'s signature (~0.2 ms for ``list``,
        80× a validated construct). These models have no aliases, private attributes or post-init,
        so the plan — each field's immutable default or its factory — is read once per class and a
        construct is a dict fill (2.5× faster than pydantic's)."""
        plan = cls.__dict__.get("_construct_plan")
        if plan is None:
            plan = cls._construct_plan = _construct_plan(cls)
        fields: dict[str, Any] = {}
        for name, default, factory in plan:
            if name in values:
                fields[name] = values[name]
            elif factory is not None:
                fields[name] = factory()
            elif default is not _REQUIRED:
                fields[name] = default
        m = cls.__new__(cls)
        _set = object.__setattr__
        _set(m, "__dict__", fields)
        _set(m, "__pydantic_fields_set__", set(values) if _fields_set is None else _fields_set)
        _set(m, "__pydantic_extra__", None)
        _set(m, "__pydantic_private__", None)
        return m


_REQUIRED = object()
_IMMUTABLE = (str, int, float, bool, bytes, Enum, tuple, frozenset, type(None))


def _construct_plan(cls: type[BaseModel]) -> tuple[tuple[str, Any, Any], ...]:
    """(name, default, factory) per field; a mutable plain default is given as a factory that copies
    it."""
    if (
        cls.__pydantic_post_init__
        or cls.__private_attributes__
        or cls.model_config.get("extra") == "allow"
    ):
        raise TypeError(
            f"{cls.__name__}: model_construct's fast path does not handle post-init, private "
            "attributes or extra fields"
        )
    plan: list[tuple[str, Any, Any]] = []
    for name, f in cls.model_fields.items():
        if f.alias not in (None, name) or f.validation_alias not in (None, name):
            raise TypeError(
                f"{cls.__name__}.{name}: model_construct's fast path does not handle aliases"
            )
        if f.default_factory is not None:
            plan.append((name, _REQUIRED, f.default_factory))
        elif f.is_required():
            plan.append((name, _REQUIRED, None))
        elif isinstance(f.default, _IMMUTABLE):
            plan.append((name, f.default, None))
        else:
            plan.append((name, _REQUIRED, lambda f=f: f.get_default(call_default_factory=True)))
    return tuple(plan)


class Entity(_Model):
    id: str = Field(description="Namespaced ID, e.g. 'movies:E12' or 'wd:Q42'.")
    label: str
    description: str | None = Field(default=None, exclude_if=lambda v: v is None)
    kg: str


class Relation(_Model):
    id: str = Field(description="Namespaced relation ID, e.g. 'movies:directed_by' or 'wd:P57'.")
    label: str
    inverse_label: str | None = Field(
        default=None, description="How to read the relation backward."
    )
    direction: Direction = Direction.forward
    count: int | None = Field(
        default=None, description="Edges the queried entities have with it, if known."
    )
    # left out of the JSON when unknown (every edge page names its relation)
    kg: str | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="The KG it belongs to, when several linked KGs answered.",
    )
    entities: int | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="How many of the queried entities have it, if known.",
    )


class Literal(_Model):
    value: str
    datatype: str | None = None
    lang: str | None = None


class Qualifier(_Model):
    relation: Relation
    target: str | None = None
    value: Literal | None = None


class Edge(_Model):
    """One edge seen from ``source`` (the entity that was expanded) along ``relation`` in
    ``direction``.

    ``target`` is the ID of the node reached; ``value`` is set when that node is a literal (with its
    datatype). Backends that cannot address literals (SPARQL) set only ``value``.
    """

    source: str
    relation: str
    direction: Direction = Direction.forward
    # a page holds hundreds of edges: what an edge lacks is left out of its JSON (absent means none)
    target: str | None = Field(default=None, exclude_if=lambda v: v is None)
    value: Literal | None = Field(default=None, exclude_if=lambda v: v is None)
    qualifiers: list[Qualifier] = Field(default_factory=list, exclude_if=lambda q: not q)
    via: str | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="The entity asked about, when the edge was followed from its linked equivalent "
        "`source` in another KG.",
    )

    def triple(self) -> tuple[str, str, str | Literal]:
        """The edge as the KG stores it: (subject, relation, object)."""
        other: str | Literal = self.target if self.target is not None else self.value  # type: ignore[assignment]
        if self.direction is Direction.forward:
            return (self.source, self.relation, other)
        return (other, self.relation, self.source)  # type: ignore[return-value]

    def value_text(self) -> str | None:
        """The literal the edge reaches as people read it (None when it reaches an entity); a
        nameless structured value (a blank node over generic SPARQL) with its own properties, so two
        of them are two answers: ``(structured value) {award name: Gold Medal}``."""
        if self.value is None:
            return None
        if self.value.value != STRUCTURED_VALUE:
            return self.value.value
        return self.value.value + self.qualifier_text(
            lambda q: q.value.value if q.value else q.target or "?", 5, more=False
        )

    def qualifier_text(
        self, node_text: Callable[[Qualifier], str], shown: int, more: bool = True
    ) -> str:
        """`` {start time: 1999; end time: 2004}`` to follow the target in a text: the first
        ``shown`` qualifiers (a statement's, or a blank node's own properties), each as ``label:
        node_text(q)``, then ``+N more`` unless ``more`` is False; empty when there are none."""
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
    mention: str | None = Field(
        default=None, description="The query text this entity was linked from."
    )
    same_as: list[str] = Field(
        default_factory=list, description="The same entity in the other linked KGs."
    )


class RelationList(_Model):
    relations: list[Relation]
    truncated: bool = False
    partial: bool = Field(
        default=False, description="True when some backend failed and its part is missing."
    )
    warnings: list[str] = Field(default_factory=list)


class EdgePage(_Model):
    edges: list[Edge]
    entities: dict[str, Entity] = Field(
        default_factory=dict, description="Labels for every ID in edges."
    )
    truncated: bool = False
    next_offset: int | None = Field(
        default=None, description="Pass as offset to fetch the next page."
    )
    partial: bool = False
    warnings: list[str] = Field(default_factory=list)
    relation: Relation | None = Field(
        default=None,
        description="The relation followed, with its label, in the direction asked (IDs alone can "
        "be opaque, e.g. 'wd:P57'); None when the backend could not say.",
    )


class AdjacentIds(_Model):
    """:meth:`KnowledgeGraph.adjacent` as IDs only: what a walk needs to go on (it names its answers
    at the end, with :meth:`KnowledgeGraph.labels_of`). ``pairs`` are (source ID, target ID);
    ``values`` are (source ID, the text of a literal target the KG gives no ID, as
    :meth:`Edge.value_text` reads it). At most ``limit`` of the two together; ``truncated`` exactly
    when the read left one out. ``then``: relations asked of the targets with the read (a
    backend that can reads them in the same query), by relation ID, each a complete read of that
    relation forward from every target in ``pairs``."""

    pairs: list[tuple[str, str]] = Field(default_factory=list)
    values: list[tuple[str, str]] = Field(default_factory=list)
    truncated: bool = False
    then: dict[str, AdjacentIds] = Field(default_factory=dict)

    @classmethod
    def of_page(cls, page: EdgePage) -> AdjacentIds:
        pairs: list[tuple[str, str]] = []
        values: list[tuple[str, str]] = []
        for e in page.edges:
            if e.target is not None:
                pairs.append((e.source, e.target))
            elif (text := e.value_text()) is not None:
                values.append((e.source, text))
        return cls.model_construct(pairs=pairs, values=values, truncated=page.truncated)


class EntityDescription(_Model):
    entity: Entity
    aliases: list[str] = Field(default_factory=list)
    relations: list[Relation] = Field(default_factory=list)
    same_as: list[str] = Field(
        default_factory=list, description="IDs of this entity in other linked KGs."
    )
    iri: str | None = None


class KGInfo(_Model):
    name: str
    backend: str
    description: str = ""
    entities: int | None = None
    triples: int | None = None
    relations: int | None = None
    relation_sample: list[Relation] = Field(default_factory=list)
    unreachable: str | None = Field(
        default=None,
        description="Why the KG could not be asked (its endpoint did not "
        "answer); None when it answered.",
    )


def backward(label: str) -> str:
    """How a relation followed backward reads in every result a client sees: ``directed by
    (inverse)``. (The tree search's prompts say :func:`inverse_of`, wording a real model was checked
    on: prompts/.)"""
    return f"{label} (inverse)"


def inverse_of(label: str) -> str:
    """How a relation followed backward reads where a sentence names it (``Relation.inverse_label``
    and the tree search's prompts): ``inverse of directed by``. The one place this wording is
    made."""
    return f"inverse of {label}"


def labels_only(entities: Mapping[str, Entity]) -> dict[str, Entity]:
    """The entities without their descriptions (a page shown to a model names its entities;
    describing them is describe_entity's job)."""
    return {
        k: e.model_copy(update={"description": None}) if e.description else e
        for k, e in entities.items()
    }
