"""Deep GraphRAG: the Louvain community hierarchy, its on-disk cache, and the beam search's
widths."""

from __future__ import annotations

import numpy as np
import pytest
from retrieval_fixtures import make_kg, make_service, shared_embedder

from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.errors import InvalidInput
from tot_mcp.kg_adapters.memory import MemoryKG
from tot_mcp.kg_adapters.triples_file import load_triples_file
from tot_mcp.strategies.deep_graphrag import (
    HierarchyParams,
    adjacency,
    anchored_neighbourhood,
    beam_search,
    exhaustive_search,
    hierarchy_for,
    neighbour_lists,
    topic_anchors,
)
from tot_mcp.strategies.indexes import IndexNotBuilt

SMALL_LEAVES = HierarchyParams(leaf_size=6)  # the mini KG has 32 nodes: force a real second level


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dgr")
    kg = make_kg(tmp)
    res = make_service(tmp / "cache").resources_now(kg)
    return kg, res, hierarchy_for(res, SMALL_LEAVES)


def test_hierarchy_has_three_levels_and_every_entity_in_exactly_one_leaf(setup):
    kg, _res, h = setup
    n = len(kg.store.index.nodes)
    assert h.levels["L2"] == n and h.levels["L0"] >= 2 and h.levels["L1"] > h.levels["L0"]
    assert (h.leaf_of >= 0).all() and (h.leaf_of < h.levels["L1"]).all()
    members = np.concatenate(h.members)
    assert sorted(members.tolist()) == list(range(n))  # a partition: each entity once
    for leaf, parent in enumerate(h.parent_of_leaf):
        assert leaf in h.children[parent]

    # the two clusters of the mini KG do not share an L0 community
    def l0(label):
        i = next(k for k, x in enumerate(kg.store.index.nodes) if x.label == label)
        return int(h.parent_of_leaf[h.leaf_of[i]])

    assert l0("Ivo Tan") == l0("Blue Canyon") != l0("Ada Stone")
    assert all(t.startswith("Community of ") for t in h.l0_text + h.l1_text)
    assert np.allclose(np.linalg.norm(h.l1_reps, axis=1), 1.0, atol=1e-4)
    assert np.allclose(np.linalg.norm(h.l0_reps, axis=1), 1.0, atol=1e-4)


def test_hierarchy_is_deterministic_and_cached_on_disk(setup, tmp_path):
    kg, res, h = setup
    fresh = make_service(res.cache_dir).resources_now(kg)  # same cache dir: loads, does not rebuild
    loaded = hierarchy_for(fresh, SMALL_LEAVES, build=False)
    assert np.array_equal(loaded.leaf_of, h.leaf_of) and loaded.l0_text == h.l0_text
    empty = make_service(tmp_path / "nothing").resources_now(kg)
    with pytest.raises(IndexNotBuilt, match="build_index"):
        hierarchy_for(empty, SMALL_LEAVES, build=False)


def test_beam_search_keeps_three_communities_per_level_and_ten_entities(setup):
    kg, res, h = setup
    out = beam_search(
        kg, "mountain adventure films by Ivo Tan in Japanese", res, h, beam=3, top_k=10
    )
    assert len(out.l0) == min(3, h.levels["L0"]) and len(out.l1) == min(3, h.levels["L1"])
    assert len(out.results) <= 10 and out.scanned_entities < len(kg.store.index.nodes)
    l1_ids = {c.id for c in out.l1}
    for r in out.results:
        assert r.community_path[1] in l1_ids
    assert [c.score for c in out.l0] == sorted((c.score for c in out.l0), reverse=True)
    assert "Ivo Tan" in {r.label for r in out.results}
    narrow = beam_search(kg, "mountain adventure films by Ivo Tan", res, h, beam=1, top_k=2)
    assert len(narrow.l0) == 1 and len(narrow.l1) == 1 and len(narrow.results) <= 2


