"""`tot-mcp load`: chunked, resumable bulk loading into an on-disk store, readable by the store
backend."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import pyoxigraph as ox
import pytest

from tot_mcp.kg_adapters.bulk_load import BulkLoader, LoadState, load_into_store, main, state_path
from tot_mcp.kg_adapters.errors import InvalidInput
from tot_mcp.kg_adapters.fts_index import FtsLabelIndex, label_index_path
from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.oxigraph_store import open_store_kg
from tot_mcp.kg_adapters.store_names import META_GRAPH

FIXTURES = Path(__file__).parent / "fixtures"

TRIPLES = """\
Heat|directed_by|Michael Mann
Collateral|directed_by|Michael Mann
Heat|starred_actors|Al Pacino
Heat|starred_actors|Robert De Niro
Heat|release_year|1995
Collateral|starred_actors|Tom Cruise
Collateral|release_year|2004
The Insider|directed_by|Michael Mann
The Insider|starred_actors|Al Pacino
Top Gun|starred_actors|Tom Cruise
Heat|starred_actors|Al Pacino
"""  # the last line repeats the third: loading must not count it twice


class Interrupt(Exception):
    pass


def data_quads(store_dir: Path) -> list[ox.Quad]:
    st = ox.Store.read_only(str(store_dir))
    return [q for q in st if q.graph_name != META_GRAPH]


@pytest.fixture
def triples(tmp_path) -> Path:
    p = tmp_path / "kb.txt"
    p.write_text(TRIPLES, encoding="utf-8")
    return p


def test_a_loaded_triple_file_is_a_working_store_kg(tmp_path, triples):
    report = BulkLoader(tmp_path / "st", progress=False).load([triples])
    assert report.lines_loaded == 11 and report.labels > 0
    kg = Graph(open_store_kg("m", tmp_path / "st"))
    page = _run(kg.get_edges(["m:Heat"], "m:starred_actors"))
    assert sorted(page.entities[e.target].label for e in page.edges) == [
        "Al Pacino",
        "Robert De Niro",
    ]
    back = _run(kg.get_edges(["m:Michael%20Mann"], "m:directed_by", "backward"))
    assert sorted(e.target for e in back.edges) == ["m:Collateral", "m:Heat", "m:The%20Insider"]
    hits = _run(kg.search_entities("michael mann"))
    assert hits[0].entity.id == "m:Michael%20Mann" and hits[0].match == "casefold"
    linked = _run(kg.initialize("which films did [Tom Cruise] star in"))
    assert [m.entity.label for m in linked][:1] == ["Tom Cruise"]


def test_the_store_holds_exactly_what_load_into_store_would_write(tmp_path, triples):
    BulkLoader(tmp_path / "chunked", chunk_lines=3, progress=False).load([triples])
    load_into_store(triples, tmp_path / "reference")
    assert set(data_quads(tmp_path / "chunked")) == set(data_quads(tmp_path / "reference"))


def test_an_interrupted_load_resumes_where_it_stopped_without_duplicates(tmp_path, triples):
    seen = []

    def stop_after_two(prog):
        seen.append(prog.lines)
        if len(seen) == 2:
            raise Interrupt

    store = tmp_path / "st"
    with pytest.raises(Interrupt):
        BulkLoader(store, chunk_lines=3, progress=False, on_chunk=stop_after_two).load([triples])
    state = LoadState.read(state_path(store))
    (prog,) = state.files.values()
    assert (prog.lines, prog.chunks, prog.done) == (6, 2, False)
    assert prog.offset == len("".join(TRIPLES.splitlines(keepends=True)[:6]).encode())
    assert not state.labels_built
    # labels of triple files are indexed chunk by chunk, in step with the store
    partial = FtsLabelIndex.open(label_index_path(store))
    assert partial.search("Robert De Niro")[0].key == "urn:tot:e:Robert%20De%20Niro"
    assert partial.search("Top Gun") == []  # line 10: not loaded yet
    partial.close()

    resumed = []
    report = BulkLoader(
        store, chunk_lines=3, progress=False, on_chunk=lambda p: resumed.append(p.lines)
    ).load([triples])
    assert resumed == [9, 11]  # only the remaining chunks were read
    assert report.chunks_loaded == 2 and report.labels > 0
    BulkLoader(tmp_path / "clean", progress=False).load([triples])
    quads = data_quads(store)
    assert len(quads) == len(set(quads)) == len(data_quads(tmp_path / "clean"))
    assert (
        FtsLabelIndex.open(label_index_path(store)).count()
        == FtsLabelIndex.open(label_index_path(tmp_path / "clean")).count()
        == 10
    )  # 10 distinct names, none twice
    edges = [q for q in quads if q.predicate.value.startswith("urn:tot:r:")]
    assert len(edges) == 10  # 11 lines, one duplicate


def test_a_crash_between_loading_and_saving_progress_replays_the_chunk_harmlessly(
    tmp_path, triples
):
    store = tmp_path / "st"
    BulkLoader(store, chunk_lines=4, progress=False).load([triples])
    before = set(data_quads(store))
    # pretend the last two chunks were loaded but their progress was never written
    sp = state_path(store)
    raw = json.loads(sp.read_text())
    (f,) = raw["files"].values()
    f.update(
        offset=len("".join(TRIPLES.splitlines(keepends=True)[:4]).encode()),
        lines=4,
        chunks=1,
        done=False,
    )
    raw["labels_built"] = False
    sp.write_text(json.dumps(raw))
    replayed = []
    BulkLoader(
        store, chunk_lines=4, progress=False, on_chunk=lambda p: replayed.append(p.lines)
    ).load([triples])
    assert replayed == [8, 11]
    after = data_quads(store)
    assert set(after) == before and len(after) == len(before)


def test_a_finished_file_is_skipped_and_a_changed_file_is_reloaded(tmp_path, triples):
    store = tmp_path / "st"
    BulkLoader(store, progress=False).load([triples])
    again = BulkLoader(store, progress=False).load([triples])
    assert again.chunks_loaded == 0 and again.lines_loaded == 0
    with open(triples, "a", encoding="utf-8") as fh:
        fh.write("Thief|directed_by|Michael Mann\n")
    os.utime(triples, ns=(1, 1))
    changed = BulkLoader(store, progress=False).load([triples])
    assert changed.lines_loaded == 12
    kg = Graph(open_store_kg("m", store))
    back = _run(kg.get_edges(["m:Michael%20Mann"], "m:directed_by", "backward"))
    assert "m:Thief" in {e.target for e in back.edges}
    assert (
        _run(kg.search_entities("Thief"))[0].entity.id == "m:Thief"
    )  # the label index was rebuilt


def test_ntriples_load_in_chunks_gzipped_or_not_and_keep_blank_nodes(tmp_path):
    src = FIXTURES / "local_movies.nt"
    plain = tmp_path / "plain"
    BulkLoader(plain, chunk_lines=5, progress=False).load([src])
    gz = tmp_path / "movies.nt.gz"
    gz.write_bytes(gzip.compress(src.read_bytes()))
    stop = []

    def interrupt_once(prog):
        stop.append(1)
        if len(stop) == 3:
            raise Interrupt

    zipped = tmp_path / "zipped"
    with pytest.raises(Interrupt):
        BulkLoader(zipped, chunk_lines=5, progress=False, on_chunk=interrupt_once).load([gz])
    BulkLoader(zipped, chunk_lines=5, progress=False).load([gz])
    reference = set(
        ox.parse(path=str(src), format=ox.RdfFormat.N_TRIPLES)
    )  # blank node labels as written
    assert set(data_quads(plain)) == reference == set(data_quads(zipped))
    assert any(isinstance(q.subject, ox.BlankNode) for q in reference)
    kg = open_store_kg("mv", plain)
    assert _run(kg.search_entities("Lana Wachowski"))[0].entity.label == "Lana Wachowski"


def test_other_rdf_syntaxes_load_in_one_piece(tmp_path):
    store = tmp_path / "st"
    report = BulkLoader(store, progress=False).load([FIXTURES / "local_movies.ttl"])
    assert report.chunks_loaded == 1
    kg = Graph(open_store_kg("mv", store))
    hits = _run(kg.search_entities("The Matrix"))
    assert hits and hits[0].entity.label == "The Matrix"
    rels = _run(kg.get_relations([hits[0].entity.id]))
    assert any(r.label == "directed by" for r in rels.relations)


def test_bad_input_is_a_clear_error_naming_the_line(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("a|r|b\nthis line has no separators\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match=r"bad.txt:2: expected 'head\|relation\|tail'"):
        BulkLoader(tmp_path / "st", progress=False).load([bad])
    with pytest.raises(InvalidInput, match="not found"):
        BulkLoader(tmp_path / "st", progress=False).load([tmp_path / "missing.txt"])
    with pytest.raises(InvalidInput, match="unknown file type"):
        (tmp_path / "x.bin").write_bytes(b"\0")
        BulkLoader(tmp_path / "st", progress=False).load([tmp_path / "x.bin"])


def test_a_directory_fifo_or_device_is_named_for_what_it_is_not_called_missing(tmp_path):
    """#36 (low): ``tot-mcp load`` said "not found" for a directory, a FIFO or a device."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for path in (tmp_path, fifo, Path("/dev/zero")):
        with pytest.raises(
            InvalidInput, match=r"is not a regular file \(a directory, FIFO or device\)"
        ):
            BulkLoader(tmp_path / "st", progress=False).load([path])


