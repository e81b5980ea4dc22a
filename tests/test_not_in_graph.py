"""A model may say "the graph does not have this" (issue #35):
``NOT_IN_GRAPH: entity|relation — <reason>``.

Why: a careful model asked about a relation the KG lacks ("who composed the music of [Forrest
Gump]" on a movie KG) could only reply with some path; ``plan`` then fell back to the tree search
for 11-17 calls and reported ``no_answer``. A reasoned refusal is the answer: ``plan`` returns it
after its one call, the tree search stops on it without judging it, and both report
``unsupported`` / ``no_entity`` with the model's reason."""

from __future__ import annotations

import pytest
from retrieval_fixtures import run_strategy, shared_embedder
from tot_fixtures import make_kg

from tot_mcp import prompts
from tot_mcp.strategies.llm.replies import REASON_CHARS, read_refusal
from tot_mcp.strategies.llm.scripted import ScriptedLLM
from tot_mcp.strategies.registry import get
from tot_mcp.strategies.services import Services
from tot_mcp.strategies.tot.actions import Answer, ExpandKG, Invalid
from tot_mcp.strategies.tot.asm import TraversalASM
from tot_mcp.strategies.tot.prompted import PromptedPolicy, parse_action_lines, parse_action_text
from tot_mcp.strategies.tot.search import SearchConfig, TreeSearch

COMPOSER = "who composed the music of [Forrest Gump]"
WHY = "the graph has directors, writers and actors of films, no composers"
REFUSE = f"NOT_IN_GRAPH: relation — {WHY}"


@pytest.fixture(scope="module")
def movies(embedded_kg, tmp_path_factory):
    return embedded_kg, Services(
        [embedded_kg],
        embedder_factory=shared_embedder,
        cache_dir=tmp_path_factory.mktemp("refusal-cache"),
    )


# -- the reply form, read forgivingly -----------------------------------------------------------
@pytest.mark.parametrize(
    "line, kind, reason",
    [
        (REFUSE, "relation", WHY),
        ("not_in_graph: relation - no composer relation", "relation", "no composer relation"),
        (
            "Not in graph: Entity: Forrest Gumpp is linked to another film",
            "entity",
            "Forrest Gumpp is linked to another film",
        ),
        ("**NOT_IN_GRAPH:** relation — no composer.", "relation", "no composer"),
        ("1. NOT-IN-GRAPH (relations): no one composed", "relation", "no one composed"),
        ("ANSWER: NOT_IN_GRAPH: entity — no such film", "entity", "no such film"),
        (
            "NOT_IN_GRAPH — the film is not linked",
            "entity",
            "the film is not linked",
        ),  # kind guessed
        ("NOT_IN_GRAPH: no relation for music", "relation", "no relation for music"),
        (
            'NOT_IN_GRAPH: relation — tags give only "soundtrack"',
            "relation",
            'tags give only "soundtrack"',
        ),
        ('NOT_IN_GRAPH: relation: "no composers".', "relation", "no composers"),
    ],
)
def test_a_refusal_line_reads_in_any_case_and_punctuation(line, kind, reason):
    r = read_refusal(line)
    assert r is not None and (r.kind, r.reason) == (kind, reason)
    assert r.status == {"relation": "unsupported", "entity": "no_entity"}[kind]


def test_a_missing_reason_gets_a_default_and_a_long_one_is_cut_to_one_bounded_line():
    assert "no relation" in read_refusal("NOT_IN_GRAPH: relation").reason
    assert "entity" in read_refusal("not in graph: entity —").reason
    long = read_refusal("NOT_IN_GRAPH: relation — " + "very " * 100 + "long")
    assert len(long.reason) == REASON_CHARS and long.reason.endswith("…")


@pytest.mark.parametrize(
    "line",
    [
        "PATH: movies:E1 -> movies:directed_by forward",
        "Nothing fits.",
        "ANSWER: Notting Hill",
        "THINK: the composer is not in graph yet",
        "",
    ],
)
def test_other_lines_are_not_refusals(line):
    assert read_refusal(line) is None


