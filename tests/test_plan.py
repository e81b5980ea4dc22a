"""``plan``: one LLM call plans relation paths, the graph walks them (LLM-guided planning, arXiv
2511.19648).

Real parts throughout: the embedded MetaQA movie KG, the offline reasoner and MiniLM, a scripted LLM
(the one the ``scripted`` backend serves) answering the planning prompt, and a real SPARQL server
for literal values."""

from __future__ import annotations

import re

import pytest

from retrieval_fixtures import run_strategy, shared_embedder
from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.strategies.llm.scripted import ScriptedLLM
from tot_mcp.strategies.methods import BenchmarkQuestion, MethodOptions, make_method
from tot_mcp.strategies.registry import available, get
from tot_mcp.strategies.services import Services

pytest_plugins = ["oxigraph_fixture"]  # movies_sparql_url

GENRES_OF_CLARK_GREGG = "what genres do the movies directed by [Clark Gregg] fall under"


@pytest.fixture(scope="module")
def movies(embedded_kg, tmp_path_factory):
    return embedded_kg, Services(
        [embedded_kg],
        embedder_factory=shared_embedder,
        cache_dir=tmp_path_factory.mktemp("plan-cache"),
    )


async def plan(services, kg, query, llm=None, **options):
    return await run_strategy("plan", services, kg, query, llm, **options)


# -- with an LLM: one call, then the graph ---------------------------------------------------------
async def test_a_two_hop_path_from_the_model_answers_with_exactly_one_llm_call(movies):
    kg, svc = movies
    llm = ScriptedLLM(
        [
            "Here is my plan:\n1. PATH: movies:E24335 -> movies:directed_by backward -> "
            "movies:has_genre forward\n2. PATH: movies:E24335 -> movies:written_by backward -> "
            "movies:has_genre forward"
        ]
    )
    out = await plan(svc, kg, GENRES_OF_CLARK_GREGG, llm=llm)
    assert out.status == "answered" and not out.fell_back and out.planner == "llm"
    assert {r.label for r in out.results} == {"Drama", "Comedy"}
    assert out.usage.calls == 1 and len(llm.prompts) == 1
    assert out.path.endswith("movies:directed_by backward -> movies:has_genre forward")
    assert len(out.paths) == 2 and 0 < out.value <= 1
    step = out.results[0].path  # each answer carries the walk that reached it
    assert [(s.relation, s.direction.value) for s in step] == [
        ("movies:directed_by", "backward"),
        ("movies:has_genre", "forward"),
    ]
    text = get("plan").render(out)
    assert (
        "path: Clark Gregg (movies:E24335) -> movies:directed_by backward" in text
        and "Drama" in text
    )


async def test_the_prompt_lists_the_relations_around_the_entities_with_direction_and_counts(movies):
    kg, svc = movies
    llm = ScriptedLLM(
        ["PATH: movies:E24335 -> movies:directed_by backward -> movies:has_genre forward"]
    )
    await plan(svc, kg, GENRES_OF_CLARK_GREGG, llm=llm, k=2)
    prompt = llm.prompts[0]
    assert "1. movies:E24335: Clark Gregg" in prompt  # the linked entity, with its description
    assert re.search(r"^  movies:directed_by backward \[2\]: inverse of directed by$", prompt, re.M)
    # what the entities one hop away have: a director's films have genres
    after = prompt.split("After movies:directed_by backward", 1)[1].split("After ", 1)[0]
    assert re.search(r"^  movies:has_genre forward \[\d+\]: has genre$", after, re.M)
    assert "up to 2 relation paths" in prompt
    lines = [ln for ln in prompt.splitlines() if re.match(r"^  \S+:\S+ (forward|backward)", ln)]
    assert len(lines) <= 3 * 40  # bounded: at most 40 relation lines a level


async def test_the_reply_is_read_forgivingly_labels_case_and_missing_directions(movies):
    kg, svc = movies
    llm = ScriptedLLM(["**Path 1:** clark gregg → Directed By → has genre\nThat should do it."])
    out = await plan(svc, kg, GENRES_OF_CLARK_GREGG, llm=llm)
    # no directions given: after a person, "directed by" can only be followed backward; after a
    # film, forward
    assert {r.label for r in out.results} == {"Drama", "Comedy"} and not out.fell_back


