"""How an entity of one KG is found in another: the one place where cross-KG identity is decided.

``Linker.equivalents("movies:E11296", into="wd")`` answers "which entities of ``wd`` are
``movies:E11296``?" by the link rules joining the two KGs (Markowitz et al. 2024 link Wikidata and
MusicBrainz the same ways):

* ``same_as`` — the entity's ``owl:sameAs`` edges (a relation labelled "same as", or ``relation``)
  give IRIs that the other KG resolves (:meth:`Graph.resolve_key`);
* ``property`` — an external-ID property (``relation``, e.g. Wikidata ``P434`` or ``P345``) whose
  value, put into ``template`` (``"https://musicbrainz.org/artist/{value}"``) or taken as is
  (``match="key"``: the other KG's IRI/name; ``match="id"``: its local ID), names the entity in the
  other KG;
* ``identifier`` — an identifier both KGs carry as a value (an IMDb ID, an ISBN, a DOI, a
  MusicBrainz ID): ``relation`` in one KG and ``to_relation`` (default: the same name) in the other;
  equal values mean the same entity, whatever the labels say. Each side is asked by value
  (:meth:`Graph.find_by_value`), so it works on every backend, both ways;
* ``label`` — the other KG's entities with exactly the same label, else the same label
  case-insensitively (:meth:`Graph.find_by_label`); at most ``max_label_matches``, and a hub label
  that matches more says so. Only entities of one kind are linked (:class:`Shape`): the film "2012"
  is not the year "2012".

A rule names a relation the same way on every backend: its ID (``catalog:cat.imdb``), its local name
(``imdb``, also the tail of an IRI-derived ID) or its label (``IMDb ID``);
:meth:`Linker.relation_in` resolves it once per KG.

Rules work both ways. With no rule configured, every pair of KGs is linked by label (the paper's
fallback). Linking is lazy — a KG is asked only when an entity is used with one of its relations —
and every answer is kept in a bounded LRU, so a walk that meets the same films again asks nobody.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal as TypingLiteral

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .graph import Graph
from .errors import BackendError, InvalidInput, KGError
from .lru import LRU
from .models import AdjacentIds, Direction, Edge, split_id

log = logging.getLogger(__name__)

SAME_AS_LABELS = ("same as", "sameas", "same_as")
# read on each side when two same-named entities have opposite roles (see Shape): relations, then
# neighbours along each
NEIGHBOUR_RELATIONS = 8
NEIGHBOURS = 50


class LinkRule(BaseModel):
    """How entities of ``from_kg`` are found in ``to_kg`` (and back)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    from_kg: str = Field(description="The KG whose entities are linked (a configured KG's name).")
    to_kg: str = Field(description="The KG they are found in (a configured KG's name).")
    kind: TypingLiteral["same_as", "property", "identifier", "label", "iri"] = Field(
        default="same_as",
        description="same_as: a sameAs edge; property: an external-ID value "
        "(made an IRI by template); identifier: the same value on both sides; label: the same "
        "label; iri: the same IRI.",
    )
    relation: str | None = Field(
        default=None,
        description="same_as: the sameAs relation if not labelled 'same as'; property: the "
        "external-ID relation (its ID with or without the KG prefix, or its label).",
    )
    to_relation: str | None = Field(
        default=None,
        description="identifier: the relation in to_kg holding the same "
        "values (default: relation).",
    )
    template: str | None = Field(
        default=None, description="property: '{value}' is replaced by the value."
    )
    match: TypingLiteral["key", "iri", "id"] = Field(
        default="key",
        description="property without template: the value is the other KG's entity key/IRI ('key', "
        "'iri') or local ID ('id').",
    )

    @model_validator(mode="after")
    def _check(self) -> LinkRule:
        if self.from_kg == self.to_kg:
            raise ValueError("a link rule must join two different KGs")
        if self.kind in ("property", "identifier") and not self.relation:
            raise ValueError(f"a {self.kind} link needs relation=, e.g. 'P434' or 'imdb'")
        if self.to_relation and self.kind != "identifier":
            raise ValueError("to_relation is for kind = 'identifier' only")
        if self.template is not None and "{value}" not in self.template:
            raise ValueError("template must contain '{value}'")
        return self

    def describe(self) -> str:
        rel = self.relation or ""
        if self.to_relation and self.to_relation != self.relation:
            rel += f" = {self.to_relation}"
        return f"{self.from_kg}↔{self.to_kg} by {self.kind}" + (f" ({rel})" if rel else "")