# -- plan: one call, no fallback ---------------------------------------------------------------
async def test_plan_a_relation_refusal_is_unsupported_with_the_reason_after_one_call(movies):
    kg, svc = movies
    llm = ScriptedLLM([REFUSE])  # one reply: a second call (the tree search) would fail
    out = await run_strategy("plan", svc, kg, COMPOSER, llm)
    assert out.status == "unsupported" and out.value == 0 and out.results == []
    assert out.reason == WHY
    assert not out.fell_back and out.search is None and out.error is None
    assert out.usage.calls == 1 and len(llm.prompts) == 1
    assert "the graph does not have this: the graph has directors" in get("plan").render(out)


@pytest.mark.parametrize(
    "reply, status, reason",
    [
        ("not_in_graph: entity - no film of that name", "no_entity", "no film of that name"),
        ("NOT_IN_GRAPH: relation", "unsupported", None),  # no reason: a default one
        (
            "I looked.\n**NOT_IN_GRAPH:** relation — no composer. Closest: written_by.\nSorry.",
            "unsupported",
            "no composer. Closest: written_by",
        ),
    ],
)
async def test_plan_reads_malformed_refusals_sensibly(movies, reply, status, reason):
    kg, svc = movies
    out = await run_strategy("plan", svc, kg, COMPOSER, ScriptedLLM([reply]))
    assert out.status == status and not out.fell_back and out.usage.calls == 1
    assert out.reason == reason if reason else out.reason


async def test_plan_paths_beside_a_refusal_go_first_and_the_refusal_replaces_the_fallback(movies):
    kg, svc = movies
    answering = ScriptedLLM(["PATH: movies:E24335 -> movies:directed_by backward\n" + REFUSE])
    out = await run_strategy("plan", svc, kg, "which films did [Clark Gregg] direct", answering)
    assert out.status == "answered" and out.results and out.reason == ""
    nothing = ScriptedLLM(["PATH: movies:E24335 -> movies:has_genre forward\n" + REFUSE])
    out = await run_strategy("plan", svc, kg, "which films did [Clark Gregg] direct", nothing)
    assert out.status == "unsupported" and not out.fell_back and out.usage.calls == 1
    assert out.paths == ["Clark Gregg (movies:E24335) -> movies:has_genre forward"]


async def test_plan_prompt_offers_the_refusal_and_no_longer_says_facts_are_hidden(movies):
    kg, svc = movies
    llm = ScriptedLLM([REFUSE])
    await run_strategy("plan", svc, kg, COMPOSER, llm)
    assert "NOT_IN_GRAPH: entity — <why>" in llm.prompts[0]
    assert "NOT_IN_GRAPH: relation — <why>" in llm.prompts[0]
    assert "tried only when the earlier ones reach nothing" in llm.prompts[0]
    assert "not the facts" not in llm.systems[0] and "NOT_IN_GRAPH" in llm.systems[0]


# -- the tree search: stops on it, not judged --------------------------------------------------
Q = "who composed the music of the films [Keanu Reeves] acted in"


async def search(replies, k=3, **policy):
    llm = ScriptedLLM(replies)
    search = TreeSearch(TraversalASM(make_kg()), PromptedPolicy(llm, **policy), SearchConfig(k=k))
    out = await search.run(Q)
    return out, llm


@pytest.mark.parametrize(
    "reply",
    [
        "ANSWER: NOT_IN_GRAPH: relation — the films have directors and years, no composers",
        "NOT_IN_GRAPH: relation — the films have directors and years, no composers\nEXPAND_KG",
        "answer: not in graph: relation: the films have directors and years, no composers",
    ],
)
async def test_tot_a_refusal_ends_the_search_at_once_unjudged(reply):
    out, llm = await search([reply])
    assert out.status == "unsupported" and out.value == 0 and out.expansions == 1
    assert out.reason == "the films have directors and years, no composers"
    assert out.answer.items == [] and not out.partial and llm.usage.calls == 1
    assert "NOT_IN_GRAPH: relation — the films have directors" in out.tree_text()


