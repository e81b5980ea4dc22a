"""What the garbage collector has to scan while serving: the loaded KGs and indexes are frozen out
of its view once, after loading (a full collection over MetaQA's ~430k objects took ~380 ms), and
the label index built lazily afterwards (the fuzzy index) is made of objects it does not track at
all."""

from __future__ import annotations

import gc

from tot_mcp.kg_adapters.label_index import LabelIndex
from tot_mcp.strategies.system import freeze_loaded_objects
from tot_mcp.server.runtime import Runtime


def test_freezing_after_load_takes_the_kg_and_its_indexes_out_of_collections(embedded_kg):
    runtime = Runtime({"movies": embedded_kg})
    try:
        threshold = gc.get_threshold()
        frozen = freeze_loaded_objects()
        gc.set_threshold(*threshold)
        still_collected = {id(o) for o in gc.get_objects()}
        memory = embedded_kg.store
        assert frozen > len(memory.index.nodes)
        for obj in (runtime.kgs, memory.index.nodes, memory.index.out, memory._labels._by_key):
            assert gc.is_tracked(obj) and id(obj) not in still_collected
    finally:
        gc.unfreeze()  # back to the oldest generation: later tests see an ordinary heap


def test_after_freezing_collections_come_less_often():
    """With the loaded objects frozen, Python's rule that a full collection waits for a quarter of
    the long-lived objects to be new no longer holds one back; the threshold does, ten times
    Python's. Young collections wait for 10,000 new objects, not 700: a remote KG's answer is tens
    of thousands of rows parsed at once (see strategies.system)."""
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)  # Python's defaults, whatever an earlier test left
        freeze_loaded_objects()
        assert gc.get_threshold() == (10_000, 10, 100)
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_the_lazily_built_fuzzy_index_adds_nothing_for_the_collector_to_scan(embedded_kg):
    index = LabelIndex([n.label for n in embedded_kg.store.index.nodes])
    gc.collect()
    before = len(gc.get_objects())
    assert index.search(
        "keanu reevs", 3
    )  # the first fuzzy search builds the index over ~43k label keys
    gc.collect()  # tuples of strings stop being tracked at the first collection that sees them
    assert index._fuzzy is not None
    assert len(gc.get_objects()) - before < 100
