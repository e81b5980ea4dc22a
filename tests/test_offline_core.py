"""The offline reasoning core: relation paths from the topic, scored against the question with
MiniLM alone.

A tiny hand-made film KG with known answers; one embedder for the whole session
(retrieval_fixtures)."""

from __future__ import annotations

import pytest
from delegating_kg import DelegatingKG
from retrieval_fixtures import shared_embedder

from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.base import KnowledgeGraph
from tot_mcp.kg_adapters.memory import MemoryKG
from tot_mcp.kg_adapters.models import Direction
from tot_mcp.kg_adapters.triple_index import TripleIndex
from tot_mcp.strategies.offline import OfflineReasoner, OfflineSettings, topics_from_matches
from tot_mcp.strategies.offline.kgstats import relation_phrases
from tot_mcp.strategies.offline.question import parse_question

TRIPLES = """
Alpha|directed_by|Dana Reed
Alpha|written_by|Sam Poe
Alpha|starred_actors|Ann Lee
Alpha|starred_actors|Bo Chan
Alpha|release_year|1999
Alpha|has_genre|Drama
Beta|directed_by|Fay Gold
Beta|starred_actors|Ann Lee
Beta|release_year|2003
Beta|has_genre|Comedy
Gamma|directed_by|Eli Fox
Gamma|written_by|Sam Poe
Gamma|starred_actors|Bo Chan
Gamma|release_year|2010
Gamma|has_genre|Thriller
Delta|directed_by|Eli Fox
Delta|starred_actors|Cy Dorn
Delta|release_year|2012
Delta|has_genre|Horror
Epsilon|directed_by|Dana Reed
Epsilon|release_year|2005
Zed Quinn|born_in|1970
Zed Quinn|place_of_birth|Oslo
"""


def kg_of(name: str, triples) -> Graph:
    """An in-memory KG of (head, relation, tail) name triples."""
    index = TripleIndex()
    for h, r, t in triples:
        index.add(index.node(h), index.relation(r), index.node(t))
    index.freeze()
    return Graph(MemoryKG(name, index))


def lines(text: str) -> list[list[str]]:
    return [line.split("|") for line in text.strip().splitlines()]


def build_kg(name: str = "films") -> Graph:
    return kg_of(name, lines(TRIPLES))


@pytest.fixture(scope="module")
def kg() -> Graph:
    return build_kg()


@pytest.fixture(scope="module")
def reasoner() -> OfflineReasoner:
    return OfflineReasoner(shared_embedder())


async def ask(reasoner: OfflineReasoner, kg: KnowledgeGraph, question: str):
    topics = topics_from_matches(await kg.initialize(question))
    assert topics, f"no topic linked in {question!r}"
    res = await reasoner.reason(kg, question, topics)
    assert res.best is not None, f"no plan for {question!r}"
    return res


def hops(plan) -> list[str]:
    return [f"{r.split(':', 1)[1]}{'' if d is Direction.forward else '^-1'}" for r, d in plan.hops]


async def test_one_hop_forward(reasoner, kg):
    res = await ask(reasoner, kg, "who directed [Alpha]")
    assert hops(res.best) == ["directed_by"]
    assert res.best.answer_labels == ["Dana Reed"]


async def test_one_hop_backward_walks_the_relation_against_its_direction(reasoner, kg):
    res = await ask(reasoner, kg, "which films did [Eli Fox] direct")
    assert hops(res.best) == ["directed_by^-1"]
    assert set(res.best.answer_labels) == {"Gamma", "Delta"}


async def test_the_relation_named_by_the_question_wins_among_connected_ones(reasoner, kg):
    res = await ask(reasoner, kg, "who wrote [Gamma]")
    assert res.best.answer_labels == ["Sam Poe"]
    # born_in / place_of_birth exist in the KG but not at Alpha: never proposed however the question
    # reads
    res = await ask(reasoner, kg, "in what year was [Alpha] born")
    assert all(
        h[0].split(":", 1)[1] not in ("born_in", "place_of_birth")
        for p in res.plans
        for h in p.hops
    )
    assert res.best.answer_labels == ["1999"]


async def test_two_hops(reasoner, kg):
    res = await ask(reasoner, kg, "what genres are the films directed by [Eli Fox]")
    assert hops(res.best) == ["directed_by^-1", "has_genre"]
    assert set(res.best.answer_labels) == {"Thriller", "Horror"}


