"""The actions a Tree-of-Traversals policy may propose (Markowitz et al. 2024, §3.2).

One pydantic model per action, tagged by ``kind`` so a list of actions round-trips through JSON.
Which actions are valid depends on the ASM state (see :mod:`strategies.tot.asm`); a policy that
proposes an action in the wrong state gets it recorded as invalid, never a crash.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

from tot_mcp.kg_adapters.models import Direction


class _Action(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    def key(self) -> tuple:
        """Identity for de-duplication: two proposals with the same key are the same action (by
        default: the same fields)."""
        return tuple(self.model_dump(mode="json").values())


class Think(_Action):
    """Free-text reasoning; state unchanged apart from the trajectory (DEFAULT only)."""

    kind: Literal["think"] = "think"
    text: str

    def key(self) -> tuple:
        return (self.kind, " ".join(self.text.split()).casefold())

    def describe(self) -> str:
        return f"THINK: {self.text}"


class AnswerItem(BaseModel):
    """One member of an answer, grounded in the local subgraph: an entity (``entity_id``) or a value
    shown there (a literal on an edge, or a value in an entity's summary, ``entity_id`` None)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    entity_id: str | None = None
    source: str = Field(
        default="", description="Where it was found: 'entity', 'edge value', 'summary of <ID>'."
    )

    @property
    def id(self) -> str:
        return self.entity_id or f"literal:{self.text}"


class Answer(_Action):
    """Final answer (DEFAULT only). ``claims`` are the items the model wrote (IDs, names or values);
    the ASM grounds them in the local subgraph into ``items`` (the reported answer) and keeps what
    it could not find in ``ungrounded``. ``status``: ``answer``; ``none`` (the needed relations were
    expanded and hold nothing); or ``incomplete`` (the budget ran out before the answer was reached;
    items, if any, are a partial answer). A reasoned refusal is ``unsupported`` (no relation of the
    graph expresses what is asked) or ``no_entity`` (the question's entity is not in the graph),
    ``text`` being the model's reason: the search stops on it, since searching on cannot find what
    the graph lacks."""

    kind: Literal["answer"] = "answer"
    entity_ids: list[str] = Field(default_factory=list)
    text: str = ""
    claims: list[str] = Field(default_factory=list)
    status: Literal["answer", "none", "incomplete", "unsupported", "no_entity"] = "answer"
    items: list[AnswerItem] = Field(default_factory=list)
    ungrounded: list[str] = Field(default_factory=list)

    def key(self) -> tuple:
        claims = tuple(" ".join(c.split()).casefold() for c in self.claims)
        return (
            self.kind,
            self.status,
            tuple(self.entity_ids),
            claims,
            "" if self.entity_ids or claims else " ".join(self.text.split()).casefold(),
        )

    @property
    def refuses(self) -> bool:
        """A reasoned "the graph does not have this" (the model's reason in ``text``)."""
        return self.status in REFUSALS

    def describe(self) -> str:
        if self.status == "none":
            return "ANSWER: NONE"
        if self.refuses:
            return f"ANSWER: NOT_IN_GRAPH: {REFUSALS[self.status]} — {self.text}"
        head = (
            "ANSWER: INCOMPLETE" + (": " if self.text else "")
            if self.status == "incomplete"
            else "ANSWER: "
        )
        ids = ", ".join(self.entity_ids)
        return head + self.text + (f" [{ids}]" if ids and self.text != ids else "")


#: an answer's refusing statuses → the word its reply names (``NOT_IN_GRAPH: relation — …``)
REFUSALS = {"unsupported": "relation", "no_entity": "entity"}


class ExpandKG(_Action):
    """Start an expansion of the local subgraph: DEFAULT → SELECTING_ENTITIES.

    A policy that decides the whole expansion in one reply (the one-call protocol) attaches its
    choice: the ASM ignores it; the policy reads it back in the next two states and makes no call
    when it is still valid."""

    kind: Literal["expand_kg"] = "expand_kg"
    entity_ids: list[str] = Field(
        default_factory=list, description="Entities chosen with it (one-call protocol)."
    )
    relation_id: str | None = Field(
        default=None, description="Relation chosen with it (one-call protocol)."
    )
    direction: Direction | None = None

    def key(self) -> tuple:
        return (
            self.kind,
            tuple(sorted(set(self.entity_ids))),
            self.relation_id,
            self.direction.value if self.direction else None,
        )

    def describe(self) -> str:
        if not self.entity_ids:
            return "EXPAND_KG"
        rel = (
            f" -> {self.relation_id} {self.direction.value if self.direction else ''}".rstrip()
            if self.relation_id
            else ""
        )
        return f"EXPAND_KG: {', '.join(self.entity_ids)}{rel}"


class SelectEntities(_Action):
    """Choose entities of the local subgraph to expand; the ASM calls ``get_relations`` on them."""

    kind: Literal["select_entities"] = "select_entities"
    entity_ids: list[str]

    def key(self) -> tuple:
        return (self.kind, tuple(sorted(set(self.entity_ids))))

    def describe(self) -> str:
        return "SELECT_ENTITIES: " + ", ".join(self.entity_ids)


class SelectRelation(_Action):
    """Choose one candidate relation (with its direction); the ASM calls ``get_edges``."""

    kind: Literal["select_relation"] = "select_relation"
    relation_id: str
    direction: Direction = Direction.forward

    def describe(self) -> str:
        return f"SELECT_RELATION: {self.relation_id} ({self.direction.value})"


class Invalid(_Action):
    """A proposal that could not be parsed into an action (LLM garbage). The ASM records it and
    changes nothing.

    Policies that build actions directly (the offline policy) never need to emit this.
    """

    kind: Literal["invalid"] = "invalid"
    raw: str = ""
    reason: str

    def describe(self) -> str:
        return f"INVALID: {self.reason}"


Action = Annotated[
    Union[Think, Answer, ExpandKG, SelectEntities, SelectRelation, Invalid],
    Field(discriminator="kind"),
]


def distinct(actions: Sequence[Action]) -> list[Action]:
    """Drop repeats (same :meth:`key`), keeping first occurrences — proposals stay best first."""
    first: dict[tuple, Action] = {}
    for a in actions:
        first.setdefault(a.key(), a)
    return list(first.values())