def test_exhaustive_scan_sees_every_entity_and_beam_is_a_subset_ranking(setup):
    kg, res, h = setup
    q = "films starring Jun Mori"
    ex = exhaustive_search(kg, q, res, top_k=5)
    assert ex.scanned_entities == len(kg.store.index.nodes) and len(ex.results) == 5
    beam = beam_search(kg, q, res, h, top_k=5)
    assert beam.results[0].score <= ex.results[0].score + 1e-6


def test_bad_queries(setup):
    kg, res, h = setup
    with pytest.raises(InvalidInput):
        beam_search(kg, " ", res, h)
    with pytest.raises(InvalidInput):
        beam_search(kg, "y" * 3000, res, h)


def _idx(kg, label: str) -> int:
    return next(k for k, x in enumerate(kg.store.index.nodes) if x.label == label)


def test_every_community_is_scored_by_its_best_representative_vector(setup):
    _kg, res, h = setup
    q = res.models.embedder().encode_one("films directed by Ivo Tan")
    scores = h.l0_scores(q)
    for c in range(h.levels["L0"]):
        reps = h.l0_reps[h.l0_rep_start[c] : h.l0_rep_start[c + 1]]
        assert len(reps) >= 2  # at least one member centroid and the description
        assert scores[c] == pytest.approx(float((reps @ q).max()), abs=1e-5)
    kids, s1 = h.l1_scores(list(range(h.levels["L0"])), q)
    assert kids.tolist() == list(range(h.levels["L1"]))
    for c, s in zip(kids, s1):
        assert s == pytest.approx(
            float((h.l1_reps[h.l1_rep_start[c] : h.l1_rep_start[c + 1]] @ q).max()), abs=1e-5
        )


async def test_anchored_beam_descends_into_the_named_entitys_communities(setup):
    kg, res, h = setup
    query = "which films did [Ivo Tan] direct"
    anchors = await topic_anchors(kg, res, query)
    assert anchors == [_idx(kg, "Ivo Tan")]
    out = beam_search(kg, query, res, h, beam=1, top_k=5, anchors=anchors)
    home = h.community_of(anchors[0])
    assert [c.id for c in out.l0] == [home[0]] and out.l0[0].anchored
    assert [c.id for c in out.l1] == [home[1]] and out.l1[0].anchored
    films = {"Blue Canyon", "Red Summit", "Green Ridge"}
    neighbourhood = films | {
        "Ivo Tan",
        "Jun Mori",
        "Kai Sato",
        "Lea Ford",
        "Adventure",
        "Japanese",
        "Documentary",
    }
    labels = {r.label for r in out.results}
    assert labels <= neighbourhood and labels & films
    cosine = beam_search(
        kg, query, res, h, beam=1, top_k=5
    )  # no anchors: cosine decides, nothing is anchored
    assert not any(c.anchored for c in cosine.l0 + cosine.l1)
    assert out.scanned_vectors >= out.scanned_entities > 0


def _hub_kg(tmp) -> Graph:
    """Two casts that never meet, whose twelve films all share one genre and one year (the hubs)."""
    lines = []
    for side, cast in (
        ("North", ["Ann Vale", "Bo Reyes", "Cy Moss"]),
        ("South", ["Dee Holt", "Eve Park", "Fin Roe"]),
    ):
        for k in range(6):
            film = f"{side} Story {k}"
            lines += [
                f"{film}|directed_by|{side} Director",
                f"{film}|has_genre|Drama",
                f"{film}|release_year|2001",
            ]
            lines += [f"{film}|starred_actors|{a}" for a in cast[: 2 + k % 2]]
    path = tmp / "hub_kb.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return Graph(MemoryKG("hubs", load_triples_file(path)))


