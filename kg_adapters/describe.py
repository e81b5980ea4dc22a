"""Short descriptions, derived from the graph itself, for the entities of an in-memory KG that has
none.

Why: a triple-file KG such as MetaQA names its nodes and nothing else, so a model reading tool
results sees ``movies:E6218: Mikael Håfström`` beside ``movies:E6224: mikael håfström`` (or
``Ransom`` beside ``ransom``) with nothing to say that one is a person, the other a tag, and that
one film node may stand for several films that share a title. Everything needed to tell them apart
is in the node's own edges; this module reads it off and says it in ≤ 160 characters, most telling
part first, giving values rather than counts where they fit::

    Forrest Gump   release year 1994; directed by Robert Zemeckis; written by Winston Groom;
                   genre Drama
    Hamlet         release years 1948, 1964, 1969, 1990, 1996 (+2 more); directed by 7;
                   languages English, Russian; genre Drama (may be 7 things named "Hamlet")
    Tom Hanks      starred actor of 32; has directed 2; has written 2
    tom hanks      tag of 29

The bound is 160 so that a node standing for several things can still list its values — five release
years, the note that it may be several things and two or three short parts more — and it is where
``server/render.py`` cuts a description for display, so what is derived is shown whole.

Inputs (a :class:`~kg_adapters.triple_index.TripleIndex` or anything shaped like it): ``nodes[i]``
with ``label``, ``description`` and ``is_literal``; ``out[i]`` / ``inc[i]``, each ``{relation:
[nodes]}``; ``rel_labels``. Nothing here knows a KG, a relation name or a language beyond these
general English readings of a relation label (a leading ``has``/``is``/``in``… is dropped from a
noun: ``has tags`` → ``tag of 12``, ``in language`` → ``language English``):

    label shape              one value      several, listed / counted         as object (backward)
    "X by", X a participle   directed by V  directed by V, W / directed by 9  has directed 2
    "X by", X a noun         music by V     music by V, W / music by 9        2 with music by them
    "X of"                   member of V    member of V, W / member of 9      3 members
    "X in" (other preps.)    born in V      born in V, W / born in 9          3 born in it
    anything else (a noun)   genre V        genres V, W / 9 genres            genre of 32

A participle ends in -ed/-en/-wn or is one of a few common irregular ones (``made``, ``built``,
``sung`` …): the object of "S written by O" *has written* S, while "S music by O" reads as a noun.
``has written 2`` rather than the bare ``written 2``, which reads as if the person had been written
twice.

Which parts come first is decided by the KG's statistics, computed once per KG on the first
description (one pass over the index, ~55 ms on MetaQA's 134k triples):

* a relation is **normally single-valued** when ≥ 90% of its subjects (at least 5) have exactly one
  value;
* its **weight** is that single-valued share times how spread its values are (the entropy of its
  objects, counted in full from 4 bits up): on MetaQA ``release year`` 0.95 and ``directed by`` 0.92
  rank high, a 23-valued genre 0.61 and a three-valued rating 0.09 low.

Parts, best first, at most 4: the node's **single values** by relation weight, where a normally
single-valued relation with several values lists them, sorted (numbers by value), at most 5 and the
rest counted — ``release years 1948, 1964, 1969, 1990, 1996 (+2 more)`` — down to 2 when room is
short, else its count (``7 release years``); then what it is the **object** of, with counts, most
first; then its other multi-valued relations, all their values listed when there are at most 5 and
they fit in 48 characters (``genres Crime, Thriller``, ``tags tom hanks, war``), else a count (``8
tags``). Within the length budget every part is kept whose shortest form (its count) fits, then the
lists grow, the cheapest next form first — the most values for the characters, so five years come
before two long director names. **Merged things**: when the node's most telling normally
single-valued relation (highest weight) has k ≥ 2 values — a film title node with two release years
— the description ends ``(may be k things named "…")``; a second director alone does not flag a film
whose single release year says it is one film.

Literal nodes get none (their value is shown as it is); nodes with a real description (RDF
``rdfs:comment``, ``schema:description``) keep theirs — :class:`~kg_adapters.memory.MemoryKG` only
asks for the others, once per node.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

SINGLE_VALUED_SHARE = (
    0.9  # of a relation's subjects with exactly one value, for it to count as single-valued
)
MIN_SUBJECTS = 5  # fewer subjects than this say nothing about a relation
FULL_SPREAD_BITS = (
    4.0  # object entropy from which a relation's values count as fully distinguishing
)
MAX_PARTS = 4
MAX_CHARS = (
    160  # room for a merged title's listed values; also where server/render.py cuts a description
)
MAX_VALUE_CHARS = 40  # a value label longer than this is cut
MAX_LISTED = (
    5  # values listed at most: a single-valued relation's rest are "(+n more)", another's counted
)
# a normally single-valued relation's list is shortened down to this many values, then counted
MIN_LISTED = 2
# the values of another multi-valued relation are listed only when all fit in this many characters
LIST_CHARS = 48
MAX_NAME_IN_NOTE = 40  # the merged-things note quotes the label only when it is this short

# Function words read off the front of a relation label for its noun form: "has tags" → "tags", "in
# language" → "language", "is directed by" → "directed by".
_LEADING = frozenset("has have had is are was were be been in on at from with of the a an".split())
_TRAILING_PREPOSITIONS = frozenset(
    {"in", "at", "on", "from", "to", "for", "into", "with", "as", "about", "near", "under"}
)
# Past participles not ending in -ed/-en/-wn, for "X by" labels: "made by" is a passive (its object
# "has made" the subject); "music by" is a noun (its object gives "music by them" to the subject).
_IRREGULAR_PARTICIPLES = frozenset(
    "made built led held sold told won set shot bought brought taught caught fought found kept "
    "paid sent run begun done sung hung struck fed bred read cut put hit cast lit met borne worn "
    "heard left lost upheld spread".split()
)


def _is_participle(word: str) -> bool:
    w = word.lower()
    return (len(w) > 3 and w.endswith(("ed", "en", "wn"))) or w in _IRREGULAR_PARTICIPLES


#: plurals that add no s, and their singulars ("2 children", "child of 2"; never "2 childrens")
_IRREGULAR = {
    "children": "child",
    "people": "person",
    "men": "man",
    "women": "woman",
    "feet": "foot",
    "teeth": "tooth",
    "mice": "mouse",
    "geese": "goose",
    "criteria": "criterion",
    "phenomena": "phenomenon",
    "alumni": "alumnus",
}
_IRREGULAR_PLURALS = {v: k for k, v in _IRREGULAR.items()}


def _singular(phrase: str) -> str:
    head, _, last = phrase.rpartition(" ")
    w = last
    if w.lower() in _IRREGULAR:
        w = _IRREGULAR[w.lower()]
    elif len(w) > 4 and w.endswith("ies"):
        w = w[:-3] + "y"
    elif len(w) > 4 and w.endswith(("sses", "shes", "ches", "xes")):
        w = w[:-2]
    elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    return f"{head} {w}" if head else w


def _plural(phrase: str) -> str:
    head, _, last = phrase.rpartition(" ")
    w = last
    if w.lower() in _IRREGULAR:
        pass  # already plural ("children")
    elif w.lower() in _IRREGULAR_PLURALS:
        w = _IRREGULAR_PLURALS[w.lower()]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        pass  # already plural ("starred actors", "tags")
    elif w.endswith(("ss", "sh", "ch", "x", "z")):
        w += "es"
    elif len(w) > 1 and w.endswith("y") and w[-2] not in "aeiou":
        w = w[:-1] + "ies"
    elif w:
        w += "s"
    return f"{head} {w}" if head else w


def _cut(text: str, limit: int = MAX_VALUE_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _value_order(value: str) -> tuple:
    """Listed values in reading order: numbers by value (``999`` before ``1948``), then the rest
    alphabetically."""
    return (0, int(value), "") if value.isdecimal() else (1, 0, value.casefold())


def _around(template: str, slot: str) -> tuple[str, str]:
    """``"starred actor of {n}"`` → ``("starred actor of ", "")``: filled by concatenation, faster
    than format."""
    before, _, after = template.partition(slot)
    return before, after


@dataclass(frozen=True, slots=True)
class RelationReading:
    """How one relation reads in a description, and what the KG's statistics say about it."""

    one: str  # prefix of a single value: "release year ", "directed by "
    many: str  # prefix of a list of values: "release years ", "directed by "
    count: tuple[
        str, str
    ]  # around k, several values counted: "{k} starred actors", "directed by {k}"
    inverse: tuple[
        str, str
    ]  # around n, object of n triples: "starred actor of {n}", "directed {n}", "{n} members"
    inverse_one: tuple[str, str]  # the same for n = 1 ("1 member")
    single_valued: bool  # normally single-valued for its subjects
    weight: float  # single-valued share × spread of values, in [0, 1]

    @classmethod
    def of(
        cls, label: str, single_share: float, subjects: int, entropy_bits: float
    ) -> RelationReading:
        label = " ".join(label.split()) or "?"
        words = label.split()
        low = [w.lower() for w in words]
        while len(words) > 1 and low[0] in _LEADING:
            words, low = words[1:], low[1:]
        noun = " ".join(words)
        # (one value, a list, k values counted, object of n triples, object of one)
        if len(words) > 1 and low[-1] == "by":
            if _is_participle(low[-2]):  # passive: S written by O → O "has written" S
                back = f"has {' '.join(words[:-1])} {{n}}"
            else:  # a noun: S music by O → O gave "music by them" to S
                back = f"{{n}} with {noun} them"
            forms = label, label, f"{label} {{k}}", back, back
        elif len(words) > 1 and low[-1] == "of":  # S member of O → O has n members
            thing = " ".join(words[:-1])
            forms = label, label, f"{label} {{k}}", f"{{n}} {_plural(thing)}", f"{{n}} {thing}"
        elif len(words) > 1 and low[-1] in _TRAILING_PREPOSITIONS:  # S born in O → "3 born in it"
            forms = label, label, f"{label} {{k}}", f"{{n}} {label} it", f"{{n}} {label} it"
        elif len(low[-1]) > 4 and low[-1].endswith("ed"):  # S released O: "released by 1"
            forms = noun, noun, f"{noun} {{k}}", f"{noun} by {{n}}", f"{noun} by {{n}}"
        elif len(low[-1]) > 4 and low[-1].endswith("ing"):  # "starring A, B": no plural
            forms = noun, noun, f"{noun} {{k}}", f"{noun} of {{n}}", f"{noun} of {{n}}"
        else:
            one, many = _singular(noun), _plural(noun)
            forms = one, many, f"{{k}} {many}", f"{one} of {{n}}", f"{one} of {{n}}"
        one, many, count, inverse, inverse_one = forms
        weight = single_share * min(1.0, entropy_bits / FULL_SPREAD_BITS)
        single_valued = subjects >= MIN_SUBJECTS and single_share >= SINGLE_VALUED_SHARE
        return cls(
            f"{one} ",
            f"{many} ",
            _around(count, "{k}"),
            _around(inverse, "{n}"),
            _around(inverse_one, "{n}"),
            single_valued,
            weight,
        )


