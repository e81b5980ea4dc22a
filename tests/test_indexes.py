"""A KG's indexes are built independently: a long build of one (the dense vectors, in the
background) never holds up a call that needs another."""

from __future__ import annotations

import threading

from retrieval_fixtures import make_kg, make_service


def test_a_dense_build_in_progress_does_not_block_bm25_or_the_relevance_model(tmp_path):
    kg = make_kg(tmp_path)
    res = make_service(tmp_path / "cache").resources_now(kg)
    building, release = threading.Event(), threading.Event()

    def slow_dense_build() -> None:
        with res._lock("dense"):  # what GraphResources.dense holds while it embeds every entity
            building.set()
            release.wait(30)

    builder = threading.Thread(target=slow_dense_build, daemon=True)
    builder.start()
    assert building.wait(5)
    done = threading.Event()

    def other_indexes() -> None:
        res.bm25()
        res.relevance()
        done.set()

    threading.Thread(target=other_indexes, daemon=True).start()
    try:
        assert done.wait(20), "bm25/relevance waited for the dense build"
    finally:
        release.set()
        builder.join(5)
