"""Derived descriptions: an in-memory KG with no descriptions of its own says what each entity is,
from its edges.

Small hand-made film KGs (the shape of MetaQA: ``film|relation|value`` triples, nothing typed) and
one check on the embedded KG, where look-alike labels (``Mikael Håfström`` the director, ``mikael
håfström`` the tag) must read differently. See kg_adapters/describe.py for the rule.
"""

from __future__ import annotations

import pytest

from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters import describe
from tot_mcp.kg_adapters.memory import MemoryKG
from tot_mcp.kg_adapters.models import Direction
from tot_mcp.kg_adapters.triple_index import TripleIndex

FILMS = [
    # title, years, directors, actors, tags
    (
        "Forrest Gump",
        ["1994"],
        ["Robert Zemeckis"],
        ["Tom Hanks", "Sally Field", "Gary Sinise"],
        ["war", "tom hanks"],
    ),
    ("Cast Away", ["2000"], ["Robert Zemeckis"], ["Tom Hanks"], ["tom hanks"]),
    ("Big", ["1988"], ["Penny Marshall"], ["Tom Hanks", "Elizabeth Perkins"], ["tom hanks"]),
    ("Larry Crowne", ["2011"], ["Tom Hanks"], ["Tom Hanks", "Julia Roberts"], []),
    (
        "Fargo",
        ["1996"],
        ["Joel Coen", "Ethan Coen"],
        ["Frances McDormand"],
        ["crime"],
    ),  # co-directed: one film
    (
        "Ransom",
        ["1956", "1996"],
        ["Alex Segal", "Ron Howard"],
        ["Glenn Ford", "Mel Gibson"],
        [],
    ),  # two films
]
# Enough ordinary films (one year, one director each) for the KG's statistics to say both relations
# are normally single-valued: 24 of 26 films have one director (92%), 25 of 26 one release year.
FILLER = [
    (
        f"Film {n}",
        [str(1960 + n)],
        [f"Director {n}"],
        [f"Actor {n}", f"Actor {n + 1}"],
        ["drama", f"tag {n}"],
    )
    for n in range(20)
]


def film_triples(films=FILMS + FILLER):
    for title, years, directors, actors, tags in films:
        yield from ((title, "release_year", y) for y in years)
        yield from ((title, "directed_by", d) for d in directors)
        yield from ((title, "starred_actors", a) for a in actors)
        yield from ((title, "has_tags", t) for t in tags)
    yield "Larry Crowne", "written_by", "Tom Hanks"


def index_of(triples) -> TripleIndex:
    index = TripleIndex()
    for h, r, t in triples:
        index.add(index.node(h), index.relation(r), index.node(t))
    index.freeze()
    return index


def kg_of(triples=None, **options) -> Graph:
    index = index_of(film_triples() if triples is None else triples)
    return Graph(MemoryKG("films", index, **options))


async def described(kg: Graph, label: str) -> str | None:
    """The description the tools show for the entity named ``label`` (found by name, which reads no
    description: label links need only the ID)."""
    (entity,) = await kg.find_by_label(label)
    return (await kg.describe_entity(entity.id)).entity.description


# -- what each kind of node reads like -------------------------------------------------------------
async def test_a_film_gets_its_year_and_director_first_then_its_short_lists():
    kg = kg_of()
    assert await described(kg, "Forrest Gump") == (
        "release year 1994; directed by Robert Zemeckis; tags tom hanks, war; starred actors Gary "
        "Sinise, Sally Field, Tom Hanks"
    )


async def test_a_person_gets_what_they_are_the_object_of_with_counts_most_first():
    kg = kg_of()
    assert await described(kg, "Tom Hanks") == "starred actor of 4; has directed 1; has written 1"
    assert await described(kg, "Robert Zemeckis") == "has directed 2"


async def test_a_tag_reads_as_a_tag():
    kg = kg_of()
    assert await described(kg, "tom hanks") == "tag of 3"
    assert await described(kg, "1994") == "release year of 1"


