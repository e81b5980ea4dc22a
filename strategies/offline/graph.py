"""How the offline reasoner reads a KG: the KG's own ID-level batch reads, a frontier at a time.

Nodes are entity ID strings (a value the KG gives no ID is ``literal:<text>``); a hop is
``(relation_id, Direction)``. The reasoner hands over a whole depth's frontiers at once, and each
read is one call per KG: edges along its hops (``adjacent_along``; every frontier that takes one
of them reads together), relations (``relations_by_entity``), links (``same_as_many``), names
(``labels_of``). Reads that do not wait for each other go out together, so a remote KG sees a
few batched queries a depth, not one per node, hop, page or path.

Across linked KGs, a node's edges are read in the relation's KG from its equivalents there and
split back by the node each stands for; its relations are read from each KG, its own and its
equivalents' (the linked ``get_relations`` caps each KG's share at ``max_ids``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import cast

from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.eager import gather_eager
from tot_mcp.kg_adapters.errors import KGError
from tot_mcp.kg_adapters.models import AdjacentIds, Direction, Relation, split_id
from tot_mcp.kg_adapters.text import humanize

Hop = tuple[str, Direction]
ByKG = dict[str, list[str]]  # a KG's name → IDs of that KG

#: the node of a value a KG gives no ID (SPARQL): no relations, no equivalents, one in every KG
LITERAL_PREFIX = "literal:"

#: a frontier of at most this many IDs has its relations read ID by ID, with the other small
#: frontiers of its depth: on a remote KG one genre or one film was a query of its own
SMALL = 8

#: "every edge": a read of a whole relation, where the KG holds it in memory
_WHOLE = 10**9


def is_literal(node: str) -> bool:
    return node.startswith(LITERAL_PREFIX)


class KGReader:
    """The reads of one KG (of each, when it links several), keeping what lasts between questions:
    names, links, each ID's relations, the relation vocabulary and each relation's sample.

    ``max_edges`` caps one read of a hop, so a hub cannot stall a question: a read cut there holds
    part of the targets, and counts as reaching more than any walkable frontier."""

    def __init__(self, kg: Graph, max_edges: int = 20_000, cache_size: int = 200_000) -> None:
        self.kg = kg
        self.members = dict(kg.members())
        self.linked = len(self.members) > 1
        self._only = None if self.linked else next(iter(self.members))  # the KG of every ID
        self.max_edges = max_edges
        self._cache_size = cache_size
        self._labels: dict[str, str] = {}
        self._links: dict[str, list[str]] = {}  # node → its equivalents in the other KGs
        self._rels: dict[str, dict[Hop, int | None]] = {}  # ID → its relations in its own KG
        self._rel_labels: dict[str, str] = {}
        self._vocab: list[str] | None = None
        self._samples: dict[tuple[str, Direction, int], list[str]] = {}

    def _room(self, cache: dict, more: int) -> None:
        if len(cache) + more > self._cache_size:
            cache.clear()

    # -- names -------------------------------------------------------------------------------
    def label(self, node: str) -> str:
        return node[len(LITERAL_PREFIX) :] if is_literal(node) else self._labels.get(node, node)

    async def labels(self, nodes: Iterable[str]) -> dict[str, str]:
        """The names of the nodes the KG knows (one ``labels_of`` for those not named yet); a node
        it leaves out (unknown, malformed) is not in the answer, nor any when the KG failed."""
        nodes = list(dict.fromkeys(nodes))
        missing = [n for n in nodes if n not in self._labels and not is_literal(n)]
        if missing:
            try:
                got = await self.kg.labels_of(missing)
            except KGError:
                got = {}
            self._room(self._labels, len(got))
            self._labels.update(got)
        return {n: self.label(n) for n in nodes if is_literal(n) or n in self._labels}

    def relation_label(self, relation_id: str) -> str:
        return self._rel_labels.get(relation_id) or humanize(relation_id.split(":", 1)[-1])

    # -- links -------------------------------------------------------------------------------
    async def equivalents(self, nodes: Iterable[str]) -> dict[str, list[str]]:
        """Each node's equivalents in the other linked KGs (none in a single KG), looked up once
        per node, in bulk: one ``same_as_many`` of every node not looked up yet."""
        if not self.linked:
            return {}
        nodes = [n for n in dict.fromkeys(nodes) if not is_literal(n)]
        todo = [n for n in nodes if n not in self._links]
        if todo:
            try:
                got = await self.kg.same_as_many(todo)
            except KGError:
                got = {}
            self._room(self._links, len(todo))
            self._links.update((n, got.get(n, [])) for n in todo)  # a failed lookup: no link
        return {n: self._links.get(n, []) for n in nodes}

    async def twins(self, nodes: list[str]) -> list[str]:
        """The nodes that are these nodes in other linked KGs."""
        return [e for eqs in (await self.equivalents(nodes)).values() for e in eqs]

    def _by_kg(self, ids: Iterable[str], besides: ByKG | None = None) -> ByKG:
        """The IDs by KG, leaving out literals, IDs of no KG here and those ``besides`` holds."""
        skip = {m for ms in (besides or {}).values() for m in ms}
        out: dict[str, dict[str, None]] = {}
        for m in ids:
            name = self._kg(m)
            if name in self.members and m not in skip and not is_literal(m):
                out.setdefault(name, {})[m] = None
        return {name: list(ms) for name, ms in out.items()}

    async def _own_then_linked(
        self, groups: list[list[str]], read: Callable[[list[ByKG]], Awaitable[None]]
    ) -> None:
        """``read`` of each group's nodes by KG, then of their equivalents, once every relation
        they need is read (:meth:`_each`): the nodes' own while their links are looked up (a
        twin an identifier finds on a remote KG comes with its relations), then the twins'."""
        layers = [[self._by_kg(g) for g in groups]]

        def by_kg(layers: list[list[ByKG]]) -> ByKG:
            return {
                name: [m for layer in layers for ids in layer for m in ids.get(name, ())]
                for name in self.members
            }

        if self.linked:
            links = self.equivalents(n for g in groups for n in g)
            both = await gather_eager([links, self._each(by_kg(layers))])
            eqs = cast(dict[str, list[str]], both[0])
            layers.append(
                [
                    self._by_kg((e for n in g for e in eqs.get(n, ())), mine)
                    for g, mine in zip(groups, layers[0])
                ]
            )
        await self._each(by_kg(layers))
        for layer in layers:
            await read(layer)

    # -- relations ---------------------------------------------------------------------------
    async def relations(self, frontiers: list[list[str]]) -> list[dict[Hop, int]]:
        """Every (relation, direction) each frontier has, its equivalents' included, with edge
        counts as ``relation_counts`` gives them (a frontier of at most ``SMALL`` IDs: each ID's
        counted apart, as a hub's sampled backward relations count once each): one read of every
        frontier's IDs a KG, each ID's relations apart (:meth:`_each`)."""
        out: list[dict[Hop, int]] = [{} for _ in frontiers]

        async def read(local: list[ByKG]) -> None:
            each = await self._each(
                {name: [m for ids in local for m in ids.get(name, ())] for name in self.members}
            )
            for i, ids in enumerate(local):
                ms = [m for ms in ids.values() for m in ms]
                if len(ms) <= SMALL:
                    for m in ms:
                        _add(out[i], _merged([each.get(m, {})]))
                else:
                    _add(out[i], _merged([each[m] for m in ms if m in each]))

        await self._own_then_linked(frontiers, read)
        return out

    async def relation_sets(self, nodes: list[str]) -> dict[str, frozenset[Hop]]:
        """Each node's (relation, direction) pairs apart, its equivalents' included."""
        nodes = list(dict.fromkeys(nodes))
        sets: dict[str, set[Hop]] = {n: set() for n in nodes}

        async def read(local: list[ByKG]) -> None:
            each = await self._each(
                {name: [m for ids in local for m in ids.get(name, ())] for name in self.members}
            )
            for n, ids in zip(nodes, local):
                sets[n].update(h for ms in ids.values() for m in ms for h in each.get(m, ()))

        await self._own_then_linked([[n] for n in nodes], read)
        return {n: frozenset(s) for n, s in sets.items()}

    async def _each(self, ids: ByKG) -> dict[str, dict[Hop, int | None]]:
        """Each ID's relations apart, kept between questions: one ``relations_by_entity`` per KG
        for those not known yet (an ID it leaves out, refused, has none)."""
        known = {m: self._rels[m] for ms in ids.values() for m in ms if m in self._rels}
        todo = {name: [m for m in dict.fromkeys(ms) if m not in known] for name, ms in ids.items()}

        async def read(name: str, ms: list[str]) -> dict[str, dict[Hop, int | None]]:
            try:
                got = await self.members[name].relations_by_entity(ms)
            except KGError:
                return {}  # not kept: asked again next time
            return {m: self._hops(got[m].relations) if m in got else {} for m in ms}

        found = await gather_eager(read(name, ms) for name, ms in todo.items() if ms)
        self._room(self._rels, sum(map(len, found)))
        for got in found:
            self._rels.update(got)
            known.update(got)
        return known

    def _hops(self, relations: Iterable[Relation]) -> dict[Hop, int | None]:
        """Each (relation, direction) and its edge count (None: uncounted, a hub's sample)."""
        counts: dict[Hop, int | None] = {}
        for rel in relations:
            self._rel_labels.setdefault(rel.id, rel.label)
            counts[(rel.id, Direction(rel.direction))] = rel.count
        return counts

    # -- edges -------------------------------------------------------------------------------
    async def follow(
        self,
        asks: list[tuple[list[str], Hop]],
        within: int | None = None,
        named: bool = False,
        frontier: bool = False,
    ) -> list[tuple[dict[str, list[str]], bool]]:
        """For each ``(nodes, hop)``: ``{node: [targets]}``, and whether the targets are more than
        ``within`` (a read cut at ``max_edges`` counts as more): one read a KG (:meth:`_joint`),
        then a hop whose read was cut from each ask's nodes alone. ``named``: the targets' names
        are read with them (a KG that can), for :meth:`labels` next; ``frontier``: their relations,
        for :meth:`relations` next."""
        walks = [(_walkable(nodes), hop) for nodes, hop in asks]
        memo: dict = {}
        joint = await self._joint(walks, self.max_edges, memo, named, frontier)
        alone = await self._reads(
            [w for w, (_, cut) in zip(walks, joint) if cut], self.max_edges, memo, named, frontier
        )
        out = []
        for w, (nb, cut) in zip(walks, joint):
            if cut:
                nb, cut = alone[w]
            out.append((nb, within is not None and (cut or _more_than(nb, within))))
        return out

    async def reaches_more_than(self, asks: Sequence[tuple[Sequence[str], Hop, int]]) -> list[bool]:
        """For each ``(nodes, hop, n)``: whether ``hop`` from ``nodes`` reaches more than ``n``
        nodes — the reasoner asks it of a hub ("every film of the genre") whose targets it does
        not otherwise need. First one read a KG (:meth:`_joint`) of the edges a hop its asks'
        ``n + 1`` add up to; an ask that read leaves open (cut at ``n`` targets or fewer) is read
        alone, to ``max_edges``."""
        walks = [(_walkable(nodes), hop) for nodes, hop, _ in asks]
        room: dict[Hop, int] = {}
        for _, hop, n in asks:
            room[hop] = room.get(hop, 0) + n + 1
        first = await self._joint(walks, min(max(room.values(), default=0), self.max_edges), {})
        settled = [not cut or _more_than(nb, n) for (nb, cut), (_, _, n) in zip(first, asks)]
        alone = await self._reads(
            [w for w, done in zip(walks, settled) if not done], self.max_edges, {}
        )
        out = []
        for w, done, (nb, cut), (_, _, n) in zip(walks, settled, first, asks):
            if not done:
                nb, cut = alone[w]
            out.append(cut or _more_than(nb, n))
        return out

    async def _joint(
        self,
        walks: list[tuple[tuple[str, ...], Hop]],
        limit: int,
        memo: dict,
        named: bool = False,
        frontier: bool = False,
    ) -> list[tuple[dict[str, list[str]], bool]]:
        """Each walk's ``{node: [targets]}`` and whether its hop's read was cut, from one read a
        KG of every hop asked of it from every node asked of it there — its own, and the others'
        equivalents there — split back by the node each stands for (two may stand for one; a
        round trip costs more than edges no walk needed)."""
        # looked up already where a depth read the nodes' relations: then no I/O
        await self.equivalents(n for nodes, _ in walks for n in nodes)

        def there(node: str, kg: str) -> list[str]:
            if self._kg(node) == kg:
                return [node]
            return [e for e in self._links.get(node, ()) if split_id(e)[0] == kg]

        by_kg: dict[str, dict[str, None]] = {}
        for nodes, hop in walks:
            kg = self._kg(hop[0])
            by_kg.setdefault(kg, {}).update((e, None) for n in nodes for e in there(n, kg))
        from_kg = {kg: tuple(ids) for kg, ids in by_kg.items()}
        reads = await self._reads(
            [(from_kg[self._kg(h[0])], h) for _, h in walks], limit, memo, named, frontier
        )
        out = []
        for nodes, hop in walks:
            kg = self._kg(hop[0])
            nb, cut = reads[(from_kg[kg], hop)]
            out.append(
                (
                    {
                        n: ts
                        for n in nodes
                        if (ts := [t for e in there(n, kg) for t in nb.get(e, ())])
                    },
                    cut,
                )
            )
        return out

    def is_remote(self, hop: Hop) -> bool:
        """Whether the hop's KG answers over a network (each read a round trip)."""
        kg = self.members.get(self._kg(hop[0]))
        return kg is not None and kg.capabilities.remote

    def _kg(self, qualified_id: str) -> str:
        return self._only or split_id(qualified_id)[0]

    async def _reads(
        self,
        asks: list[tuple[tuple[str, ...], Hop]],
        limit: int,
        memo: dict,
        named: bool = False,
        frontier: bool = False,
    ) -> dict[tuple[tuple[str, ...], Hop], tuple[dict[str, list[str]], bool]]:
        """:meth:`_read` of each ``(nodes, hop)`` not in ``memo`` (this call's reads, kept there),
        a KG's hops from the same nodes in one read, the reads at once."""
        buckets: dict[tuple[tuple[str, ...], str], dict[Hop, None]] = {}
        for nodes, hop in asks:
            if (nodes, hop) not in memo:  # one read a KG: a KG that fails fails its own hops
                buckets.setdefault((nodes, split_id(hop[0])[0]), {})[hop] = None
        got = await gather_eager(
            self._read(list(nodes), list(hops), limit, named, frontier)
            for (nodes, _), hops in buckets.items()
        )
        for (nodes, _), found in zip(buckets, got):
            memo.update(((nodes, hop), res) for hop, res in found.items())
        return memo

    async def _read(
        self, nodes: list[str], hops: list[Hop], limit: int, named: bool, frontier: bool
    ) -> dict[Hop, tuple[dict[str, list[str]], bool]]:
        """Each hop's ``{node: [targets]}`` from one read of at most ``limit`` edges a hop, and
        whether it was cut."""
        if not nodes:
            return {hop: ({}, False) for hop in hops}
        try:
            got = await self.kg.adjacent_along(nodes, hops, limit, named, frontier)
        except KGError:
            return {hop: ({}, False) for hop in hops}  # a failed read reaches nothing
        out = {}
        for hop, read in got.items():
            res: dict[str, list[str]] = {}
            last, targets = None, []
            for src, tgt in _id_pairs(read):  # a source's edges come together: a lookup a source
                if src != last:
                    last, targets = src, res.setdefault(src, [])
                targets.append(tgt)
            out[hop] = res, bool(read.truncated)
        return out

    # -- the KG at large ---------------------------------------------------------------------
    async def vocabulary(self) -> list[str]:
        """Relation IDs each KG is known to use: all of them where it lists them without I/O, else
        its ``info`` sample."""
        if self._vocab is None:
            vocab: dict[str, None] = {}
            for kg in self.members.values():
                labels = kg.relation_labels()
                if labels is None:
                    try:
                        labels = {r.id: r.label for r in (await kg.info()).relation_sample}
                    except KGError:
                        labels = {}
                for rid, label in labels.items():
                    self._rel_labels.setdefault(rid, label)
                    vocab.setdefault(rid, None)
            self._vocab = list(vocab)
        return self._vocab

    async def target_nodes(self, hops: list[Hop], limit: int) -> list[list[str]]:
        """Up to ``limit`` nodes each hop reaches: a sample of its relation, read once, those not
        read yet together. The same whatever questions came before (a sample of the targets a
        run happened to read made answers depend on question order)."""
        todo: dict[str, list[Direction]] = {}
        for rid, d in dict.fromkeys(hops):
            if (rid, d, limit) not in self._samples:
                todo.setdefault(rid, []).append(d)
        await gather_eager(self._sample(rid, ds, limit) for rid, ds in todo.items())
        return [self._samples[(rid, d, limit)] for rid, d in hops]

    async def target_names(self, hops: list[Hop], limit: int) -> list[list[str]]:
        """The names of :meth:`target_nodes` (the answer-type prior, value readings)."""
        nodes = await self.target_nodes(hops, limit)
        await self.labels(n for ns in nodes for n in ns)
        return [[self.label(n) for n in ns] for ns in nodes]

    async def _sample(self, rid: str, directions: list[Direction], limit: int) -> None:
        """A KG that lists its relations without I/O holds them in memory: its sample is spread
        over the whole relation (every k-th edge, k from its size), not its first edges in file
        order. Another KG is asked for a few subjects and what they reach (backward: what reaches
        those)."""
        kg = self.members.get(split_id(rid)[0])  # the relation's own KG
        got: dict[Direction, list[str]] = {}
        try:
            if kg is not None and kg.relation_labels() is not None:
                subjects = await kg.subjects_of(rid, _WHOLE)
                edges = _id_pairs(await kg.adjacent_ids(subjects, rid, Direction.forward, _WHOLE))
                step = max(1, len(edges) // (4 * limit))
                picked = edges[step - 1 :: step]
                got[Direction.forward] = list(dict.fromkeys(t for _, t in picked))[:limit]
                got[Direction.backward] = list(dict.fromkeys(s for s, _ in picked))[:limit]
            elif kg is not None:
                subjects = await kg.subjects_of(rid, limit)
                edges = _id_pairs(
                    await kg.adjacent_ids(subjects, rid, Direction.forward, 4 * limit)
                )
                objects = list(dict.fromkeys(t for _, t in edges))
                got[Direction.forward] = objects[:limit]
                entities = [o for o in objects if not is_literal(o)][:limit]
                if Direction.backward in directions and not entities:
                    got[Direction.backward] = subjects[:limit]
                elif Direction.backward in directions:
                    back = _id_pairs(
                        await kg.adjacent_ids(entities, rid, Direction.backward, 4 * limit)
                    )
                    got[Direction.backward] = list(dict.fromkeys(t for _, t in back))[:limit]
        except KGError:
            pass  # no sample, and none asked for again
        self._samples.update(((rid, d, limit), got.get(d, [])) for d in {*directions, *got})


def _merged(per_id: list[dict[Hop, int | None]]) -> dict[Hop, int]:
    """IDs' relations as ``relation_counts`` merges them: counts added up, a relation none of them
    counted as 1."""
    total: dict[Hop, int | None] = {}
    for counts in per_id:
        for hop, c in counts.items():
            if hop not in total:
                total[hop] = c
            elif total[hop] is not None or c is not None:
                total[hop] = (total[hop] or 0) + (c or 0)
    return {hop: 1 if c is None else c for hop, c in total.items()}


def _add(counts: dict[Hop, int], more: dict[Hop, int]) -> None:
    for hop, c in more.items():
        counts[hop] = counts.get(hop, 0) + c


def _walkable(nodes: Iterable[str]) -> tuple[str, ...]:
    """The nodes, each once, but literals (no edges)."""
    return tuple(n for n in dict.fromkeys(nodes) if not is_literal(n))


def _more_than(nb: dict, n: int) -> bool:
    """Whether ``{node: [targets]}`` holds more than ``n`` distinct targets (no set built when the
    edges are fewer)."""
    return sum(len(ts) for ts in nb.values()) > n and len({t for ts in nb.values() for t in ts}) > n


def _id_pairs(got: AdjacentIds) -> list[tuple[str, str]]:
    """(source, target node) per edge, a literal as its ``literal:`` node (an empty text reaches
    nothing)."""
    if not got.values:
        return got.pairs
    return [*got.pairs, *((src, f"{LITERAL_PREFIX}{text}") for src, text in got.values if text)]
