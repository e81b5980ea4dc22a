"""Short names for relations, so a client model can write a path without first collecting IDs.

Why. Over linked KGs a relation ID can be opaque
(``catalog:~aHR0cDovL2V4YW1wbGUub3JnL2NhdGFsb2cvZ2VucmU``: a SPARQL KG with no configured prefixes),
and the relations a later hop needs are not on the start entity, so a model had to spend a
``get_relations`` or ``list_kgs`` call per KG before it could write ``follow_path``. When the
configured KGs have a small vocabulary, ``initialize`` lists it by name and the path tools accept
those names: ``initialize`` then ``follow_path`` answers a question that crosses three KGs.

A name is a relation's local name (``genre`` for ``.../catalog/genre``, ``directed_by``) or its
label, matched the way a link rule names a relation (:func:`kg_adapters.sameness.names_relation`). A
name that fits relations of two KGs is refused with both IDs, never guessed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field

from .graph import Graph
from .errors import InvalidInput, KGError
from .describe import _cut  # a value label cut as descriptions cut it
from .sameness import local_relation_name, names_relation
from .models import Direction, KGInfo, split_id

#: above this many relations in all, ``initialize`` does not list them (a Wikidata-sized vocabulary)
MAX_LISTED = 60
#: how many relations a backend's ``info()`` samples (SPARQL: 20); a sample that full may not be all
#: of them
SAMPLE_SIZE = 20


@dataclass
class RelationNames:
    """The relations of every member KG that lists its vocabulary in full, with the name each is
    shown by."""

    by_kg: dict[str, dict[str, str | None]] = field(
        default_factory=dict
    )  # KG → {relation ID: label}
    complete: bool = (
        True  # False when a KG's vocabulary is larger than it listed, or it could not be asked
    )
    partial: set[str] = field(
        default_factory=set
    )  # KGs with more relations than they listed (a sample)
    unavailable: set[str] = field(
        default_factory=set
    )  # KGs that did not answer (asked again next time)

    @classmethod
    async def of(cls, kg: Graph) -> RelationNames:
        """The members' vocabularies; those that must be asked (``info()``) are asked at once, and
        through a linked KG only as long as it waits for a member (a stalled endpoint is
        unavailable, not a wait of its whole deadline)."""
        # imported here: linked imports this module's neighbours (not this module)
        from .routing import LinkedKG, Report

        out = cls()
        members = kg.members()
        asked = [name for name, member in members.items() if not member.relation_vocabulary()]

        async def info(member: Graph) -> KGInfo | None:
            try:
                return await member.info()
            except KGError:
                return None

        if isinstance(kg, LinkedKG) and len(members) > 1:  # a KG not answering in time is left out
            some_answered = len(asked) < len(members)  # those that list their vocabulary
            infos = dict(await kg.answering(asked, info, Report(), others_answered=some_answered))
        else:
            infos = {name: await info(members[name]) for name in asked}
        for name, member in members.items():
            vocab = member.relation_vocabulary()
            if vocab:
                labels = member.relation_labels() or {}
                out.by_kg[name] = {rid: labels.get(rid) for rid in sorted(vocab)}
                continue
            kg_info = infos.get(name)
            if (
                kg_info is None or kg_info.unreachable
            ):  # an endpoint down for a moment is not a KG without relations
                out.complete = False
                out.unavailable.add(name)
                continue
            out.by_kg[name] = {r.id: r.label for r in kg_info.relation_sample}
            more = (
                kg_info.relations > len(kg_info.relation_sample)
                if kg_info.relations is not None
                else len(kg_info.relation_sample) >= SAMPLE_SIZE
            )  # a full sample: there may be more
            if more:
                out.partial.add(name)
            if more or kg_info.relations is None:
                out.complete = False
        return out

    def count(self) -> int:
        return sum(len(v) for v in self.by_kg.values())

    def matches(self, name: str) -> list[str]:
        return [
            rid
            for rels in self.by_kg.values()
            for rid, label in rels.items()
            if names_relation(name, rid, label)
        ]

    def resolve(self, relation: str) -> str:
        """The ID ``relation`` stands for: itself when it is an ID of a configured KG, else the one
        relation with that name. Raises InvalidInput for a name that fits none or several."""
        kg_name = split_id(relation)[0] if ":" in relation else None
        if kg_name in self.by_kg or (kg_name is not None and not self.complete):
            return relation
        found = self.matches(relation.strip())
        if len(found) == 1:
            return found[0]
        if found:
            raise InvalidInput(
                f"relation {relation!r} names {len(found)} relations: {', '.join(found[:5])}; "
                "pass one of these IDs"
            )
        if kg_name is not None:
            return (
                relation  # an ID of a KG whose vocabulary is not listed here: the backend judges it
            )
        listed = self.listing()
        raise InvalidInput(
            f"no relation named {relation!r}"
            + (f"; relations: {listed}" if listed else "")
            + "; get_relations lists an entity's relations with their IDs"
        )

    def shown(self, rid: str, label: str | None) -> str:
        """The name a model sees: the local name when it is readable and unique, else the full
        ID."""
        local = local_relation_name(split_id(rid)[1])
        for name in (local, label):
            if name and not name.startswith("~") and len(self.matches(name)) == 1:
                return name
        return rid

    def listing(self, examples: Mapping[str, str] | None = None) -> str:
        """``films: directed_by, written_by; catalog: genre, …`` (empty when there are too many to
        list), each with its example edge from ``examples`` if it has one
        (``directed_by (Heat → Michael Mann)``). A KG that
        listed only a sample of its relations (Wikidata) is named, not listed: a partial list would
        read as all; so is one that did not answer, so that a model does not read its absence as "no
        relations"."""
        if not self.by_kg or self.count() > MAX_LISTED:
            return ""

        def named(rid: str, label: str | None) -> str:
            example = (examples or {}).get(rid)
            return self.shown(rid, label) + (f" ({example})" if example else "")

        parts = [
            f"{kg}: {', '.join(named(r, lab) for r, lab in rels.items())}"
            for kg, rels in self.by_kg.items()
            if rels and kg not in self.partial
        ]
        parts += [
            f"{kg}: too many to list (get_relations(search=...) finds them)"
            for kg in self.by_kg
            if kg in self.partial
        ]
        parts += [
            f"{kg}: not listed (the KG did not answer; initialize again later)"
            for kg in sorted(self.unavailable)
        ]
        return "; ".join(parts) if len(parts) > len(self.partial) + len(self.unavailable) else ""