def relation_readings(index) -> list[RelationReading]:
    """One pass over the index: each relation's single-valued share (over its subjects) and object
    entropy."""
    n_rel = len(index.rel_labels)
    subjects = [0] * n_rel
    single = [0] * n_rel
    for rels in index.out:
        for r, objs in rels.items():
            subjects[r] += 1
            if len(objs) == 1:
                single[r] += 1
    triples = [0] * n_rel
    c_log_c = [0.0] * n_rel
    log2 = math.log2
    for rels in index.inc:
        for r, subs in rels.items():
            c = len(subs)
            triples[r] += c
            if c > 1:
                c_log_c[r] += c * log2(c)
    readings = []
    for r in range(n_rel):
        n = triples[r]
        entropy = log2(n) - c_log_c[r] / n if n else 0.0
        share = single[r] / subjects[r] if subjects[r] else 0.0
        readings.append(RelationReading.of(index.rel_labels[r], share, subjects[r], entropy))
    return readings


class Describer:
    """``describer(i)`` → a short description of node ``i`` from its edges, or None (a literal, or
    no edges).

    The relation statistics are computed on the first call and kept; descriptions themselves are not
    cached here (``MemoryKG.entity`` caches the entity that carries one). Parts are produced best
    first and only until ``MAX_PARTS`` are chosen, so a film with four single values never spells
    out its tags.
    """

    def __init__(self, index, *, max_chars: int = MAX_CHARS) -> None:
        self.index = index
        self.max_chars = max_chars
        self._readings: list[RelationReading] | None = None
        self._rank: dict[int, int] = {}  # relation → its position by weight, heaviest first

    @property
    def readings(self) -> list[RelationReading]:
        if self._readings is None:
            readings = relation_readings(self.index)
            order = sorted(range(len(readings)), key=lambda r: -readings[r].weight)
            self._rank = {r: pos for pos, r in enumerate(order)}
            self._readings = readings
        return self._readings

    def __call__(self, i: int) -> str | None:
        index = self.index
        node = index.nodes[i]
        if node.is_literal:
            return None
        out, inc = index.out[i], index.inc[i]
        if not out and not inc:
            return None
        readings = self._readings or self.readings
        nodes = index.nodes
        # Candidate parts, best first, until there are enough: single values (and the few values of
        # a normally single-valued relation) by relation weight; what the node is the object of,
        # most first; its other multi-valued relations.
        # a listed part comes with its forms down to its count, shown if the list won't fit
        parts: list[str | tuple[str, ...]] = []
        later: list[int] = []
        merged = 0
        # the heaviest normally single-valued relation the node has says whether it is merged
        decided = False
        for r in sorted(out, key=self._rank.__getitem__) if len(out) > 1 else out:
            rd = readings[r]
            objs = out[r]
            k = len(objs)
            if not decided and rd.single_valued:
                decided, merged = True, k
            if len(parts) >= MAX_PARTS:
                if decided:
                    break
            elif k == 1:
                v = nodes[objs[0]].label
                parts.append(rd.one + (v if len(v) <= MAX_VALUE_CHARS else _cut(v)))
            elif rd.single_valued:
                parts.append(
                    _listings(rd, sorted((_cut(nodes[j].label) for j in objs), key=_value_order))
                )
            else:
                later.append(r)
        if inc and len(parts) < MAX_PARTS:
            for r in sorted(inc, key=lambda r: -len(inc[r])) if len(inc) > 1 else inc:
                n = len(inc[r])
                rd = readings[r]
                pre, post = rd.inverse_one if n == 1 else rd.inverse
                parts.append(f"{pre}{n}{post}")
        for r in later:
            if len(parts) >= MAX_PARTS:
                break
            rd = readings[r]
            objs = out[r]
            pre, post = rd.count
            count = f"{pre}{len(objs)}{post}"
            if len(objs) <= MAX_LISTED:
                values = [_cut(nodes[j].label) for j in objs]
                if sum(map(len, values)) + 2 * len(values) - 2 <= LIST_CHARS:
                    parts.append((rd.many + ", ".join(sorted(values, key=_value_order)), count))
                    continue
            parts.append(count)
        note = ""
        if merged > 1:
            label = " ".join(node.label.split())
            named = f'named "{label}"' if len(label) <= MAX_NAME_IN_NOTE else "with this name"
            note = f"(may be {merged} things {named})"
        budget = self.max_chars - (len(note) + 1 if note else 0)
        text = _fit(parts[:MAX_PARTS] if len(parts) > MAX_PARTS else parts, budget)
        return " ".join(x for x in (text, note) if x) or None


