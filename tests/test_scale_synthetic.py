"""The synthetic benchmark KG: exact size, distinct triples, deterministic, hubs, readable unique
names."""

from __future__ import annotations

from collections import Counter

import pytest

from bench.synthetic_kg import RELATIONS, TYPES, generate, main, write_triples

N = 20_000


@pytest.fixture(scope="module")
def triples():
    return list(generate(N, seed=3))


def test_exactly_n_distinct_triples_and_deterministic_per_seed(triples):
    assert len(triples) == N == len(set(triples))
    assert list(generate(N, seed=3))[:500] == triples[:500]
    assert list(generate(N, seed=4))[:500] != triples[:500]


def test_degrees_follow_a_power_law_with_hubs(triples):
    indeg = Counter(t for _, _, t in triples)
    top = indeg.most_common(1)[0][1]
    median = sorted(indeg.values())[len(indeg) // 2]
    assert top > 100 * median  # a few hubs, a long tail
    assert sum(1 for c in indeg.values() if c == 1) > len(indeg) // 10


def test_dozens_of_relations_and_every_one_appears_early(triples):
    assert len(RELATIONS) >= 30
    assert {r for _, r, _ in triples} == {r for r, *_ in RELATIONS}
    assert {r for _, r, _ in triples[: N // 4]} >= {
        "directed_by",
        "author",
        "performed_by",
        "located_in",
        "borders",
    }


def test_names_are_readable_and_unique_per_entity():
    for t in TYPES.values():
        labels = [t.label(i) for i in range(0, 40_000, 7)]  # type: ignore[operator]
        if t.fixed:
            labels = [t.label(i) for i in range(t.fixed)]  # type: ignore[operator]
        assert len(labels) == len(set(labels)), t.name
        assert all("|" not in x and x.strip() == x for x in labels)
    assert TYPES["person"].label(0) == "Maria Okafor"  # type: ignore[operator]


def test_streams_to_a_file_atomically(tmp_path, capsys):
    out = tmp_path / "kg.txt"
    write_triples(out, 1000, seed=3, progress=False)
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1000 and all(line.count("|") == 2 for line in lines)
    assert not (tmp_path / "kg.txt.partial").exists()
    with pytest.raises(SystemExit):
        main(["--triples", "0", "--out", str(out)])
    assert "--triples must be" in capsys.readouterr().err
