"""An oracle LLM for benchmarks: answers every Tree-of-Traversals prompt as a perfect model would.

It knows each question's gold relation path (e.g. MetaQA's qtype
``movie_to_director_to_movie_to_genre`` = directed_by forward, directed_by backward, has_genre
forward) and reads the prompt the driver sends (question, trajectory, subgraph entities, candidate
relations, the requested reply format) to reply in that format: EXPAND_KG until the path is walked,
then ANSWER with the entities reached; SELECT_ENTITIES: the entities the previous gold hop reached;
SELECT_RELATION: the next gold hop; scores: high on the gold path, low off it. It measures how many
calls the driver spends when the model never errs; it is no model of answer quality. Usage is
counted like :class:`~strategies.llm.scripted.ScriptedLLM` (tokens ≈ whitespace-separated words).
"""

from __future__ import annotations

import re

from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.models import Direction
from tot_mcp.strategies.llm.base import LLM

Hop = tuple[str, Direction]  # relation name (without namespace), direction

_ID = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,31}:[^\s,;|\[\]()]+")
_REL_LINE = re.compile(r"SELECT_RELATION:\s*(\S+)\s*\((forward|backward)\)")
# MetaQA: every relation runs movie -> person/value, named by the non-movie end.
METAQA_RELATIONS = {
    "director": "directed_by",
    "writer": "written_by",
    "actor": "starred_actors",
    "genre": "has_genre",
    "language": "in_language",
    "year": "release_year",
    "tags": "has_tags",
    "imdbrating": "has_imdb_rating",
    "imdbvotes": "has_imdb_votes",
}


def metaqa_path(qtype: str) -> list[Hop]:
    """``director_to_movie_to_genre`` → [(directed_by, backward), (has_genre, forward)]."""
    types = qtype.strip().split("_to_")
    hops: list[Hop] = []
    for a, b in zip(types, types[1:]):
        if a == "movie":
            hops.append((METAQA_RELATIONS[b], Direction.forward))
        elif b == "movie":
            hops.append((METAQA_RELATIONS[a], Direction.backward))
        else:
            raise ValueError(f"MetaQA hop {a} -> {b} does not touch a movie")
    return hops


def _bare(relation_id: str) -> str:
    return relation_id.rsplit(":", 1)[-1]


