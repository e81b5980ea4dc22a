"""``tot-search`` end to end: one question, 20-question benchmark slices (printed metrics = metrics
recomputed from the JSONL), resume after interruption, bad input exit codes, the self-contained HTML
report.

The policy is a fixed gold-blind one (tests/tot_cli_policy.py) patched into the factory, so these
tests exercise the CLI, runner, formats and report, not a policy's accuracy.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tot_cli_policy import OneHopPolicy

import tot_mcp.strategies.llm.factory as factory
import tot_mcp.strategies.search_cli as cli
from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.embedded import load_embedded
from tot_mcp.strategies.benchmarks import metrics

SHARED = Path(__file__).resolve().parents[2] / "shared" / "benchmarks"
needs_shared = pytest.mark.skipif(
    not SHARED.is_dir(), reason=f"benchmark data not found at {SHARED}"
)
_KG_CACHE: dict[str, object] = {}


FROZEN: list[int] = []  # one entry per freeze_loaded_objects() a run asked for


@pytest.fixture(autouse=True)
def fixed_policy(monkeypatch):
    # the real one would freeze this test process's heap; what matters here is that tot-search asks
    # for it
    monkeypatch.setattr(cli, "freeze_loaded_objects", lambda: FROZEN.append(1) or 0)
    monkeypatch.setattr(factory, "make_policy", lambda *a, **k: OneHopPolicy())
    monkeypatch.setattr(factory, "needs_embedder", lambda kind: False)
    real_open = cli.open_system

    def cached_open(ns, config):  # the embedded KG takes seconds to load: once per test session
        if not ns.kg and not config.specs():
            from tot_mcp.strategies.system import assemble

            if "movies" not in _KG_CACHE:
                _KG_CACHE["movies"] = Graph(load_embedded("movies"))
            return assemble({"movies": _KG_CACHE["movies"]}, config, wait_for_builds=True)
        return real_open(ns, config)

    monkeypatch.setattr(cli, "open_system", cached_open)


def run(capsys, *argv) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_one_question_prints_the_answer_and_the_tree(capsys):
    code, out, _ = run(capsys, "what movies did [Joely Richardson] star in")
    assert code == 0
    assert out.startswith("answer: ") and "The Last Mimzy" in out.splitlines()[0]
    assert (
        "search tree" in out and "* [1.00] ROOT: what movies did [Joely Richardson] star in" in out
    )
    assert "SELECT_ENTITIES: Joely Richardson (movies:E" in out
    assert "final local subgraph:" in out


def test_a_bare_kg_file_is_named_after_the_file_as_tot_mcp_names_it(capsys):
    fixture = Path(__file__).resolve().parent / "fixtures" / "local_movies.nt"
    code, out, err = run(capsys, "--kg", fixture, "who directed [Lana Wachowski]")
    assert code == 0, err
    assert "SELECT_ENTITIES: Lana Wachowski (local_movies:" in out


def test_the_loaded_kgs_are_frozen_out_of_the_collector_once_before_answering(capsys):
    """tot-search, like tot-mcp, takes the loaded KGs out of the garbage collector's full scans
    (each ~0.3 s on MetaQA, landing inside some question's latency)."""
    FROZEN.clear()
    code, _, _ = run(capsys, "what movies did [Joely Richardson] star in")
    assert code == 0 and FROZEN == [1]


def test_one_question_writes_the_record_and_the_report_it_is_asked_for(capsys, tmp_path):
    out_file, html = tmp_path / "runs" / "one.jsonl", tmp_path / "one.html"
    code, out, err = run(
        capsys, "what movies did [Joely Richardson] star in", "--out", out_file, "--html", html
    )
    assert code == 0 and out.startswith("answer: ")
    (record,) = [json.loads(line) for line in out_file.read_text(encoding="utf-8").splitlines()]
    assert (
        record["question"] == "what movies did [Joely Richardson] star in"
        and "The Last Mimzy" in record["prediction"]
    )
    assert "Joely Richardson" in html.read_text(encoding="utf-8")
    assert f"wrote {out_file}" in err and f"wrote {html}" in err


def _check_metrics_match_jsonl(out: str, jsonl: Path, n: int) -> list[dict]:
    rows = [json.loads(line) for line in jsonl.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == n and len({r["id"] for r in rows}) == n
    for r in rows:
        assert r["hits1"] == metrics.hits_at_1(r["prediction"], r["gold"])
        assert r["f1"] == pytest.approx(metrics.answer_f1(r["prediction"], r["gold"]))
        assert r["em_in"] == metrics.em_in(r["answer_text"], r["prediction"], r["gold"])
        assert r["correct"] == (r["hits1"] == 1.0)
        assert r["trace"]["nodes"] and r["llm_calls"] > 0
    printed = dict(re.findall(r"^(hits@1|answer F1|EM-in)\s+([0-9.]+)$", out, re.M))
    assert float(printed["hits@1"]) == pytest.approx(sum(r["hits1"] for r in rows) / n, abs=5e-4)
    assert float(printed["answer F1"]) == pytest.approx(sum(r["f1"] for r in rows) / n, abs=5e-4)
    assert float(printed["EM-in"]) == pytest.approx(sum(r["em_in"] for r in rows) / n, abs=5e-4)
    last = out.strip().splitlines()[-1]
    assert re.fullmatch(r"hits@1: \d\.\d{3}", last)
    assert float(last.split()[1]) == pytest.approx(sum(r["hits1"] for r in rows) / n, abs=5e-4)
    return rows


@needs_shared
def test_metaqa_slice_end_to_end(capsys, tmp_path):
    out_file = tmp_path / "metaqa.jsonl"
    code, out, _ = run(
        capsys,
        "--questions",
        SHARED / "metaqa/1-hop/qa_dev_sample.txt",
        "--format",
        "metaqa",
        "--limit",
        20,
        "--workers",
        2,
        "--out",
        out_file,
        "--quiet",
    )
    assert code == 0
    rows = _check_metrics_match_jsonl(out, out_file, 20)
    assert (
        sum(r["hits1"] for r in rows) > 0
    )  # the one-hop heuristic gets some 1-hop questions right


@needs_shared
def test_pathquestion_slice_end_to_end_with_its_own_kb(capsys, tmp_path):
    out_file = tmp_path / "pq.jsonl"
    code, out, _ = run(
        capsys,
        "--questions",
        SHARED / "pathquestion/PQ-2H/dev_sample.txt",
        "--kg",
        f"pq={SHARED / 'pathquestion/kb/2H-kb.txt'}",
        "--limit",
        20,
        "--out",
        out_file,
        "--quiet",
    )
    assert code == 0 and "format: pathquestion" in out  # guessed from the file
    rows = _check_metrics_match_jsonl(out, out_file, 20)
    assert all(r["error"] is None for r in rows)
    assert all("#" not in r["question"] and "[" in r["question"] for r in rows)


def _write_metaqa(tmp_path: Path, n: int = 8) -> Path:
    lines = [
        f"what movies did [{a}] star in\tX"
        for a in [
            "Joely Richardson",
            "Keanu Reeves",
            "Sandra Bullock",
            "Tom Hanks",
            "Meg Ryan",
            "Brad Pitt",
            "Emma Thompson",
            "Jodie Foster",
        ][:n]
    ]
    f = tmp_path / "q.txt"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return f


_RUN_WITH_SLOW_POLICY = """
import sys, time
sys.path.insert(0, sys.argv[1])
import tot_mcp.strategies.llm.factory as factory
from tot_cli_policy import OneHopPolicy

class Slow(OneHopPolicy):
    # answers the first two questions at once, then thinks for minutes: Ctrl-C always lands
    # mid-question 3

    async def propose(self, state, k):
        import asyncio
        if "Sandra Bullock" in state.question:
            await asyncio.sleep(300)
        return await super().propose(state, k)

factory.make_policy = lambda *a, **k: Slow()
factory.needs_embedder = lambda kind: False
from tot_mcp.strategies.search_cli import main
sys.exit(main(sys.argv[2:]))
"""


def test_resume_continues_after_ctrl_c_without_redoing_or_losing_answers(capsys, tmp_path):
    import signal
    import subprocess
    import sys
    import time

    actors = [
        "Joely Richardson",
        "Keanu Reeves",
        "Sandra Bullock",
        "Tom Hanks",
        "Meg Ryan",
        "Brad Pitt",
    ]
    kb = tmp_path / "kb.txt"
    kb.write_text(
        "".join(f"Film {i}|starred_actors|{a}\n" for i, a in enumerate(actors)), encoding="utf-8"
    )
    qfile = tmp_path / "q.txt"
    qfile.write_text(
        "".join(f"what movies did [{a}] star in\tFilm {i}\n" for i, a in enumerate(actors))
    )
    out_file = tmp_path / "out.jsonl"
    args = ["--questions", qfile, "--kg", f"films={kb}", "--out", out_file, "--quiet"]
    proc = subprocess.Popen(
        [sys.executable, "-c", _RUN_WITH_SLOW_POLICY, str(Path(__file__).parent), *map(str, args)],
        cwd=Path(__file__).resolve().parents[1],
        stderr=subprocess.PIPE,
        text=True,
        # a shell's background job inherits SIGINT ignored (so would this child): a user's
        # Ctrl-C reaches a foreground run, which is what this test plays
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    started = time.monotonic()
    while (
        time.monotonic() - started < 60
    ):  # wait until two questions are answered, then press Ctrl-C
        if proc.poll() is not None or (out_file.exists() and out_file.read_text().count("\n") >= 2):
            break
        time.sleep(0.05)
    assert proc.poll() is None, f"tot-search ended before Ctrl-C: {proc.communicate()[1][-2000:]}"
    waited = time.monotonic() - started
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        pytest.fail(
            f"tot-search still running 60 s after Ctrl-C (sent {waited:.1f} s after start, answers "
            f"so far: {out_file.read_text().count(chr(10)) if out_file.exists() else 0}); stderr: "
            f"{err[-2000:]}"
        )
    assert proc.returncode == 130 and "--resume" in err and "Traceback" not in err
    first = [json.loads(x) for x in out_file.read_text().splitlines()]
    assert [r["id"] for r in first] == ["q:1", "q:2"]
    # a crash can also leave half a line behind
    with open(out_file, "a") as fh:
        fh.write('{"id": "q:9", "quest')

    code, out, err = run(capsys, *args, "--resume")
    assert code == 0 and f"resuming: {len(first)} done, {6 - len(first)} to go" in err
    rows = [json.loads(x) for x in out_file.read_text().splitlines()]
    assert [r["id"] for r in rows] == [f"q:{i}" for i in range(1, 7)]
    assert rows[: len(first)] == first
    assert re.search(r"^questions\s+6$", out, re.M) and all(r["correct"] for r in rows)


def test_out_file_is_not_overwritten_without_resume(capsys, tmp_path):
    qfile, out_file = _write_metaqa(tmp_path, 1), tmp_path / "out.jsonl"
    out_file.write_text('{"id": "x"}\n')
    code, _, err = run(capsys, "--questions", qfile, "--out", out_file)
    assert code == 2 and "--resume" in err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--questions", "/nonexistent/q.txt"], "no such file"),
        ([], "give a question"),
        (["q [x]", "--questions", "f"], "not both"),
        (["q [x]", "-k", "0"], "-k must be"),
        (["q [x]", "--tau", "1.5"], "--tau must be"),
        (["q [x]", "--method", "nope"], "unknown method 'nope'"),
        (["q [x]", "--kg", "/no/such/kb.txt"], "--kg /no/such/kb.txt: no such file"),
        (["q [x]", "--kg", "bad name=embedded"], "KG name 'bad name'"),
        (["--questions", "x", "--resume"], "--resume needs --out"),
    ],
)
def test_usage_errors_exit_2_with_one_clear_line(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert message in err and "Traceback" not in err and err.count("\n") == 1


def test_unknown_format_is_rejected_by_the_parser(capsys, tmp_path):
    with pytest.raises(SystemExit) as e:
        cli.main(["--questions", str(_write_metaqa(tmp_path)), "--format", "csv"])
    assert e.value.code == 2


def test_malformed_lines_are_skipped_and_missing_topics_are_reported(capsys, tmp_path):
    f = tmp_path / "mixed.txt"
    f.write_text(
        "what movies did [Keanu Reeves] star in\tSpeed\nthis line is broken\n"
        "what movies did [Nobody Atall Xyzzy] star in\tX\n",
        encoding="utf-8",
    )
    out_file = tmp_path / "o.jsonl"
    code, out, err = run(
        capsys, "--questions", f, "--format", "metaqa", "--out", out_file, "--quiet"
    )
    assert code == 0
    assert "skipping malformed line" in err and "mixed.txt:2" in err
    rows = [json.loads(x) for x in out_file.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["mixed:1", "mixed:3"]
    assert (
        rows[1]["error"] == "topic entity 'Nobody Atall Xyzzy' is not in the KG"
        and not rows[1]["correct"]
    )
    assert re.search(r"^errors\s+1$", out, re.M) and "skipped malformed lines: 1" in out


def test_a_file_with_no_readable_question_is_a_usage_error_not_an_empty_run(capsys, tmp_path):
    kb_as_questions = (
        tmp_path / "kb.txt"
    )  # the wrong file: every line is malformed as MetaQA questions
    kb_as_questions.write_text(
        "".join(f"Film {i}|starred_actors|Actor {i}\n" for i in range(50)), encoding="utf-8"
    )
    code, out, err = run(capsys, "--questions", kb_as_questions, "--format", "metaqa", "--quiet")
    assert code == 2 and "no question could be read as metaqa (50 malformed line(s); first: " in err
    assert "kb.txt:1:" in err and "hits@1" not in out
    empty = tmp_path / "empty.txt"
    empty.write_text("\n", encoding="utf-8")
    code, _, err = run(capsys, "--questions", empty, "--format", "metaqa", "--quiet")
    assert code == 2 and "no question could be read as metaqa (0 malformed line(s))" in err


def test_many_malformed_lines_are_counted_after_the_first_twenty(capsys, tmp_path):
    f = tmp_path / "noisy.txt"
    f.write_text(
        "what movies did [Keanu Reeves] star in\tSpeed\n" + "broken\n" * 30, encoding="utf-8"
    )
    code, _, err = run(capsys, "--questions", f, "--format", "metaqa", "--quiet")
    assert code == 0 and err.count("skipping malformed line") == 20
    assert "... and 10 more malformed lines skipped" in err


def test_html_report_is_self_contained(capsys, tmp_path):
    html_file = tmp_path / "r.html"
    code, _, _ = run(
        capsys, "--questions", _write_metaqa(tmp_path, 3), "--html", html_file, "--quiet"
    )
    assert code == 0
    page = html_file.read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>") and "<style>" in page and "<script>" in page
    assert not re.search(r"https?://", page)
    assert page.count('<details class="q ') == 3
    assert 'class="node path"' in page and "Joely Richardson" in page


def test_an_interrupted_run_does_not_wait_for_a_slow_embedder_load():
    """Ctrl-C cancels the run while the embedder is still loading (~6 s for MiniLM): the process
    must not wait for the load to finish on its way out, as it would for ``asyncio.to_thread``'s
    joined executor."""
    import asyncio
    import threading
    import time

    from tot_mcp.strategies.services import Services

    loading = threading.Event()

    def slow_load():
        loading.set()
        time.sleep(20)

    async def interrupted_run():
        task = asyncio.create_task(Services([], embedder_factory=slow_load).aembedder())
        while not loading.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    started = time.monotonic()
    asyncio.run(interrupted_run())
    assert time.monotonic() - started < 5


def test_skip_leaves_out_the_first_questions_and_limit_counts_after_it(capsys, tmp_path):
    out_file = tmp_path / "run.jsonl"
    code, _, _ = run(
        capsys,
        "--questions",
        _write_metaqa(tmp_path),
        "--skip",
        2,
        "--limit",
        3,
        "--out",
        out_file,
        "--quiet",
    )
    assert code == 0
    asked = [json.loads(line)["question"] for line in out_file.read_text().splitlines()]
    assert asked == [
        f"what movies did [{a}] star in" for a in ("Sandra Bullock", "Tom Hanks", "Meg Ryan")
    ]
    code, _, err = run(capsys, "--questions", _write_metaqa(tmp_path), "--skip", -1)
    assert code == 2 and "--skip must be ≥ 0" in err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["q [x]", "--method", "nosuch"], "unknown method 'nosuch'"),
        (["q [x]", "--option", "bogus=1"], "unknown option 'bogus'"),
        (["q [x]", "--option", "maxhops=2"], "unknown option 'maxhops'; did you mean max_hops?"),
        (["q [x]", "--method", "ark", "-k", "2"], "-k: not an option of --method ark"),
        (["q [x]", "--kg", "/nope/graph.ttl"], "--kg /nope/graph.ttl: no such file"),
    ],
)
def test_a_bad_method_option_or_kg_is_refused_before_any_kg_loads(
    capsys, monkeypatch, argv, message
):
    def no_loading(*args, **kwargs):
        raise AssertionError("a KG was opened before the command line was checked")

    monkeypatch.setattr(cli, "build_system", no_loading)
    code, out, err = run(capsys, *argv)
    assert code == 2 and message in err and out == "", err


def test_a_bad_strategy_table_in_the_config_is_blamed_on_the_config(capsys, tmp_path):
    config = tmp_path / "tot.toml"
    config.write_text("[strategy.tot]\nkk = 3\n")
    code, out, err = run(capsys, "--config", config, "-k", "2", "q [x]")
    assert code == 2 and out == ""
    assert f"[strategy.tot] in {config}: tot options: unknown option 'kk'; did you mean k?" in err


def test_an_empty_question_is_a_usage_error_before_anything_loads(capsys):
    code, out, err = run(capsys, "   ")
    assert code == 2 and "the question is empty" in err and out == ""


def test_a_refused_question_prints_its_status_and_reason(capsys):
    code, out, _ = run(capsys, "--no-trace", "who composed the music of [Forrest Gump]")
    assert code == 0 and out.startswith(
        "answer: none\nunsupported: the movies KG has no composer relation"
    )
    assert "status: unsupported  search steps: 0  LLM calls: 0" in out
