"""Several KGs answered as one: IDs keep the prefix of the KG that owns them, and a
:class:`~.linking.Linker` maps entities across.

This is the one place that decides which KG answers a call:

* ``initialize`` / ``search_entities`` ask every KG and list each real-world entity once, its
  equivalents in the other KGs as ``same_as``;
* ``get_relations`` lists the relations of the entities *and* of their equivalents, each marked with
  its KG;
* ``get_edges`` asks the KG that owns the relation, with the entities' equivalents there; an edge
  followed from an equivalent names the entity asked about in ``via``;
* ``describe_entity`` adds ``same_as`` in every linked KG.

A KG that fails makes the result ``partial`` with a warning naming it; the call fails only when
every KG did. A KG that is slow is not waited for: once one KG has answered a fan-out, the others
get ``[linking] wait`` seconds more, and a link into another KG gets as long; one that takes longer
is left out of that answer, named in a warning, and not asked again in the same call: a stalled
endpoint must not hold a healthy KG's answers for its whole deadline.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel, Field

from .base import Capabilities, Hop, Limits, hops_of, merge_relation_lists
from .describe import describe_relations
from .eager import gather_eager
from .graph import Graph
from .errors import (
    BackendError,
    BackendRefused,
    EndpointFailed,
    InvalidInput,
    KGError,
    UnknownKG,
)
from .sameness import Linker, LinkingConfig, LinkRule
from .models import (
    AdjacentIds,
    Direction,
    EdgePage,
    Entity,
    EntityDescription,
    EntityMatch,
    KGInfo,
    Relation,
    RelationList,
    split_id,
)
from .text import humanize

if TYPE_CHECKING:
    from .sparql.relsearch import RelationHit

log = logging.getLogger(__name__)
T = TypeVar("T")
Progress = Callable[[int, int, str], Awaitable[None]]

DEFAULT_NAME = "linked"
EXACT_ENOUGH = 0.9  # a match this good is kept next to an exact one (near-identical spellings)


@dataclass
class Report:
    """What a call collects on its way for the caller: warnings to show, and whether some KG
    failed."""

    warnings: list[str] = field(default_factory=list)
    failed: bool = False
    # KGs that did not answer in time, or failed: not asked again in this call
    slow: set[str] = field(default_factory=set)

    def too_slow(self, kg_name: str, wait: float, what: str, lately: bool = False) -> None:
        self.failed = True
        self.slow.add(kg_name)
        when = " lately (not waited for until it answers)" if lately else ""
        self.note(f"KG {kg_name!r} did not answer within {wait:g} s{when}; {what}")

    def down(self, kg_name: str, text: str) -> None:
        """A KG failed: said once, and not asked again in this call (a warning an entity would
        repeat one failure to a reader that pays for every line)."""
        self.failed = True
        if kg_name not in self.slow:
            self.slow.add(kg_name)
            self.note(text)

    def note(self, text: str) -> None:
        if text not in self.warnings:
            self.warnings.append(text)


class Matches(BaseModel):
    """Entities found for a text across the KGs, with what went wrong on the way."""

    entities: list[EntityMatch]
    kgs: list[str] = Field(description="The KGs that were searched.")
    omitted: int = Field(
        default=0, description="Fuzzy look-alikes of mentions that matched exactly, left out."
    )
    warnings: list[str] = Field(default_factory=list)


#: seconds a KG that did not answer in time is not waited for (it is still asked: an answer it gives
#: before the others are done is used, and clears this); after that, one call waits for it again
STALL_MEMORY = 30.0

#: IDs of one KG a chain of links carries on into the next KG (a label that names many things stops
#: widening there)
MAX_CHAIN_IDS = 20


def _asked(relation_id: str, direction: Direction) -> Relation:
    """The relation asked, named from its ID (for a page no KG read)."""
    return Relation(id=relation_id, label=humanize(split_id(relation_id)[1]), direction=direction)


class LinkedKG(Graph):
    """A :class:`Graph` over several Graphs: the reads routed across them, the rest inherited."""

    def __init__(
        self,
        kgs: Mapping[str, Graph] | Sequence[Graph],
        linker: Linker | None = None,
        *,
        name: str = DEFAULT_NAME,
        limits: Limits | None = None,
    ) -> None:
        members = dict(kgs) if isinstance(kgs, Mapping) else {kg.name: kg for kg in kgs}
        if not members:
            raise InvalidInput("no KG to serve")
        for key, kg in members.items():
            if kg.name != key:  # IDs carry kg.name, so routing by prefix needs the two to agree
                raise InvalidInput(f"KG registered as {key!r} is named {kg.name!r}")
        self.name, self.limits = name, limits or next(iter(members.values())).limits
        super().__init__(None)
        self.kgs = members
        self.linker = linker or Linker(members, [])
        self._selections: dict[tuple[str, ...], LinkedKG] = {}
        self._partners: dict[str, list[str]] = {}
        self.capabilities = Capabilities(
            backend="linked", remote=any(k.capabilities.remote for k in members.values())
        )

    @classmethod
    def of(
        cls,
        kgs: Sequence[Graph],
        rules: list[LinkRule] | None = None,
        config: LinkingConfig | None = None,
        limits: Limits | None = None,
    ) -> Graph:
        """The KGs as one: the KG itself when there is one, else linked by ``rules`` (default:
        label, every pair)."""
        kgs = list(kgs)
        if len(kgs) == 1:
            return kgs[0]
        members = {k.name: k for k in kgs}
        return cls(members, Linker.configured(members, rules, config), limits=limits)

    def members(self) -> Mapping[str, Graph]:
        return self.kgs

    def select(self, names: Sequence[str]) -> LinkedKG:
        """Only the KGs named, still linked among themselves (sharing this linker and its cache)."""
        chosen = {n: self.member(n) for n in dict.fromkeys(names)}
        if list(chosen) == list(self.kgs):
            return self
        key = tuple(chosen)
        if (
            key not in self._selections
        ):  # kept, so what callers learn about a selection (statistics) lasts
            self._selections[key] = LinkedKG(
                chosen, self.linker, name=self.name, limits=self.limits
            )
        return self._selections[key]

    # -- routing -----------------------------------------------------------------------------------
    def member(self, kg_name: str) -> Graph:
        kg = self.kgs.get(kg_name)
        if kg is None:
            raise UnknownKG(f"no KG named {kg_name!r}; configured: {', '.join(self.kgs)}")
        return kg

    def owner(self, qualified_id: str) -> Graph:
        name = split_id(qualified_id)[0]
        kg = self.kgs.get(name)
        if kg is None:
            raise UnknownKG(
                f"ID {qualified_id!r} names KG {name!r}, which is not configured; configured: "
                f"{', '.join(self.kgs)}"
            )
        return kg

    def partners(self, kg_name: str) -> list[str]:
        got = self._partners.get(kg_name)
        if got is None:  # the rules do not change once linked: asked per entity of every frontier
            got = self._partners[kg_name] = [
                p for p in self.linker.partners(kg_name) if p in self.kgs
            ]
        return got

    def _stalled(self, kg_name: str) -> bool:
        until = self.linker.stalled.get(kg_name)
        return until is not None and time.monotonic() < until

    def _too_slow(self, report: Report, kg_name: str, what: str) -> None:
        """``kg_name`` did not answer in time: say so, and do not wait for it for a while (shared by
        every selection of these KGs, through the linker)."""
        lately = self._stalled(kg_name)
        if not lately:
            self.linker.stalled[kg_name] = time.monotonic() + STALL_MEMORY
        report.too_slow(kg_name, self.linker.wait, what, lately)

    # -- linking -----------------------------------------------------------------------------------
    async def equivalents(
        self, entity_id: str, report: Report | None = None, into: str | None = None
    ) -> dict[str, list[str]]:
        """The entity's equivalents per linked KG — the closure over the pairwise rules, so a cast
        film linked to the films KG by label, and the films KG to the catalog by an identifier, is
        one node in all three (at most ``MAX_CHAIN_IDS`` IDs a KG carry the chain on). Only in
        ``into``, if given (the chain may still pass through other KGs; a direct link is asked
        first). A KG that failed, or a capped hub label, goes to ``report``."""
        if (
            into is not None
            and report is None
            and (direct := self._known_direct(entity_id, into)) is not None
        ):
            return {into: direct}
        return await self._chained(entity_id, report, into)

    def _known_direct(self, entity_id: str, into: str) -> list[str] | None:
        """The entity's direct links into ``into`` when the linker already holds some, without a
        coroutine (a reasoner asks thousands a question); None when they must be asked (unknown,
        none, or no rule)."""
        links = self.linker.known(entity_id, into)  # first: a malformed ID is simply not there
        if links is None or not links.ids or into not in self.partners(split_id(entity_id)[0]):
            return None
        return list(links.ids)

    async def _chained(
        self, entity_id: str, report: Report | None, into: str | None
    ) -> dict[str, list[str]]:
        """:meth:`equivalents` asked of the linker (its cache, else the KGs), rule by rule."""
        report = report if report is not None else Report()
        home = self.owner(entity_id).name
        if into is not None and into in self.partners(home):
            direct = await self._links(entity_id, into, report)
            if direct:
                return {into: direct}
        out: dict[str, list[str]] = {}
        reached = {home}
        frontier = [entity_id]
        while frontier:
            found: dict[str, dict[str, None]] = {}
            for eid in frontier:
                for other in self.partners(self.owner(eid).name):
                    if other in reached:
                        continue
                    ids = await self._links(eid, other, report)
                    found.setdefault(other, {}).update(dict.fromkeys(ids))
            frontier = []
            for other, linked in found.items():
                if linked:
                    out[other] = list(linked)
                    reached.add(other)
                    frontier.extend(list(linked)[:MAX_CHAIN_IDS])
            if into is not None and into in out:
                break
        if into is not None:
            return {into: out[into]} if into in out else {}
        return out

    async def prefetch(self, entity_ids: list[str], report: Report | None = None) -> None:
        """Warm the link cache for many entities at once, each chain level by level as
        :meth:`equivalents` walks the rules, so that the per-entity calls after it are cache hits:
        one bulk lookup (:meth:`Linker.prefetch`) a pair of KGs a round, whatever KG the chains
        began in, and a lookup of a remote KG only once no local one is left to ask (a cast
        frontier's films are linked into the catalog with the films frontier's). A partner
        slower than ``linker.wait`` is skipped (and named in ``report``)."""
        # else nobody reads it: equivalents() reports
        report = report if report is not None else Report()
        # a chain: the KGs it reached, and its frontier (as _chained walks it)
        chains = [
            ({split_id(e)[0]}, [e]) for e in dict.fromkeys(entity_ids) if split_id(e)[0] in self.kgs
        ]
        asked: set[tuple[str, str]] = set()
        while chains:
            todo: dict[tuple[str, str], dict[str, None]] = {}
            for reached, frontier in chains:
                for e in frontier:
                    for other in self.partners(split_id(e)[0]):
                        if other not in reached and (e, other) not in asked:
                            todo.setdefault((split_id(e)[0], other), {})[e] = None
            if todo:
                local = {
                    p: ids
                    for p, ids in todo.items()
                    if not any(self.kgs[k].capabilities.remote for k in p)
                }
                await gather_eager(
                    self._prefetch_into(list(ids), other, report)
                    for (_, other), ids in (local or todo).items()
                )
                asked.update((e, other) for (_, other), ids in (local or todo).items() for e in ids)
            nxt = []
            for reached, frontier in chains:
                ask = [
                    (e, o)
                    for e in frontier
                    for o in self.partners(split_id(e)[0])
                    if o not in reached
                ]
                if not all(a in asked for a in ask):
                    nxt.append((reached, frontier))  # a lookup of its level still to come
                    continue
                found: dict[str, dict[str, None]] = {}
                for e, other in ask:
                    links = self.linker.known(e, other)
                    found.setdefault(other, {}).update(dict.fromkeys(links.ids if links else ()))
                more = {o: list(ids)[:MAX_CHAIN_IDS] for o, ids in found.items() if ids}
                if more:
                    nxt.append((reached | set(more), [i for ids in more.values() for i in ids]))
            chains = nxt

    async def _prefetch_into(self, ids: list[str], other: str, report: Report) -> None:
        """Links of one KG's entities into ``other`` in bulk, the rest one at a time."""
        if other in report.slow:
            return
        if self._stalled(other):
            self._too_slow(report, other, "links into it are missing")
            return
        try:  # wait_for, not asyncio.timeout: see _links
            await asyncio.wait_for(self.linker.prefetch(ids, other), self.linker.wait)
        except TimeoutError:
            self._too_slow(report, other, "links into it are missing")
            return
        missing = [e for e in ids if self.linker.known(e, other) is None]
        # rules the linker cannot apply in bulk: one entity at a time, concurrently
        await gather_eager(self._links(e, other, report) for e in missing)

    async def _links(self, entity_id: str, other: str, report: Report) -> list[str]:
        """One pairwise step (the linker's answer, cached there), within ``linker.wait`` seconds: a
        KG that did not answer in time is named in ``report`` and not asked again for the rest of
        the call."""
        links = self.linker.known(entity_id, other)
        if links is None:
            if other in report.slow:
                return []
            if self._stalled(other):
                self._too_slow(report, other, "links into it are missing")
                return []
            # wait_for, not asyncio.timeout: gather_eager may finish this in another task than it
            # began
            try:
                asked = self.linker.equivalents(entity_id, other)
                links = await asyncio.wait_for(asked, self.linker.wait)
            except TimeoutError:
                self._too_slow(report, other, "links into it are missing")
                return []
            except BackendError as e:
                if _unreachable(e):
                    report.down(other, f"KG {other!r} failed ({e}); links into it are missing")
                else:
                    report.failed = True
                    report.note(
                        f"linking {entity_id} into KG {other!r} failed ({e}); "
                        "its equivalents there are missing"
                    )
                return []
            self.linker.stalled.pop(other, None)
        if links.note:
            report.note(links.note)
        return list(links.ids)

    async def _quiet_prefetch(self, entity_ids: list[str], report: Report) -> None:
        """:meth:`prefetch` where a failure only leaves the cache cold (the lookups after it ask
        again, and report)."""
        try:
            await self.prefetch(entity_ids, report)
        except KGError:
            pass

    async def same_as(
        self, entity_id: str, into: str | None = None, report: Report | None = None
    ) -> list[str]:
        return [
            i for ids in (await self.equivalents(entity_id, report, into)).values() for i in ids
        ]

    async def same_as_many(self, entity_ids: list[str]) -> dict[str, list[str]]:
        """Linked in bulk first (:meth:`prefetch`), then each from the link cache: a page of 30
        films linked one identifier query at a time cost 30 round trips."""
        if len(entity_ids) > 1:
            try:
                await self.prefetch(entity_ids)
            except KGError:
                pass
        out: dict[str, list[str]] = {}
        for eid in dict.fromkeys(entity_ids):
            try:
                out[eid] = await self.same_as(eid)
            except KGError:
                continue
        return out

    # -- fan-out -----------------------------------------------------------------------------------
    async def _each(
        self,
        names: Sequence[str],
        call: Callable[[Graph], Awaitable[T]],
        report: Report,
        progress: Progress | None = None,
        others_answered: bool = False,
    ) -> list[tuple[str, T]]:
        """``call`` on every KG named, concurrently. Failures become warnings; when all fail, the
        first is raised (a bad query reads as a bad query, not as an empty result). Once one KG has
        answered (or, with ``others_answered``, at once), the rest get ``linker.wait`` seconds more;
        a KG slower than that is left out and named in ``report``. ``progress(done, total,
        kg_name)`` is awaited as each KG answers."""
        done = 0

        async def one(kg: Graph) -> T:
            nonlocal done
            try:
                return await call(kg)
            finally:
                done += 1
                task = asyncio.current_task()  # one() runs as, or inside, a task
                if progress is not None and not (task is not None and task.cancelling()):
                    await progress(done, len(names), kg.name)

        # no task to spawn: a measurable share of a ~2 ms call
        if len(names) == 1 and not others_answered:
            return [(names[0], await one(self.kgs[names[0]]))]
        tasks = [asyncio.ensure_future(one(self.kgs[n])) for n in names]
        pending: set = set(tasks)
        try:
            # the first answer is waited for as long as it takes (each KG bounds its own calls); the
            # others then get `wait` seconds more, so one stalled KG cannot hold the answers of the
            # rest
            if not others_answered:
                _, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            waited = {t for t, n in zip(tasks, names) if t in pending and not self._stalled(n)}
            if waited:  # a KG that did not answer lately gets no time beyond what the others take
                await asyncio.wait(waited, timeout=self.linker.wait)
            pending = {t for t in pending if not t.done()}
        finally:
            for t in tasks:
                t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)  # the cancelled ones finish closing
        ok, errors = [], []
        for n, task in zip(names, tasks, strict=True):
            if task in pending:
                self._too_slow(report, n, "its answer is left out")
                continue
            self.linker.stalled.pop(n, None)
            res = task.exception() or task.result()
            if isinstance(res, KGError):
                errors.append((n, res))
            elif isinstance(res, BaseException):
                raise res
            else:
                ok.append((n, res))
        if errors and not ok:
            raise errors[0][1]
        for n, e in errors:
            if _unreachable(e):
                report.down(n, f"KG {n!r} failed: {e}")
            else:
                report.failed = True
                report.note(f"KG {n!r} failed: {e}")
        return ok

    async def answering(
        self,
        names: Sequence[str],
        call: Callable[[Graph], Awaitable[T]],
        report: Report,
        others_answered: bool = False,
    ) -> list[tuple[str, T]]:
        """``call`` on the members named, as the fan-out calls them: the slow and the failed ones
        left out, in ``report``."""
        return await self._each(names, call, report, others_answered=others_answered)

    # -- interface ---------------------------------------------------------------------------------
    async def find_matches(
        self, text: str, limit: int = 10, how: str = "link", progress: Progress | None = None
    ) -> Matches:
        """``initialize`` (``how="link"``) or ``search_entities`` over every KG: best first, each
        real-world entity once, with its equivalents as ``same_as``. ``progress(done, total,
        kg_name)`` is awaited as each KG answers."""
        text = self.limits.check_query(text)
        limit = self.limits.clamp(limit, self.limits.max_search)
        report = Report()
        names = list(self.kgs)

        # linking: the KGs without I/O answer first, and the others are told which mentions those
        # matched by name, so that a remote KG skips its fuzzy scan for them (its look-alikes would
        # be left out below anyway)
        remote = {n for n in names if self.kgs[n].capabilities.remote} if how == "link" else set()
        if len(remote) == len(names):
            remote = set()
        named: set[str] = set()
        local_left = len(names) - len(remote)
        local_done = asyncio.Event()
        # the local KGs' exact matches are linked while a remote KG still searches (their links
        # are asked below anyway): the lookup's round trip overlaps the search's
        exact: list[str] = []
        early: list[asyncio.Future] = []

        async def call(kg: Graph) -> list[EntityMatch]:
            nonlocal local_left
            if how != "link":
                return await kg.search_entities(text, limit)
            if kg.name in remote:
                await local_done.wait()
                return await kg.initialize_named(text, limit, frozenset(named))
            try:
                got = await kg.initialize(text, limit)
                matched = [m for m in got if m.match in ("exact", "casefold")]
                named.update(m.mention for m in matched if m.mention is not None)
                exact.extend(m.entity.id for m in matched)
                return got
            finally:
                local_left -= 1
                if local_left == 0:
                    local_done.set()
                    if remote and exact:
                        early.append(asyncio.ensure_future(self._quiet_prefetch(exact, report)))

        try:
            found = [m for _, ms in await self._each(names, call, report, progress) for m in ms]
            await asyncio.gather(*early)
        finally:
            for task in early:
                task.cancel()
        found.sort(key=lambda m: -m.score)  # stable: KG order breaks ties
        omitted = 0
        if (
            how == "link"
        ):  # a mention matched by name needs no fuzzy look-alikes (search_entities lists them)
            named = {
                m.mention
                for m in found
                if m.mention is not None and m.match in ("exact", "casefold")
            }
            kept = [
                m
                for m in found
                if m.mention not in named
                or m.match in ("exact", "casefold")
                or m.score >= EXACT_ENOUGH
            ]
            omitted, found = len(found) - len(kept), kept
        out: list[EntityMatch] = []
        covered: set[str] = set()
        for m in found:
            if m.entity.id in covered:
                continue
            same = await self.same_as(m.entity.id, report=report) if len(self.kgs) > 1 else []
            covered.update([m.entity.id, *same])
            update: dict = {"same_as": same} if same else {}
            if not m.entity.description and not self.owner(m.entity.id).capabilities.local_index:
                entity = await self._described(m.entity)
                if entity is not m.entity:
                    update["entity"] = entity
            out.append(m.model_copy(update=update) if update else m)
            if len(out) >= limit:
                break
        return Matches(entities=out, kgs=names, omitted=omitted, warnings=report.warnings)

    async def initialize_named(
        self, query: str, limit: int = 10, named: frozenset[str] = frozenset()
    ) -> list[EntityMatch]:
        return (await self.find_matches(query, limit, "link")).entities

    async def search_entities(self, text: str, limit: int = 10) -> list[EntityMatch]:
        return (await self.find_matches(text, limit, "search")).entities

    async def find_relations(
        self, text: str, limit: int = 10
    ) -> tuple[list[RelationHit], list[str]]:
        """``search_relations`` on every KG at once, best first; a KG that failed is a warning (all
        failed: the first error is raised)."""
        report = Report()
        answered = await self._each(
            list(self.kgs), lambda kg: kg.search_relations(text, limit), report
        )
        hits = sorted(
            (h for _, hs in answered for h in hs), key=lambda h: (-h.score, -(h.count or 0), h.id)
        )
        return hits[:limit], report.warnings

    async def _route(
        self, entity_ids: list[str], kg: Graph, relation_id: str
    ) -> tuple[list[str], dict[str, str], Report]:
        """Where a read along ``kg``'s relation goes: the entities of ``kg`` themselves, the others'
        equivalents there (linked in bulk first), and ``{equivalent: the entity it answers for}``;
        entities linked nowhere in ``kg`` are named in the report."""
        report = Report()
        foreign = [eid for eid in entity_ids if self.owner(eid) is not kg]
        if (
            not foreign
        ):  # the relation's own KG's entities (always, with one KG): nothing to link or report
            return entity_ids, {}, report
        if len(foreign) > 1:
            await self.prefetch(foreign, report)
        found = await gather_eager(self.equivalents(eid, report, into=kg.name) for eid in foreign)
        linked = {eid: eqs.get(kg.name, []) for eid, eqs in zip(foreign, found)}
        routed: dict[str, None] = {}
        via: dict[str, str] = {}
        unlinked: list[str] = []
        for eid in entity_ids:
            if eid not in linked:
                routed[eid] = None
                continue
            if not linked[eid]:
                unlinked.append(eid)
            for e in linked[eid]:
                routed.setdefault(e, None)
                via.setdefault(e, eid)
        if unlinked:
            shown = ", ".join(unlinked[:5]) + (
                f" and {len(unlinked) - 5} more" if len(unlinked) > 5 else ""
            )
            report.note(
                f"{shown}: no equivalent in KG {kg.name!r}, so no {relation_id} edges from "
                f"{'it' if len(unlinked) == 1 else 'them'}"
            )
        return list(routed), via, report

    async def _page(
        self,
        entity_ids: list[str],
        relation_id: str,
        direction: Direction,
        limit: int | None,
        offset: int,
        labelled: bool,
    ) -> EdgePage:
        self.limits.check_ids(entity_ids)
        kg = self.owner(relation_id)
        routed, via, report = await self._route(list(dict.fromkeys(entity_ids)), kg, relation_id)

        async def read(ids: list[str]) -> EdgePage:
            got = kg.get_labelled_edges if labelled else kg.get_edges
            return await got(ids[: kg.limits.max_ids], relation_id, direction, limit, offset)

        return await self._read_member(kg, routed, relation_id, direction, via, report, read)

    async def adjacent(
        self,
        entity_ids: list[str],
        relation_id: str,
        direction: Direction = Direction.forward,
        limit: int = 2000,
    ) -> EdgePage:
        """The relation's own KG's bulk read (one query per hop on an endpoint), from the entities
        or their equivalents there; an edge read from an equivalent carries the entity asked as
        ``via``."""
        kg = self.owner(relation_id)
        routed, via, report = await self._route(list(dict.fromkeys(entity_ids)), kg, relation_id)
        return await self._read_member(
            kg,
            routed,
            relation_id,
            direction,
            via,
            report,
            lambda ids: kg.adjacent(ids, relation_id, direction, limit),
        )

    async def adjacent_along(
        self,
        entity_ids: list[str],
        hops: Sequence[Hop],
        limit: int = 2000,
        labelled: bool = False,
        with_relations: bool = False,
    ) -> dict[Hop, AdjacentIds]:
        """:meth:`adjacent_ids` along several hops: each KG's hops in one read of that KG, from the
        entities or their equivalents there (the KGs at once)."""
        hops = hops_of(hops)
        by_kg: dict[str, list[Hop]] = {}
        for hop in hops:
            by_kg.setdefault(self.owner(hop[0]).name, []).append(hop)

        async def read(kg: Graph, kg_hops: list[Hop]) -> dict[Hop, AdjacentIds]:
            routed, via = list(dict.fromkeys(entity_ids)), dict[str, str]()
            if routed:
                routed, via, _ = await self._route(routed, kg, kg_hops[0][0])
                if not routed:
                    return {h: AdjacentIds() for h in kg_hops}
            got = await kg.adjacent_along(routed, kg_hops, limit, labelled, with_relations)
            return {h: _via(r, via) for h, r in got.items()}

        parts = await gather_eager(read(self.kgs[name], kg_hops) for name, kg_hops in by_kg.items())
        out = {h: r for part in parts for h, r in part.items()}
        return {h: out[h] for h in hops}

    async def _read_member(
        self,
        kg: Graph,
        ids: list[str],
        relation_id: str,
        direction: Direction,
        via: dict[str, str],
        report: Report,
        read: Callable[[list[str]], Awaitable[EdgePage]],
    ) -> EdgePage:
        """``read`` of the routed IDs, edges marked with ``via`` and the report's warnings added; a
        failed member is an empty partial page when other KGs are served."""
        if not ids:
            return EdgePage(
                edges=[],
                relation=_asked(relation_id, direction),
                warnings=report.warnings,
                partial=report.failed,
            )
        try:
            page = await read(ids)
        except BackendError as e:
            if len(self.kgs) == 1:
                raise
            return EdgePage(
                edges=[],
                relation=_asked(relation_id, direction),
                partial=True,
                warnings=[*report.warnings, f"KG {kg.name!r} failed: {e}"],
            )
        if not via and not report.warnings:
            return page
        edges = [
            e.model_copy(update={"via": via[e.source]}) if e.source in via else e
            for e in page.edges
        ]
        return page.model_copy(
            update={
                "edges": edges,
                "partial": page.partial or report.failed,
                "warnings": [*page.warnings, *report.warnings],
            }
        )

    async def describe_entity(self, entity_id: str) -> EntityDescription:
        desc = await self.owner(entity_id).describe_entity(entity_id)
        update: dict = {}
        if (
            not desc.entity.description and desc.relations
        ):  # a KG without descriptions: say what kind of thing
            derived = describe_relations(desc.relations)
            if derived:
                update["entity"] = desc.entity.model_copy(update={"description": derived})
        same = await self.same_as(entity_id)
        if same:
            update["same_as"] = list(dict.fromkeys([*desc.same_as, *same]))
        return desc.model_copy(update=update) if update else desc

    async def _described(self, entity: Entity) -> Entity:
        """The entity with a description derived from its relations, when its KG has none (one
        get_relations; in-memory KGs derive richer ones themselves)."""
        try:
            rels = (await self.owner(entity.id).get_relations([entity.id])).relations
        except KGError:
            return entity
        derived = describe_relations(rels)
        return entity.model_copy(update={"description": derived}) if derived else entity

    async def label_of(self, entity_id: str) -> str:
        return await self.owner(entity_id).label_of(entity_id)

    async def labels_of(self, entity_ids: list[str]) -> dict[str, str]:
        by_kg: dict[str, list[str]] = {}
        for eid in dict.fromkeys(entity_ids):
            by_kg.setdefault(split_id(eid)[0], []).append(eid)
        out: dict[str, str] = {}
        for name, ids in by_kg.items():
            if (kg := self.kgs.get(name)) is not None:
                out.update(await kg.labels_of(ids))
        return out

    async def find_by_label(self, label: str, limit: int = 20) -> list[Entity]:
        return [e for kg in self.kgs.values() for e in await kg.find_by_label(label, limit)][:limit]

    async def resolve_key(self, key: str) -> str | None:
        for kg in self.kgs.values():
            if found := await kg.resolve_key(key):
                return found
        return None

    async def entity_key(self, entity_id: str) -> str | None:
        return await self.owner(entity_id).entity_key(entity_id)

    def relation_labels(self) -> Mapping[str, str] | None:
        labels = [kg.relation_labels() for kg in self.kgs.values()]
        known = [m for m in labels if m is not None]
        return None if len(known) < len(labels) else {k: v for m in known for k, v in m.items()}

    async def search_relations(self, text: str, limit: int = 10) -> list[RelationHit]:
        return (await self.find_relations(text, limit))[0]

    async def find_by_values(
        self, relation_id: str, values: list[str], limit: int = 20
    ) -> dict[str, list[str]]:
        return await self.owner(relation_id).find_by_values(relation_id, values, limit)

    async def subjects_of(self, relation_id: str, limit: int = 20) -> list[str]:
        return await self.owner(relation_id).subjects_of(relation_id, limit)

    async def relations_by_entity(self, entity_ids: list[str]) -> dict[str, RelationList]:
        """Each entity's relations with its equivalents' (as :meth:`get_relations` lists them), one
        batched read per KG: the links of every entity looked up in bulk first."""
        ids = list(dict.fromkeys(entity_ids))
        for eid in ids:
            self.owner(eid)  # an ID of no KG served here is a mistake to name, as every read says
        if not ids:
            return {}
        report = Report()
        several = len(self.kgs) > 1
        if several and len(ids) > 1:
            await self.prefetch(ids, report)
        eqs = (
            dict(zip(ids, await gather_eager(self.equivalents(e, report) for e in ids)))
            if several
            else {}
        )
        groups: dict[str, dict[str, None]] = {}
        for eid in ids:
            groups.setdefault(split_id(eid)[0], {})[eid] = None
            for other, linked in eqs.get(eid, {}).items():
                groups.setdefault(other, {}).update(dict.fromkeys(linked))
        got: dict[str, RelationList] = {}
        answered = await self._each(
            list(groups), lambda kg: kg.relations_by_entity(list(groups[kg.name])), report
        )
        for _, by in answered:
            got.update(by)
        failed = set(groups) - {name for name, _ in answered}
        out: dict[str, RelationList] = {}
        for eid in ids:
            if eid not in got:
                if split_id(eid)[0] in failed:  # its own KG did not answer: unknown, not absent
                    out[eid] = RelationList(
                        relations=[], partial=True, warnings=list(report.warnings)
                    )
                continue
            lists = [
                got[eid],
                *(got[e] for ids_ in eqs.get(eid, {}).values() for e in ids_ if e in got),
            ]
            merged = merge_relation_lists(lists)  # two equivalents in one KG: one line per relation
            rels = [
                r.model_copy(update={"kg": split_id(r.id)[0]}) if several else r
                for r in merged.relations
            ]
            out[eid] = RelationList.model_construct(
                relations=rels,
                truncated=merged.truncated,
                partial=report.failed or merged.partial,
                warnings=list(report.warnings),
            )
        return out

    async def member_infos(
        self, progress: Progress | None = None
    ) -> tuple[list[KGInfo], list[str]]:
        """Every KG's own info (``list_kgs``), with a warning for each KG that failed."""
        report = Report()
        infos = [
            i for _, i in await self._each(list(self.kgs), lambda k: k.info(), report, progress)
        ]
        return infos, report.warnings

    async def info(self) -> KGInfo:
        infos, _ = await self.member_infos()
        rules = "; ".join(
            r.describe() for r in self.linker.rules if {r.from_kg, r.to_kg} <= set(self.kgs)
        )
        return KGInfo(
            name=self.name,
            backend=self.backend,
            description=f"KGs {', '.join(self.kgs)} answered as one; IDs keep their KG's prefix. "
            f"Links: {rules or 'none'}.",
            entities=sum(i.entities or 0 for i in infos) or None,
            triples=sum(i.triples or 0 for i in infos) or None,
            relations=sum(i.relations or 0 for i in infos) or None,
            relation_sample=[r for i in infos for r in i.relation_sample[:10]],
        )

    async def aclose(self) -> None:
        for kg in self.kgs.values():
            try:
                await kg.aclose()
            except Exception:  # closing one must not keep the others open
                log.exception("closing KG %s failed", kg.name)


def _via(read: AdjacentIds, via: Mapping[str, str]) -> AdjacentIds:
    """A read from equivalents with the entity asked as each edge's source."""
    if not via:
        return read
    return AdjacentIds.model_construct(
        pairs=[(via.get(s, s), t) for s, t in read.pairs],
        values=[(via.get(s, s), v) for s, v in read.values],
        truncated=read.truncated,
    )


def _unreachable(e: KGError) -> bool:
    """A failure of the KG, not of the request (down, timed out, suspended, rate-limited): the
    same call gains nothing asking it again. An endpoint that refused or failed one query may
    answer another."""
    return isinstance(e, BackendError) and not isinstance(e, (BackendRefused, EndpointFailed))