async def test_sharing_question_goes_out_and_back_and_the_topic_is_not_an_answer(reasoner, kg):
    res = await ask(reasoner, kg, "which films share the same director as [Alpha]")
    assert hops(res.best) == ["directed_by", "directed_by^-1"]
    assert res.best.answer_labels[0] == "Epsilon"
    assert res.best.answer_labels[-1] == "Alpha"  # reached, but moved last rather than dropped


async def test_three_hops_never_walk_back_through_the_topic(reasoner, kg):
    res = await ask(reasoner, kg, "who directed the films that share actors with [Alpha]")
    assert hops(res.best) == ["starred_actors", "starred_actors^-1", "directed_by"]
    # Beta (via Ann Lee) and Gamma (via Bo Chan); walking on from Alpha itself would add its
    # director Dana Reed
    assert set(res.best.answer_labels) == {"Fay Gold", "Eli Fox"}


async def test_plans_are_ranked_with_confidences_in_unit_interval(reasoner, kg):
    res = await ask(reasoner, kg, "what genres are the films directed by [Eli Fox]")
    scores = [p.score for p in res.plans]
    assert scores == sorted(scores, reverse=True) and len(res.plans) > 1
    assert all(0.0 <= p.confidence <= 1.0 for p in res.plans)
    assert res.plans[0].confidence > res.plans[-1].confidence


async def test_generic_backend_gives_the_same_answers(reasoner, kg):
    generic = Graph(DelegatingKG(build_kg().store))
    for q in (
        "which films did [Eli Fox] direct",
        "what genres are the films directed by [Eli Fox]",
        "who directed the films that share actors with [Alpha]",
    ):
        a = await ask(reasoner, kg, q)
        b = await ask(reasoner, generic, q)
        assert hops(a.best) == hops(b.best), q
        assert set(a.best.answer_labels) == set(b.best.answer_labels), q


async def test_unknown_topic_gives_no_plans(reasoner, kg):
    res = await reasoner.reason(kg, "who directed [Nothing]", ["films:E99999"])
    assert res.plans == [] and res.best is None


async def test_max_hops_setting_bounds_the_paths(kg):
    short = OfflineReasoner(shared_embedder(), OfflineSettings(max_hops=1))
    res = await ask(short, kg, "who directed the films that share actors with [Alpha]")
    assert all(len(p.hops) == 1 for p in res.plans)


def test_relation_phrases_read_the_specific_part_of_path_like_ids():
    assert relation_phrases(
        "kb:__people__person__place_of_birth", "people person place of birth"
    ) == ["people person place of birth", "place of birth"]
    assert relation_phrases("movies:directed_by", "directed by") == ["directed by"]


def test_question_parse_orders_phrases_outward_from_the_mention():
    q = parse_question("who is the dad of daughter of [X] 's dad ?", [])
    dist = {s.text: s.distance for s in q.spans}
    right_dad = min(s.distance for s in q.spans if s.text == "dad")
    assert right_dad < dist["daughter"] < max(s.distance for s in q.spans if s.text == "dad")
    assert all("'s" not in s.text.split()[1:] for s in q.spans)  # never across a possessive
    assert (
        parse_question("the films written by [X] were in which languages", []).focus == "languages"
    )
    assert parse_question("who directed [X]", []).focus == "who"
    # the answer's type is a whole noun phrase when one stands before "of", else the first word
    # after the wh-word
    assert (
        parse_question("what were the release years of the movies directed by [X]", []).focus
        == "release years"
    )
    assert parse_question("which person wrote the films acted by [X]", []).focus == "person"
    assert parse_question("which actors acted in [X]", []).focus == "actors"
    # without brackets the topic is found by its label
    q2 = parse_question("what is the nationality of claudius 's parents ?", ["claudius"])
    assert q2.mention_at is not None and "claudius" not in q2.tokens


def _films_with_a_year_for_a_title() -> Graph:
    """Forty films over twenty years, one of them titled "2010" (released 1984): a year node that is
    also a film."""
    triples = [(f"Film {i}", "release_year", str(1990 + i % 20)) for i in range(40)]
    triples += [(f"Film {i}", "directed_by", f"Director {i % 7}") for i in range(40)]
    triples += [
        ("Lone Ranch", "release_year", "2010"),
        ("Lone Ranch", "directed_by", "Director 1"),
        ("2010", "release_year", "1984"),
        ("2010", "directed_by", "Director 2"),
    ]
    return kg_of("films", triples)


