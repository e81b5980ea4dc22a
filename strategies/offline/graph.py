"""The few graph operations the offline reasoner needs, over any ``Graph``.

``InterfaceGraph`` uses only the public Tree-of-Traversals interface (``get_relations`` / ``get_edges``, batched
and paged), so the policy works on every backend. ``MemoryGraph`` reads a ``MemoryKG``'s index directly: the same
answers, without building pydantic models for thousands of edges per question (the difference between ~50 ms and
seconds on a 3-hop MetaQA question). ``LinkedGraph`` joins the views of several linked KGs: an entity and its
equivalents are one node, so a relation path may cross from one KG to another at any hop.

Nodes are opaque hashable keys (ints for the memory view, entity IDs for the interface view); ``node_id`` and
``label`` translate them. A hop is ``(relation_id, Direction)``.
"""

from __future__ import annotations

import abc
import asyncio
from bisect import bisect_right
from collections.abc import Iterable

from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.eager import gather_eager
from tot_mcp.kg_adapters.errors import KGError
from tot_mcp.kg_adapters.models import AdjacentIds, Direction, split_id
from tot_mcp.kg_adapters.text import humanize

Hop = tuple[str, Direction]


class GraphView(abc.ABC):
    kg: Graph
    knows_labels: bool = True  # label() answers from memory; else labels are learnt as entities are seen

    def remember_label(self, entity_id: str, label: str) -> None:  # noqa: B027 - only views that learn labels
        """Note an entity's label read elsewhere (views that learn labels as they go keep it)."""

    async def twins(self, nodes: list) -> list:
        """The nodes that are these nodes in other linked KGs (none in a single KG)."""
        return []

    async def warm(self, nodes: list) -> None:  # noqa: B027 - only views that look things up lazily
        """Look up in bulk what asking about ``nodes`` one at a time would look up one by one (their links)."""

    async def fetch_labels(self, nodes: list) -> None:  # noqa: B027 - only views that read labels lazily
        """Make :meth:`label` answer for ``nodes``: a view over I/O reads a walk's edges without labels and names
        only what the walk shows (its answers, a type sample), in one bulk read."""

    @abc.abstractmethod
    async def nodes_for(self, entity_ids: Iterable[str]) -> list:
        """Node keys for entity IDs (unknown IDs are skipped)."""

    @abc.abstractmethod
    def node_id(self, node) -> str: ...

    @abc.abstractmethod
    def label(self, node) -> str: ...

    @abc.abstractmethod
    async def relations(self, nodes: list) -> dict[Hop, int]:
        """Every (relation, direction) the nodes have, with edge counts."""

    async def relation_sets(self, nodes: list) -> dict:
        """``{node: frozenset(relations([node]))}`` for every node: each node's (relation, direction) pairs apart.
        This default asks :meth:`relations` per node, concurrently; views over I/O read them in bulk."""
        nodes = list(dict.fromkeys(nodes))
        got = await gather_eager(self.relations([n]) for n in nodes)
        return {n: frozenset(c) for n, c in zip(nodes, got)}

    @abc.abstractmethod
    async def neighbours(self, nodes: list, hop: Hop) -> dict[object, list]:
        """``{node: [targets]}`` along one hop, for the nodes that have it."""

    async def neighbours_within(self, nodes: list, hop: Hop, n: int) -> tuple[dict[object, list], bool]:
        """:meth:`neighbours`, and whether they are more than ``n`` distinct nodes. When they are not, the answer
        holds every neighbour; when they are, it may hold only part of them (a read over I/O is cut at its edge
        cap). So a view that reads over I/O decides "more than ``n``" as a view that reads everything does: a read
        cut off with ``n`` targets or fewer is read again, larger, and counts as more than ``n`` if it is still cut
        at its ceiling. The reasoner asks it of every frontier it may walk on from (``n`` = ``max_frontier``)."""
        nb = await self.neighbours(nodes, hop)
        return nb, _more_than(nb, n)

    async def reaches_more_than(self, nodes: list, hop: Hop, n: int) -> bool:
        """Whether following ``hop`` from ``nodes`` reaches more than ``n`` distinct nodes (what
        :meth:`neighbours_within` decides). Views that read over I/O first read only a little more than ``n``
        edges: the reasoner asks it of a hub ("every film of the genre") whose targets it does not otherwise need."""
        return (await self.neighbours_within(nodes, hop, n))[1]

    @abc.abstractmethod
    def relation_label(self, relation_id: str) -> str: ...

    def int_nodes(self) -> int | None:
        """How many nodes, when they are the integers 0..n-1 (so a joined view can shift them); else None."""
        return None

    async def vocabulary(self) -> list[str]:
        """Relation IDs this KG is known to use (all of them when cheap; else a sample plus those seen)."""
        return []

    async def target_nodes(self, hop: Hop, limit: int) -> list:
        """Up to ``limit`` nodes reached along ``hop`` anywhere in the KG (as node keys)."""
        return []

    async def target_sample(self, hop: Hop, limit: int) -> list[str]:
        """Labels of :meth:`target_nodes` (for the answer-type prior and value readings)."""
        nodes = await self.target_nodes(hop, limit)
        await self.fetch_labels(nodes)
        return [self.label(n) for n in nodes]


