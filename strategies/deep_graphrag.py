"""Deep GraphRAG: hierarchical beam search over a community hierarchy (after arXiv 2601.11144, "Deep
GraphRAG").

Hierarchy (version 2). Hubs — nodes whose degree is above both ``hub_min_degree`` (50) and the
99.5th percentile: genres, years, languages, popular tags — are left out of community detection,
because every community touches them and they would glue unrelated films into a few giant
communities. Weighted Louvain (networkx, resolution 1.0, fixed seed; weight = Σ triples / log2(2 +
the larger degree)) over the remaining graph gives the L0 communities; communities under
``min_community`` (5) are dissolved; hubs and dissolved nodes then join the community most of their
neighbours are in. L0 communities larger than ``leaf_size`` (60) are partitioned the same way into
L1 leaves; entities (L2) sit in exactly one leaf.

Representation. A single centroid of hundreds of films, people and tags resembles no question, so
each community is represented by several unit vectors: spherical k-means centroids of its members'
descriptor vectors (one per ``members_per_vector`` = 12 members, at most 48 for a leaf and 8 for a
top-level community, whose representatives every query scans) plus the embedding of its description
(its most connected members and its relations, verbalised). A community's score is the best cosine
over its representatives.

Beam search (global → local, k = 3 / 3, m = 10): the top ``beam`` L0 communities, the top ``beam``
of their L1 children, the top ``top_k`` entities inside those leaves, each returned with its
community path. ``anchors`` — the entities the query names, from the KG's own linker — make their
communities enter the beam first at both levels (the local entry point), and add their graph
neighbourhood (two hops, hubs reached but not expanded) to the candidates: a leaf holds only part of
an entity's neighbours, and the rest are what a question about it asks for. Candidates are ranked by
cosine plus a graph-proximity bonus (``PROXIMITY`` at one hop, half at two), the anchors themselves
left out; without anchors the descent and the ranking are by cosine alone. The hierarchy and its
vectors are built once per KG and cached on disk, keyed by the KG content, the hierarchy version,
the entity vectors' backend (torch or int8 ONNX MiniLM) and every build parameter.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections import Counter
from collections.abc import Sequence
from typing import cast

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.strategies.indexes import (
    GraphResources,
    IndexKind,
    IndexNotBuilt,
    _build_dense,
    _bulk_name,
    _encode_many,
    _progress,
)
from tot_mcp.strategies.inner_products import inner_products, inner_products_at
from tot_mcp.kg_adapters.local_graph import LocalGraph
from tot_mcp.strategies.registry import Call, Strategy
from tot_mcp.strategies.results import (
    RetrievedEntity,
    StrategyResult,
    check_query,
    render_ranked,
)
from tot_mcp.strategies.traversal import linked_seeds

HIERARCHY_VERSION = 2


class HierarchyParams(BaseModel):
    resolution: float = 1.0
    seed: int = 7
    leaf_size: int = 60
    describe_top: int = 8
    hub_min_degree: int = Field(
        default=50,
        description="Nodes above this degree (and above the hub quantile) are "
        "hubs: left out of Louvain, attached afterwards",
    )
    hub_quantile: float = 0.995
    min_community: int = Field(
        default=5,
        description="Louvain communities smaller than this are dissolved and "
        "their members attached to their neighbours' community",
    )
    members_per_vector: int = Field(
        default=12, description="One k-means representative vector per this many members"
    )
    max_vectors: int = Field(
        default=48, description="At most this many representative vectors per community"
    )
    l0_max_vectors: int = Field(
        default=8,
        description="At most this many per top-level community: every query scans "
        "all of them, and the beam only picks a few communities",
    )


class Hierarchy:
    """L0 communities → L1 leaves → entities. Each community is represented by several vectors
    (spherical k-means centroids of its members' descriptor vectors, plus its description's
    embedding); its score for a query is the best of them. Leaves are numbered in L0 order and
    representatives in community order, so a community's children and representatives are contiguous
    slices."""

    def __init__(
        self,
        leaf_of: np.ndarray,
        parent_of_leaf: np.ndarray,
        l0_reps: np.ndarray,
        l0_rep_start: np.ndarray,
        l1_reps: np.ndarray,
        l1_rep_start: np.ndarray,
        l0_text: list[str],
        l1_text: list[str],
        hubs: np.ndarray,
        build_seconds: float = 0.0,
    ) -> None:
        self.leaf_of = leaf_of
        self.parent_of_leaf = parent_of_leaf
        self.l0_reps, self.l0_rep_start = l0_reps, l0_rep_start  # start has len(L0) + 1 entries
        self.l1_reps, self.l1_rep_start = l1_reps, l1_rep_start
        self.l0_text = l0_text
        self.l1_text = l1_text
        self.hubs = hubs
        self.hub_mask = np.zeros(len(leaf_of), dtype=bool)
        self.hub_mask[hubs] = True
        self.build_seconds = build_seconds
        n0 = len(l0_rep_start) - 1
        self.child_start = np.searchsorted(
            parent_of_leaf, np.arange(n0 + 1)
        )  # children of c: [start[c], start[c+1])
        self.children: list[np.ndarray] = [
            np.arange(self.child_start[c], self.child_start[c + 1]) for c in range(n0)
        ]
        order = np.argsort(leaf_of, kind="stable")
        bounds = np.searchsorted(leaf_of[order], np.arange(len(l1_rep_start)))
        self.members: list[np.ndarray] = [
            order[bounds[c] : bounds[c + 1]] for c in range(len(l1_rep_start) - 1)
        ]
        cs, rs = self.child_start.tolist(), l1_rep_start.tolist()
        #: per L0 community: its children's representatives as one row range, and where each child's
        #: rows start
        self._l1_rows = [
            (rs[cs[c]], rs[cs[c + 1]], l1_rep_start[cs[c] : cs[c + 1]] - rs[cs[c]])
            for c in range(n0)
        ]

    @property
    def levels(self) -> dict[str, int]:
        return {
            "L0": len(self.l0_rep_start) - 1,
            "L1": len(self.l1_rep_start) - 1,
            "L2": len(self.leaf_of),
        }

    @property
    def representatives(self) -> dict[str, int]:
        return {"L0": len(self.l0_reps), "L1": len(self.l1_reps)}

    def l0_scores(self, q: np.ndarray) -> np.ndarray:
        """Every L0 community's score: the best cosine over its representative vectors."""
        return np.maximum.reduceat(inner_products(self.l0_reps, q), self.l0_rep_start[:-1])

    def l1_scores(self, l0: Sequence[int], q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(the leaves under the given L0 communities, their scores): one product per L0 community
        over its children's contiguous representatives."""
        kids, scores = [], []
        for c in l0:
            lo, hi, starts = self._l1_rows[c]
            kids.append(self.children[c])
            scores.append(np.maximum.reduceat(inner_products(self.l1_reps[lo:hi], q), starts))
        if not kids:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        return np.concatenate(kids), np.concatenate(scores)

    def community_of(self, node: int) -> tuple[int, int]:
        leaf = int(self.leaf_of[node])
        return int(self.parent_of_leaf[leaf]), leaf

    def save(self, path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + f".tmp{os.getpid()}.npz")
        np.savez(
            tmp,
            leaf_of=self.leaf_of,
            parent_of_leaf=self.parent_of_leaf,
            l0_reps=self.l0_reps,
            l0_rep_start=self.l0_rep_start,
            l1_reps=self.l1_reps,
            l1_rep_start=self.l1_rep_start,
            hubs=self.hubs,
            texts=np.array(
                [
                    json.dumps(
                        {"l0": self.l0_text, "l1": self.l1_text, "seconds": self.build_seconds}
                    )
                ]
            ),
        )
        os.replace(tmp, path)

    @classmethod
    def load(cls, path) -> Hierarchy:
        with np.load(path) as z:
            texts = json.loads(str(z["texts"][0]))
            return cls(
                z["leaf_of"],
                z["parent_of_leaf"],
                z["l0_reps"],
                z["l0_rep_start"],
                z["l1_reps"],
                z["l1_rep_start"],
                texts["l0"],
                texts["l1"],
                z["hubs"],
                texts.get("seconds", 0.0),
            )


def weighted_graph(graph: LocalGraph, hubs: np.ndarray):
    """Undirected graph of the non-hub nodes; weight = Σ triples / log2(2 + the larger degree)."""
    import networkx as nx

    deg = graph.degrees()
    weights: dict[tuple[int, int], float] = {}
    for s, _, o in graph.triples():
        if s == o or hubs[s] or hubs[o]:
            continue
        k = (s, o) if s < o else (o, s)
        weights[k] = weights.get(k, 0.0) + 1.0 / math.log2(2 + max(deg[s], deg[o]))
    g = nx.Graph()
    g.add_nodes_from(int(i) for i in np.flatnonzero(~hubs))
    g.add_weighted_edges_from((a, b, w) for (a, b), w in weights.items())
    return g


def louvain(g, nodes, params: HierarchyParams) -> list[list[int]]:
    """Communities of ``g`` restricted to ``nodes``, in a deterministic order (largest first, then
    lowest id)."""
    import networkx as nx

    sub = g if nodes is None else g.subgraph(nodes)
    if sub.number_of_nodes() == 0:
        return []
    comms = nx.community.louvain_communities(
        sub, weight="weight", resolution=params.resolution, seed=params.seed
    )
    out = [sorted(c) for c in comms]
    out.sort(key=lambda c: (-len(c), c[0]))
    return out


def neighbour_lists(graph: LocalGraph) -> list[list[int]]:
    nbrs: list[list[int]] = [[] for _ in range(graph.n)]
    for s, _, o in graph.triples():
        if s != o:
            nbrs[s].append(o)
            nbrs[o].append(s)
    return nbrs


def attach(
    group: np.ndarray, nodes, nbrs: list[list[int]], deg: np.ndarray, rounds: int = 6
) -> None:
    """Give each node of ``nodes`` whose ``group`` is -1 the group most of its neighbours are in (a
    neighbour's vote is 1/log2(2 + its degree), so a hub's many edges do not drag nodes to it);
    repeated so chains resolve. Nodes with no assigned neighbour stay -1."""
    pending = [int(i) for i in nodes if group[i] < 0]
    for _ in range(rounds):
        still = []
        decided: list[tuple[int, int]] = []
        for i in pending:
            votes: dict[int, float] = {}
            for j in nbrs[i]:
                gj = int(group[j])
                if gj >= 0:
                    votes[gj] = votes.get(gj, 0.0) + 1.0 / math.log2(2 + deg[j])
            if votes:
                decided.append((i, max(votes, key=lambda k: (votes[k], -k))))
            else:
                still.append(i)
        for i, gi in decided:  # synchronous update: the result does not depend on iteration order
            group[i] = gi
        if not decided or not still:
            return
        pending = still


def partition(
    g, nodes: list[int], hubs: np.ndarray, nbrs, deg, p: HierarchyParams, chunk: int
) -> list[list[int]]:
    """Louvain over the non-hub ``nodes``; communities under ``min_community`` are dissolved;
    dissolved nodes and hubs join their neighbours' community; whatever has no assigned neighbour is
    cut into groups of ``chunk``."""
    node_arr = np.asarray(nodes, dtype=np.int64)
    comms = [
        c for c in louvain(g, [i for i in nodes if not hubs[i]], p) if len(c) >= p.min_community
    ]
    group = np.full(
        len(deg), -2, dtype=np.int64
    )  # -2: outside ``nodes`` (not voted for, not assigned)
    group[node_arr] = -1
    for k, c in enumerate(comms):
        group[c] = k
    attach(group, node_arr, nbrs, deg)
    out: list[list[int]] = [[] for _ in comms]
    rest: list[int] = []
    for i in node_arr:
        (out[group[i]] if group[i] >= 0 else rest).append(int(i))
    return [c for c in out if c] + [rest[s : s + chunk] for s in range(0, len(rest), chunk)]


def describe(graph: LocalGraph, members, g, top: int) -> str:
    """``"Community of 412 entities: A, B, C ... Relations: starred actors (120), directed by
    (40)"``."""
    members = list(members)
    inside = set(members)
    strength = {
        i: (sum(d.get("weight", 1.0) for j, d in g[i].items() if j in inside) if i in g else 0.0)
        for i in members
    }
    best = sorted(members, key=lambda i: (-strength[i], i))[:top]
    rels: Counter[str] = Counter()
    for i in members[:2000]:
        for r, objs in graph.out[i].items():
            rels[graph.rel_labels[r]] += sum(1 for o in objs if o in inside)
    rel_text = ", ".join(f"{name} ({c})" for name, c in rels.most_common(5) if c)
    return (
        f"Community of {len(members)} entities: "
        + ", ".join(graph.label(i) for i in best)
        + (f". Relations: {rel_text}" if rel_text else "")
    )


def representatives(
    vecs: np.ndarray, description: np.ndarray, p: HierarchyParams, seed: int, cap: int | None = None
) -> np.ndarray:
    """Several unit vectors that stand for a community: spherical k-means centroids of its members
    (one per ``members_per_vector``, at most ``max_vectors``; the members themselves when that few)
    and its description."""
    import faiss

    n = len(vecs)
    r = min(cap or p.max_vectors, max(1, math.ceil(n / p.members_per_vector)))
    if n <= r:
        cents = vecs
    else:
        km = faiss.Kmeans(
            vecs.shape[1],
            r,
            niter=12,
            seed=seed,
            spherical=True,
            verbose=False,
            min_points_per_centroid=1,
            max_points_per_centroid=256,
        )
        km.train(np.ascontiguousarray(vecs, dtype=np.float32))
        cents = cast(np.ndarray, km.centroids)  # set by train (None only before it)
    out = np.vstack([cents, description[None, :]]).astype(np.float32)
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


def build_hierarchy(
    res: GraphResources, params: HierarchyParams | None = None, progress: bool = False
) -> Hierarchy:
    """Hubs out, Louvain twice, attach, describe, embed. Uses (and builds) the dense entity
    index."""
    p = params or HierarchyParams()
    t0 = time.perf_counter()
    graph = res.graph
    ent = res.dense(build=True, progress=progress).vectors
    # hubs (the graph's own definition, which ARK's context uses too): in a movie KB genres, years,
    # languages, popular tags, which every community touches and would glue into a few giant ones
    hubs = graph.hubs(p.hub_min_degree, p.hub_quantile)
    g = weighted_graph(graph, hubs)
    nbrs = neighbour_lists(graph)
    deg = graph.degrees()
    top = partition(g, list(range(graph.n)), hubs, nbrs, deg, p, chunk=max(p.leaf_size, 1))
    top.sort(key=lambda c: (-len(c), min(c)))
    leaf_of = np.full(graph.n, -1, dtype=np.int64)
    parent: list[int] = []
    leaves: list[list[int]] = []
    with _progress(len(top), "louvain L1", progress) as bar:
        for c, members in enumerate(top):
            subs = (
                partition(g, members, hubs, nbrs, deg, p, chunk=p.leaf_size)
                if len(members) > p.leaf_size
                else [members]
            )
            subs.sort(key=lambda s: (-len(s), min(s)))
            for s in subs:
                leaf_of[s] = len(leaves)
                leaves.append(sorted(s))
                parent.append(c)
            bar.update(1)
    l0_text = [describe(graph, m, g, p.describe_top) for m in top]
    l1_text = [describe(graph, m, g, p.describe_top) for m in leaves]
    emb = res.models.embedder()
    d0 = _encode_many(
        emb, l0_text
    )  # the entity vectors' backend: representatives and members in one space
    d1 = _encode_many(emb, l1_text)

    def stack(groups, descs, cap=None):
        reps = [
            representatives(ent[np.asarray(m)], descs[c], p, p.seed + c, cap)
            for c, m in enumerate(groups)
        ]
        start = np.zeros(len(reps) + 1, dtype=np.int64)
        start[1:] = np.cumsum([len(r) for r in reps])
        return np.vstack(reps).astype(np.float32), start

    l0_reps, l0_start = stack(top, d0, p.l0_max_vectors)
    l1_reps, l1_start = stack(leaves, d1)
    return Hierarchy(
        leaf_of,
        np.asarray(parent, dtype=np.int64),
        l0_reps,
        l0_start,
        l1_reps,
        l1_start,
        l0_text,
        l1_text,
        np.flatnonzero(hubs).astype(np.int64),
        round(time.perf_counter() - t0, 2),
    )


def _cache_key(res: GraphResources, p: HierarchyParams) -> str:
    """Version, the entity vectors' backend (``minilm`` / ``minilm-int8``: the representatives are
    made of them) and every build parameter."""
    return (
        f"v{HIERARCHY_VERSION}-{_bulk_name(res.models)}"
        f"-r{p.resolution}-s{p.seed}-l{p.leaf_size}-t{p.describe_top}"
        f"-h{p.hub_min_degree}q{p.hub_quantile}-m{p.min_community}-v{p.members_per_vector}x{p.max_vectors}"
        f"l0x{p.l0_max_vectors}"
    )


def hierarchy_for(
    res: GraphResources,
    params: HierarchyParams | None = None,
    build: bool = True,
    progress: bool = False,
) -> Hierarchy:
    """The KG's hierarchy: in memory, else from the on-disk cache, else built (unless ``build`` is
    False)."""
    p = params or HierarchyParams()
    key = _cache_key(res, p)
    path = res.cache_path(f"hierarchy-{key}.npz")

    def load_or_build() -> Hierarchy:
        h = None
        if path.is_file():
            try:
                h = Hierarchy.load(path)
            except (OSError, ValueError, KeyError):
                pass  # unreadable (torn, or an older format): rebuilt below
        if h is None or len(h.leaf_of) != res.graph.n:
            if not build:
                raise IndexNotBuilt(
                    f"the community hierarchy of KG {res.graph.name!r} is not built yet; call "
                    "build_index first (a few minutes on a 100k-triple KG)"
                )
            h = build_hierarchy(res, p, progress=progress)
            h.save(path)
        res.dense(build=build)  # the leaves' entity vectors
        adjacency(res)  # the anchored neighbourhoods' graph, before the first query
        return h

    return res.own(f"hierarchy-{key}", load_or_build)


def hierarchy_ready(res: GraphResources, params: HierarchyParams | None = None) -> bool:
    """In memory or on disk: a call can use it without building."""
    key = _cache_key(res, params or HierarchyParams())
    return res.has_own(f"hierarchy-{key}") or (
        res.cache_path(f"hierarchy-{key}.npz").is_file() and res.dense_ready()
    )


# -- the anchored neighbourhood --------------------------------------------------------------------
def adjacency(res: GraphResources) -> tuple[np.ndarray, np.ndarray]:
    """The KG as an undirected CSR (``indptr``, ``indices``: each neighbour once, no self-loops),
    made once per KG (~0.3 s for 134k triples), so a neighbourhood is a few array slices rather than
    a Python walk."""

    def make() -> tuple[np.ndarray, np.ndarray]:
        graph = res.graph
        pairs = np.fromiter(
            (x for s, _, o in graph.triples() if s != o for x in (s, o)), dtype=np.int64
        )
        s, o = pairs[0::2], pairs[1::2]
        code = np.unique(
            np.concatenate([s * graph.n + o, o * graph.n + s])
        )  # both directions, deduplicated, sorted
        src, dst = code // graph.n, code % graph.n
        indptr = np.zeros(graph.n + 1, dtype=np.int64)
        np.cumsum(np.bincount(src, minlength=graph.n), out=indptr[1:])
        return indptr, dst.astype(np.int64)

    return res.own("adjacency-csr", make)


def _gather(indptr: np.ndarray, indices: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """Every neighbour of ``nodes`` (with repeats), in one vectorised slice-gather (no nodes or no
    neighbours: an empty int64 array, as ``indices`` is)."""
    if len(nodes) == 1:
        return indices[indptr[nodes[0]] : indptr[nodes[0] + 1]]
    starts, lens = indptr[nodes], indptr[nodes + 1] - indptr[nodes]
    total = int(lens.sum())
    offsets = np.repeat(starts - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens)
    return indices[np.arange(total) + offsets]


def anchored_neighbourhood(
    indptr: np.ndarray,
    indices: np.ndarray,
    anchors: Sequence[int],
    hubs: np.ndarray,
    hops: int = 2,
    limit: int = 4000,
) -> tuple[np.ndarray, np.ndarray]:
    """(the anchors' neighbours, their neighbours' neighbours), anchors excluded, each node once at
    its nearest hop.

    Hubs (``hubs``: a boolean mask) are reached but not expanded: a genre's thousands of films are
    not the neighbourhood of one of them. The second hop expands the lowest-degree neighbours first
    and stops before it passes ``limit`` nodes, so a hub anchor cannot turn the local search into a
    scan."""
    return _neighbourhood(indptr, indices, anchors, hubs, hops, limit)[:2]


def _neighbourhood(
    indptr, indices, anchors, hubs, hops, limit
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`anchored_neighbourhood` plus the hop of every node (int8: 0 none, 1, 2, 3 = anchor),
    made with one mark array instead of sorted set differences (this runs on every query: ~50 µs for
    MetaQA's anchors)."""
    hop = np.zeros(len(indptr) - 1, dtype=np.int8)
    empty = np.zeros(0, np.int64)
    a = np.unique(np.asarray(anchors, dtype=np.int64))
    if len(a) == 0 or hops < 1:
        return empty, empty, hop
    hop[a] = 3
    n1 = np.unique(_gather(indptr, indices, a))
    n1 = n1[hop[n1] == 0][:limit]
    hop[n1] = 1
    if hops < 2 or len(n1) == 0:
        return n1, empty, hop
    grow = n1[~hubs[n1]]
    deg = indptr[grow + 1] - indptr[grow]
    if int(deg.sum()) > limit - len(n1):
        order = np.argsort(deg, kind="stable")
        grow = grow[order][np.cumsum(deg[order]) <= max(0, limit - len(n1))]
    n2 = np.unique(_gather(indptr, indices, grow))
    n2 = n2[hop[n2] == 0]
    hop[n2] = 2
    return n1, n2, hop


class CommunityHit(BaseModel):
    level: str
    id: int
    score: float = Field(
        description="Best cosine between the query and the community's representative vectors"
    )
    description: str
    anchored: bool = Field(
        default=False, description="Entered because it holds an entity the query names"
    )


class BeamEntity(RetrievedEntity):
    community_path: list[int] = Field(
        description="[L0 community, L1 community] the entity is in (for an entity of "
        "the anchors' neighbourhood, not necessarily one of the beam's)"
    )


class BeamResult(StrategyResult):
    results: list[BeamEntity]  # type: ignore[assignment]  # a pydantic field narrowed (read-only)
    l0: list[CommunityHit]
    l1: list[CommunityHit]
    scanned_entities: int = Field(
        description="Entities whose cosine was computed (vs all entities for exhaustive)"
    )
    scanned_vectors: int = Field(
        default=0,
        description="All vectors compared with the query: community "
        "representatives plus scanned entities",
    )
    levels: dict[str, int]


def _ranked(scores: np.ndarray, ids: np.ndarray | None, first: list[int], beam: int) -> list[int]:
    """``first`` (anchored communities, in order), then the rest by score; ``beam`` in all. ``ids``
    None: the communities are 0..len(scores)-1."""
    ids = np.arange(len(scores)) if ids is None else ids
    present = set(ids.tolist())
    out = [c for c in dict.fromkeys(first) if c in present][:beam]
    if len(scores) > 4 * beam:  # only the best few can be picked: order those, not every community
        best = np.argpartition(-scores, 2 * beam)[: 2 * beam]
        best = best[np.argsort(-scores[best], kind="stable")]
    else:
        best = np.argsort(-scores, kind="stable")
    for k in best:
        if len(out) >= beam:
            break
        if int(ids[k]) not in out:
            out.append(int(ids[k]))
    return out


#: score bonus of an entity one hop from an anchor; two hops get half of it (a proximity that halves
#: per hop). At 1.0 — as large as a cosine can be — it all but orders by distance first and cosine
#: second: the named entity's neighbours, then theirs, then the chosen leaves' other members. (Of
#: 0.2, 0.3, 0.5 and 1.0 tried on the first 100 MetaQA dev questions per hop, 1.0 had the best
#: Recall@10 on 1-, 2- and 3-hop alike; docs/strategies.md.)
PROXIMITY = 1.0


def beam_search(
    kg: Graph,
    query: str,
    res: GraphResources,
    hierarchy: Hierarchy,
    beam: int = 3,
    top_k: int = 10,
    query_vec: np.ndarray | None = None,
    anchors: Sequence[int] = (),
    hops: int = 2,
    proximity: float = PROXIMITY,
) -> BeamResult:
    """Top-``beam`` L0 → top-``beam`` of their L1 children → top-``top_k`` entities in those leaves.

    A community's score is the best cosine over its representative vectors. ``anchors`` (nodes the
    query names, from the KG's linker) put their own communities first at both levels — the local
    entry point of the global→local descent — and add their graph neighbourhood (``hops`` ≤ 2, hubs
    not expanded) to the chosen leaves' members: a community holds only part of an entity's
    neighbours, and its other neighbours are exactly what a question about it asks for. Entities are
    ranked by cosine plus a graph-proximity bonus to the anchors (``proximity`` at one hop, half of
    it at two, none beyond); the anchors themselves are the question's subject, not its answer, and
    are left out. Without anchors the descent and the ranking are by cosine alone."""
    t0 = time.perf_counter()
    query = check_query(query, kg.limits.max_query_chars)
    graph = res.graph
    q = query_vec if query_vec is not None else res.models.embedder().encode_one(query)
    q = np.ascontiguousarray(q, dtype=np.float32)
    ent = res.dense(build=False).vectors
    anchors = [int(a) for a in anchors if 0 <= int(a) < graph.n]
    first0 = [
        hierarchy.community_of(a)[0] for a in anchors
    ]  # the anchors' communities, entered first
    first1 = [hierarchy.community_of(a)[1] for a in anchors]
    s0 = hierarchy.l0_scores(q)
    top0 = _ranked(s0, None, first0, beam)
    kids, s1 = hierarchy.l1_scores(top0, q)
    top1 = _ranked(s1, kids, first1, beam)
    s1_of = dict(zip(kids.tolist(), s1.tolist()))
    leaf = np.concatenate([hierarchy.members[c] for c in top1]) if top1 else np.zeros(0, np.int64)
    n1 = n2 = np.zeros(0, np.int64)
    if anchors and hops > 0:
        indptr, indices = adjacency(res)
        n1, n2, near = _neighbourhood(indptr, indices, anchors, hierarchy.hub_mask, hops, 4000)
        leaf = leaf[
            near[leaf] == 0
        ]  # the neighbourhood's members once, at their hop; the anchors not at all
    hood = np.concatenate([n1, n2])
    hop = np.concatenate([np.full(len(n1), 1, np.int8), np.full(len(n2), 2, np.int8)])
    hood_scores = (
        inner_products_at(ent, hood, q)
        + np.array([0.0, proximity, proximity / 2], dtype=np.float32)[hop]
    )
    if (
        len(hood) >= top_k
        and np.partition(hood_scores, len(hood) - top_k)[len(hood) - top_k] > 1.0 + 1e-5
    ):
        leaf = leaf[
            :0
        ]  # a leaf member scores its bare cosine (≤ 1): top_k neighbours above 1 leave it no place
    cand = np.concatenate([hood, leaf])
    hop = np.concatenate([hop, np.zeros(len(leaf), np.int8)])
    scores = np.concatenate([hood_scores, inner_products_at(ent, leaf, q)])
    order = np.argsort(-scores, kind="stable")[:top_k]
    results = [
        BeamEntity(
            id=graph.entity_id(node),
            label=graph.label(node),
            score=round(float(scores[k]), 6),
            source="beam",
            community_path=list(hierarchy.community_of(node)),
            depth=int(hop[k]) or None,
        )
        for k, node in zip(order.tolist(), cand[order].tolist())
    ]
    scanned = (
        len(hierarchy.l0_reps)
        + int((hierarchy.l1_rep_start[kids + 1] - hierarchy.l1_rep_start[kids]).sum())
        + len(cand)
    )
    return BeamResult(
        query=query,
        kg=kg.name,
        results=results,
        l0=[
            CommunityHit(
                level="L0",
                id=int(c),
                score=round(float(s0[c]), 6),
                description=hierarchy.l0_text[c],
                anchored=c in first0,
            )
            for c in top0
        ],
        l1=[
            CommunityHit(
                level="L1",
                id=int(c),
                score=round(float(s1_of[c]), 6),
                description=hierarchy.l1_text[c],
                anchored=c in first1,
            )
            for c in top1
        ],
        scanned_entities=len(cand),
        scanned_vectors=int(scanned),
        levels=hierarchy.levels,
        seconds=round(time.perf_counter() - t0, 6),
    )


async def topic_anchors(kg: Graph, res: GraphResources, query: str, limit: int = 3) -> list[int]:
    """Nodes the query names (``[bracketed]`` mentions or the KG's own linker), best first: the
    beam's anchors."""
    return [i for i, _ in await linked_seeds(kg, res.graph, query, limit=limit)]


def exhaustive_search(
    kg: Graph, query: str, res: GraphResources, top_k: int = 10, query_vec: np.ndarray | None = None
) -> BeamResult:
    """The baseline beam search is measured against: cosine with every entity vector (the dense
    index's exact scan, on one thread)."""
    t0 = time.perf_counter()
    query = check_query(query, kg.limits.max_query_chars)
    graph = res.graph
    q = query_vec if query_vec is not None else res.models.embedder().encode_one(query)
    hits = res.dense(build=False).search(q, top_k)
    return BeamResult(
        query=query,
        kg=kg.name,
        results=[
            BeamEntity(
                id=graph.entity_id(i),
                label=graph.label(i),
                score=round(s, 6),
                source="exhaustive",
                community_path=[],
            )
            for i, s in hits
        ],
        l0=[],
        l1=[],
        scanned_entities=graph.n,
        scanned_vectors=graph.n,
        levels={},
        seconds=round(time.perf_counter() - t0, 6),
    )


# -- as a registered strategy ----------------------------------------------------------------------
class BeamOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    beam: int = Field(default=3, ge=1, le=20, description="Communities kept per level")
    top_k: int = Field(default=10, ge=1, le=100, description="Entities returned")
    anchor: bool = Field(
        default=True,
        description="Enter the communities of the entities the query names first "
        "and rank their two-hop neighbourhood nearest first (false: "
        "descend and rank by cosine only)",
    )


async def _run_beam(call: Call) -> BeamResult:
    import anyio

    o: BeamOptions = call.options  # type: ignore[assignment]
    res = await call.resources()
    h = await anyio.to_thread.run_sync(lambda: hierarchy_for(res, build=False))
    anchors = await topic_anchors(call.kg, res, call.query) if o.anchor else []
    return await anyio.to_thread.run_sync(
        lambda: beam_search(
            call.kg, call.query, res, h, beam=o.beam, top_k=o.top_k, anchors=anchors
        )
    )


def _render_beam(out: BeamResult) -> str:
    comm = (
        "communities: "
        + " | ".join(f"L0#{c.id} {c.score:.2f}{'*' if c.anchored else ''}" for c in out.l0)
        + " → "
        + " | ".join(f"L1#{c.id} {c.score:.2f}{'*' if c.anchored else ''}" for c in out.l1)
        + (" (* anchored on a named entity)" if any(c.anchored for c in out.l0) else "")
    )
    return render_ranked(f"Beam search for {out.query!r}", list(out.results), [comm])


BEAM = Strategy(
    name="beam",
    job="ranking",
    options=BeamOptions,
    run=_run_beam,
    render=_render_beam,
    result=BeamResult,
    needs=("hierarchy",),
    tool="beam_search",
    title="Deep GraphRAG hierarchical beam search",
    summary="Find entities for a query by descending the KG's Louvain community hierarchy: the "
    "best L0 communities, then their best sub-communities, then the best entities inside them — an "
    "overview of a region of the graph around the question's entities.",
    reference="arXiv 2601.11144 (Deep GraphRAG)",
)


def _build_hierarchy(res: GraphResources, job) -> None:
    _build_dense(res, job)  # the hierarchy clusters the dense vectors
    job.stage, job.done, job.total = "community hierarchy", 0, 0
    hierarchy_for(res, build=True)


#: the community hierarchy as an index strategies can need (:data:`~strategies.indexes.INDEXES`)
HIERARCHY = IndexKind(
    "hierarchy", hierarchy_ready, lambda res: hierarchy_for(res, build=False), _build_hierarchy
)