async def test_tot_an_entity_refusal_after_an_expansion_is_no_entity():
    replies = ["EXPAND_KG", "SELECT_RELATION: 1", "ANSWER: NOT_IN_GRAPH: entity"]
    out, llm = await search(replies, k=1)
    assert out.status == "no_entity" and "entity" in out.reason and out.answer.items == []
    assert llm.usage.calls <= 3 and not llm._queue  # the refusal was the last call


async def test_tot_a_lower_ranked_refusal_is_a_fallback_not_a_stop():
    """The model ranked expanding first: the search goes on; the refusal is kept, valued 0 without
    a call, and reported only if nothing better turns up."""
    replies = ["EXPAND_KG\nANSWER: NOT_IN_GRAPH: relation — no composers"]  # then it runs out
    out, llm = await search(replies)
    assert out.expansions >= 2 and out.error and "ran out" in out.error  # it tried to go on
    refusal = next(n for n in out.nodes if n.action and n.action.kind == "answer")
    assert refusal.value == 0.0 and len(llm.prompts) == 2  # a proposal, a failed one: no judge
    assert out.status == "unsupported" and out.reason == "no composers"


async def test_tot_without_batching_a_refusal_is_not_judged_either():
    out, llm = await search(["ANSWER: NOT_IN_GRAPH: relation — no composers"], k=1, batch=False)
    assert out.status == "unsupported" and llm.usage.calls == 1


async def test_tot_parses_refusals_as_answers_the_asm_accepts():
    asm = TraversalASM(make_kg())
    s = await asm.initial_state(Q)
    a = parse_action_text("Here goes.\nNOT_IN_GRAPH: entity — not a film", s)
    assert isinstance(a, Answer) and a.refuses and (a.status, a.text) == ("no_entity", "not a film")
    done = await asm.apply(s, a)
    assert done.answer is not None and done.answer.status == "no_entity" and done.answer.items == []
    assert a.describe() == "ANSWER: NOT_IN_GRAPH: entity — not a film"
    lines = parse_action_lines("EXPAND_KG\nANSWER: NOT_IN_GRAPH: relation", s)
    assert isinstance(lines[0], ExpandKG) and lines[1].status == "unsupported"
    assert not isinstance(parse_action_text("ANSWER: NOT_IN_GRAPH: relation — x", s), Invalid)


async def test_tot_prompts_offer_the_refusal_including_the_forced_answer():
    asm = TraversalASM(make_kg())
    s = await asm.initial_state(Q)
    policy = PromptedPolicy(ScriptedLLM([]))
    forced = s.model_copy(update={"max_hops": 0})
    for state in (s, forced):
        formats = policy.prompt_for(state).rsplit("one of:", 1)[1]
        assert "ANSWER: NOT_IN_GRAPH: entity — <why>" in formats
        assert "ANSWER: NOT_IN_GRAPH: relation — <why>" in formats
    assert formats.count("\nANSWER:") == 5 and "THINK" not in formats
    assert prompts.load("tot_answer_formats").count("\n") == 5


async def test_tot_strategy_reports_the_status_and_reason_within_two_calls(movies):
    kg, svc = movies
    llm = ScriptedLLM(["ANSWER: NOT_IN_GRAPH: relation — no composer relation in this movie graph"])
    out = await run_strategy("tot", svc, kg, COMPOSER, llm)
    assert out.status == "unsupported" and out.reason == "no composer relation in this movie graph"
    assert out.results == [] and out.value == 0 and out.usage.calls <= 2 and out.error is None


async def test_tot_a_refusal_when_choosing_the_relation_ends_the_search_in_two_calls():
    """A model sees the relations only when choosing one: the refusal is offered there too."""
    replies = ["EXPAND_KG", "NOT_IN_GRAPH: relation — none of these relations records a composer"]
    out, llm = await search(replies, k=1)
    assert "NOT_IN_GRAPH: relation — <why>" in llm.prompts[1]
    assert (
        out.status == "unsupported" and out.reason == "none of these relations records a composer"
    )
    assert llm.usage.calls == 2 and out.answer.items == []