class OracleLLM(LLM):
    """A perfect model for questions whose gold paths are given (``paths``: question text →
    hops)."""

    name = "oracle"

    def __init__(
        self, kg: Graph, paths: dict[str, list[Hop]], *, alternatives: bool = False
    ) -> None:
        super().__init__()
        self.kg = kg
        self.paths = paths
        self.alternatives = (
            alternatives  # also list off-path relations after the gold one (exercises ranking)
        )
        self.prompts: list[str] = []
        self._reached: dict[tuple, list[str]] = {}

    async def complete(
        self, prompt, *, system=None, max_tokens=512, temperature=0.7, stop=None
    ) -> str:
        self.prompts.append(prompt)
        text = await self._reply(prompt)
        self.usage.calls += 1
        self.usage.input_tokens += len(prompt.split()) + len((system or "").split())
        self.usage.output_tokens += len(text.split())
        return text

    # -- reading the prompt ------------------------------------------------------------------------
    @staticmethod
    def _section(prompt: str, head: str) -> str:
        if head not in prompt:
            return ""
        return prompt.split(head, 1)[1].split("\n\n", 1)[0]

    def _entities(self, prompt: str) -> list[str]:
        part = (
            prompt.split("ENTITIES:", 1)[1].split("EDGES:", 1)[0] if "ENTITIES:" in prompt else ""
        )
        return [m.group(1) for m in re.finditer(r"^  (\S+): ", part, re.M)]

    @staticmethod
    def _hops_taken(trajectory: str) -> list[tuple[str, Direction]]:
        return [(m.group(1), Direction(m.group(2))) for m in _REL_LINE.finditer(trajectory)]

    def _on_path(self, gold: list[Hop], taken: list[tuple[str, Direction]]) -> bool:
        return len(taken) <= len(gold) and all((_bare(r), d) == g for (r, d), g in zip(taken, gold))

    async def _topic(self, question: str) -> list[str]:
        m = re.search(r"\[([^\]]+)\]", question)
        if not m:
            return []
        hits = await self.kg.search_entities(m.group(1), limit=10)
        exact = [h.entity.id for h in hits if h.entity.label.casefold() == m.group(1).casefold()]
        return exact or [h.entity.id for h in hits[:1]]

    async def _reach(self, question: str, taken: list[tuple[str, Direction]]) -> list[str]:
        """Every entity the taken (gold) hops reach from the topic entity, in the KG itself."""
        key = (question, tuple(taken))
        if key in self._reached:
            return self._reached[key]
        if not taken:
            out = await self._topic(question)
        else:
            sources = await self._reach(question, taken[:-1])
            rel, d = taken[-1]
            out = []
            for i in range(
                0, len(sources), 50
            ):  # the KG's per-call ID limit; every page of each chunk
                offset: int | None = 0
                while offset is not None:
                    page = await self.kg.get_edges(
                        sources[i : i + 50], rel, d, limit=500, offset=offset
                    )
                    out.extend(e.target for e in page.edges if e.target)
                    offset = page.next_offset if page.truncated else None
            out = list(dict.fromkeys(out))
        self._reached[key] = out
        return out

    # -- replying ----------------------------------------------------------------------------------
    async def _reply(self, prompt: str) -> str:
        question = (
            prompt.split("Question: ", 1)[1].split("\n", 1)[0].strip()
            if "Question: " in prompt
            else ""
        )
        gold = self.paths.get(question, [])
        trajectory = self._section(prompt, "Actions so far:\n")
        taken = self._hops_taken(trajectory)
        asked = prompt.rsplit("Reply with", 1)[-1]
        if "Candidate next steps" in prompt:
            return await self._score_steps(prompt, question, gold, taken)
        if "Candidate answers:" in prompt:
            lines = self._section(prompt, "Candidate answers:\n").splitlines()
            scores = [await self._score_answer(question, gold, line) for line in lines]
            return "\n".join(f"{n}. SCORE: {s:.1f}" for n, s in enumerate(scores, 1))
        if "Proposed answer:" in prompt:
            line = prompt.split("Proposed answer:", 1)[1].split("\n", 1)[0]
            return f"SCORE: {await self._score_answer(question, gold, line):.1f}"
        if "SCORE" in asked:  # one intermediate state
            return f"SCORE: {0.9 if self._on_path(gold, taken) else 0.1}"
        entities = self._entities(prompt)
        if "SELECT_RELATION" in asked:
            return self._select_relation(prompt, gold, taken)
        if "SELECT_ENTITIES" in asked:
            reached = (
                set(await self._reach(question, taken)) if self._on_path(gold, taken) else set()
            )
            if (
                taken
            ):  # a perfect reader of "the films of X's director" does not walk back through X
                reached -= set(await self._topic(question))
            ids = [i for i in entities if i in reached][:50] or entities[:1]
            return "SELECT_ENTITIES: " + ", ".join(ids)
        if self._on_path(gold, taken) and len(taken) == len(gold):
            topic = set(await self._topic(question))
            reached = set(await self._reach(question, taken)) - topic
            ids = [i for i in entities if i in reached]
            if ids:
                labels = dict(re.findall(r"^  (\S+): ([^\n]*?)(?: - [^\n]*)?$", prompt, re.M))
                return f"ANSWER: {', '.join(labels.get(i, i) for i in ids[:5])} | {', '.join(ids)}"
            return "ANSWER: Unknown - the subgraph does not hold it |"
        return "EXPAND_KG"

    def _select_relation(
        self, prompt: str, gold: list[Hop], taken: list[tuple[str, Direction]]
    ) -> str:
        cands = re.findall(r"^(\d+)\. (\S+) (forward|backward):", prompt, re.M)
        want = gold[len(taken)] if self._on_path(gold, taken) and len(taken) < len(gold) else None
        k = int(m.group(1)) if (m := re.search(r"Reply with up to (\d+) lines", prompt)) else 1
        lines = [
            f"SELECT_RELATION: {rid} {d}"
            for _, rid, d in cands
            if want and (_bare(rid), Direction(d)) == want
        ]
        if self.alternatives or not lines:
            lines += [
                f"SELECT_RELATION: {rid} {d}"
                for _, rid, d in cands
                if f"SELECT_RELATION: {rid} {d}" not in lines
            ]
        return "\n".join(lines[:k])

    async def _score_steps(self, prompt: str, question: str, gold: list[Hop], taken) -> str:
        base_on = self._on_path(gold, taken)
        out = []
        for line in self._section(
            prompt, "Candidate next steps (each one continues from the state above):\n"
        ).splitlines():
            m = re.match(r"^(\d+)\. (.*)$", line)
            if not m:
                continue
            step = m.group(2)
            r = re.match(r"SELECT_RELATION:\s*(\S+)\s*\((forward|backward)\)", step)
            if r:
                ok = base_on and self._on_path(gold, taken + [(r.group(1), Direction(r.group(2)))])
            elif step.startswith("THINK"):
                ok = False
            else:
                ok = base_on
            out.append(f"{m.group(1)}. SCORE: {0.9 if ok else 0.1}")
        return "\n".join(out)

    async def _score_answer(self, question: str, gold: list[Hop], line: str) -> float:
        ids = set(_ID.findall(line))
        if not ids or not gold:
            return 0.0
        right = set(await self._reach(question, list_hops(gold, self.kg.name))) - set(
            await self._topic(question)
        )
        return 1.0 if ids & right else 0.0


def list_hops(gold: list[Hop], namespace: str) -> list[tuple[str, Direction]]:
    """Gold hops with namespaced relation IDs (``metaqa:directed_by``), as the KG names them."""
    return [(f"{namespace}:{r}", d) for r, d in gold]
