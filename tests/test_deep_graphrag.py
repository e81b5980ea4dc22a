"""Deep GraphRAG: the Louvain community hierarchy, its on-disk cache, and the beam search's widths."""

from __future__ import annotations

import numpy as np
import pytest

from kg_adapters.errors import InvalidInput
from retrieval_fixtures import make_kg, make_service
from strategies.deep_graphrag import HierarchyParams, beam_search, exhaustive_search, hierarchy_for
from strategies.retrieval_common import IndexNotBuilt

SMALL_LEAVES = HierarchyParams(leaf_size=6)  # the mini KG has 32 nodes: force a real second level


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dgr")
    kg = make_kg(tmp)
    res = make_service(tmp / "cache").resources(kg)
    return kg, res, hierarchy_for(res, SMALL_LEAVES)


def test_hierarchy_has_three_levels_and_every_entity_in_exactly_one_leaf(setup):
    kg, res, h = setup
    n = len(kg.index.nodes)
    assert h.levels["L2"] == n and h.levels["L0"] >= 2 and h.levels["L1"] > h.levels["L0"]
    assert (h.leaf_of >= 0).all() and (h.leaf_of < h.levels["L1"]).all()
    members = np.concatenate(h.members)
    assert sorted(members.tolist()) == list(range(n))  # a partition: each entity once
    for leaf, parent in enumerate(h.parent_of_leaf):
        assert leaf in h.children[parent]
    # the two clusters of the mini KG do not share an L0 community
    def l0(label):
        i = next(k for k, x in enumerate(kg.index.nodes) if x.label == label)
        return int(h.parent_of_leaf[h.leaf_of[i]])

    assert l0("Ivo Tan") == l0("Blue Canyon") != l0("Ada Stone")
    assert all(t.startswith("Community of ") for t in h.l0_text + h.l1_text)
    assert np.allclose(np.linalg.norm(h.l1_vecs, axis=1), 1.0, atol=1e-4)


def test_hierarchy_is_deterministic_and_cached_on_disk(setup, tmp_path):
    kg, res, h = setup
    fresh = make_service(res.service.cache_dir).resources(kg)  # same cache dir: loads, does not rebuild
    loaded = hierarchy_for(fresh, SMALL_LEAVES, build=False)
    assert np.array_equal(loaded.leaf_of, h.leaf_of) and loaded.l0_text == h.l0_text
    empty = make_service(tmp_path / "nothing").resources(kg)
    with pytest.raises(IndexNotBuilt, match="build_index"):
        hierarchy_for(empty, SMALL_LEAVES, build=False)


def test_beam_search_keeps_three_communities_per_level_and_ten_entities(setup):
    kg, res, h = setup
    out = beam_search(kg, "mountain adventure films by Ivo Tan in Japanese", res, h, beam=3, top_k=10)
    assert len(out.l0) == min(3, h.levels["L0"]) and len(out.l1) == min(3, h.levels["L1"])
    assert len(out.results) <= 10 and out.scanned_entities < len(kg.index.nodes)
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
    assert ex.scanned_entities == len(kg.index.nodes) and len(ex.results) == 5
    beam = beam_search(kg, q, res, h, top_k=5)
    assert beam.results[0].score <= ex.results[0].score + 1e-6


def test_bad_queries(setup):
    kg, res, h = setup
    with pytest.raises(InvalidInput):
        beam_search(kg, " ", res, h)
    with pytest.raises(InvalidInput):
        beam_search(kg, "y" * 3000, res, h)