def _listings(rd: RelationReading, values: list[str]) -> tuple[str, ...]:
    """A normally single-valued relation's several values, fullest first, down to its count:
    ``release years 1948, 1964, 1990, 1996, 2000 (+2 more)``, …, ``release years 1948, 1964 (+5
    more)``, ``7 release years``."""
    k = len(values)
    pre, post = rd.count
    forms = [
        rd.many + ", ".join(values[:m]) + (f" (+{k - m} more)" if m < k else "")
        for m in range(min(k, MAX_LISTED), MIN_LISTED - 1, -1)
    ]
    return (*forms, f"{pre}{k}{post}")


def _fit(parts: Sequence[str | tuple[str, ...]], budget: int) -> str:
    """Join the parts within ``budget`` characters. A part with several forms (fullest first, its
    count last) is kept when its shortest form fits, so a long list never crowds out a later part; a
    single-form part that does not fit is left out, and a shorter one may follow. Then, while there
    is room, the cheapest next form of any kept part is taken (the best part first on a tie): the
    most values for the characters, so five short release years are listed before two long director
    names."""
    if (
        len(parts) == 1 and type(parts[0]) is str
    ):  # most people and tags: one part, what they are the object of
        return parts[0] if len(parts[0]) <= budget else ""
    kept: list = []
    used = -2
    for part in parts:
        shortest = part[-1] if type(part) is tuple else part
        if used + 2 + len(shortest) <= budget:
            kept.append(part)
            used += 2 + len(shortest)
    if not any(type(part) is tuple for part in kept):
        return "; ".join(kept)
    level = [len(forms) - 1 if type(forms) is tuple else 0 for forms in kept]
    while True:
        best, cost = -1, budget - used + 1
        for n, at in enumerate(level):
            if at:
                forms = kept[n]
                step = len(forms[at - 1]) - len(forms[at])
                if step < cost:
                    best, cost = n, step
        if best < 0:
            break
        level[best] -= 1
        used += cost
    return "; ".join(forms if type(forms) is str else forms[at] for forms, at in zip(kept, level))


def describe_relations(relations, *, max_chars: int = MAX_CHARS) -> str | None:
    """A description from a ``get_relations`` answer alone (label, direction, edge count per
    relation): for backends without an in-memory index, where one call is all an entity's listing
    can afford. No values and no statistics, so it reads counts only, what the entity is the object
    of first: ``starred actor of 32; directed 2``, ``2 starring; directed by 1``."""
    # backward first (stable: most edges first within each direction)
    ranked = sorted(
        (r for r in relations if r.count), key=lambda r: (r.direction.value != "backward", -r.count)
    )
    parts = []
    for r in ranked[:MAX_PARTS]:
        rd = RelationReading.of(r.label, 0.0, 0, 0.0)
        pre, post = (
            (rd.inverse_one if r.count == 1 else rd.inverse)
            if r.direction.value == "backward"
            else rd.count
        )
        parts.append(f"{pre}{r.count}{post}")
    return _fit(parts, max_chars) or None  # single-form parts: each kept if it still fits