def test_hubs_stay_out_of_louvain_and_are_attached_to_one_leaf(tmp_path):
    kg = _hub_kg(tmp_path)
    res = make_service(tmp_path / "cache").resources_now(kg)
    params = HierarchyParams(hub_min_degree=8, hub_quantile=0.9, leaf_size=8, min_community=3)
    hubs = res.graph.hubs(params.hub_min_degree, params.hub_quantile)
    assert {kg.store.index.nodes[i].label for i in np.flatnonzero(hubs)} == {"Drama", "2001"}
    h = hierarchy_for(res, params)
    assert sorted(h.hubs.tolist()) == sorted(np.flatnonzero(hubs).tolist())
    members = np.concatenate(h.members)
    assert sorted(members.tolist()) == list(
        range(len(kg.store.index.nodes))
    )  # hubs included, each entity once

    def l0(label):
        return h.community_of(_idx(kg, label))[0]

    # the shared genre and year do not glue the two casts together
    assert l0("North Story 0") == l0("Ann Vale") == l0("North Director")
    assert l0("South Story 0") == l0("Dee Holt") == l0("South Director")
    assert l0("North Story 0") != l0("South Story 0")
    assert l0("Drama") in {l0("North Story 0"), l0("South Story 0")}


def test_cache_file_names_the_hierarchy_version_vectors_and_parameters(setup):
    _kg, res, _h = setup
    names = [p.name for p in res.cache_path("x").parent.glob("hierarchy-*.npz")]
    vectors = (
        res.models.embedder().bulk_name
    )  # the representatives are made of these entity vectors
    assert any(n.startswith(f"hierarchy-v2-{vectors}-r") and "-l6-" in n for n in names)
    assert (
        res.cache_path(res.dense_file()).is_file()
        and res.dense_file() == f"{vectors}-descriptors.npy"
    )


async def test_tot_search_beam_method_anchors_by_default_and_reports_recall(setup):
    from tot_mcp.strategies.benchmarks.runner import run_questions, summarize
    from tot_mcp.strategies.methods import BenchmarkQuestion, MethodOptions, make_method
    from tot_mcp.strategies.services import Services

    kg, res, h = setup
    cache = str(res.cache_dir)
    q = BenchmarkQuestion(
        id="q1", text="which films did [Ivo Tan] direct", answers=["Blue Canyon", "Red Summit"]
    )
    records = {}
    for anchor in (True, False):
        services = Services([kg], embedder_factory=shared_embedder, cache_dir=cache)
        options = MethodOptions(options={"anchor": anchor, "beam": 1, "top_k": 5})
        method = make_method("beam", options, services)
        records[anchor] = (await run_questions([q], method, "beam", [kg], keep_trace=True))[0]
    anchored = records[True]
    assert anchored.error is None and anchored.llm_calls == 0
    ivo = _idx(kg, "Ivo Tan")
    assert [c["id"] for c in anchored.trace["l0"] if c["anchored"]] == [h.community_of(ivo)[0]]
    assert anchored.recall10 is not None and anchored.recall10 > 0
    assert not any(c["anchored"] for c in records[False].trace["l0"])
    assert summarize([anchored]).recall10 == anchored.recall10


def test_adjacency_is_the_undirected_graph_without_repeats(setup):
    _kg, res, _h = setup
    indptr, indices = adjacency(res)
    nbrs = neighbour_lists(res.graph)
    for i in range(res.graph.n):
        assert indices[indptr[i] : indptr[i + 1]].tolist() == sorted(set(nbrs[i]))


