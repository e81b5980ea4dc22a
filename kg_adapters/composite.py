"""Several KGs walked as one: entities of one member are linked to their equivalents in the others.

IDs stay namespaced by the member that owns them (``wd:Q1299``, ``mb:b10bbbfc-…``), and so do relation IDs —
which is how ``get_edges`` knows which member to ask. Linking follows the paper's Wikidata × MusicBrainz setup:

* ``same_as`` — the member's ``owl:sameAs`` edges (any relation labelled "same as", or ``relation``) give IRIs
  that the other member resolves (:meth:`KnowledgeGraph.resolve_key`);
* ``property`` — an external-ID property (``relation``, e.g. Wikidata ``P434``) whose value, put into
  ``template`` (``"https://musicbrainz.org/artist/{value}"``) or taken as is (``match="key"``: the other
  member's IRI/name; ``match="id"``: its local ID), names the entity in the other member;
* ``label`` — exact case-insensitive label match (the fallback).

Rules work in both directions (``same_as`` and ``property`` look their edges up backward from the other side).
``initialize`` links the query into every member and drops matches that are equivalents of a better one;
``get_relations`` fans out to every member an entity is linked into; ``get_edges`` routes to the member owning the
relation with the entities' equivalents there; ``describe_entity`` reports ``same_as``. A member that fails with
a :class:`BackendError` makes the result ``partial`` with a warning naming it instead of failing the call.
Link resolutions are cached per composite (LRU, ``cache_size`` entities).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Literal as TypingLiteral

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .base import KnowledgeGraph, Limits
from .errors import BackendError, InvalidInput, KGError, UnknownKG
from .lru import LRU
from .models import (
    Direction,
    EdgePage,
    EntityDescription,
    EntityMatch,
    KGInfo,
    Relation,
    RelationList,
    split_id,
)
from .text import humanize

log = logging.getLogger(__name__)

SAME_AS_LABELS = ("same as", "sameas", "same_as")


class LinkRule(BaseModel):
    """How entities of ``from_kg`` are found in ``to_kg``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    from_kg: str
    to_kg: str
    kind: TypingLiteral["same_as", "property", "label"] = "same_as"
    relation: str | None = Field(
        default=None,
        description="same_as: the sameAs relation if not labelled 'same as'; property: the external-ID relation "
        "(its ID with or without the KG prefix, or its label).",
    )
    template: str | None = Field(default=None, description="property: '{value}' is replaced by the value.")
    match: TypingLiteral["key", "iri", "id"] = Field(
        default="key",
        description="property without template: the value is the other KG's entity key/IRI ('key', 'iri') or "
        "local ID ('id').",
    )

    @model_validator(mode="after")
    def _check(self) -> LinkRule:
        if self.from_kg == self.to_kg:
            raise ValueError("a link rule must join two different KGs")
        if self.kind == "property" and not self.relation:
            raise ValueError("a property link needs relation=, e.g. 'P434'")
        if self.template is not None and "{value}" not in self.template:
            raise ValueError("template must contain '{value}'")
        return self


