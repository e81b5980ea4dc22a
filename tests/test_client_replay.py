"""``bench/client_replay.py``: gold paths from MetaQA qtypes, and a short replay through the real
``tot-mcp``."""

from __future__ import annotations

import re

import pytest
from conftest import require_benchmarks

from bench.client_replay import gold_path, main


def hop(rel: str, direction: str) -> dict[str, str]:
    return {"relation_id": f"movies:{rel}", "direction": direction}


@pytest.mark.parametrize(
    ("qtype", "path"),
    [
        ("actor_to_movie", [hop("starred_actors", "backward")]),
        ("movie_to_tags", [hop("has_tags", "forward")]),
        (
            "writer_to_movie_to_year",
            [hop("written_by", "backward"), hop("release_year", "forward")],
        ),
        (
            "movie_to_director_to_movie_to_genre",
            [
                hop("directed_by", "forward"),
                hop("directed_by", "backward"),
                hop("has_genre", "forward"),
            ],
        ),
    ],
)
def test_gold_path_from_qtype(qtype, path):
    assert gold_path(qtype) == path


@pytest.mark.parametrize(
    "qtype", ["", "movie", "actor_to_director", "movie_to_movie", "movie_to_budget"]
)
def test_unmappable_qtypes_are_none(qtype):
    """A step that is not movie -> known type or known type -> movie cannot be replayed: None, never
    a guess."""
    assert gold_path(qtype) is None


def test_replay_two_questions_per_hop(capsys):
    """Two questions per hop count through one server: no failure, both ways find the same labels,
    and the last line is the one the issue asks for."""
    for n in (1, 2, 3):
        require_benchmarks("metaqa", f"{n}-hop", "qa_dev_sample_qtype.txt")
    assert main(["--limit", "2"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert re.fullmatch(r"calls_3hop_median: \d+(\.\d)?", lines[-1]), lines[-1]
    rows = {
        cells[0]: cells
        for line in lines
        if line.startswith("| ")
        and (cells := [c.strip() for c in line.strip("|").split("|")])[0] in {"1", "2", "3"}
        and len(cells) == 9
    }
    assert set(rows) == {"1", "2", "3"}, lines
    for n, cells in rows.items():
        assert cells[1] == "2" and cells[2] == "0", f"{n}-hop: {cells}"  # n questions, none failed
        assert cells[6] == "2/2", f"{n}-hop answers disagree: {cells}"
