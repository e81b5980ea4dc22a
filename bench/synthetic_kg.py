"""A deterministic synthetic KG with the shape of a real one, for load and latency benchmarks.

Real KGs are not uniform: a few nodes (genres, countries, years, popular people) have 100k+ incoming
edges while most have a handful. A uniform random graph would make every ``get_edges`` look cheap
and hide the hub problem, so this generator draws each edge's tail from a power law over the tail
type's entities (rank ``k`` picked with probability ∝ k^-0.7, via ``floor(T · u^3)``). Heads are
walked in order and each gets a small random number of edges per relation of its type, with tails
de-duplicated per head, so every triple is distinct without a global ``seen`` set: the file streams
out in constant memory.

Labels are human readable ("Maria Okafor", "The Silent Harbour", "Port Lenby"), unique (a suffix
"II", "III"… once a name pattern is exhausted), and the same for a given seed on every machine
(numpy's PCG64).

    python -m bench.synthetic_kg --triples 1000000 --out /tmp/kg1m.txt
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

_FIRST = (
    "Maria Juan Wei Aisha Olga Kenji Amara Lucas Sofia Omar Ingrid Ravi Chloe Mateo Yara Tomas "
    "Leila Hugo Mina Felix Nadia Pablo Hana Igor Zara Emil Ana Kofi Lena Arjun Elena Diego Mei "
    "Samir Clara Jonas Priya Noah Rosa Ivan Alma Theo Selin Marco Dina Oskar Lucia Yusuf Greta "
    "Tariq Nora Bruno Aiko Karim Vera Rafael Esme Dmitri Alba Kwame Ines Lars Farah Milan Irene "
    "Hamid Julia Arne Luz Malik Freya Andrei Cleo Ismael Wanda Enzo Nia Stefan Paz Jamal"
).split()
_LAST = (
    "Okafor Lindqvist Tanaka Moreau Petrov Castillo Nguyen Haddad Kowalski Silva Brennan Mehta "
    "Schultz Varga Ortiz Nakamura Dubois Osei Romano Fischer Novak Hansen Costa Yilmaz Bauer Reyes "
    "Ivanova Adeyemi Marsh Kim Farouk Rossi Lund Duarte Sato Horvat Mendes Quinn Abara Weiss "
    "Jensen Blanco Okoro Hartmann Leblanc Popescu Sorensen Vidal Zhou Kaplan Morales Eriksen "
    "Achebe Lombardi Kruger Navarro Holm Mwangi Ferreira Berg Aziz Delgado Strand Oyelaran"
).split()
_ADJ = (
    "Silent Crimson Hidden Broken Golden Last Distant Burning Frozen Hollow Wild Quiet Bitter "
    "Electric Velvet Iron Lonely Endless Secret Pale Restless Sacred Savage Shining Crooked "
    "Midnight Northern Forgotten Scarlet Gentle"
).split()
_NOUN = (
    "Harbour River Garden Mirror Horizon Kingdom Letter Orchard Signal Winter Summer Shadow Voyage "
    "Promise Machine Island Frontier Lantern Station Empire Witness Tide Canyon Ballad Circus "
    "Compass Fortress Meadow Storm Archive"
).split()
_PLACE_A = "Port North East West New Old Upper Lower Saint Fort Lake Mount Glen Bay".split()
_PLACE_B = (
    "lenby vara moor haven brook ford field stead wick ton mere crest vale holm dale burg mouth "
    "ridge gate"
).split()
_GENRES = (
    "Drama Comedy Thriller Horror Romance Documentary Animation Western Musical Mystery Fantasy "
    "Crime Adventure War Biography Sport Family Noir History Satire Science_Fiction Action "
    "Melodrama Short Experimental Thriller_Comedy Road_Movie Heist Disaster Period_Piece "
    "Coming_of_Age Psychological Slasher Mockumentary Anthology Epic"
).split()
_LANGS = (
    "English French Spanish German Italian Japanese Mandarin Hindi Arabic Russian Portuguese "
    "Korean Swedish Turkish Polish Dutch Greek Hebrew Persian Thai Yoruba Swahili Danish Finnish "
    "Czech Hungarian Romanian Tagalog Bengali Urdu"
).split()
_ROMAN = ["", " II", " III", " IV", " V", " VI", " VII", " VIII", " IX", " X"]


def _suffix(k: int) -> str:
    return _ROMAN[k] if k < len(_ROMAN) else f" {k + 1}"


def _person(i: int) -> str:
    n = len(_FIRST) * len(_LAST)
    k, r = divmod(i, n)
    # interleave so consecutive IDs differ in both names
    return f"{_FIRST[r % len(_FIRST)]} {_LAST[(r // len(_FIRST) + r) % len(_LAST)]}{_suffix(k)}"


def _work(i: int) -> str:
    n = len(_ADJ) * len(_NOUN)
    k, r = divmod(i, n)
    return f"The {_ADJ[r % len(_ADJ)]} {_NOUN[(r // len(_ADJ) + r) % len(_NOUN)]}{_suffix(k)}"


def _place(i: int) -> str:
    n = len(_PLACE_A) * len(_PLACE_B)
    k, r = divmod(i, n)
    return (
        f"{_PLACE_A[r % len(_PLACE_A)]} "
        f"{_PLACE_B[(r // len(_PLACE_A) + r) % len(_PLACE_B)].capitalize()}{_suffix(k)}"
    )


def _company(i: int) -> str:
    return (
        f"{_LAST[i % len(_LAST)]} "
        f"{('Pictures', 'Studios', 'Films', 'Media', 'Records')[(i // len(_LAST)) % 5]}"
        + _suffix(i // (len(_LAST) * 5))
    )


def _fixed(words: list[str], what: str):
    def label(i: int) -> str:
        return words[i].replace("_", " ") if i < len(words) else f"{what} {i}"

    return label


@dataclass(frozen=True)
class EntityType:
    name: str
    per_triple: float  # entities of this type per generated triple (the pool grows with N)
    fixed: int  # or a fixed pool size (genres, languages, years)
    label: object  # int -> str; labels are unique across types by construction (see _type_labels)

    def size(self, n_triples: int) -> int:
        return self.fixed or max(8, int(self.per_triple * n_triples))


TYPES: dict[str, EntityType] = {
    t.name: t
    for t in (
        EntityType("film", 1 / 16, 0, lambda i: f"{_work(i)} (film)"),
        EntityType("book", 1 / 40, 0, lambda i: f"{_work(i)} (novel)"),
        EntityType("album", 1 / 60, 0, lambda i: f"{_work(i)} (album)"),
        EntityType("person", 1 / 12, 0, _person),
        EntityType("city", 1 / 400, 0, _place),
        EntityType("country", 0, 180, lambda i: f"Republic of {_place(i)}"),
        EntityType("company", 1 / 800, 0, _company),
        EntityType("genre", 0, len(_GENRES), _fixed(_GENRES, "Genre")),
        EntityType("language", 0, len(_LANGS), _fixed(_LANGS, "Language")),
        EntityType("year", 0, 125, lambda i: str(1900 + i)),
        EntityType(
            "award",
            0,
            400,
            lambda i: f"{_ADJ[i % len(_ADJ)]} {_NOUN[i // len(_ADJ) % len(_NOUN)]} Award",
        ),
        EntityType("university", 0, 2000, lambda i: f"University of {_place(i)}"),
    )
}

# (relation, head type, tail type, mean edges per head). About three dozen relation types, as in
# Freebase slices.
RELATIONS: list[tuple[str, str, str, float]] = [
    ("directed_by", "film", "person", 1.2),
    ("written_by", "film", "person", 1.5),
    ("starred_actors", "film", "person", 3.0),
    ("produced_by", "film", "company", 1.0),
    ("release_year", "film", "year", 1.0),
    ("has_genre", "film", "genre", 1.6),
    ("in_language", "film", "language", 1.1),
    ("filmed_in", "film", "city", 0.8),
    ("country_of_origin", "film", "country", 1.0),
    ("won_award", "film", "award", 0.15),
    ("based_on", "film", "book", 0.05),
    ("music_by", "film", "person", 0.5),
    ("author", "book", "person", 1.1),
    ("published_in", "book", "year", 1.0),
    ("book_genre", "book", "genre", 1.3),
    ("book_language", "book", "language", 1.0),
    ("publisher", "book", "company", 0.9),
    ("performed_by", "album", "person", 1.2),
    ("album_release_year", "album", "year", 1.0),
    ("record_label", "album", "company", 0.9),
    ("album_genre", "album", "genre", 1.2),
    ("place_of_birth", "person", "city", 0.9),
    ("nationality", "person", "country", 0.9),
    ("educated_at", "person", "university", 0.4),
    ("spouse", "person", "person", 0.15),
    ("influenced_by", "person", "person", 0.25),
    ("received_award", "person", "award", 0.1),
    ("birth_year", "person", "year", 0.8),
    ("employer", "person", "company", 0.2),
    ("located_in", "city", "country", 1.0),
    ("twinned_with", "city", "city", 0.3),
    ("headquartered_in", "company", "city", 1.0),
    ("founded_in", "company", "year", 0.9),
    ("subsidiary_of", "company", "company", 0.2),
    ("university_located_in", "university", "city", 1.0),
    ("official_language", "country", "language", 1.5),
    ("borders", "country", "country", 2.5),
]

_ALPHA = (
    3.0  # tail rank = floor(T * u**ALPHA): a power law with the head of the ranking heavily reused
)


def _type_sizes(n_triples: int) -> dict[str, int]:
    """Pool sizes scaled so that the expected number of triples is a little over ``n_triples`` (the
    stream stops at exactly N)."""
    sizes = {t.name: t.size(n_triples) for t in TYPES.values()}
    expected = sum(sizes[h] * mean for _, h, _, mean in RELATIONS)
    scale = n_triples / expected * 1.02
    return {name: t.fixed or max(8, int(sizes[name] * scale)) for name, t in TYPES.items()}


def generate(n_triples: int, seed: int = 7) -> Iterator[tuple[str, str, str]]:
    """Yield exactly ``n_triples`` distinct ``(head, relation, tail)`` label triples,
    deterministically."""
    if n_triples < 1:
        raise ValueError("n_triples must be ≥ 1")
    rng = np.random.Generator(np.random.PCG64(seed))
    sizes = _type_sizes(n_triples)
    by_head: dict[str, list[tuple[str, str, float]]] = {}
    for rel, h, t, mean in RELATIONS:
        by_head.setdefault(h, []).append((rel, t, mean))
    # round-robin over head types in blocks so any prefix of the file has every relation type in it
    cursors = {h: 0 for h in by_head}
    emitted = 0
    block = 2048
    while emitted < n_triples:
        progressed = False
        for h, rels in by_head.items():
            step = max(
                8, min(block, sizes[h] // 64)
            )  # ~64 rounds: every prefix of the file mixes all types
            start, end = cursors[h], min(cursors[h] + step, sizes[h])
            if start >= end:
                continue
            progressed = True
            cursors[h] = end
            n = end - start
            head_label = TYPES[h].label
            per_rel = []
            for rel, t, mean in rels:
                counts = rng.poisson(mean, n)
                total = int(counts.sum())
                ranks = np.floor(sizes[t] * rng.random(total) ** _ALPHA).astype(np.int64)
                per_rel.append((rel, TYPES[t].label, counts, ranks))
            offsets = [0] * len(per_rel)
            for k in range(n):
                head = head_label(start + k)  # type: ignore[operator]
                for j, (rel, tail_label, counts, ranks) in enumerate(per_rel):
                    c = int(counts[k])
                    if not c:
                        continue
                    o = offsets[j]
                    offsets[j] = o + c
                    seen = set()
                    for r in ranks[o : o + c].tolist():
                        if r in seen:
                            continue
                        seen.add(r)
                        tail = tail_label(r)  # type: ignore[operator]
                        if tail == head:
                            continue
                        yield head, rel, tail
                        emitted += 1
                        if emitted >= n_triples:
                            return
        if (
            not progressed
        ):  # all pools exhausted before N (only for tiny N): grow by reusing a new seed stream
            sizes = {k: v * 2 for k, v in sizes.items()}
            # heads already emitted keep their edges; new heads continue from the cursors
            for name, t in TYPES.items():
                if t.fixed:
                    sizes[name] = t.fixed


def write_triples(
    path: str | Path, n_triples: int, seed: int = 7, *, progress: bool = True
) -> Path:
    """Stream the triples to a ``head|rel|tail`` file; write to a temp name and rename, so a half
    file never looks finished."""
    path = Path(path)
    tmp = path.with_name(path.name + ".partial")
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(
            total=n_triples, unit="triple", unit_scale=True, file=sys.stderr, desc="generate"
        )
    with open(tmp, "w", encoding="utf-8", buffering=1 << 20) as fh:
        buf: list[str] = []
        for h, r, t in generate(n_triples, seed):
            buf.append(f"{h}|{r}|{t}\n")
            if len(buf) >= 65536:
                fh.writelines(buf)
                if bar:
                    bar.update(len(buf))
                buf.clear()
        fh.writelines(buf)
        if bar:
            bar.update(len(buf))
            bar.close()
    os.replace(tmp, path)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench.synthetic_kg", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument(
        "--triples", type=int, required=True, help="number of distinct triples to write"
    )
    ap.add_argument("--out", required=True, help="output head|rel|tail file")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)
    if args.triples < 1:
        ap.error("--triples must be ≥ 1")
    write_triples(args.out, args.triples, args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
