"""The topic-linking task: find the entity a question is about when the question does not mark it.

Each benchmark question becomes a linking question: the ``[brackets]`` around the topic mention are
removed and one typo is injected into the mention (a deletion, insertion, substitution or swap of
adjacent letters, at a position and of a letter drawn from a generator seeded with the question's ID
and the task seed, so the set is the same on every run and machine); the gold answer is the topic
entity's label. Hits@1 on this set is linking accuracy@1. Mentions shorter than 4 characters keep
their spelling (a typo there makes another word).
"""

from __future__ import annotations

import random
import re
import string

from tot_mcp.strategies.methods import BenchmarkQuestion

DEFAULT_SEED = 13


def inject_typo(word: str, rng: random.Random) -> str:
    letters = [i for i, c in enumerate(word) if c.isalpha()]
    if len(word) < 4 or len(letters) < 3:
        return word
    i = rng.choice(letters[1:])  # the first letter stays: people rarely misspell it
    kind = rng.choice(("delete", "insert", "substitute", "swap"))
    if kind == "delete":
        return word[:i] + word[i + 1 :]
    if kind == "insert":
        return word[:i] + rng.choice(string.ascii_lowercase) + word[i:]
    if kind == "substitute":
        choices = [c for c in string.ascii_lowercase if c != word[i].lower()]
        return word[:i] + rng.choice(choices) + word[i + 1 :]
    j = i - 1 if i == len(word) - 1 or not word[i + 1].isalpha() else i + 1
    a, b = sorted((i, j))
    return word[:a] + word[b] + word[a] + word[b + 1 :]


def linking_question(q: BenchmarkQuestion, seed: int = DEFAULT_SEED) -> BenchmarkQuestion:
    """``q`` as a linking question: no brackets, one typo in the mention, the topic as the gold
    answer."""
    if not q.topic:
        raise ValueError(f"question {q.id!r} names no topic entity")
    rng = random.Random(f"{seed}:{q.id}")
    m = re.search(r"\[([^\[\]]+)\]", q.text)
    mention = m.group(1) if m else q.topic
    misspelt = inject_typo(mention, rng)
    text = (
        q.text[: m.start()] + misspelt + q.text[m.end() :]
        if m
        else q.text.replace(q.topic, misspelt, 1)
    )
    return q.model_copy(
        update={"text": text, "answers": [q.topic], "source": f"{q.source}+linking"}
    )