class LinkingConfig(BaseModel):
    """The ``[linking]`` table (and ``--no-link`` / ``--link A=B``): whether and between which KGs
    to link."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = Field(default=True, description="false: serve the KGs side by side, unlinked.")
    pairs: list[tuple[str, str]] | None = Field(
        default=None,
        description=(
            "Label-link only these KG pairs (default: every pair), when no [[link]] is given."
        ),
    )
    cache_size: int = Field(
        default=100_000, ge=1, description="Link answers kept (entity × target KG)."
    )
    max_label_matches: int = Field(
        default=20, ge=1, description="Label links kept per entity and KG."
    )
    wait: float = Field(
        default=3.0,
        gt=0,
        le=600,
        description="Seconds a call waits for a KG once another KG has answered it, and for one "
        "link into another KG; a KG slower than that is named in a warning and left out of that "
        "answer (a stalled endpoint must not hold the others).",
    )


def with_flags(
    config: LinkingConfig, no_link: bool = False, pairs: Iterable[str] = ()
) -> LinkingConfig:
    """``--no-link`` and ``--link A=B`` (repeatable) over the ``[linking]`` table."""
    update: dict = {}
    if no_link:
        update["enabled"] = False
    parsed = []
    for text in pairs:
        a, sep, b = text.partition("=")
        if not sep or not a.strip() or not b.strip() or a.strip() == b.strip():
            raise InvalidInput(
                f"--link {text!r}: expected two different KG names, e.g. --link movies=wd"
            )
        parsed.append((a.strip(), b.strip()))
    if parsed:
        update["pairs"] = parsed
    return config.model_copy(update=update) if update else config


def rules_for(
    names: Iterable[str], explicit: list[LinkRule], config: LinkingConfig | None = None
) -> list[LinkRule]:
    """The rules in force: none when linking is off; the explicit ``[[link]]`` rules if there are
    any; else a label rule for every pair of KGs (or for ``config.pairs``)."""
    config = config or LinkingConfig()
    names = list(names)
    if not config.enabled:
        return []
    if explicit:
        return list(explicit)
    pairs = config.pairs if config.pairs is not None else list(itertools.combinations(names, 2))
    return [LinkRule(from_kg=a, to_kg=b, kind="label") for a, b in pairs]


def check_rules(rules: list[LinkRule], kgs: Mapping[str, Graph]) -> None:
    """Reject, with one line, a rule naming a KG that is not configured or a relation its KG does
    not have (where the KG can list its relations without I/O)."""
    for rule in rules:
        for side in (rule.from_kg, rule.to_kg):
            if side not in kgs:
                raise InvalidInput(
                    f"link rule {rule.describe()} names KG {side!r}, which is not configured "
                    f"(configured: {', '.join(kgs)})"
                )
        if rule.relation and rule.kind in ("same_as", "property", "identifier"):
            sides = [(rule.from_kg, rule.relation)]
            if rule.kind == "identifier":
                sides.append((rule.to_kg, rule.to_relation or rule.relation))
            for kg_name, wanted in sides:
                vocab = kgs[kg_name].relation_vocabulary()
                labels = (
                    kgs[kg_name].relation_labels() or {}
                )  # a relation may be named by its label
                if vocab is not None and not any(
                    names_relation(wanted, rid, labels.get(rid)) for rid in vocab
                ):
                    raise InvalidInput(
                        f"link rule {rule.describe()}: KG {kg_name!r} has no relation {wanted!r}"
                    )


def names_relation(wanted: str, relation_id: str, label: str | None) -> bool:
    """Whether ``wanted`` names the relation: its ID, its local ID, the local name at the end of it
    (after the IRI's last ``/`` or ``#``, a prefixed name's ``.``, or inside a base64-encoded IRI),
    or its label (any case)."""
    local = relation_id.split(":", 1)[-1]
    names = {relation_id, local, local_relation_name(local), _decoded(local)}
    return wanted in names or (label is not None and wanted.casefold() == label.casefold())


def _decoded(local: str) -> str | None:
    """The full IRI inside a ``~<base64>`` relation ID (so a rule may name the relation by its
    IRI)."""
    if not local.startswith("~"):
        return None
    import base64

    raw = local[1:]
    try:
        return base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return None


def local_relation_name(local: str) -> str:
    """``cat.imdb`` → ``imdb``; ``~<base64 of http://x.org/cat/imdb>`` → ``imdb``; ``a/b#c`` →
    ``c``."""
    if local.startswith("~"):
        iri = _decoded(local)
        if iri is None:
            return local
        local = iri
    tail = local.rsplit("/", 1)[-1].rsplit("#", 1)[-1]
    if "/" not in local and "#" not in local and "." in tail:
        tail = tail.split(".", 1)[1]
    return tail


#: per entity: its equivalents in the other KG, and a note for the caller (or None)
Found = dict[str, tuple[list[str], str | None]]


@dataclass(frozen=True)
class Links:
    """The equivalents of one entity in one other KG, and anything the caller should be told (a
    capped hub)."""

    ids: tuple[str, ...] = ()
    note: str | None = None


@dataclass(frozen=True)
class Shape:
    """Where an entity stands in its own KG: what two KGs that share no vocabulary still both say of
    its kind. A film is the source of edges (directed by, release year) and nobody's target; a year,
    a genre or a literal value is only a target. Two same-named entities of which one is only a
    source and the other only a target are two kinds of thing — unless they share a neighbour's name
    (then one KG points its edges the other way: ``person -directed-> film`` against ``film
    -directed_by-> person``). An entity with edges both ways, or none, has no role, and its links
    are not questioned (Wikidata's items all have both)."""

    relations: tuple[tuple[str, Direction], ...] = ()
    cut: bool = False  # get_relations' list was truncated

    @property
    def role(self) -> str | None:
        out = any(d is Direction.forward for _, d in self.relations)
        into = any(d is Direction.backward for _, d in self.relations)
        if out and not into and not self.cut:
            return "source"
        if into and not out:  # a cut list still shows every forward one: backends list those first
            return "target"
        return None


ROLE_WORDS = {"source": "only a source of edges", "target": "only a target of edges"}


class Probe(BaseModel):
    """A rule tried on a sample of its entities (``tot-mcp --check``)."""

    rule: str
    tried: int = Field(
        description="Sampled entities of the rule's first KG that carry its relation (0: untried)."
    )
    linked: int = Field(description="How many of them found an equivalent in the other KG.")
    example: str | None = None
    error: str | None = None

    @property
    def failed(self) -> bool:
        return self.error is not None or (self.tried > 0 and self.linked == 0)

    def line(self) -> str:
        if self.error:
            return f"link {self.rule}: FAILED: {self.error}"
        if not self.tried:
            return f"link {self.rule}: untried (no sample of its entities here)"
        verdict = "FAILED: links nothing" if self.linked == 0 else "ok"
        return (
            f"link {self.rule}: {verdict} ({self.linked} of {self.tried} sampled entities linked"
            + (f", e.g. {self.example})" if self.example else ")")
        )


class LinkStats(BaseModel):
    lookups: int = Field(description="Link answers asked for (entity × target KG).")
    hits: int = Field(description="Answered from the cache.")
    entries: int
    capped: int = Field(description="Label links cut at max_label_matches.")
    label_links: int = Field(default=0, description="Label links made (entity × equivalent).")
    refused: int = Field(default=0, description="Same-label matches not linked: another kind.")

    @property
    def hit_rate(self) -> float:
        return self.hits / self.lookups if self.lookups else 0.0


class Linker:
    """Answers "which entities of KG B are this entity of KG A" by the rules, lazily, with a bounded
    cache."""

    def __init__(
        self,
        kgs: Mapping[str, Graph],
        rules: list[LinkRule],
        *,
        cache_size: int = 100_000,
        max_label_matches: int = 20,
        wait: float = 3.0,
    ) -> None:
        check_rules(rules, kgs)
        self.kgs = dict(kgs)
        self.rules = list(rules)
        self.max_label_matches = max_label_matches
        self.wait = wait  # read by LinkedKG, which bounds its calls to partner KGs with it
        # LinkedKG's: KG name → until when it is not waited for
        self.stalled: dict[str, float] = {}
        self._cache: LRU[Links] = LRU(cache_size)
        self._partners: dict[str, list[str]] = {}
        for r in self.rules:
            for a, b in ((r.from_kg, r.to_kg), (r.to_kg, r.from_kg)):
                if b not in self._partners.setdefault(a, []):
                    self._partners[a].append(b)
        self._lookups = self._hits = self._capped = self._label_links = self._refused = 0
        self._relations: dict[tuple[str, str], str | None] = {}
        # an entity's Shape: a genre is a match again for every film named like it
        self._shapes: LRU[Shape] = LRU(cache_size)

    @classmethod
    def configured(
        cls,
        kgs: Mapping[str, Graph],
        explicit: list[LinkRule] | None = None,
        config: LinkingConfig | None = None,
    ) -> Linker:
        """The linker for these KGs: the ``[[link]]`` rules, else label links (see
        :func:`rules_for`)."""
        config = config or LinkingConfig()
        return cls(
            kgs,
            rules_for(kgs, explicit or [], config),
            cache_size=config.cache_size,
            max_label_matches=config.max_label_matches,
            wait=config.wait,
        )

    async def probe(self, rule: LinkRule, sample: int = 20) -> Probe:
        """Try ``rule`` on up to ``sample`` entities of its first KG that carry its relation (label
        rules: not sampled). A rule that links none of them is misconfigured: a wrong relation name,
        values that differ in form, the wrong direction."""
        if rule.kind == "label" or not rule.relation:
            return Probe(rule=rule.describe(), tried=0, linked=0)
        this = self.kgs[rule.from_kg]
        try:
            relation = await self.relation_in(this, rule.relation)
            entities = await this.subjects_of(relation, sample) if relation else []
            if not entities:
                return Probe(
                    rule=rule.describe(),
                    tried=0,
                    linked=0,
                    error=f"no entity of KG {rule.from_kg!r} has relation {rule.relation!r}",
                )
            linked, example = 0, None
            for eid in entities:
                ids, _ = await self._resolve(rule, eid, True)
                ids = [i for i in ids if split_id(i)[0] == rule.to_kg]
                if ids:
                    linked += 1
                    example = example or f"{eid} → {ids[0]}"
        except KGError as e:
            return Probe(rule=rule.describe(), tried=0, linked=0, error=str(e))
        return Probe(rule=rule.describe(), tried=len(entities), linked=linked, example=example)

    def partners(self, kg_name: str) -> list[str]:
        """The KGs an entity of ``kg_name`` can be linked into."""
        return self._partners.get(kg_name, [])

    def stats(self) -> LinkStats:
        return LinkStats(
            lookups=self._lookups,
            hits=self._hits,
            entries=len(self._cache),
            capped=self._capped,
            label_links=self._label_links,
            refused=self._refused,
        )

    def known(self, entity_id: str, into: str) -> Links | None:
        """:meth:`equivalents` when the cache holds the answer (no coroutine: a bulk link reads
        thousands)."""
        cached = self._cache.get((entity_id, into))
        if cached is not None:  # a miss is counted by the equivalents() call that follows it
            self._lookups += 1
            self._hits += 1
        return cached

    async def equivalents(self, entity_id: str, into: str) -> Links:
        """The entity's equivalents in KG ``into`` (cached). Raises BackendError when a KG failed
        (not cached)."""
        cached = self.known(entity_id, into)  # a hit is counted there
        if cached is not None:
            return cached
        self._lookups += 1
        here = split_id(entity_id)[0]
        found: dict[str, None] = {}
        notes: list[str] = []
        failures: list[str] = []
        for rule in self.rules:
            if {rule.from_kg, rule.to_kg} != {here, into}:
                continue
            try:
                ids, note = await self._resolve(rule, entity_id, rule.from_kg == here)
            except BackendError as e:
                failures.append(f"KG {into if rule.from_kg == here else here!r}: {e}")
                continue
            except KGError as e:  # e.g. the rule's relation is absent for this entity
                log.debug("link rule %s for %s: %s", rule.describe(), entity_id, e)
                continue
            found.update(dict.fromkeys(i for i in ids if split_id(i)[0] == into))
            if note:
                notes.append(note)
        if failures:
            raise BackendError("; ".join(failures))
        links = Links(tuple(found), "; ".join(notes) or None)
        self._cache.put((entity_id, into), links)
        return links

    async def prefetch(self, entity_ids: list[str], into: str) -> None:
        """Link many entities of one KG into ``into`` with a few bulk queries, cached as
        :meth:`equivalents` caches them: a reasoner walking a frontier of a thousand films would
        otherwise ask the other KG a thousand times. Only where every rule between the two KGs is an
        identifier rule (values read with one bulk read, looked up with ``find_by_values``) or a
        label rule (names looked up with ``find_by_labels``); other kinds stay one entity at a time.
        Anything that fails caches nothing."""
        if not entity_ids:
            return
        here = split_id(entity_ids[0])[0]
        rules = [r for r in self.rules if {r.from_kg, r.to_kg} == {here, into}]
        if not rules or any(r.kind not in ("identifier", "label") for r in rules):
            return
        todo = [
            e
            for e in dict.fromkeys(entity_ids)
            if split_id(e)[0] == here and self._cache.get((e, into)) is None
        ]
        if not todo:
            return
        found: dict[str, dict[str, None]] = {e: {} for e in todo}
        notes: dict[str, list[str]] = {e: [] for e in todo}
        try:
            for rule in rules:
                links, cut = await self._in_bulk(rule, todo, rule.from_kg == here)
                if cut:
                    return
                for eid in todo:
                    ids, note = links.get(eid, ((), None))
                    found[eid].update(dict.fromkeys(i for i in ids if split_id(i)[0] == into))
                    notes[eid] += [note] if note else []
        except KGError as e:
            log.debug("prefetching links %s → %s: %s", here, into, e)
            return
        for eid, linked in found.items():
            self._cache.put((eid, into), Links(tuple(linked), "; ".join(notes[eid]) or None))

    async def _in_bulk(
        self, rule: LinkRule, entity_ids: list[str], forward: bool
    ) -> tuple[Found, bool]:
        """A label or identifier rule for many entities at once, and whether an identifier read was
        cut (then its entities' links are not all known)."""
        this = self.kgs[rule.from_kg if forward else rule.to_kg]
        other = self.kgs[rule.to_kg if forward else rule.from_kg]
        if rule.kind == "label":
            return await self._by_label(this, other, entity_ids), False
        return await self._by_identifier(rule, this, other, forward, entity_ids)

    # -- the three kinds ---------------------------------------------------------------------------
    async def _resolve(
        self, rule: LinkRule, entity_id: str, forward: bool
    ) -> tuple[list[str], str | None]:
        if rule.kind in ("label", "identifier"):
            links, _ = await self._in_bulk(rule, [entity_id], forward)
            return links.get(entity_id, ([], None))
        this = self.kgs[rule.from_kg if forward else rule.to_kg]
        other = self.kgs[rule.to_kg if forward else rule.from_kg]
        if (
            rule.kind == "iri"
        ):  # the same IRI names the same thing in both (e.g. Wikidata's main and scholarly graphs)
            key = await this.entity_key(entity_id)
            found = await other.resolve_key(key) if key else None
            return ([found] if found else []), None
        if rule.kind == "same_as":
            return await self._by_same_as(rule, this, entity_id, other, forward), None
        return await self._by_property(rule, this, entity_id, other, forward), None

    async def relation_in(self, kg: Graph, wanted: str) -> str | None:
        """The ID of the relation ``wanted`` names in ``kg`` (ID, local name or label; see
        :func:`names_relation`), resolved once: from the KG's own vocabulary when it lists one, else
        by searching its relations."""
        key = (kg.name, wanted)
        if key in self._relations:
            return self._relations[key]
        found: str | None = None
        vocab = kg.relation_vocabulary()
        if vocab:
            labels = kg.relation_labels() or {}
            found = next(
                (r for r in sorted(vocab) if names_relation(wanted, r, labels.get(r))), None
            )
        if found is None:  # the relations the KG shows of itself, then a search by name
            try:
                sample = (await kg.info()).relation_sample
            except KGError:
                sample = []
            found = next((r.id for r in sample if names_relation(wanted, r.id, r.label)), None)
        if found is None:
            try:
                hits = await kg.search_relations(wanted, limit=20)
            except KGError:
                hits = []
            found = next((h.id for h in hits if names_relation(wanted, h.id, h.label)), None)
        if (
            found is None and " " not in wanted.strip()
        ):  # a local name the KG could not list: its own ID form
            found = wanted if wanted.startswith(f"{kg.name}:") else f"{kg.name}:{wanted}"
        self._relations[key] = found
        return found

    async def _by_identifier(
        self, rule: LinkRule, this: Graph, other: Graph, forward: bool, entity_ids: list[str]
    ) -> tuple[Found, bool]:
        """The entities of ``other`` that carry one of each entity's identifier values (asked by
        value there), from one bulk read of the values (20 an entity), and whether it was cut."""
        mine = rule.relation if forward else (rule.to_relation or rule.relation)
        theirs = (rule.to_relation or rule.relation) if forward else rule.relation
        mine_id = await self.relation_in(this, mine or "")
        theirs_id = await self.relation_in(other, theirs or "")
        if mine_id is None or theirs_id is None:
            return {}, False
        this.read_with_targets(mine_id)  # the next nodes a walk reaches come with their values
        # the bulk read (one unsorted query on SPARQL), not a tool page: no sort, no check that the
        # relation exists
        limit = 20 * len(entity_ids)
        read = await this.adjacent_ids(entity_ids, mine_id, Direction.forward, limit=limit)
        values: dict[str, list[str]] = {}
        for src, v in await self._identifier_values(this, read):
            values.setdefault(src, []).append(v)
        wanted = list(dict.fromkeys(v for vs in values.values() for v in vs))
        cap = self.max_label_matches
        hits = await other.find_by_values(theirs_id, wanted, limit=cap) if wanted else {}
        return {
            src: (list(dict.fromkeys(i for v in vs for i in hits.get(v, ()))), None)
            for src, vs in values.items()
        }, read.truncated

    @staticmethod
    async def _identifier_values(kg: Graph, read: AdjacentIds) -> list[tuple[str, str]]:
        """(entity, identifier value) per edge of ``read``: a literal's text, or the label of the
        node a KG makes of the value (a triples file's ``tt0111161`` is a node)."""
        named = await kg.labels_of([t for _, t in read.pairs]) if read.pairs else {}
        return [*((src, named[t]) for src, t in read.pairs if t in named), *read.values]

    async def _by_label(self, this: Graph, other: Graph, entity_ids: list[str]) -> Found:
        """The entities of ``other`` named as each entity is (their labels, then one
        ``find_by_labels``), of its kind (:meth:`_same_kind`); an unnamed entity links nowhere."""
        labels = await this.labels_of(entity_ids)
        cap = self.max_label_matches
        wanted = [label for label in dict.fromkeys(labels.values()) if label.strip()]
        hits = await other.find_by_labels(wanted, limit=cap + 1) if wanted else {}
        matched: Found = {}
        for eid, label in labels.items():
            got = hits.get(label, []) if label.strip() else []
            capped = self._capped_note(label, other) if len(got) > cap else None
            matched[eid] = ([e.id for e in got[:cap] if split_id(e.id)[0] == other.name], capped)
        # the Shapes these links need, read in bulk (a frontier may be a thousand films); a
        # match's only if the entity has a role to compare it with
        mine = [e for e, (ids, _) in matched.items() if ids]
        await self._shapes_of(this, mine)
        theirs = [
            i
            for e in mine
            if (shape := self._shapes.get(e)) is not None and shape.role
            for i in matched[e][0]
        ]
        await self._shapes_of(other, theirs)
        out = {}
        for eid, (ids, capped) in matched.items():
            kept, note = await self._same_kind(this, eid, labels[eid], other, ids)
            out[eid] = (kept, "; ".join(n for n in (capped, note) if n) or None)
        return out

    # -- kinds: a label link joins only entities of the same kind ----------------------------------
    async def _shapes_of(self, kg: Graph, entity_ids: list[str]) -> None:
        """The :class:`Shape` of many entities, one bulk read of their relations (a frontier may be
        a thousand films). One the KG does not know has no role; a malformed ID fails the read as a
        whole, so then each is read alone; a KG that failed raises, and nothing is kept."""
        todo = [e for e in dict.fromkeys(entity_ids) if self._shapes.get(e) is None]
        if not todo:
            return
        try:
            by = await kg.relations_by_entity(todo)
        except BackendError:
            raise
        except KGError:
            if len(todo) > 1:
                for eid in todo:
                    await self._shapes_of(kg, [eid])
                return
            by = {}
        cap = kg.limits.max_relations
        for eid in todo:
            listed = by.get(eid)
            self._shapes.put(
                eid,
                Shape()
                if listed is None
                else Shape(
                    tuple((r.id, r.direction) for r in listed.relations[:cap]),
                    listed.truncated or len(listed.relations) > cap,
                ),
            )

    async def _shape(self, kg: Graph, entity_id: str) -> Shape:
        """The entity's :class:`Shape` (:meth:`_shapes_of` of one)."""
        await self._shapes_of(kg, [entity_id])
        return self._shapes.get(entity_id) or Shape()

    async def _same_kind(
        self, this: Graph, entity_id: str, label: str, other: Graph, matches: list[str]
    ) -> tuple[list[str], str | None]:
        """The label matches of the entity's kind (see :class:`Shape`), and a note on the others."""
        if not matches:
            return matches, None
        mine = await self._shape(this, entity_id)
        if mine.role is None:
            self._label_links += len(matches)
            return matches, None
        kept: list[str] = []
        refused: list[str] = []
        names: set[str] | None = None  # this entity's neighbours, read once if a match needs them
        for m in matches:
            theirs = await self._shape(other, m)
            if theirs.role in (None, mine.role):
                kept.append(m)
                continue
            names = await self._neighbour_names(this, entity_id, mine) if names is None else names
            shared = names & await self._neighbour_names(other, m, theirs)
            shared.discard(label)  # the name in question is no evidence of itself
            (kept if shared else refused).append(m)
        self._label_links += len(kept)
        self._refused += len(refused)
        if kept or not refused:  # said only where nothing is linked: a walk would wonder why not
            return kept, None
        their_role = "target" if mine.role == "source" else "source"
        more = len(refused) - 3
        shown = ", ".join(refused[:3]) + (f" and {more} more" if more > 0 else "")
        return kept, (
            f"label {label!r} also names {shown} in KG {other.name!r}, not linked to "
            f"{entity_id}: another kind ({ROLE_WORDS[their_role]} there, "
            f"{ROLE_WORDS[mine.role]} here)"
        )

    @staticmethod
    async def _neighbour_names(kg: Graph, entity_id: str, shape: Shape) -> set[str]:
        """The names of a few of the entity's neighbours along each of its first relations."""
        names: set[str] = set()
        for relation, direction in shape.relations[:NEIGHBOUR_RELATIONS]:
            try:
                read = await kg.adjacent_ids([entity_id], relation, direction, limit=NEIGHBOURS)
            except BackendError:
                raise
            except KGError:  # a relation the backend will not read this way: no evidence from it
                continue
            if read.pairs:
                names.update((await kg.labels_of([t for _, t in read.pairs])).values())
            names.update(v for _, v in read.values)
        return names

    def _capped_note(self, label: str, other: Graph) -> str:
        """Counts a hub label cut at ``max_label_matches``, and says so."""
        self._capped += 1
        cap = self.max_label_matches
        return (
            f"label {label!r} names more than {cap} entities in KG {other.name!r}; linked to the "
            f"first {cap}"
        )

    async def _by_same_as(
        self, rule: LinkRule, this: Graph, entity_id: str, other: Graph, forward: bool
    ) -> list[str]:
        if forward:  # follow this entity's sameAs edges to IRIs, and find those in the other KG
            keys = await self._edge_keys(this, entity_id, rule)
            return [e for k in keys if (e := await other.resolve_key(k))]
        key = await this.entity_key(entity_id)  # the other KG's sameAs edges point at our IRI
        return await self._pointing_at(other, key, rule) if key else []

    async def _by_property(
        self, rule: LinkRule, this: Graph, entity_id: str, other: Graph, forward: bool
    ) -> list[str]:
        if forward:  # this entity's external-ID values name entities of the other KG
            out = []
            for v in await self._edge_keys(this, entity_id, rule):
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
        # backward: which entities of the other KG carry a value naming this entity?
        key = await this.entity_key(entity_id) if rule.match != "id" else split_id(entity_id)[1]
        if key is None:
            return []
        if rule.template is not None:
            head, _, tail = rule.template.partition("{value}")
            if not (key.startswith(head) and key.endswith(tail)) or len(key) < len(head) + len(
                tail
            ):
                return []
            key = key[len(head) : len(key) - len(tail)]
        relation = await self.relation_in(other, rule.relation or "")
        if relation is not None:
            try:
                return await other.find_by_value(relation, key)
            except BackendError:
                raise
            except KGError:
                pass
        # the relation cannot be asked by value there: find it on the value's node instead
        return await self._pointing_at(other, key, rule)

    async def _pointing_at(self, other: Graph, key: str, rule: LinkRule) -> list[str]:
        """The entities of ``other`` whose edge along the rule's relation reaches the node ``key``
        names."""
        node = await other.resolve_key(key)
        if node is None:
            return []
        edges = await self._edges(other, node, rule, Direction.backward)
        return [e.target for e in edges if e.target]  # backward: the targets are the subjects

    # -- helpers -----------------------------------------------------------------------------------
    async def _edges(
        self, kg: Graph, entity_id: str, rule: LinkRule, direction: Direction
    ) -> list[Edge]:
        """The entity's first 20 edges along the rule's relation (sameAs if the rule names none)."""
        for r in (await kg.get_relations([entity_id])).relations:
            local = r.id.split(":", 1)[1]
            named = (
                names_relation(rule.relation, r.id, r.label)
                if rule.relation
                else (
                    r.label.casefold() in SAME_AS_LABELS
                    or local.endswith(("#sameAs", "/sameAs"))
                    or local == "sameAs"
                )
            )
            if r.direction is direction and named:
                return (await kg.get_edges([entity_id], r.id, direction, limit=20)).edges
        return []

    async def _edge_keys(self, kg: Graph, entity_id: str, rule: LinkRule) -> list[str]:
        """Values reached forward along the rule's relation: literals as they are, entities as their
        key/IRI."""
        keys = []
        for e in await self._edges(kg, entity_id, rule, Direction.forward):
            if e.value is not None:
                keys.append(e.value.value)
            elif e.target and (k := await kg.entity_key(e.target)):
                keys.append(k)
        return keys
