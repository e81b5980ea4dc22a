"""Deep GraphRAG: hierarchical beam search over a community hierarchy (after arXiv 2601.11144, "Deep GraphRAG").

The KG (as an undirected graph) is partitioned by weighted Louvain (networkx ``louvain_communities``, resolution
1.0, fixed seed) into L0 communities; each L0 community that is larger than ``leaf_size`` is partitioned again into
L1 sub-communities (smaller ones become a single L1 child); entities are L2, each in exactly one L1 leaf. Edge
weights are the number of triples between two nodes divided by log2(2 + the larger degree), so hubs (genres,
years, languages) bind weakly and communities form around films and people rather than around "Drama".

Each community is described (its most connected entities and its relations, verbalised) and embedded with MiniLM;
its vector is the normalised mean of that description's embedding and the centroid of its members' descriptor
embeddings (the description alone names only a handful of members, the centroid speaks for all of them).

Beam search for a query: the top ``beam`` (3) L0 communities by cosine, their children ranked and the top 3 kept,
then the top ``top_k`` (10) entities inside those leaves — each returned with its community path. The hierarchy and
all vectors are built once per KG and cached on disk (keyed by a hash of the KG content and the build parameters).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections import Counter
from collections.abc import Callable

import numpy as np
from pydantic import BaseModel, Field

from kg_adapters.base import KnowledgeGraph
from strategies.retrieval_common import (
    GraphResources,
    IndexNotBuilt,
    LocalGraph,
    RetrievedEntity,
    _progress,
    check_query,
)

HIERARCHY_VERSION = 1


class HierarchyParams(BaseModel):
    resolution: float = 1.0
    seed: int = 7
    leaf_size: int = 60
    describe_top: int = 8
    description_weight: float = 0.5


class Hierarchy:
    """L0 communities → L1 leaves → entities, with one vector per community."""

    def __init__(self, leaf_of: np.ndarray, parent_of_leaf: np.ndarray, l0_vecs: np.ndarray, l1_vecs: np.ndarray,
                 l0_text: list[str], l1_text: list[str], build_seconds: float = 0.0) -> None:
        self.leaf_of = leaf_of
        self.parent_of_leaf = parent_of_leaf
        self.l0_vecs = l0_vecs
        self.l1_vecs = l1_vecs
        self.l0_text = l0_text
        self.l1_text = l1_text
        self.build_seconds = build_seconds
        self.children: list[np.ndarray] = [np.flatnonzero(parent_of_leaf == c) for c in range(len(l0_vecs))]
        order = np.argsort(leaf_of, kind="stable")
        bounds = np.searchsorted(leaf_of[order], np.arange(len(l1_vecs) + 1))
        self.members: list[np.ndarray] = [order[bounds[c]: bounds[c + 1]] for c in range(len(l1_vecs))]

    @property
    def levels(self) -> dict[str, int]:
        return {"L0": len(self.l0_vecs), "L1": len(self.l1_vecs), "L2": int(len(self.leaf_of))}

    def save(self, path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + f".tmp{os.getpid()}.npz")
        np.savez(tmp, leaf_of=self.leaf_of, parent_of_leaf=self.parent_of_leaf, l0_vecs=self.l0_vecs,
                 l1_vecs=self.l1_vecs, texts=np.array([json.dumps({"l0": self.l0_text, "l1": self.l1_text,
                                                                    "seconds": self.build_seconds})]))
        os.replace(tmp, path)

    @classmethod
    def load(cls, path) -> "Hierarchy":
        with np.load(path) as z:
            texts = json.loads(str(z["texts"][0]))
            return cls(z["leaf_of"], z["parent_of_leaf"], z["l0_vecs"], z["l1_vecs"], texts["l0"], texts["l1"],
                       texts.get("seconds", 0.0))


def weighted_graph(graph: LocalGraph):
    import networkx as nx

    deg = graph.degrees()
    weights: dict[tuple[int, int], float] = {}
    for s, _, o in graph.triples():
        if s == o:
            continue
        k = (s, o) if s < o else (o, s)
        weights[k] = weights.get(k, 0.0) + 1.0 / math.log2(2 + max(deg[s], deg[o]))
    g = nx.Graph()
    g.add_nodes_from(range(graph.n))
    g.add_weighted_edges_from((a, b, w) for (a, b), w in weights.items())
    return g


def louvain(g, nodes, params: HierarchyParams) -> list[list[int]]:
    """Communities of ``g`` restricted to ``nodes``, in a deterministic order (largest first, then lowest id)."""
    import networkx as nx

    sub = g if nodes is None else g.subgraph(nodes)
    comms = nx.community.louvain_communities(sub, weight="weight", resolution=params.resolution, seed=params.seed)
    out = [sorted(c) for c in comms]
    out.sort(key=lambda c: (-len(c), c[0]))
    return out


def describe(graph: LocalGraph, members, g, top: int) -> str:
    """``"Community of 412 entities: A, B, C ... Relations: starred actors (120), directed by (40)"``."""
    members = list(members)
    inside = set(members)
    strength = {i: sum(d.get("weight", 1.0) for j, d in g[i].items() if j in inside) for i in members}
    best = sorted(members, key=lambda i: (-strength[i], i))[:top]
    rels: Counter[str] = Counter()
    for i in members[:2000]:
        for r, objs in graph.out[i].items():
            rels[graph.rel_labels[r]] += sum(1 for o in objs if o in inside)
    rel_text = ", ".join(f"{name} ({c})" for name, c in rels.most_common(5) if c)
    return (f"Community of {len(members)} entities: " + ", ".join(graph.label(i) for i in best)
            + (f". Relations: {rel_text}" if rel_text else ""))


def _blend(desc: np.ndarray, centroid: np.ndarray, w: float) -> np.ndarray:
    c = centroid / max(float(np.linalg.norm(centroid)), 1e-9)
    v = w * desc + (1 - w) * c
    return (v / max(float(np.linalg.norm(v)), 1e-9)).astype(np.float32)


def build_hierarchy(res: GraphResources, params: HierarchyParams | None = None, progress: bool = False,
                    on_stage: Callable[[str], None] | None = None) -> Hierarchy:
    """Louvain twice, describe, embed. Uses (and builds) the dense entity index for the centroids."""
    p = params or HierarchyParams()
    t0 = time.perf_counter()
    graph = res.graph
    say = on_stage or (lambda s: None)
    say("entity vectors")
    ent = res.dense(build=True, progress=progress).vectors
    say("weighted graph")
    g = weighted_graph(graph)
    say("louvain L0")
    top = louvain(g, None, p)
    leaf_of = np.full(graph.n, -1, dtype=np.int64)
    parent: list[int] = []
    leaves: list[list[int]] = []
    with _progress(len(top), "louvain L1", progress) as bar:
        for c, members in enumerate(top):
            subs = louvain(g, members, p) if len(members) > p.leaf_size else [members]
            for s in subs:
                leaf_of[s] = len(leaves)
                leaves.append(s)
                parent.append(c)
            bar.update(1)
    say("describing communities")
    l0_text = [describe(graph, m, g, p.describe_top) for m in top]
    l1_text = [describe(graph, m, g, p.describe_top) for m in leaves]
    say("embedding communities")
    emb = res.service.embedder()
    d0 = emb._model.encode(l0_text, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
    d1 = emb._model.encode(l1_text, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
    l0_vecs = np.stack([_blend(d0[c], ent[m].mean(axis=0), p.description_weight) for c, m in enumerate(top)])
    l1_vecs = np.stack([_blend(d1[c], ent[m].mean(axis=0), p.description_weight) for c, m in enumerate(leaves)])
    return Hierarchy(leaf_of, np.asarray(parent, dtype=np.int64), l0_vecs, l1_vecs, l0_text, l1_text,
                     round(time.perf_counter() - t0, 2))


def hierarchy_for(res: GraphResources, params: HierarchyParams | None = None, build: bool = True,
                  progress: bool = False) -> Hierarchy:
    """The KG's hierarchy: in memory, else from the on-disk cache, else built (unless ``build`` is False)."""
    p = params or HierarchyParams()
    with res._lock:
        cached = res.hierarchy
        if isinstance(cached, tuple) and cached[0] == p:
            return cached[1]
        key = f"v{HIERARCHY_VERSION}-r{p.resolution}-s{p.seed}-l{p.leaf_size}-t{p.describe_top}-w{p.description_weight}"
        path = res.cache_path(f"hierarchy-{key}.npz")
        h = None
        if path.is_file():
            try:
                h = Hierarchy.load(path)
                if len(h.leaf_of) != res.graph.n:
                    h = None
            except (OSError, ValueError, KeyError):
                h = None
        if h is None:
            if not build:
                raise IndexNotBuilt(f"the community hierarchy of KG {res.graph.name!r} is not built yet; call "
                                    "build_index first (a few minutes on a 100k-triple KG)")
            h = build_hierarchy(res, p, progress=progress)
            h.save(path)
        res.dense(build=build)  # the leaves' entity vectors
        res.hierarchy = (p, h)
        return h