async def relation_examples(kg: Graph, names: RelationNames) -> dict[str, str]:
    """One edge per listed relation, ``Forrest Gump → Tom Hanks``: a relation's direction in words,
    which its name alone does not say (is ``starred_actors`` film → actor or actor → film?). Two
    reads a KG, every KG at once: an edge of each of its relations anywhere (one query on SPARQL),
    then the names of their ends (a target with none shown by its ID); only for vocabularies small
    enough to list; a relation with no edge or no named subject is left out, and so is a KG whose
    reads fail."""
    if not names.listing():
        return {}
    members = kg.members()

    async def of_kg(kg_name: str, rids: list[str]) -> list[tuple[str, str]]:
        member = members[kg_name]  # names were read from these members
        try:
            reads = await member.adjacent_along([], [(r, Direction.forward) for r in rids], limit=1)
            # each relation's first edge: (subject, target ID or None, value or None)
            ends: dict[str, tuple[str, str | None, str | None]] = {}
            for (rid, _), read in reads.items():
                if read.pairs:
                    ends[rid] = (*read.pairs[0], None)
                elif read.values:
                    ends[rid] = (read.values[0][0], None, read.values[0][1])
            named = await member.labels_of([x for s, t, _ in ends.values() for x in (s, t) if x])
        except KGError:
            return []
        return [
            (rid, f"{named[s]} → {_cut(named.get(t, t) if t is not None else v or '')}")
            for rid, (s, t, v) in ends.items()
            if s in named
        ]

    found = await asyncio.gather(
        *(
            of_kg(k, list(rels))
            for k, rels in names.by_kg.items()
            if k not in names.partial and rels
        )
    )
    return dict(x for xs in found for x in xs)