async def test_a_chain_the_kg_never_composes_loses_to_the_one_hop_reading():
    """ "year ... released" reads two relation words; following release_year twice (through the film
    titled "2010") explains both, but years almost never have a release year of their own, so the KG
    vetoes that chain."""
    kg = _films_with_a_year_for_a_title()
    question = "what year was [Lone Ranch] released"
    res = await ask(OfflineReasoner(shared_embedder()), kg, question)
    assert hops(res.best) == ["release_year"] and res.best.answer_labels == ["2010"]
    # the same KG without the check takes the coincidental chain: the test can fail
    blind = await ask(
        OfflineReasoner(shared_embedder(), OfflineSettings(chain_cost=0.0)), kg, question
    )
    assert hops(blind.best) == ["release_year", "release_year"]


def test_a_possessive_or_of_chain_on_the_mention_counts_its_relation_nouns():
    def slots(q):
        p = parse_question(q, [])
        return [" ".join(p.tokens[s:e]) for s, e in p.slots]

    assert slots("the spouse of the other half of [Ann] 's spouse ?") == [
        "spouse",
        "the other half",
        "the spouse",
    ]
    assert slots("what is the name of the son of [Ann] ?") == [
        "the son"
    ]  # "name of" names no relation
    assert slots("what year was [Alpha] released") == []
    assert slots("[Ann] 's son 's wife 's job") == ["son", "wife", "job"]


def _couple() -> Graph:
    return kg_of(
        "people",
        [
            ("Ann Vale", "spouse", "Bob Stone"),
            ("Bob Stone", "spouse", "Ann Vale"),
            ("Ann Vale", "profession", "Judge"),
            ("Bob Stone", "profession", "Baker"),
            ("Cy Vale", "parents", "Ann Vale"),
            ("Ann Vale", "place_of_birth", "Rome"),
            ("Bob Stone", "place_of_birth", "Oslo"),
            ("Cy Vale", "place_of_birth", "Oslo"),
        ],
    )


async def test_every_chained_relation_noun_is_a_hop_even_a_synonym_the_embedding_misses():
    """ "other half" means spouse, which MiniLM does not see; the chain still says there are three
    hops, and the round trip Ann → Bob → Ann → Bob ends at Bob, not back at Ann."""
    kg = _couple()
    question = "the spouse of the other half of [Ann Vale] 's spouse ?"
    res = await ask(OfflineReasoner(shared_embedder()), kg, question)
    assert len(res.best.hops) == 3 and res.best.answer_labels[0] == "Bob Stone"
    blind = await ask(
        OfflineReasoner(shared_embedder(), OfflineSettings(slot_cost=0.0)), kg, question
    )
    assert len(blind.best.hops) == 2 and blind.best.answer_labels[0] == "Ann Vale"


async def test_an_of_phrase_that_names_one_relation_is_not_split_into_two():
    kg = _couple()
    question = "what is the place of birth of [Ann Vale] 's spouse ?"
    reasoner = OfflineReasoner(shared_embedder())
    topics = topics_from_matches(await kg.initialize(question))
    res = await reasoner.reason(kg, question, topics)
    assert [h[0].split(":")[1] for h in res.best.hops] == ["spouse", "place_of_birth"]
    assert res.best.answer_labels == ["Oslo"]


async def test_a_return_hop_may_read_its_own_words_when_the_walk_goes_on(reasoner):
    """ "the films *written by* the writer of X": r⁻¹ after r is named in the question, and the
    third relation follows it; nesting outward from the mention puts the hops in that order. Here
    the writer also directed a film, so "writer → films he directed → their writers" reads three
    words too, in the wrong order."""
    kg = kg_of("films", lines(TRIPLES + "Omega|directed_by|Sam Poe\nOmega|written_by|Ray Vox\n"))
    question = "who directed the films written by the writer of [Alpha]"
    res = await ask(reasoner, kg, question)
    assert hops(res.best) == ["written_by", "written_by^-1", "directed_by"]
    assert res.best.answer_labels == [
        "Eli Fox"
    ]  # Gamma's director; Alpha itself is not walked back through
    silent = await ask(
        OfflineReasoner(shared_embedder(), OfflineSettings(return_reads=False)), kg, question
    )
    assert hops(silent.best) != ["written_by", "written_by^-1", "directed_by"]