class MemoryGraph(GraphView):
    def __init__(self, kg: Graph) -> None:  # a KG declaring capabilities.local_index
        self.kg = kg
        self.local = kg.local_graph()  # type: ignore[attr-defined] - the KG's own view and ID scheme
        self.index = self.local.index
        self._rel_ids = self.local.rel_ids
        self._rel_by_id = {rid: r for r, rid in enumerate(self._rel_ids)}
        self._targets: dict[tuple[int, bool], list[int]] | None = None

    async def nodes_for(self, entity_ids: Iterable[str]) -> list[int]:
        node_of = self.local.node_of
        return [i for eid in entity_ids if (i := node_of(eid)) is not None]

    def node_id(self, node: int) -> str:
        return self.local.entity_id(node)

    def int_nodes(self) -> int:
        return len(self.index.nodes)

    def label(self, node: int) -> str:
        return self.index.nodes[node].label

    async def relations(self, nodes: list[int]) -> dict[Hop, int]:
        counts: dict[Hop, int] = {}
        out, inc, ids = self.index.out, self.index.inc, self._rel_ids
        for i in nodes:
            for r, objs in out[i].items():
                k = (ids[r], Direction.forward)
                counts[k] = counts.get(k, 0) + len(objs)
            for r, subs in inc[i].items():
                k = (ids[r], Direction.backward)
                counts[k] = counts.get(k, 0) + len(subs)
        return counts

    async def neighbours(self, nodes: list[int], hop: Hop) -> dict[int, list[int]]:
        r = self._rel_by_id.get(hop[0])
        if r is None:
            return {}
        table = self.index.out if hop[1] is Direction.forward else self.index.inc
        return {i: t for i in nodes if (t := table[i].get(r))}

    def relation_label(self, relation_id: str) -> str:
        r = self._rel_by_id.get(relation_id)
        return self.index.rel_labels[r] if r is not None else humanize(relation_id.split(":", 1)[-1])

    async def vocabulary(self) -> list[str]:
        return list(self._rel_ids)

    async def target_nodes(self, hop: Hop, limit: int) -> list[int]:
        r = self._rel_by_id.get(hop[0])
        if r is None:
            return []
        if self._targets is None:
            self._targets = self._sample_targets(limit)
        return self._targets.get((r, hop[1] is Direction.forward), [])[:limit]

    def _sample_targets(self, limit: int) -> dict[tuple[int, bool], list[int]]:
        """One pass over the index: the first ``limit`` distinct targets per relation and direction, spread over
        the KG by taking every k-th edge (k from the relation's size) rather than the first edges in file order."""
        counts = self.index.rel_counts
        stride = [max(1, c // (4 * limit)) for c in counts]
        seen: dict[tuple[int, bool], dict[int, None]] = {}
        step = [0] * len(counts)
        for s, rels in enumerate(self.index.out):
            for r, objs in rels.items():
                for o in objs:
                    step[r] += 1
                    if step[r] % stride[r]:
                        continue
                    f = seen.setdefault((r, True), {})
                    if len(f) < limit:
                        f[o] = None
                    b = seen.setdefault((r, False), {})
                    if len(b) < limit:
                        b[s] = None
        return {k: list(v) for k, v in seen.items()}


class InterfaceGraph(GraphView):
    """Any backend, through ``get_relations``/``get_edges`` only: batches of ``limits.max_ids``, paged edges,
    and a cap on edges per hop so a hub entity cannot stall a question."""

    knows_labels = False

    def __init__(self, kg: Graph, max_edges_per_hop: int = 2000, max_edges_to_settle: int = 20_000) -> None:
        self.kg = kg
        self.max_edges_per_hop = max_edges_per_hop
        #: how far :meth:`neighbours_within` reads to tell whether a cut hop reaches more than n nodes
        self.max_edges_to_settle = max(max_edges_to_settle, max_edges_per_hop)
        self._labels: dict[str, str] = {}
        self._rel_labels: dict[str, str] = {}
        self._targets: dict[tuple[Hop, int], list[str]] = {}
        self._vocab: dict[str, None] | None = None

    async def nodes_for(self, entity_ids: Iterable[str]) -> list[str]:
        return list(dict.fromkeys(entity_ids))

    def node_id(self, node: str) -> str:
        return node

    def label(self, node: str) -> str:
        if is_literal(node):
            return node[len(LITERAL_PREFIX):]
        return self._labels.get(node, node)

    async def fetch_labels(self, nodes: list) -> None:
        missing = [n for n in dict.fromkeys(nodes) if n not in self._labels and not is_literal(n)]
        if missing:
            try:
                self._labels.update(await self.kg.labels_of(missing))
            except KGError:
                pass  # unnamed: label() shows the ID

    def remember_label(self, entity_id: str, label: str) -> None:
        self._labels.setdefault(entity_id, label)

    async def relations(self, nodes: list[str]) -> dict[Hop, int]:
        counts: dict[Hop, int] = {}
        try:
            rl = await self.kg.relation_counts(nodes)  # in the backend's own batches
        except KGError:
            return counts
        for rel in rl.relations:
            self._rel_labels.setdefault(rel.id, rel.label)
            k = (rel.id, Direction(rel.direction))
            counts[k] = counts.get(k, 0) + (rel.count if rel.count is not None else 1)
        return counts

    async def relation_sets(self, nodes: list[str]) -> dict[str, frozenset]:
        """One :meth:`Graph.relations_by_entity` read (a query per batch on SPARQL) instead of a
        ``get_relations`` per node; a node it leaves out (refused) has none, as :meth:`relations` would say."""
        nodes = list(dict.fromkeys(nodes))
        try:
            got = await self.kg.relations_by_entity(nodes)
        except KGError:
            return await super().relation_sets(nodes)
        out: dict[str, frozenset] = {}
        for n in nodes:
            rl = got.get(n)
            hops = []
            for rel in rl.relations if rl is not None else ():
                self._rel_labels.setdefault(rel.id, rel.label)
                hops.append((rel.id, Direction(rel.direction)))
            out[n] = frozenset(hops)
        return out

    async def neighbours(self, nodes: list[str], hop: Hop) -> dict[str, list[str]]:
        return (await self._read(nodes, hop, self.max_edges_per_hop))[0]

    async def _read(self, nodes: list[str], hop: Hop, limit: int) -> tuple[dict[str, list[str]], bool]:
        """``{node: [targets]}`` from one bulk read of at most ``limit`` edges, and whether it was cut off."""
        res: dict[str, list[str]] = {}
        try:
            got = await self.kg.adjacent_ids(nodes, hop[0], hop[1], limit=limit)
        except KGError:
            return res, False  # a failed read reaches nothing
        for src, tgt in _id_pairs(got):
            res.setdefault(src, []).append(tgt)
        return res, bool(got.truncated)

    async def neighbours_within(self, nodes: list[str], hop: Hop, n: int) -> tuple[dict[str, list[str]], bool]:
        limit = self.max_edges_per_hop
        while True:
            nb, cut = await self._read(nodes, hop, limit)
            more = _more_than(nb, n)
            if more or not cut:
                return nb, more
            if limit >= self.max_edges_to_settle:
                return nb, True  # still cut: as many edges as we read and more, too many to walk on from
            # cut with n targets or fewer: duplicate targets (many sources, few values) or a cap below n
            limit = min(self.max_edges_to_settle, max(4 * limit, 2 * (n + 1)))

    async def reaches_more_than(self, nodes: list[str], hop: Hop, n: int) -> bool:
        if n + 1 < self.max_edges_per_hop:  # a bounded read settles it unless it is cut with n targets or fewer
            nb, cut = await self._read(nodes, hop, n + 1)
            more = _more_than(nb, n)
            if more or not cut:
                return more
        return await super().reaches_more_than(nodes, hop, n)

    def relation_label(self, relation_id: str) -> str:
        return self._rel_labels.get(relation_id) or humanize(relation_id.split(":", 1)[-1])

    async def vocabulary(self) -> list[str]:
        if self._vocab is None:
            self._vocab = {}
            try:
                info = await self.kg.info()
                for rel in info.relation_sample:
                    self._rel_labels.setdefault(rel.id, rel.label)
                    self._vocab.setdefault(rel.id, None)
            except KGError:
                pass
        return list(self._vocab)

    async def target_nodes(self, hop: Hop, limit: int) -> list[str]:
        """What ``hop`` reaches from a sample of the relation's subjects, asked once: the same whatever questions
        came before (a sample of the targets a run happened to read made answers depend on question order)."""
        key = (hop, limit)
        got = self._targets.get(key)
        if got is None:
            got = self._targets[key] = await self._sample(hop, limit)
        return got

    async def _sample(self, hop: Hop, limit: int) -> list[str]:
        rid, direction = hop
        try:
            subjects = await self.kg.subjects_of(rid, limit)
            forward = _id_pairs(await self.kg.adjacent_ids(subjects, rid, Direction.forward, limit=4 * limit))
            objects = list(dict.fromkeys(t for _, t in forward))
            if direction is Direction.forward:
                return objects[:limit]
            entities = [o for o in objects if not o.startswith(LITERAL_PREFIX)][:limit]
            if not entities:
                return subjects[:limit]
            back = _id_pairs(await self.kg.adjacent_ids(entities, rid, Direction.backward, limit=4 * limit))
            return list(dict.fromkeys(t for _, t in back))[:limit]
        except KGError:
            return []


class LinkedGraph(GraphView):
    """Several KGs' views joined by their links: the relations of a node are its own and its equivalents', and a
    hop along another KG's relation leaves from the node's equivalents there. Links come from the KG
    (``kg.same_as``, decided and cached by its linker).

    Node keys stay cheap: a memory view's integer nodes are shifted into one integer range per KG (the first KG's
    unshifted, so most hops pass its neighbour lists through untouched); other views' nodes are their entity IDs."""

    def __init__(self, kg: Graph, cache_size: int = 200_000) -> None:
        self.kg = kg
        self.views: dict[str, GraphView] = {name: view_for(m) for name, m in kg.members().items()}
        self._base: dict[str, int] = {}
        self._ranges: list[tuple[int, str]] = []
        base = 0
        for name, view in self.views.items():
            size = view.int_nodes()
            if size is not None:
                self._base[name] = base
                self._ranges.append((base, name))
                base += size
        self._starts = [b for b, _ in self._ranges]
        self._eq: dict[tuple, list] = {}  # (node, KG) → that view's nodes; cleared when it reaches cache_size
        self._cache_size = cache_size

    # -- node keys ------------------------------------------------------------------------------------------------
    def _split(self, node) -> tuple[str, object]:
        """(KG name, the node in that KG's view)."""
        if type(node) is int:
            base, name = self._ranges[bisect_right(self._starts, node) - 1]
            return name, node - base
        return node.split(":", 1)[0], node

    def _keys(self, name: str, local: list) -> list:
        base = self._base.get(name, 0)
        return local if not base else [n + base for n in local]

    async def nodes_for(self, entity_ids: Iterable[str]) -> list:
        out = []
        for eid in entity_ids:
            name = split_id(eid)[0]
            view = self.views.get(name)
            if view is not None:
                out.extend(self._keys(name, await view.nodes_for([eid])))
        return out

    def node_id(self, node) -> str:
        if is_literal(node):  # a value reached over SPARQL: no KG of its own, the same in every KG
            return node
        name, local = self._split(node)
        return self.views[name].node_id(local)

    def label(self, node) -> str:
        if is_literal(node):
            return node[len(LITERAL_PREFIX):]
        name, local = self._split(node)
        return self.views[name].label(local)

    @property
    def knows_labels(self) -> bool:  # type: ignore[override]
        return all(v.knows_labels for v in self.views.values())

    async def fetch_labels(self, nodes: list) -> None:
        by_view: dict[str, list] = {}
        for n in nodes:
            if not is_literal(n):
                name, local = self._split(n)
                by_view.setdefault(name, []).append(local)
        for name, local in by_view.items():
            await self.views[name].fetch_labels(local)

    def remember_label(self, entity_id: str, label: str) -> None:
        view = self.views.get(split_id(entity_id)[0])
        if view is not None:
            view.remember_label(entity_id, label)

    # -- links ----------------------------------------------------------------------------------------------------
    async def _equivalents(self, node, into: str) -> list:
        """The node's equivalents in KG ``into`` as that view's nodes (empty when linked nowhere there). Kept here
        too: a beam asks for the same frontier's links many times per question."""
        key = (node, into)
        got = self._eq.get(key)
        if got is None:
            try:
                eqs = await self.kg.same_as(self.node_id(node), into=into)
            except KGError:
                eqs = []
            got = await self.views[into].nodes_for(eqs) if eqs else []
            if len(self._eq) >= self._cache_size:
                self._eq.clear()
            self._eq[key] = got
        return got

    async def _prefetch(self, nodes: list) -> None:
        """Many nodes' links asked in bulk before they are asked one by one (see :meth:`LinkedKG.prefetch`)."""
        prefetch = getattr(self.kg, "prefetch", None)
        if prefetch is not None and len(nodes) > 1:
            try:
                await prefetch([self.node_id(n) for n in nodes])
            except KGError:
                pass

    async def _in(self, nodes: list, name: str) -> tuple[list, dict]:
        """The nodes of KG ``name`` among ``nodes`` (as that view's nodes), and ``{other node: its equivalents
        there}`` for the rest."""
        own, others = [], []
        for n in nodes:
            if is_literal(n):  # a value is an end: no relations, no equivalents
                continue
            kg, local = self._split(n)
            if kg == name:
                own.append(local)
            else:
                others.append(n)
        # a beam reads the same frontiers' links many times: most are known already
        found = {n: eq for n in others if (eq := self._eq.get((n, name))) is not None}
        missing = [n for n in others if n not in found]
        if missing:
            await self._prefetch(missing)
            found.update(await self._equivalents_in(missing, name))
        return own, {n: eq for n in others if (eq := found[n])}

    async def _equivalents_in(self, nodes: list, into: str) -> dict:
        """:meth:`_equivalents` of many nodes, asked of the KG in one call (``same_as_in``)."""
        ids = [self.node_id(n) for n in nodes]
        try:
            linked = await self.kg.same_as_in(ids, into)
        except KGError:
            linked = {}
        view = self.views[into]
        out = {}
        for n, eid in zip(nodes, ids):
            eqs = linked.get(eid)
            got = await view.nodes_for(eqs) if eqs else []
            if len(self._eq) >= self._cache_size:
                self._eq.clear()
            out[n] = self._eq[(n, into)] = got
        return out

    async def warm(self, nodes: list) -> None:
        """Every node's equivalents in every other KG, in bulk (per-node questions after it are cache hits)."""
        if len(nodes) > 1:
            for name in self.views:
                await self._in(nodes, name)

    async def twins(self, nodes: list) -> list:
        asks = [(n, name) for n in nodes if not is_literal(n) for name in self.views if name != self._split(n)[0]]
        await self._prefetch(list(dict.fromkeys(n for n, name in asks if (n, name) not in self._eq)))
        found = await gather_eager(self._equivalents(n, name) for n, name in asks)
        return [k for (_, name), eq in zip(asks, found) for k in self._keys(name, eq)]

    # -- the graph ------------------------------------------------------------------------------------------------
    async def relations(self, nodes: list) -> dict[Hop, int]:
        counts: dict[Hop, int] = {}
        for name, view in self.views.items():
            own, linked = await self._in(nodes, name)
            local = list(dict.fromkeys([*own, *(m for ms in linked.values() for m in ms)])) if linked else own
            if local:
                for hop, c in (await view.relations(local)).items():
                    counts[hop] = counts.get(hop, 0) + c
        return counts

    async def relation_sets(self, nodes: list) -> dict:
        """Each node's :meth:`relations` apart, read in bulk per KG: a node's own there, or its one equivalent's
        (a node with several equivalents in a KG is asked as :meth:`relations` asks them, together)."""
        nodes = list(dict.fromkeys(nodes))
        parts: dict = {n: set() for n in nodes}

        async def per_view(name: str, view: GraphView) -> None:
            _, linked = await self._in(nodes, name)
            single: dict = {}  # node → the one local node answering for it
            several: list = []
            for n in nodes:
                if is_literal(n):
                    continue
                kg, local = self._split(n)
                if kg == name:
                    single[n] = local
                elif n in linked:
                    ms = list(dict.fromkeys(linked[n]))
                    if len(ms) == 1:
                        single[n] = ms[0]
                    else:
                        several.append((n, ms))
            sets = await view.relation_sets(list(dict.fromkeys(single.values()))) if single else {}
            for n, local in single.items():
                parts[n].update(sets.get(local, ()))
            for (n, _), c in zip(several, await asyncio.gather(*(view.relations(ms) for _, ms in several))):
                parts[n].update(c)

        await asyncio.gather(*(per_view(name, view) for name, view in self.views.items()))
        return {n: frozenset(p) for n, p in parts.items()}

    async def neighbours(self, nodes: list, hop: Hop) -> dict[object, list]:
        return (await self._neighbours(nodes, hop, None))[0]

    async def neighbours_within(self, nodes: list, hop: Hop, n: int) -> tuple[dict[object, list], bool]:
        return await self._neighbours(nodes, hop, n)

    async def _neighbours(self, nodes: list, hop: Hop, n: int | None) -> tuple[dict[object, list], bool]:
        """The neighbours, read in the KG that owns the hop from the nodes and their equivalents there; with ``n``,
        whether they are more than ``n`` (the owning view decides: the targets are the same nodes)."""
        name = split_id(hop[0])[0]
        view = self.views.get(name)
        if view is None:
            return {}, False
        own, linked = await self._in(nodes, name)
        asked = list(dict.fromkeys([*own, *(m for ms in linked.values() for m in ms)])) if linked else own
        if n is None:
            nb, more = await view.neighbours(asked, hop), False
        else:
            nb, more = await view.neighbours_within(asked, hop, n) if asked else ({}, False)
        return self._shifted(name, own, linked, nb), more

    def _shifted(self, name: str, own: list, linked: dict, nb: dict) -> dict[object, list]:
        """A view's ``{node: [targets]}`` as this graph's keys, a linked node answering for its equivalents."""
        base = self._base.get(name, 0)  # 0: the view's nodes are the keys (the first memory KG, or entity IDs)
        if not linked:  # the common case: every node is of this KG
            return {k + base: self._keys(name, t) for k, t in nb.items()} if base else nb
        res = {(m + base if base else m): self._keys(name, nb[m]) for m in own if m in nb}
        for k, ms in linked.items():
            targets = [t for m in ms for t in nb.get(m, ())]
            if targets:
                res[k] = self._keys(name, list(dict.fromkeys(targets)) if len(ms) > 1 else targets)
        return res

    async def reaches_more_than(self, nodes: list, hop: Hop, n: int) -> bool:
        name = split_id(hop[0])[0]
        view = self.views.get(name)
        if view is None:
            return False
        own, linked = await self._in(nodes, name)  # the targets are those of the nodes asked there (see neighbours)
        asked = list(dict.fromkeys([*own, *(m for ms in linked.values() for m in ms)])) if linked else own
        return await view.reaches_more_than(asked, hop, n) if asked else False

    def relation_label(self, relation_id: str) -> str:
        view = self.views.get(relation_id.split(":", 1)[0])
        return view.relation_label(relation_id) if view else humanize(relation_id.split(":", 1)[-1])

    async def vocabulary(self) -> list[str]:
        return [r for view in self.views.values() for r in await view.vocabulary()]

    async def target_nodes(self, hop: Hop, limit: int) -> list:
        name = split_id(hop[0])[0]
        view = self.views.get(name)
        return self._keys(name, await view.target_nodes(hop, limit)) if view else []


#: the key of a literal value a backend cannot address as a node (SPARQL): one kind of node in every view
LITERAL_PREFIX = "literal:"


def is_literal(node) -> bool:
    return type(node) is str and node.startswith(LITERAL_PREFIX)


def _more_than(nb: dict, n: int) -> bool:
    """Whether ``{node: [targets]}`` holds more than ``n`` distinct targets (no set built when the edges are fewer)."""
    return sum(len(ts) for ts in nb.values()) > n and len({t for ts in nb.values() for t in ts}) > n


def view_for(kg: Graph) -> GraphView:
    """The fastest view the KG's declared capabilities allow."""
    members = kg.members()
    if len(members) > 1:
        return LinkedGraph(kg)
    only = next(iter(members.values()))
    return MemoryGraph(only) if only.capabilities.local_index else InterfaceGraph(only)


def _id_pairs(got: AdjacentIds) -> list[tuple[str, str]]:
    """(source, target node) per edge, a literal as its ``literal:`` key (an empty text reaches nothing)."""
    if not got.values:
        return got.pairs
    return [*got.pairs, *((src, f"{LITERAL_PREFIX}{text}") for src, text in got.values if text)]