class CompositeKG(KnowledgeGraph):
    backend = "composite"

    def __init__(
        self,
        name: str,
        kgs: dict[str, KnowledgeGraph],
        links: list[LinkRule],
        *,
        limits: Limits | None = None,
        cache_size: int = 10_000,
    ) -> None:
        super().__init__(name, limits)
        if not kgs:
            raise InvalidInput("a composite KG needs at least one member")
        for kg_name, kg in kgs.items():
            if kg.name != kg_name:
                raise InvalidInput(f"member {kg_name!r} is a KG named {kg.name!r}; the keys must be the KGs' names")
        for rule in links:
            for side in (rule.from_kg, rule.to_kg):
                if side not in kgs:
                    raise InvalidInput(f"link rule names KG {side!r}, which is not one of {sorted(kgs)}")
        self.kgs = dict(kgs)
        self.links = list(links)
        self._cache = LRU(cache_size)

    # -- routing --------------------------------------------------------------------------------------------------
    def member(self, kg_name: str) -> KnowledgeGraph:
        kg = self.kgs.get(kg_name)
        if kg is None:
            raise UnknownKG(f"KG {kg_name!r} is not part of {self.name!r} (members: {', '.join(self.kgs)})")
        return kg

    def owner(self, qualified_id: str) -> KnowledgeGraph:
        return self.member(split_id(qualified_id)[0])

    # -- linking --------------------------------------------------------------------------------------------------
    async def equivalents(self, entity_id: str) -> list[str]:
        """IDs of the same entity in the other members (cached). Raises BackendError if a member failed."""
        cached = self._cache.get_fresh(entity_id)
        if cached is not None:
            return list(cached)
        kg_name = split_id(entity_id)[0]
        found: dict[str, None] = {}
        failures: list[str] = []
        for rule in self.links:
            if kg_name not in (rule.from_kg, rule.to_kg):
                continue
            forward = rule.from_kg == kg_name
            other = self.kgs[rule.to_kg if forward else rule.from_kg]
            try:
                for eid in await self._resolve(rule, entity_id, forward, other):
                    if split_id(eid)[0] != kg_name:
                        found.setdefault(eid)
            except BackendError as e:
                failures.append(f"KG {other.name!r}: {e}")
            except KGError as e:  # e.g. the rule's relation is absent for this entity
                log.debug("link rule %s for %s: %s", rule, entity_id, e)
        if failures:
            raise BackendError("; ".join(failures))
        result = tuple(found)
        self._cache.put(entity_id, result)
        return list(result)

    async def _resolve(self, rule: LinkRule, entity_id: str, forward: bool, other: KnowledgeGraph) -> list[str]:
        this = self.owner(entity_id)
        if rule.kind == "label":
            return await self._by_label(this, entity_id, other)
        if rule.kind == "same_as":
            if forward:  # follow this entity's sameAs edges to IRIs, and find those in the other KG
                keys = await self._edge_keys(this, entity_id, rule, Direction.forward)
                return [e for k in keys if (e := await other.resolve_key(k))]
            key = await this.entity_key(entity_id)  # the other KG's sameAs edges point at our IRI
            node = await other.resolve_key(key) if key else None
            if node is None:
                return []
            page = await self._edges(other, node, rule, Direction.backward)
            return [e.target for e in page.edges if e.target]  # backward: the targets are the subjects
        # property
        if forward:
            values = await self._edge_keys(this, entity_id, rule, Direction.forward)
            out = []
            for v in values:
                if rule.template is not None:
                    e = await other.resolve_key(rule.template.replace("{value}", v))
                elif rule.match == "id":
                    e = f"{other.name}:{v}"
                    try:
                        await other.describe_entity(e)
                    except KGError:
                        e = None
                else:
                    e = await other.resolve_key(v)
                if e:
                    out.append(e)
            return out
        key = await this.entity_key(entity_id) if rule.match != "id" else split_id(entity_id)[1]
        if key is None:
            return []
        if rule.template is not None:
            head, _, tail = rule.template.partition("{value}")
            if not (key.startswith(head) and key.endswith(tail)) or len(key) < len(head) + len(tail):
                return []
            key = key[len(head) : len(key) - len(tail)]
        node = await other.resolve_key(key)
        if node is None:
            return []
        page = await self._edges(other, node, rule, Direction.backward)
        return [e.target for e in page.edges if e.target]

    async def _find_relation(self, kg: KnowledgeGraph, entity_id: str, rule: LinkRule, direction: Direction) -> Relation | None:
        rels = (await kg.get_relations([entity_id])).relations
        for r in rels:
            if r.direction is not direction:
                continue
            local = r.id.split(":", 1)[1]
            if rule.relation:
                if rule.relation in (r.id, local, r.label) or local.rsplit("/", 1)[-1].rsplit("#", 1)[-1] == rule.relation:
                    return r
            elif r.label.casefold() in SAME_AS_LABELS or local.endswith(("#sameAs", "/sameAs")) or local == "sameAs":
                return r
        return None

    async def _edges(self, kg: KnowledgeGraph, entity_id: str, rule: LinkRule, direction: Direction) -> EdgePage:
        rel = await self._find_relation(kg, entity_id, rule, direction)
        if rel is None:
            return EdgePage(edges=[])
        return await kg.get_edges([entity_id], rel.id, direction, limit=20)

    async def _edge_keys(self, kg: KnowledgeGraph, entity_id: str, rule: LinkRule, direction: Direction) -> list[str]:
        """Values reached along the rule's relation: literal values as is, entities as their key/IRI."""
        page = await self._edges(kg, entity_id, rule, direction)
        keys = []
        for e in page.edges:
            if e.value is not None:
                keys.append(e.value.value)
            elif e.target:
                k = await kg.entity_key(e.target)
                if k:
                    keys.append(k)
        return keys

    async def _by_label(self, this: KnowledgeGraph, entity_id: str, other: KnowledgeGraph) -> list[str]:
        label = (await this.describe_entity(entity_id)).entity.label
        if not label.strip():
            return []
        want = label.casefold()
        hits = await other.search_entities(label, limit=10)
        return [h.entity.id for h in hits if h.match in ("exact", "casefold") and h.entity.label.casefold() == want]

    async def _linked(self, entity_ids: list[str], warnings: list[str]) -> dict[str, list[str]]:
        """Every given ID with its equivalents, grouped by member KG (order kept, no duplicates)."""
        by_kg: dict[str, dict[str, None]] = {}
        for eid in entity_ids:
            by_kg.setdefault(self.owner(eid).name, {}).setdefault(eid)
        for eid in entity_ids:
            try:
                eqs = await self.equivalents(eid)
            except BackendError as e:
                warnings.append(f"linking {eid} failed ({e}); its equivalents there are missing")
                continue
            for other in eqs:
                by_kg.setdefault(split_id(other)[0], {}).setdefault(other)
        return {k: list(v) for k, v in by_kg.items()}

    # -- interface ------------------------------------------------------------------------------------------------
    async def _gather_matches(self, call) -> list[EntityMatch]:
        results = await asyncio.gather(*(call(kg) for kg in self.kgs.values()), return_exceptions=True)
        matches: list[EntityMatch] = []
        for kg, res in zip(self.kgs.values(), results, strict=True):
            if isinstance(res, BackendError):
                log.warning("KG %r failed during entity search: %s", kg.name, res)
                continue
            if isinstance(res, BaseException):
                raise res
            matches.extend(res)
        return sorted(matches, key=lambda m: -m.score)

    async def initialize(self, query: str, limit: int = 10) -> list[EntityMatch]:
        query = self.limits.check_query(query)
        limit = self.limits.clamp(limit, self.limits.max_search)
        matches = await self._gather_matches(lambda kg: kg.initialize(query, limit))
        out: list[EntityMatch] = []
        covered: set[str] = set()
        for m in matches:  # best first; an equivalent of a kept match adds nothing new
            if m.entity.id in covered:
                continue
            out.append(m)
            covered.add(m.entity.id)
            try:
                covered.update(await self.equivalents(m.entity.id))
            except BackendError as e:
                log.warning("linking %s failed: %s", m.entity.id, e)
            if len(out) >= limit:
                break
        return out

    async def search_entities(self, text: str, limit: int = 10) -> list[EntityMatch]:
        text = self.limits.check_query(text)
        limit = self.limits.clamp(limit, self.limits.max_search)
        return (await self._gather_matches(lambda kg: kg.search_entities(text, limit)))[:limit]

    async def get_relations(self, entity_ids: list[str]) -> RelationList:
        self.limits.check_ids(entity_ids)
        warnings: list[str] = []
        groups = await self._linked(entity_ids, warnings)
        names = list(groups)
        results = await asyncio.gather(
            *(self.kgs[k].get_relations(groups[k][: self.kgs[k].limits.max_ids]) for k in names),
            return_exceptions=True,
        )
        rels: list[Relation] = []
        truncated = False
        for k, res in zip(names, results, strict=True):
            if isinstance(res, BackendError):
                warnings.append(f"KG {k!r} failed: {res}")
                continue
            if isinstance(res, BaseException):
                raise res
            rels.extend(res.relations)
            truncated |= res.truncated
            warnings.extend(res.warnings)
            if res.partial:
                warnings.append(f"KG {k!r} returned a partial result")
        cap = self.limits.max_relations
        return RelationList(
            relations=rels[:cap], truncated=truncated or len(rels) > cap, partial=bool(warnings), warnings=warnings
        )

    async def get_edges(
        self,
        entity_ids: list[str],
        relation_id: str,
        direction: Direction = Direction.forward,
        limit: int | None = None,
        offset: int = 0,
    ) -> EdgePage:
        self.limits.check_ids(entity_ids)
        kg = self.member(split_id(relation_id)[0])
        warnings: list[str] = []
        own = [e for e in entity_ids if split_id(e)[0] == kg.name]
        foreign = [e for e in entity_ids if split_id(e)[0] != kg.name]
        for e in foreign:
            self.owner(e)  # an ID of a KG outside the composite is an error, not a silent skip
        routed = dict.fromkeys(own)
        if foreign:
            groups = await self._linked(foreign, warnings)
            routed.update(dict.fromkeys(groups.get(kg.name, [])))
        # an empty page still names the relation asked for (its label as the ID reads: no member was asked)
        asked = Relation(id=relation_id, label=humanize(split_id(relation_id)[1]), direction=direction)
        if not routed:
            return EdgePage(
                edges=[],
                relation=asked,
                warnings=warnings + [f"none of the entities is linked into KG {kg.name!r}"],
                partial=bool(warnings),
            )
        try:
            page = await kg.get_edges(list(routed)[: kg.limits.max_ids], relation_id, direction, limit, offset)
        except BackendError as e:
            return EdgePage(edges=[], relation=asked, partial=True, warnings=warnings + [f"KG {kg.name!r} failed: {e}"])
        if not warnings:
            return page
        return page.model_copy(update={"partial": True, "warnings": page.warnings + warnings})

    async def describe_entity(self, entity_id: str) -> EntityDescription:
        kg = self.owner(entity_id)
        desc = await kg.describe_entity(entity_id)
        try:
            same = await self.equivalents(entity_id)
        except BackendError as e:
            log.warning("linking %s failed: %s", entity_id, e)
            same = []
        return desc.model_copy(update={"same_as": list(dict.fromkeys([*desc.same_as, *same]))})

    async def resolve_key(self, key: str) -> str | None:
        for kg in self.kgs.values():
            if found := await kg.resolve_key(key):
                return found
        return None

    async def entity_key(self, entity_id: str) -> str | None:
        return await self.owner(entity_id).entity_key(entity_id)

    async def info(self) -> KGInfo:
        infos = []
        for kg in self.kgs.values():
            try:
                infos.append(await kg.info())
            except BackendError as e:
                log.warning("KG %r info failed: %s", kg.name, e)
        rules = "; ".join(f"{r.from_kg}→{r.to_kg} by {r.kind}{f' ({r.relation})' if r.relation else ''}" for r in self.links)
        return KGInfo(
            name=self.name,
            backend=self.backend,
            description=f"Linked KGs {', '.join(self.kgs)}; IDs keep their member's prefix. Links: {rules or 'none'}.",
            entities=sum(i.entities or 0 for i in infos) or None,
            triples=sum(i.triples or 0 for i in infos) or None,
            relations=sum(i.relations or 0 for i in infos) or None,
            relation_sample=[r for i in infos for r in i.relation_sample[:10]],
        )

    async def aclose(self) -> None:
        for kg in self.kgs.values():
            await kg.aclose()