async def test_a_merged_node_is_flagged_when_a_normally_single_valued_relation_has_several_values():
    kg = kg_of()
    assert await described(kg, "Ransom") == (
        "release years 1956, 1996; directed by Alex Segal, Ron Howard; starred actors Glenn Ford, "
        "Mel Gibson "
        '(may be 2 things named "Ransom")'
    )


async def test_a_second_director_alone_does_not_flag_a_film_whose_one_release_year_says_it_is_one():
    text = await described(kg_of(), "Fargo")
    assert (
        text.startswith("release year 1996; directed by Ethan Coen, Joel Coen")
        and "may be" not in text
    )


async def test_nothing_is_flagged_when_the_relation_is_not_normally_single_valued():
    # Without the filler films, "directed by" and "release year" have too few subjects to call
    # single-valued.
    kg = kg_of(film_triples(FILMS))
    assert "may be" not in await described(kg, "Ransom")


async def test_readings_come_from_the_shape_of_the_relation_label_not_its_name():
    kg = kg_of(
        [
            ("Ada", "member_of", "Club"),
            ("Bob", "member_of", "Club"),
            ("Cy", "member_of", "Club"),
            ("Ada", "born_in", "Paris"),
            ("Ada", "birthPlace", "London"),
            ("Bob", "birthPlace", "London"),
            ("Speed", "starring", "Keanu Reeves"),
            ("Speed", "starring", "Sandra Bullock"),
        ]
    )
    assert await described(kg, "Club") == "3 members"
    assert await described(kg, "Paris") == "1 born in it"
    assert await described(kg, "London") == "birth place of 2"
    assert await described(kg, "Speed") == "starring Keanu Reeves, Sandra Bullock"  # no "starrings"
    assert await described(kg, "Keanu Reeves") == "starring of 1"
    # Too few subjects to rank these relations: they come in the order the KG has them.
    assert await described(kg, "Ada") == "member of Club; born in Paris; birth place London"


async def test_descriptions_are_short_and_cut_long_values():
    long_name = "Sir " + "Very Long Name " * 10
    kg = kg_of(
        [
            ("Film", "directed_by", long_name),
            *(("Film", f"rel_{n}", f"value {n}") for n in range(10)),
        ]
    )
    text = await described(kg, "Film")
    assert len(text) <= describe.MAX_CHARS and text.count("; ") <= 3
    assert f"directed by {long_name[:39]}…" in text


# -- values, not counts, where a question could need them ------------------------------------------
# One node for seven films that share a title: a question about "the films directed by X" reads
# their years off it.
HAMLET = (
    "Hamlet",
    ["2009", "1948", "1990", "1964", "1996", "1969", "2000"],
    [
        "Laurence Olivier",
        "Grigori Kozintsev",
        "Tony Richardson",
        "Franco Zeffirelli",
        "Kenneth Branagh",
        "Michael Almereyda",
        "Gregory Doran",
    ],
    ["Actor 1"],
    ["drama", "shakespeare"],
)


async def test_a_merged_title_lists_its_values_in_order_up_to_a_bound_and_keeps_the_note():
    text = await described(kg_of(film_triples([*FILLER, HAMLET])), "Hamlet")
    assert text.startswith(
        "release years 1948, 1964, 1969, 1990, 1996 (+2 more); "
    )  # 5 of 7, by value
    assert text.endswith('(may be 7 things named "Hamlet")')
    assert len(text) <= describe.MAX_CHARS and text.count("; ") <= 3


async def test_short_values_of_a_merged_title_are_listed_whole():
    four = (
        "Cinderella",
        ["2015", "1950", "1914", "1997"],
        ["Kenneth Branagh", "Clyde Geronimi"],
        ["Lily James"],
        [],
    )
    text = await described(kg_of(film_triples([*FILLER, four])), "Cinderella")
    assert text.startswith(
        "release years 1914, 1950, 1997, 2015; directed by Clyde Geronimi, Kenneth Branagh; "
    )
    assert text.endswith('(may be 4 things named "Cinderella")')


