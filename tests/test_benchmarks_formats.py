"""Question-file parsers: MetaQA, PathQuestion (answer-column quirks, no path leakage), JSONL, bad
lines."""

from __future__ import annotations

import json

import pytest

from tot_fixtures import make_kg

from tot_mcp.strategies.benchmarks.formats import (
    BadLine,
    FormatError,
    mark_topic,
    parse_jsonl,
    parse_metaqa,
    parse_pathquestion,
    parse_pq_answers,
    read_questions,
)
from tot_mcp.strategies.benchmarks.runner import run_questions
from tot_mcp.strategies.methods import MethodResult


@pytest.mark.parametrize(
    "column, answers",
    [
        ("enno_iii(enno_iii/)", ["enno_iii"]),
        ("PG_(USA)(PG_(USA)/)", ["PG_(USA)"]),
        ("Hard_Times_(live)(Hard_Times_(live)/Hard_Times/)", ["Hard_Times_(live)", "Hard_Times"]),
        ("a(a/b/c/b/)", ["a", "b", "c"]),
        ("x_(y)_z(x_(y)_z/w_(v)/)", ["x_(y)_z", "w_(v)"]),
    ],
)
def test_pathquestion_answer_column_splits_at_the_right_parenthesis(column, answers):
    assert parse_pq_answers(column) == answers


@pytest.mark.parametrize("column", ["abc", "abc(def/)", "(a/)", "a(b/"])
def test_malformed_answer_columns_are_format_errors(column):
    with pytest.raises(FormatError):
        parse_pq_answers(column)


PQ_LINE = (
    "who is the parent of anna_of_holstein-gottorp 's son ?\tenno_iii(enno_iii/)\t"
    "anna_of_holstein-gottorp#children#edzard_ii#parents#enno_iii#<end>#enno_iii"
)


def test_pathquestion_keeps_only_the_topic_of_the_gold_path_and_brackets_it():
    q = parse_pathquestion(PQ_LINE)
    assert q.text == "who is the parent of [anna_of_holstein-gottorp] 's son ?"
    assert q.topic == "anna_of_holstein-gottorp" and q.answers == ["enno_iii"]
    dumped = q.model_dump_json()
    for leaked in ("edzard_ii", "children", "parents", "<end>", "#"):
        assert leaked not in dumped


async def test_no_method_ever_sees_the_gold_path_or_the_answers(tmp_path):
    f = tmp_path / "pq.txt"
    f.write_text(
        PQ_LINE + "\n" + " what is x 's y ?\tz_(1)(z_(1)/)\tx#r1#mid_node#r2#z_(1)\n",
        encoding="utf-8",
    )
    seen = []

    async def recording_method(question, kg):
        seen.append(question.model_dump_json())
        return MethodResult()

    questions = [q for q in read_questions(f, "pathquestion")]
    assert not any(isinstance(q, BadLine) for q in questions)
    kg = make_kg(
        "pq", [("anna_of_holstein-gottorp", "children", "edzard_ii"), ("x", "r1", "mid_node")]
    )
    records = await run_questions(questions, recording_method, "rec", [kg])
    assert all(r.error is None for r in records)
    assert len(seen) == 2
    for text in seen:
        for leaked in ("edzard_ii", "children", "parents", "mid_node", "r1#", "enno_iii", "z_(1)"):
            assert leaked not in text
        assert json.loads(text)["answers"] == []


def test_metaqa_lines():
    q = parse_metaqa("what movies did [Joely Richardson] star in\tEndless Love|The Last Mimzy")
    assert q.topic == "Joely Richardson" and q.answers == ["Endless Love", "The Last Mimzy"]
    for bad in ("no tab here", "no topic\tA|B", "[x] q\t", "a\tb\tc"):
        with pytest.raises(FormatError):
            parse_metaqa(bad)


def test_jsonl_lines():
    q = parse_jsonl(
        '{"question": "who directed the matrix", "answers": "Lana Wachowski", "topic": "The '
        'Matrix"}'
    )
    assert q.text == "who directed [the matrix]" and q.answers == ["Lana Wachowski"]
    assert parse_jsonl('{"question": "q [x]", "answers": ["a", "b"]}').answers == ["a", "b"]
    for bad in (
        "{",
        "[1]",
        '{"answers": []}',
        '{"question": "q", "answers": 3}',
        '{"question": "q", "answers": [], "topic": 5}',
    ):
        with pytest.raises(FormatError):
            parse_jsonl(bad)


def test_mark_topic_prepends_when_absent_and_keeps_existing_brackets():
    assert mark_topic("who is it", "Ada") == "[Ada] who is it"
    assert mark_topic("who is [Ada]", "Ada") == "who is [Ada]"


def test_bad_lines_are_reported_with_their_line_number_and_the_rest_is_read(tmp_path):
    f = tmp_path / "m.txt"
    f.write_text("q1 [a]\tA\nbroken line\n\nq2 [b]\tB|C\n", encoding="utf-8")
    items = list(read_questions(f, "metaqa"))
    assert [type(i).__name__ for i in items] == [
        "BenchmarkQuestion",
        "BadLine",
        "BenchmarkQuestion",
    ]
    assert items[1].lineno == 2 and "expected" in items[1].reason
    assert [i.id for i in items if not isinstance(i, BadLine)] == ["m:1", "m:4"]


def test_unknown_format_is_an_error(tmp_path):
    with pytest.raises(FormatError):
        list(read_questions(tmp_path / "x", "csv"))