async def test_out_and_back_on_one_relation_never_returns_the_start(movies):
    kg, svc = movies
    llm = ScriptedLLM(
        ["PATH: The Matrix -> movies:starred_actors forward -> movies:starred_actors backward"]
    )
    out = await plan(svc, kg, "which films share actors with [The Matrix]", llm=llm)
    labels = {r.label for r in out.results}
    assert "The Matrix" not in labels and {"Speed", "V for Vendetta"} <= labels


async def test_an_unusable_reply_falls_back_to_the_tree_search_and_says_so(movies):
    kg, svc = movies
    llm = ScriptedLLM(
        lambda prompt: "I am not sure."
    )  # the tree search gets the same unhelpful model
    out = await plan(svc, kg, GENRES_OF_CLARK_GREGG, llm=llm)
    assert out.fell_back and "no usable path" in out.fallback_reason and out.paths == []
    assert out.search is not None  # the tree search's trace
    assert (
        out.usage.calls == len(llm.prompts) > 1
    )  # the planning call and the tree search's, each counted once
    assert "fell back to the tree search" in get("plan").render(out)


async def test_a_path_that_reaches_nothing_falls_back_to_the_tree_search(movies):
    kg, svc = movies
    llm = ScriptedLLM(
        lambda prompt: (
            "PATH: movies:E24335 -> movies:has_genre forward" if "PATH:" in prompt else "no idea"
        )
    )
    out = await plan(svc, kg, GENRES_OF_CLARK_GREGG, llm=llm)
    assert out.fell_back and out.fallback_reason == "none of the 1 planned path(s) reached anything"
    assert out.paths == ["Clark Gregg (movies:E24335) -> movies:has_genre forward"]


async def test_an_llm_failure_is_the_result_not_a_reason_to_search(movies):
    kg, svc = movies
    out = await plan(svc, kg, GENRES_OF_CLARK_GREGG, llm=ScriptedLLM([]))  # raises LLMError at once
    assert out.error.startswith("LLM failed") and not out.fell_back and out.results == []


# -- offline: the reasoner's plans instead of a model ----------------------------------------------
async def test_offline_a_two_hop_question_is_answered_with_no_llm_call(movies):
    kg, svc = movies
    out = await plan(svc, kg, GENRES_OF_CLARK_GREGG)
    assert out.planner == "offline" and out.status == "answered" and not out.fell_back
    assert {r.label for r in out.results} == {"Drama", "Comedy"}
    assert out.usage.calls == 0
    assert out.path.endswith("movies:directed_by backward -> movies:has_genre forward")


async def test_offline_a_three_hop_question_keeps_the_start_out_of_its_answers(movies):
    kg, svc = movies
    out = await plan(svc, kg, "who directed films that share actors with the film [Delhi-6]")
    assert out.status == "answered" and out.usage.calls == 0
    assert "Rakeysh Omprakash Mehra" in {r.label for r in out.results}
    assert all(r.depth == 3 for r in out.results)


# -- literal values --------------------------------------------------------------------------------
async def test_literal_values_are_answers(movies_sparql_url):
    from tot_mcp.kg_adapters.sparql import EndpointRegistry, open_sparql_kg

    kg = Graph(
        open_sparql_kg(
            "mv",
            "sparql",
            movies_sparql_url,
            registry=EndpointRegistry(),
            prefixes={"ex": "http://example.org/movies/"},
        )
    )
    try:
        llm = ScriptedLLM(["PATH: The Matrix -> release year"])
        out = await plan(
            Services([kg], embedder_factory=shared_embedder),
            kg,
            "when was [The Matrix] released",
            llm=llm,
        )
    finally:
        await kg.aclose()
    assert [(r.id, r.label) for r in out.results] == [("literal:1999", "1999")]
    assert out.answer_text == "1999" and out.path.endswith("mv:ex.releaseYear forward")


# -- registered: tot-search --method plan, and a route of the router -------------------------------
def test_plan_is_registered_as_an_answer_strategy_without_a_tool_of_its_own():
    s = get("plan")
    assert "plan" in available() and s.job == "answer" and s.tool is None and not s.local_only
    assert "2511.19648" in s.reference
    assert s.parse_options({"k": 5, "max_hops": 4}).k == 5
    with pytest.raises(Exception, match="max_hops"):
        s.parse_options({"max_hops": 5})


