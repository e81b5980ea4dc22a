"""Questions the KG cannot answer are refused, through every answering strategy, before any
expansion or LLM call, with a one-line reason; questions it can answer keep their answer and say
how the entity was linked.

Real parts: the embedded MetaQA movie KG, its linker, MiniLM, and a scripted LLM that would fail the
test if it were asked anything."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from retrieval_fixtures import run_checked_strategy, shared_embedder
from tot_mcp.kg_adapters.link_grade import grade
from tot_mcp.strategies.llm.scripted import ScriptedLLM
from tot_mcp.strategies.results import STATUSES
from tot_mcp.strategies.services import Services

ANSWERING = ["tot", "chain", "plan", "router", "ark", "bfs", "beam"]


@pytest.fixture(scope="module")
def movies(embedded_kg, tmp_path_factory):
    return embedded_kg, Services(
        [embedded_kg],
        embedder_factory=shared_embedder,
        cache_dir=tmp_path_factory.mktemp("grounding-cache"),
    )


async def ask(movies, method: str, query: str, llm=None):
    kg, services = movies
    return await run_checked_strategy(method, services, kg, query, llm)


@pytest.mark.parametrize("method", ANSWERING)
async def test_a_name_the_kg_lacks_is_no_entity_with_nothing_spent(movies, method):
    llm = ScriptedLLM([])  # no reply scripted: a call would fail
    out = await ask(
        movies,
        method,
        "who directed [Zorblax Quux]",
        llm=llm if method in ("tot", "plan") else None,
    )
    assert out.status == "no_entity" and not out.results and out.value == 0
    assert "[Zorblax Quux] was not found" in out.reason and "\n" not in out.reason
    assert llm.prompts == [] and out.usage.calls == 0


@pytest.mark.parametrize("method", ANSWERING)
async def test_a_look_alike_of_a_made_up_name_is_named_not_answered(movies, method):
    out = await ask(movies, method, "when was [Saturn Protocol Nineteen] released")
    assert out.status == "uncertain" and not out.results
    assert "the closest name, 'Protocol', shares 1 of 3 words" in out.reason
    assert [(li.label, li.match, li.confident) for li in out.links] == [
        ("Protocol", "partial", False)
    ]


@pytest.mark.parametrize("method", ANSWERING)
async def test_a_relation_the_kg_lacks_is_unsupported_naming_what_the_entity_has(movies, method):
    llm = ScriptedLLM([])
    out = await ask(
        movies,
        method,
        "who composed the music of [Forrest Gump]",
        llm=llm if method in ("tot", "plan") else None,
    )
    assert out.status == "unsupported" and not out.results and llm.prompts == []
    assert out.reason.startswith("the movies KG has no composer relation")
    assert "Forrest Gump has: " in out.reason and "directed by" in out.reason


async def test_over_linked_kgs_the_reason_names_every_kg_it_looked_in(embedded_kg, tmp_path):
    from tot_mcp.kg_adapters.spec import make_spec, open_kg

    awards = tmp_path / "awards.txt"
    awards.write_text("Forrest Gump|won_award|Best Picture\n", encoding="utf-8")
    services = Services(
        [embedded_kg, open_kg(make_spec("awards", str(awards)))],
        embedder_factory=shared_embedder,
        cache_dir=tmp_path,
    )
    for query, start in (
        ("who composed the music of [Forrest Gump]", "has a composer relation ('composed')"),
        ("what is the shoe size of [Forrest Gump]", "has an area relation ('size')"),
    ):
        out = await run_checked_strategy("plan", services, services.graph, query)
        assert out.status == "unsupported" and not out.results
        assert out.reason.startswith(f"none of the KGs (movies, awards) {start}"), out.reason
        assert "won award" in out.reason  # what the entity has, in either KG


@pytest.mark.parametrize("query", ["who directed [Forest Gump]", "who directed Forrest Gump"])
async def test_a_typo_or_a_bare_mention_still_answers_and_says_what_it_linked(movies, query):
    out = await ask(movies, "plan", query)
    assert out.status == "answered" and out.results[0].label == "Robert Zemeckis"
    (li,) = out.links
    assert li.label == "Forrest Gump" and li.confident
    assert li.match == ("typo" if "[" in query else "normalised")


def test_link_grades_read_the_strings_not_the_backends_match_name():
    assert grade("Forest Gump", "Forrest Gump", "bm25").kind == "typo"
    assert grade("Tom Hanks", "Tom Hanks", "exact").confident
    loose = grade("Matrix Reloaded", "The Matrix", "bm25")
    assert (loose.kind, loose.confident, loose.shared, loose.words) == ("partial", False, 1, 2)
    assert not grade("Hanks", "Shanks", "fuzzy", alone=False).confident  # a rival as close: a guess
    assert (
        grade("Ayehsa Mohan", "Ayesha Mohan", "bm25").kind == "typo"
    )  # two swapped letters: one edit
    assert grade("Zorblax", "Zorro", "fuzzy").kind == "similar"


def test_docs_state_the_one_status_vocabulary():
    text = (Path(__file__).parents[1] / "docs" / "tools.md").read_text(encoding="utf-8")
    for status, meaning in STATUSES.items():
        assert re.search(rf"\| `{status}` \| {re.escape(meaning)} \|", text), status


async def test_initialize_and_follow_path_say_when_a_name_matched_only_loosely(embedded_kg):
    from tot_mcp.server.render import render_matches

    text = render_matches(
        "Entities", await embedded_kg.initialize("when was [Saturn Protocol Nineteen] released")
    )
    assert (
        "Protocol" in text and 'for "Saturn Protocol Nineteen": loose, shares 1 of 3 words]' in text
    )
    text = render_matches("Entities", await embedded_kg.initialize("who directed [Forest Gump]"))
    assert 'for "Forest Gump": a spelling difference]' in text.splitlines()[1]


async def test_a_model_plan_is_valued_by_what_the_graph_says_for_it_not_by_its_rank(movies):
    """The model's path is checked against a reading of the question without the model: agreeing,
    it is answered; a path no reading supports keeps its answer, below tau, saying why."""
    q = "what genres do the movies directed by [Clark Gregg] fall under"
    right = ScriptedLLM(
        ["PATH: movies:E24335 -> movies:directed_by backward -> movies:has_genre forward"]
    )
    out = await ask(movies, "plan", q, llm=right)
    assert out.status == "answered" and out.value >= 0.8 and out.usage.calls == 1
    odd = ScriptedLLM(
        ["PATH: movies:E24335 -> movies:directed_by backward -> movies:release_year forward"]
    )
    out = await ask(movies, "plan", q, llm=odd)
    assert out.status == "below_tau" and 0 < out.value < 0.8 and out.results
    assert "without the model" in out.reason