def test_numbers_are_listed_by_value_and_words_alphabetically():
    index = index_of(
        [
            *film_triples(FILLER),
            ("Old", "release_year", "999"),
            ("Old", "release_year", "1948"),
            ("Old", "release_year", "85"),
        ]
    )
    assert describe.Describer(index)(index.find_node("Old")).startswith(
        "release years 85, 999, 1948"
    )


def test_when_room_is_short_lists_shrink_to_counts_before_a_part_is_dropped():
    index = index_of(film_triples([*FILLER, HAMLET]))
    hamlet = index.find_node("Hamlet")
    note = ' (may be 7 things named "Hamlet")'
    full = describe.Describer(index)(hamlet)
    assert full == (
        "release years 1948, 1964, 1969, 1990, 1996 (+2 more); directed by 7; starred actor Actor "
        "1; tags drama, shakespeare" + note
    )
    for max_chars in range(len(full), 40, -1):
        text = describe.Describer(index, max_chars=max_chars)(hamlet)
        assert len(text) <= max_chars and text.endswith(note)
        if text.count("; ") < full.count(
            "; "
        ):  # a part is left out only once every list is down to its count
            assert "release years 1" not in text and "tags drama" not in text
    # A list shrinks a value at a time: "(+n more)" counts what is left out.
    assert describe.Describer(index, max_chars=141)(hamlet).startswith(
        "release years 1948, 1964, 1969 (+4 more); "
    )


async def test_short_lists_of_a_multi_valued_relation_are_listed_long_ones_counted():
    films = [
        *FILLER,
        (
            "Amélie",
            ["2001"],
            ["Jean-Pierre Jeunet"],
            ["Audrey Tautou"],
            ["paris", "romance", "whimsy"],
        ),
        ("Crowded", ["2001"], ["Someone"], [], [f"tag {n}" for n in range(6)]),
        (
            "Wordy",
            ["2001"],
            ["Someone Else"],
            [],
            ["a very long tag about one thing", "another rather long tag here"],
        ),
    ]
    kg = kg_of(film_triples(films))
    assert "tags paris, romance, whimsy" in await described(kg, "Amélie")
    assert "6 tags" in await described(kg, "Crowded")  # more than MAX_LISTED
    assert "2 tags" in await described(kg, "Wordy")  # too long together


async def test_the_object_of_a_passive_label_has_done_it():
    kg = kg_of(
        [
            ("Book", "written_by", "Ann"),
            ("Chair", "made_by", "Ann"),
            ("Song", "music_by", "Ann"),
            ("Song", "sung_by", "Bo"),
            ("Film", "directed_by", "Bo"),
            ("Film 2", "directed_by", "Bo"),
        ]
    )
    assert await described(kg, "Ann") == "has written 1; has made 1; 1 with music by them"
    assert await described(kg, "Bo") == "has directed 2; has sung 1"
    assert await described(kg, "Song") == "music by Ann; sung by Bo"  # forward: the label as it is


def test_literals_and_isolated_nodes_get_none():
    index = index_of([("Film", "release_year", "1994")])
    lit = index.node("1994", is_literal=True, datatype="http://www.w3.org/2001/XMLSchema#gYear")
    index.add(index.node("Film"), index.relation("release_year"), lit)
    lonely = index.node("nobody")
    kg = MemoryKG("films", index)
    assert kg._entity(lit).description is None and kg._entity(lonely).description is None


# -- where descriptions come from, and what they cost ----------------------------------------------
async def test_real_descriptions_are_kept_and_only_missing_ones_are_derived():
    index = index_of(film_triples())
    gump = index.find_node("Forrest Gump")
    index.nodes[
        gump
    ].description = "1994 film by Robert Zemeckis"  # as an RDF file's rdfs:comment would set it
    kg = Graph(MemoryKG("films", index))
    assert await described(kg, "Forrest Gump") == "1994 film by Robert Zemeckis"
    assert await described(kg, "Cast Away") == (
        "release year 2000; directed by Robert Zemeckis; tag tom hanks; starred actor Tom Hanks"
    )