async def test_it_runs_as_a_tot_search_method_with_the_scripted_backend(movies):
    kg, svc = movies
    reply = "PATH: Clark Gregg -> movies:directed_by backward -> movies:has_genre forward"
    method = make_method(
        "plan",
        MethodOptions(llm="scripted", llm_options={"responses": [reply]}, options={"k": 2}),
        svc,
    )
    result = await method(BenchmarkQuestion(id="1", text=GENRES_OF_CLARK_GREGG), kg)
    assert (
        set(result.answer_labels) == {"Drama", "Comedy"}
        and result.usage.calls == 1
        and result.error is None
    )


def test_tot_search_offers_plan_and_passes_k_to_it():
    from tot_mcp.strategies.search_cli import build_parser, strategy_options

    parser = build_parser()
    assert "plan" in parser.format_help()
    assert strategy_options(parser.parse_args(["--method", "plan", "-k", "2", "q"])) == {"k": 2}


async def test_the_router_runs_plan_when_asked_and_never_chooses_it_itself(movies):
    kg, svc = movies
    out = await run_strategy("router", svc, kg, GENRES_OF_CLARK_GREGG, route="plan")
    assert (
        out.route == "plan"
        and out.ran == ["plan"]
        and {r.label for r in out.results} == {"Drama", "Comedy"}
    )
    chosen = await run_strategy("router", svc, kg, GENRES_OF_CLARK_GREGG)
    assert chosen.route != "plan"


async def test_a_planned_path_crosses_linked_kgs_like_the_tree_search(tmp_path):
    """Films in one KG, their genres in another, joined by label: the vocabulary lists the linked
    KG's relations and a path ending in one reaches the genres (planning over the first KG alone
    would stop at the films)."""
    from test_offline_core import kg_of, lines

    from tot_mcp.kg_adapters.routing import LinkedKG

    films = kg_of(
        "films",
        lines("Alpha|directed_by|Eli Fox\nBeta|directed_by|Eli Fox\nGamma|directed_by|Ann Lee\n"),
    )
    catalog = kg_of(
        "catalog", lines("Alpha|has_genre|Thriller\nBeta|has_genre|Horror\nGamma|has_genre|Drama\n")
    )
    graph = LinkedKG.of([films, catalog])
    svc = Services(
        [films, catalog], graph=graph, embedder_factory=shared_embedder, cache_dir=tmp_path
    )
    eli = (await films.find_by_label("Eli Fox"))[0].id
    llm = ScriptedLLM([f"PATH: {eli} -> films:directed_by backward -> catalog:has_genre forward"])
    out = await plan(svc, films, "what genres are the films directed by [Eli Fox]", llm=llm)
    assert "catalog:has_genre forward" in llm.prompts[0]
    assert out.status == "answered" and not out.fell_back
    assert {r.label for r in out.results} == {"Thriller", "Horror"}


def test_tot_search_prints_the_path_a_planned_answer_took():
    """One question from the command line: the answer, then the relation path that reached it."""
    import subprocess
    import sys

    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "tot_mcp.strategies.search_cli",
            "--method",
            "plan",
            "what genres are the films directed by [Clark Gregg]",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "answer: Comedy, Drama"
    assert (
        "path: Clark Gregg (movies:E24335) -> movies:directed_by backward -> movies:has_genre "
        "forward" in lines
    )


# -- auto: plan first where a model is present -----------------------------------------------------
async def test_auto_with_a_model_answers_by_the_plan_in_one_call(movies):
    kg, svc = movies
    llm = ScriptedLLM(
        ["PATH: movies:E24335 -> movies:directed_by backward -> movies:has_genre forward"]
    )
    out = await run_strategy("auto", svc, kg, GENRES_OF_CLARK_GREGG, llm)
    assert out.planner == "llm" and not out.fell_back and out.usage.calls == 1
    assert {r.label for r in out.results} == {"Drama", "Comedy"}


async def test_auto_falls_back_to_the_tree_search_with_its_own_options(movies):
    kg, svc = movies
    llm = ScriptedLLM(
        lambda prompt: (
            "PATH: movies:E24335 -> movies:has_genre forward" if "PATH:" in prompt else "no idea"
        )
    )
    out = await run_strategy("auto", svc, kg, GENRES_OF_CLARK_GREGG, llm, k=1, max_expansions=2)
    assert (
        out.fell_back
        and out.search["config"]["k"] == 1
        and out.search["config"]["max_expansions"] == 2
    )


async def test_auto_offline_is_the_tree_search(movies):
    kg, svc = movies
    out = await run_strategy("auto", svc, kg, GENRES_OF_CLARK_GREGG)
    assert out.search is not None and {r.label for r in out.results} == {"Drama", "Comedy"}
