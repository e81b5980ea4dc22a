"""Each strategy's job and the figure that says whether it does it: ARK's context (recall and size),
the linking task that rerank is measured on, and the job lines tot-search prints."""

from __future__ import annotations

import random

from retrieval_fixtures import make_kg, shared_embedder
from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.strategies.benchmarks.linking import inject_typo, linking_question
from tot_mcp.strategies.benchmarks.metrics import context_recall, estimated_tokens
from tot_mcp.strategies.benchmarks.runner import score, summarize
from tot_mcp.strategies.methods import BenchmarkQuestion, MethodOptions, make_method
from tot_mcp.strategies.services import Services


async def test_ark_returns_a_bounded_context_naming_every_answer_with_its_path(tmp_path):
    kg = make_kg(tmp_path)
    services = Services([kg], embedder_factory=shared_embedder, cache_dir=tmp_path / "c")
    q = BenchmarkQuestion(
        id="1",
        text="which actors starred in the films directed by [Ivo Tan]",
        answers=["Jun Mori", "Kai Sato", "Lea Ford"],
    )
    method = make_method("ark", MethodOptions(options={"context_tokens": 400}), services)
    result = await method(q.public(), kg)
    ctx = result.context
    assert ctx.startswith("Ivo Tan [mini:E")
    assert context_recall(ctx, q.answers) == 1.0
    assert (
        "\n  directed by (inverse) → starred actors: (3) " in ctx
    )  # the relation path that reaches all of them
    assert estimated_tokens(ctx) <= 400 + 20
    record = score(q, result, "ark")
    assert record.context_recall == 1.0 and 0 < record.context_tokens <= 420
    lines = summarize([record]).job_lines()
    assert lines[0] == "context_recall: 1.000" and lines[1].startswith("context_tokens_median: ")


async def test_a_tight_budget_cuts_the_context_and_says_so(tmp_path):
    kg = make_kg(tmp_path)
    services = Services([kg], embedder_factory=shared_embedder, cache_dir=tmp_path / "c")
    wide = make_method(
        "ark", MethodOptions(options={"context_tokens": 400, "context_margin": 5.0}), services
    )
    tight = make_method(
        "ark", MethodOptions(options={"context_tokens": 100, "context_margin": 5.0}), services
    )
    q = BenchmarkQuestion(id="1", text="tell me about [Gus Hale]")
    full, cut = (await wide(q, kg)).context, (await tight(q, kg)).context
    assert estimated_tokens(full) > 100 and "left out" not in full
    assert estimated_tokens(cut) <= 100
    assert cut.splitlines()[-1].endswith("relation paths left out to stay within 100 tokens)")
    assert cut.splitlines()[:3] == full.splitlines()[:3]  # the best paths are the ones kept


def test_the_linking_set_is_fixed_by_its_seed_and_hides_the_mention():
    q = BenchmarkQuestion(
        id="q7",
        text="what films did [Ingrid Bergman] star in",
        answers=["Casablanca"],
        topic="Ingrid Bergman",
    )
    a, b = linking_question(q), linking_question(q)
    assert a == b  # same seed, same question: same typo on every run
    assert "[" not in a.text and "Ingrid Bergman" not in a.text and a.answers == ["Ingrid Bergman"]
    assert a.text.startswith("what films did I") and a.text.endswith(" star in")
    typos = {inject_typo("Bergman", random.Random(s)) for s in range(40)}
    assert len(typos) > 10 and all(
        t.startswith("B") and abs(len(t) - 7) <= 1 and t != "Bergman" for t in typos
    )
    assert inject_typo("Ida", random.Random(1)) == "Ida"  # too short to misspell safely


def test_job_lines_name_each_figure_once():
    from tot_mcp.strategies.benchmarks.runner import RunRecord

    recs = [
        RunRecord(id="1", question="q", gold=["x"], hits1=1.0, recall10=0.5),
        RunRecord(id="2", question="q", gold=["x"], hits1=0.0, recall10=1.0),
    ]
    assert summarize(recs).job_lines() == ["recall@10: 0.750"]
    assert summarize(recs, "linking").job_lines() == ["recall@10: 0.750", "linking_acc@1: 0.500"]


async def test_the_context_lists_every_entity_a_path_reaches_and_a_shared_relation_omits_the_topic(
    tmp_path,
):
    kg = make_kg(tmp_path)
    services = Services([kg], embedder_factory=shared_embedder, cache_dir=tmp_path / "c")
    method = make_method("ark", MethodOptions(), services)
    result = await method(
        BenchmarkQuestion(id="1", text="which films share actors with [Blue Canyon]"), kg
    )
    lines = result.context.splitlines()
    assert lines[0].startswith("Blue Canyon [mini:E")
    shared = [x for x in lines if x.startswith("  starred actors → starred actors (inverse): ")]
    assert shared == ["  starred actors → starred actors (inverse): (2) Red Summit; Green Ridge"]


async def test_the_topic_is_the_bracketed_mention_not_a_word_inside_the_question(tmp_path):
    from tot_mcp.kg_adapters.memory import MemoryKG
    from tot_mcp.kg_adapters.triples_file import load_triples_file

    kb = tmp_path / "kb.txt"
    kb.write_text(
        "Kansas City Confidential|directed_by|Phil Karlson\nKansas City "
        "Confidential|starred_actors|John Payne\nKansas|has_tags|director\nWizard "
        "Tale|has_tags|director\nWizard Tale|directed_by|Ann Lee\n",
        encoding="utf-8",
    )
    kg = Graph(MemoryKG("t", load_triples_file(kb)))
    services = Services([kg], embedder_factory=shared_embedder, cache_dir=tmp_path / "c")
    result = await make_method("ark", MethodOptions(), services)(
        BenchmarkQuestion(id="1", text="who is the director of [Kansas City Confidential]"), kg
    )
    assert result.context.splitlines()[0].startswith("Kansas City Confidential [t:E")
    assert "Kansas [" not in result.context and "director [" not in result.context
    nodes = kg.store.index.nodes
    assert result.answer_ids[0] == next(
        f"t:E{i}" for i, n in enumerate(nodes) if n.label == "Phil Karlson"
    )


async def test_a_question_nothing_in_the_kg_matches_gets_a_context_that_says_what_to_do(tmp_path):
    kg = make_kg(tmp_path)
    services = Services([kg], embedder_factory=shared_embedder, cache_dir=tmp_path / "c")
    result = await make_method("ark", MethodOptions(), services)(
        BenchmarkQuestion(id="1", text="[Zzqxv Qwrtp]"), kg
    )
    assert result.answer_ids == [] and result.status == "no_entity"
    assert (
        result.context == result.reason
    )  # a context strategy's reader is told why, and what to do
    assert (
        result.context.startswith("[Zzqxv Qwrtp] was not found")
        and "search_entities" in result.context
    )