def test_anchored_neighbourhood_two_hops_without_expanding_hubs(setup):
    kg, res, _h = setup
    indptr, indices = adjacency(res)
    ivo = _idx(kg, "Ivo Tan")
    hubs = np.zeros(res.graph.n, bool)
    n1, n2 = anchored_neighbourhood(indptr, indices, [ivo], hubs)

    def label(xs):
        return {kg.store.index.nodes[i].label for i in xs}

    assert label(n1) == {"Blue Canyon", "Red Summit", "Green Ridge"}
    assert label(n2) == {"Jun Mori", "Kai Sato", "Lea Ford", "Adventure", "Japanese", "Documentary"}
    assert (
        ivo not in n1 and ivo not in n2
    )  # the anchor is the question's subject, never its own neighbour
    hubs[_idx(kg, "Red Summit")] = True  # reached, but its other neighbours are not
    n1, n2 = anchored_neighbourhood(indptr, indices, [ivo], hubs)
    assert "Red Summit" in label(n1) and label(n2) == {
        "Jun Mori",
        "Kai Sato",
        "Lea Ford",
        "Adventure",
        "Japanese",
        "Documentary",
    }  # all reachable via the others
    one, none = anchored_neighbourhood(indptr, indices, [ivo], hubs, hops=1)
    assert label(one) == {"Blue Canyon", "Red Summit", "Green Ridge"} and len(none) == 0
    small1, small2 = anchored_neighbourhood(
        indptr, indices, [ivo], np.zeros(res.graph.n, bool), limit=5
    )
    assert (
        len(small1) == 3 and len(small2) == 0
    )  # expanding any film would pass the limit: the second hop stops
    assert [len(x) for x in anchored_neighbourhood(indptr, indices, [], hubs)] == [0, 0]


async def test_anchored_beam_ranks_the_anchors_neighbourhood_with_its_hop_distance(setup):
    kg, res, h = setup
    query = "which actors starred in the films directed by [Ivo Tan]"
    anchors = await topic_anchors(kg, res, query)
    out = beam_search(kg, query, res, h, beam=1, top_k=10, anchors=anchors)
    by_label = {r.label: r for r in out.results}
    assert "Ivo Tan" not in by_label  # the named entity is not an answer to its own question
    for name in (
        "Jun Mori",
        "Kai Sato",
        "Lea Ford",
    ):  # two hops away: reached even outside the chosen leaf
        assert by_label[name].depth == 2
    assert all(
        r.depth in (1, 2)
        for r in out.results
        if r.label in {"Blue Canyon", "Red Summit", "Green Ridge"}
    )
    assert out.scanned_entities >= 9
    leaves = beam_search(
        kg, query, res, h, beam=1, top_k=10, anchors=anchors, hops=0
    )  # the leaves only
    home = h.members[h.community_of(anchors[0])[1]]
    assert {r.label for r in leaves.results} <= {kg.store.index.nodes[i].label for i in home}
    assert all(r.depth is None for r in leaves.results)
    cosine = beam_search(
        kg, query, res, h, beam=1, top_k=10
    )  # no anchors: no neighbourhood, no bonus
    assert all(r.depth is None for r in cosine.results)


async def test_skipping_the_leaves_when_the_neighbourhood_fills_the_top_k_changes_nothing(setup):
    kg, res, h = setup
    query = "which films did [Ivo Tan] direct"
    anchors = await topic_anchors(kg, res, query)
    q = res.models.embedder().encode_one(query)
    out = beam_search(kg, query, res, h, beam=3, top_k=3, query_vec=q, anchors=anchors)
    assert out.scanned_entities == 9  # three films above 1.0: the leaves' members were not scored
    # brute force over the neighbourhood and the chosen leaves, every candidate scored
    n1, n2 = anchored_neighbourhood(*adjacency(res), anchors, h.hub_mask)
    leaves = np.concatenate([h.members[c.id] for c in out.l1])
    ent = res.dense(build=False).vectors
    scored = {int(i): float(ent[i] @ q) + 1.0 for i in n1} | {
        int(i): float(ent[i] @ q) + 0.5 for i in n2
    }
    for i in leaves:
        if int(i) not in scored and int(i) not in anchors:
            scored[int(i)] = float(ent[i] @ q)
    best = sorted(scored, key=lambda i: -scored[i])[:3]
    assert [r.label for r in out.results] == [kg.store.index.nodes[i].label for i in best]