async def test_a_return_hop_that_ends_the_walk_reads_no_words(reasoner, kg):
    """ "the director that directed X" names one relation twice; r · r⁻¹ reading both words is not a
    reading."""
    res = await ask(reasoner, kg, "who is the director that directed [Alpha]")
    assert hops(res.best) == ["directed_by"] and res.best.answer_labels == ["Dana Reed"]


def test_the_noun_right_before_the_mention_names_its_type_not_a_relation():
    spans = {s.text for s in parse_question("the film [Alpha] starred which actors", []).spans}
    assert "film" not in spans and "starred" in spans
    assert "directed" in {s.text for s in parse_question("which person directed [Alpha]", []).spans}


def _tagged_film() -> Graph:
    """One film with six tags, two actors and one genre, among others so relations have typical
    values."""
    triples = [
        ("Alpha", "has_tags", t)
        for t in ("heist", "ann lee", "twist ending", "london", "bo chan", "1999")
    ]
    triples += [
        ("Alpha", "starred_actors", "Ann Lee"),
        ("Alpha", "starred_actors", "Bo Chan"),
        ("Alpha", "has_genre", "Crime"),
        ("Alpha", "in_language", "English"),
        ("Alpha", "release_year", "1999"),
    ]
    triples += [
        ("Beta", "has_tags", "romance"),
        ("Beta", "has_genre", "Comedy"),
        ("Beta", "in_language", "French"),
        ("Beta", "starred_actors", "Cy Dorn"),
        ("Beta", "release_year", "2003"),
    ]
    return kg_of("films", triples)


async def test_a_question_naming_no_relation_gets_what_the_kg_says_most_about_the_topic():
    """ "Describe X in a few words" names no relation (MiniLM puts "words" nearest *language*); the
    plan along the relation with the most edges at the topic wins. A question that does name one is
    unaffected."""
    kg = _tagged_film()
    question = "describe the movie [Alpha] in a few words"
    res = await ask(OfflineReasoner(shared_embedder()), kg, question)
    assert hops(res.best) == ["has_tags"] and "heist" in res.best.answer_labels
    blind = await ask(
        OfflineReasoner(shared_embedder(), OfflineSettings(salience_weight=0.0)), kg, question
    )
    assert hops(blind.best) != ["has_tags"]
    named = await ask(OfflineReasoner(shared_embedder()), kg, "what genre is [Alpha]")
    assert hops(named.best) == ["has_genre"] and named.best.answer_labels == ["Crime"]


def _couple_among_many() -> Graph:
    """A married couple among forty people who all have a gender: "male" and "female" are hubs."""
    triples = [
        ("Ann Vale", "spouse", "Bob Stone"),
        ("Bob Stone", "spouse", "Ann Vale"),
        ("Ann Vale", "gender", "female"),
        ("Bob Stone", "gender", "male"),
    ]
    triples += [(f"Person {i}", "gender", "male" if i % 2 else "female") for i in range(40)]
    triples += [(f"Person {i}", "spouse", f"Person {i + 1}") for i in range(0, 40, 2)]
    return kg_of("people", triples)


async def test_a_same_value_hop_through_a_hub_does_not_stand_for_a_relation_noun():
    """Three chained nouns (gender, other half, couple); "couple" means spouse, which MiniLM does
    not see. Walking gender and back through "female" (everyone of the same gender) is three hops
    but reads only two of the nouns."""
    kg = _couple_among_many()
    question = "who is the gender of other half of [Ann Vale] 's couple ?"
    res = await ask(OfflineReasoner(shared_embedder()), kg, question)
    assert [h.split("^")[0] for h in hops(res.best)] == ["spouse", "spouse", "gender"]
    assert res.best.answer_labels == ["female"]
    blind = await ask(
        OfflineReasoner(shared_embedder(), OfflineSettings(hub_fanout=1e9)), kg, question
    )
    assert hops(blind.best)[-2:] == ["gender", "gender^-1"]