async def test_every_tool_shows_the_same_cached_entity():
    kg = kg_of()
    memory = kg.store
    gump = memory.index.find_node("Forrest Gump")
    entity = memory._entity(gump)
    assert memory._entity(gump) is entity  # built once, description included
    assert (await kg.search_entities("Forrest Gump"))[0].entity is entity
    assert (await kg.initialize("who starred in [Forrest Gump]"))[0].entity is entity
    tom = memory.node_id(memory.index.find_node("Tom Hanks"))
    page = await kg.get_edges([tom], "films:starred_actors", Direction.backward)
    assert page.entities[entity.id] is entity
    assert (await kg.describe_entity(entity.id)).entity.description == entity.description


async def test_the_kg_statistics_are_computed_once_lazily(monkeypatch):
    calls = []
    real = describe.relation_readings
    monkeypatch.setattr(describe, "relation_readings", lambda index: calls.append(1) or real(index))
    kg = kg_of()
    assert calls == []  # loading the KG costs nothing extra
    for label in ("Forrest Gump", "Tom Hanks", "tom hanks", "Ransom"):
        await described(kg, label)
    assert calls == [1]


async def test_the_switch_turns_derivation_off_but_keeps_real_descriptions():
    index = index_of(film_triples())
    index.nodes[index.find_node("Big")].description = "1988 film"
    kg = Graph(MemoryKG("films", index, derive_descriptions=False))
    assert await described(kg, "Forrest Gump") is None and await described(kg, "Tom Hanks") is None
    assert await described(kg, "Big") == "1988 film"


# -- the embedded movie KG -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("Tom Hanks", "starred actor of 32; has directed 2; has written 2"),
        ("tom hanks", "tag of 29"),
        ("Mikael Håfström", "has directed 6; has written 1"),
        ("mikael håfström", "tag of 3"),
        ("ransom", "tag of 2"),
    ],
)
async def test_embedded_people_and_tags(embedded_kg, label, expected):
    assert await described(embedded_kg, label) == expected


async def test_embedded_films_and_look_alikes_read_differently(embedded_kg):
    gump = await described(embedded_kg, "Forrest Gump")
    assert gump.startswith("release year 1994; directed by Robert Zemeckis")
    assert gump != await described(embedded_kg, "Tom Hanks")
    assert (await described(embedded_kg, "Ransom")).startswith(
        "release year 1996; directed by Ron Howard"
    )
    remade = await described(embedded_kg, "The Man Who Knew Too Much")
    assert remade.startswith("release years 1934, 1956") and remade.endswith(
        '(may be 2 things named "The Man Who Knew Too Much")'
    )
    for a, b in [
        ("Mikael Håfström", "mikael håfström"),
        ("Ransom", "ransom"),
        ("Tom Hanks", "tom hanks"),
    ]:
        assert await described(embedded_kg, a) != await described(embedded_kg, b)


async def test_a_kg_without_an_index_gets_descriptions_from_its_relation_counts():
    """An on-disk/oxigraph store (no in-memory index): initialize and describe_entity say what kind
    of thing each match is from one get_relations, so look-alikes still read differently."""
    from pathlib import Path

    from tot_mcp.kg_adapters.files import open_file_kg
    from tot_mcp.kg_adapters.routing import LinkedKG

    mb = Path(__file__).parent / "fixtures" / "linked_mb.ttl"
    store = Graph(open_file_kg("mb", mb, store="memory"))
    assert not store.capabilities.local_index
    graph = LinkedKG({"mb": store})
    band, album = await graph.initialize("[The Beatles] and [Abbey Road]")
    assert (band.entity.label, band.entity.description) == ("The Beatles", "released 2")
    assert (album.entity.label, album.entity.description) == ("Abbey Road", "released by 1")
    assert (await graph.describe_entity(band.entity.id)).entity.description == "released 2"


def test_irregular_plurals_read_as_english():
    """'2 childrens' read oddly (issue #24): a relation named with an irregular plural keeps it."""
    from tot_mcp.kg_adapters.describe import RelationReading

    r = RelationReading.of("children", 0.1, 100, 5.0)
    assert r.count == ("", " children") and r.one == "child " and r.inverse == ("child of ", "")
    p = RelationReading.of("person", 0.1, 100, 5.0)
    assert p.count == ("", " people")