class CommunityHit(BaseModel):
    level: str
    id: int
    score: float
    description: str


class BeamEntity(RetrievedEntity):
    community_path: list[int] = Field(description="[L0 community, L1 community] the entity was found in")


class BeamResult(BaseModel):
    query: str
    kg: str
    results: list[BeamEntity]
    l0: list[CommunityHit]
    l1: list[CommunityHit]
    scanned_entities: int = Field(description="Entities whose cosine was computed (vs all entities for exhaustive)")
    levels: dict[str, int]
    seconds: float


def beam_search(kg: KnowledgeGraph, query: str, res: GraphResources, hierarchy: Hierarchy, beam: int = 3,
                top_k: int = 10, query_vec: np.ndarray | None = None) -> BeamResult:
    """Top-``beam`` L0 → top-``beam`` of their L1 children → top-``top_k`` entities in those leaves."""
    t0 = time.perf_counter()
    query = check_query(query, kg.limits.max_query_chars)
    graph = res.graph
    q = query_vec if query_vec is not None else res.service.embedder().encode_one(query)
    ent = res.dense(build=False).vectors
    s0 = hierarchy.l0_vecs @ q
    top0 = np.argsort(-s0, kind="stable")[:beam]
    kids = np.concatenate([hierarchy.children[c] for c in top0]) if len(top0) else np.zeros(0, np.int64)
    s1 = hierarchy.l1_vecs[kids] @ q
    top1 = kids[np.argsort(-s1, kind="stable")[:beam]]
    cand = np.concatenate([hierarchy.members[c] for c in top1]) if len(top1) else np.zeros(0, np.int64)
    scores = ent[cand] @ q
    order = np.argsort(-scores, kind="stable")[:top_k]
    results = [
        BeamEntity(id=graph.entity_id(int(cand[k])), label=graph.label(int(cand[k])), score=round(float(scores[k]), 6),
                   source="beam", community_path=[int(hierarchy.parent_of_leaf[hierarchy.leaf_of[cand[k]]]),
                                                  int(hierarchy.leaf_of[cand[k]])])
        for k in order
    ]
    return BeamResult(
        query=query, kg=kg.name, results=results,
        l0=[CommunityHit(level="L0", id=int(c), score=round(float(s0[c]), 6), description=hierarchy.l0_text[c])
            for c in top0],
        l1=[CommunityHit(level="L1", id=int(c), score=round(float(hierarchy.l1_vecs[c] @ q), 6),
                         description=hierarchy.l1_text[c]) for c in top1],
        scanned_entities=int(len(cand)), levels=hierarchy.levels, seconds=round(time.perf_counter() - t0, 6),
    )


def exhaustive_search(kg: KnowledgeGraph, query: str, res: GraphResources, top_k: int = 10,
                      query_vec: np.ndarray | None = None) -> BeamResult:
    """The baseline beam search is measured against: cosine with every entity vector (faiss flat scan)."""
    t0 = time.perf_counter()
    query = check_query(query, kg.limits.max_query_chars)
    graph = res.graph
    q = query_vec if query_vec is not None else res.service.embedder().encode_one(query)
    dense = res.dense(build=False)
    hits = dense.search(q, top_k)
    return BeamResult(
        query=query, kg=kg.name,
        results=[BeamEntity(id=graph.entity_id(i), label=graph.label(i), score=round(s, 6), source="exhaustive",
                            community_path=[]) for i, s in hits],
        l0=[], l1=[], scanned_entities=graph.n, levels={}, seconds=round(time.perf_counter() - t0, 6),
    )