def test_cli_loads_resumes_and_reports_errors_with_exit_code_2(tmp_path, triples, capsys):
    store = tmp_path / "st"
    assert main([str(triples), "--into", str(store), "--quiet", "--chunk-lines", "4"]) == 0
    assert "loaded 11 lines in 3 chunks" in capsys.readouterr().err
    assert main([str(triples), "--into", str(store), "--quiet"]) == 0
    assert "loaded 0 lines" in capsys.readouterr().err
    assert main([str(triples), "--into", str(store), "--quiet", "--restart"]) == 0
    assert "loaded 11 lines" in capsys.readouterr().err
    assert main([str(tmp_path / "nope.txt"), "--into", str(store), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "error: file to load not found" in err and "Traceback" not in err
    with pytest.raises(SystemExit) as exc:
        main([str(triples), "--into", str(store), "--chunk-lines", "0"])
    assert exc.value.code == 2


def test_a_store_copied_elsewhere_keeps_working_with_its_label_index(tmp_path, triples):
    BulkLoader(tmp_path / "st", progress=False).load([triples])
    shutil.copytree(tmp_path / "st", tmp_path / "moved")
    shutil.copy(label_index_path(tmp_path / "st"), label_index_path(tmp_path / "moved"))
    kg = open_store_kg("m", tmp_path / "moved")
    assert _run(kg.search_entities("Top Gun"))[0].entity.id == "m:Top%20Gun"


def _run(coro):
    import asyncio

    return asyncio.run(coro)


def test_a_bad_line_in_a_later_chunk_keeps_the_earlier_chunks_and_leaves_no_thread_behind(tmp_path):
    """Chunks are converted one ahead in a thread: its error must surface with the right line
    number, after the chunks before it are committed, and the thread must be gone when load()
    returns."""
    import threading

    lines = [f"Film {i}|directed_by|Director {i % 7}\n" for i in range(20)]
    lines[13] = "Film 13|directed_by\n"
    bad = tmp_path / "bad.txt"
    bad.write_text("".join(lines), encoding="utf-8")
    before = threading.active_count()
    store = tmp_path / "st"
    with pytest.raises(InvalidInput, match=r"bad.txt:14: expected 'head\|relation\|tail'"):
        BulkLoader(store, chunk_lines=5, progress=False).load([bad])
    assert threading.active_count() == before
    (prog,) = LoadState.read(state_path(store)).files.values()
    assert (prog.lines, prog.chunks, prog.done) == (
        10,
        2,
        False,
    )  # lines 1-10 are in; 11-15 hold the bad one
    assert len([q for q in data_quads(store) if q.predicate.value.startswith("urn:tot:r:")]) == 10


def test_odd_lines_convert_like_plain_ones(tmp_path):
    """Tabs, CRLF, padding, blank lines, quotes and non-ASCII names take the general path inside a
    chunk of plain lines; the store must hold exactly what the reference loader writes for the same
    triples."""
    text = (
        "Heat|directed_by|Michael Mann\r\n"
        "  Heat | release_year |1995 \n"
        "\n"
        "Amélie\tdirected_by\tJean-Pierre Jeunet\n"
        'The "Quoted" Film|directed_by|Back\\slash\n'
        "Léon|starred_actors|Jean Reno\n"
    )
    src = tmp_path / "odd.txt"
    src.write_text(text, encoding="utf-8")
    BulkLoader(tmp_path / "bulk", chunk_lines=4, progress=False).load([src])
    load_into_store(src, tmp_path / "ref")
    assert set(data_quads(tmp_path / "bulk")) == set(data_quads(tmp_path / "ref"))


def test_the_cli_says_a_turtle_file_was_loaded_whole_not_zero_lines(tmp_path, capsys):
    ttl = tmp_path / "c.ttl"
    ttl.write_text(
        '@prefix c: <http://example.org/c/> .\nc:a c:p "1" .\nc:b c:p "2" .\n', encoding="utf-8"
    )
    assert main([str(ttl), "--into", str(tmp_path / "st"), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "loaded 1 RDF file whole into" in err and "0 lines" not in err
