"""Every real model reply recorded in ``../shared/llm-transcripts`` goes through today's Tree-of-Traversals parsers
and must come out as a usable action or score — and as the one the model wrote.

Why: the parsers are forgiving on purpose (IDs, numbers, labels, prose around the line), and forgiving parsers fail
quietly — a reply that parses into *some* valid action can still be the wrong one. These replies are what a strong
model really writes to the driver's prompts, so they pin the parsing to real output while the prompts and parsers
change. Each reply belongs to the prompt it answered, so the state it is parsed against is rebuilt from that prompt's
text (:func:`state_from_prompt`), never from today's templates: nothing is copied from ``../shared`` into the repo.

An ANSWER is usable once the ASM has grounded what the model wrote in the subgraph (its items, entity IDs, status), so
answers are also applied by :class:`TraversalASM` — to a KG that knows none of these entities: the answer transition
judges by the subgraph alone.

A record that today's parser genuinely cannot read is listed in ``KNOWN_FAILURES`` as a strict xfail (it flips to a
failure once the parser is fixed, so the entry is removed then), never skipped or loosened.
"""

from __future__ import annotations

import json
import re

import pytest
from conftest import SHARED
from tot_fixtures import make_kg

from kg_adapters.models import Direction, Entity, Relation
from kg_adapters.text import key as text_key
from strategies.tot.actions import Invalid
from strategies.tot.asm import TraversalASM
from strategies.tot.prompted import parse_action_lines, parse_score, parse_scores
from strategies.tot.state import AsmState, TraversalState

TRANSCRIPTS = SHARED / "llm-transcripts"
FILES = {"2026-11-22": "tot-prompts-2026-11-22.jsonl", "2026-11-24": "tot-prompts-2026-11-24.jsonl"}
EXPECTED_CALLS = {"2026-11-22": 174, "2026-11-24": 39}  # per the transcripts' README

if not all((TRANSCRIPTS / f).is_file() for f in FILES.values()):
    pytest.skip(f"LLM transcripts not found at {TRANSCRIPTS} (expected ../shared/llm-transcripts beside the repo)",
                allow_module_level=True)

# -- what kind of call a prompt was: by the text that only that prompt carries ---------------------------------
PROPOSE_DEFAULT = "propose_default"
PROPOSE_ENTITIES = "propose_entities"
PROPOSE_RELATION = "propose_relation"
VALUE_ANSWER = "value_answer"
VALUE_ANSWERS = "value_answers"
VALUE_STEPS = "value_steps"
VALUE_STATE = "value_state"
MARKERS = {
    PROPOSE_DEFAULT: "Choose the next action",
    PROPOSE_ENTITIES: "Select the entities",
    PROPOSE_RELATION: "Candidate relations of the selected entities",
    VALUE_ANSWER: "\nProposed answer:",
    VALUE_ANSWERS: "\nCandidate answers:",
    VALUE_STEPS: "\nCandidate next steps",
    VALUE_STATE: "How promising is this state",
}
ASM_STATE = {PROPOSE_DEFAULT: AsmState.DEFAULT, PROPOSE_ENTITIES: AsmState.SELECTING_ENTITIES,
             PROPOSE_RELATION: AsmState.SELECTING_RELATION}
ALLOWED = {PROPOSE_DEFAULT: {"think", "expand_kg", "answer"}, PROPOSE_ENTITIES: {"select_entities"},
           PROPOSE_RELATION: {"select_relation"}}
# "no steps are left" (2026-11-24) / "the maximum depth is reached: you must answer now" (2026-11-22) /
# "no expansions are left" (later prompts)
MUST_ANSWER = re.compile(r"no (?:steps|expansions) are left|you must answer now", re.I)

# Records today's parser cannot read, as {(date, n): why}; each becomes a strict xfail (none today).
KNOWN_FAILURES: dict[tuple[str, int], str] = {}


def kind_of(prompt: str) -> str:
    kinds = [k for k, marker in MARKERS.items() if marker in prompt]
    assert len(kinds) == 1, f"prompt matches {kinds or 'no'} call kind(s); cannot tell what it asked for"
    return kinds[0]


def state_from_prompt(prompt: str, kind: str) -> TraversalState:
    """The minimal :class:`TraversalState` a prompt was rendered from, as far as the parsers look at it: the
    question, the subgraph's entities (``  <id>: <label> - <description> (same as ...)`` lines of the ENTITIES
    block), the ASM state for the kind of call, ``must_answer`` when the prompt said no steps are left, and in
    SELECTING_RELATION the selected entities and the numbered candidate relations
    (``1. embedded:directed_by forward: directed by [1]``). Edges and the trajectory are not rebuilt: no parser
    reads them, and grounding an answer looks at edges only for literal values, which none of these prompts shows."""
    question = re.search(r"^Question: (.*)$", prompt, re.M)
    assert question, "no 'Question:' line"
    state = TraversalState(question=question.group(1), asm_state=ASM_STATE.get(kind, AsmState.DEFAULT),
                           must_answer=bool(MUST_ANSWER.search(prompt)))
    block = re.search(r"^ENTITIES:\n(.*?)^EDGES:", prompt, re.M | re.S)
    assert block, "no ENTITIES block"
    for line in block.group(1).splitlines():
        if line.strip() == "(none)":
            continue
        entity_id, _, rest = line.strip().partition(": ")  # IDs have no spaces: the first ": " ends one
        same = re.search(r" \(same as ([^()]*)\)$", rest)
        if same:
            rest = rest[: same.start()]
            for other in same.group(1).split(", "):
                state.subgraph.link(entity_id, other)
        label, _, description = rest.partition(" - ")
        state.subgraph.add_entity(Entity(id=entity_id, label=label, description=description or None,
                                         kg=entity_id.split(":", 1)[0]))
    if kind == PROPOSE_RELATION:
        selected = re.search(r"^Selected entities: (.*)$", prompt, re.M)
        assert selected, "no 'Selected entities:' line"
        state.selected_entities = [i for i in re.findall(r"(?:^|, )(\S+) \(", selected.group(1))
                                   if i in state.subgraph.entities]
        listing = prompt.split("Candidate relations of the selected entities", 1)[1].split("\n\n", 1)[0]
        for m in re.finditer(r"^\d+\. (\S+) (forward|backward): (.*?)(?: \[(\d+)\])?$", listing, re.M):
            rel_id, direction, meaning, count = m.groups()
            inverse = direction == "backward"
            state.candidate_relations.append(Relation(
                id=rel_id, direction=Direction(direction), kg=rel_id.split(":", 1)[0],
                label=meaning.removeprefix("inverse of ") if inverse else meaning,
                inverse_label=meaning if inverse and not meaning.startswith("inverse of ") else None,
                count=int(count) if count else None))
        state.relations_truncated = "(more relations exist" in listing
        assert state.candidate_relations, "no candidate relations listed"
    return state


def candidate_count(prompt: str) -> int:
    """How many candidates a batch value prompt listed (the numbered lines after its 'Candidate ...:' header)."""
    listing = re.split(r"^Candidate (?:answers|next steps)[^\n]*:\n", prompt, maxsplit=1, flags=re.M)[1]
    return len(re.findall(r"^\d+\. ", listing.split("\n\n", 1)[0], re.M))


# -- what the model wrote, read strictly by the documented reply formats -------------------------------------
_LINE = re.compile(r"^(THINK|EXPAND_KG|ANSWER|SELECT_ENTITIES|SELECT_RELATION)\b:?\s*(.*)$")
_ID = re.compile(r"[A-Za-z][A-Za-z0-9_-]*:[^\s,;|()\[\]]+")


def written_actions(reply: str, state: TraversalState) -> list[dict]:
    """Each action line of ``reply`` as the format defines it, as the fields the parsed action must have: the
    independent reading that the forgiving parser has to agree with."""
    out: list[dict] = []
    for line in reply.splitlines():
        m = _LINE.match(line.strip())
        if not m:
            continue
        verb, rest = m.groups()
        if verb == "THINK":
            want = {"kind": "think", "text": rest}
        elif verb == "EXPAND_KG":
            want = {"kind": "expand_kg"}
        elif verb == "SELECT_ENTITIES":
            want = {"kind": "select_entities", "entity_ids": _ID.findall(rest)}
        elif verb == "SELECT_RELATION":  # "<number or relation ID> <forward|backward>"
            ref, direction = rest.split()
            rel_id = state.candidate_relations[int(ref) - 1].id if ref.isdigit() else ref
            want = {"kind": "select_relation", "relation_id": rel_id, "direction": Direction(direction)}
        else:  # "<answer text> | <entity IDs>" or "NONE |" (the formats of these prompts)
            text, _, ids = rest.partition("|")
            want = {"kind": "answer", "text": text.strip(), "entity_ids": _ID.findall(ids)}
        if want not in out:
            out.append(want)
    return out


def written_scores(reply: str) -> list[float]:
    return [float(x) for x in re.findall(r"SCORE:\s*(\d+(?:\.\d+)?)", reply)]


# -- the records -----------------------------------------------------------------------------------------------
def load(date: str) -> list[dict]:
    with open(TRANSCRIPTS / FILES[date], encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


RECORDS = {date: load(date) for date in FILES}


def _params() -> list:
    params = []
    for date, records in RECORDS.items():
        for r in records:
            kind = kind_of(r["prompt"])
            reason = KNOWN_FAILURES.get((date, r["n"]))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            params.append(pytest.param(r, kind, id=f"{date}:{r['n']}-{kind}", marks=marks))
    return params


def test_the_transcripts_are_complete():
    assert {d: len(rs) for d, rs in RECORDS.items()} == EXPECTED_CALLS
    for rs in RECORDS.values():
        assert [r["n"] for r in rs] == list(range(1, len(rs) + 1))


async def answered(state: TraversalState, action) -> TraversalState:
    return await TraversalASM(make_kg()).apply(state, action)


def check_answer(done: TraversalState, state: TraversalState, written: dict) -> None:
    """The grounded answer is usable and is what the model wrote: NONE stays NONE; nothing it wrote is dropped;
    entities only among the IDs it cited (all of them, when the answer is entities); values only from its text."""
    assert done.asm_state is AsmState.DONE and done.answer is not None, f"turned down: {done.last_invalid.reason}"
    ans = done.answer
    assert set(ans.entity_ids) <= set(state.subgraph.entities), f"IDs outside the subgraph: {ans.entity_ids}"
    assert ans.entity_ids or ans.text.strip(), "an answer with neither entities nor text"
    if written["text"] == "NONE" and not written["entity_ids"]:
        assert ans.status == "none", ans
        return
    if written["text"].split(" ", 1)[0].strip(" -:").upper() == "UNKNOWN":  # the older prompts' "ran out"
        assert ans.status == "incomplete" and ans.text == written["text"].strip(), ans
        return
    assert ans.status == "answer" and ans.items, ans
    assert not ans.ungrounded, f"dropped what the model wrote: {ans.ungrounded}"
    if written["entity_ids"] and all(it.entity_id for it in ans.items):
        assert ans.entity_ids == written["entity_ids"], f"model cited {written['entity_ids']}"
    for it in ans.items:
        if it.entity_id is None:
            assert text_key(it.text) in text_key(written["text"]), f"a value the model did not write: {it}"


@pytest.mark.parametrize("record, kind", _params())
async def test_a_recorded_reply_parses_into_what_the_model_wrote(record: dict, kind: str):
    prompt, reply = record["prompt"], record["reply"]
    if kind in ASM_STATE:
        state = state_from_prompt(prompt, kind)
        actions = parse_action_lines(reply, state)
        assert actions, "no action parsed"
        assert not [a for a in actions if isinstance(a, Invalid)], f"rejected: {actions}"
        allowed = {"answer"} if state.must_answer else ALLOWED[kind]
        assert {a.kind for a in actions} <= allowed, f"{[a.kind for a in actions]} not allowed in {kind}"
        written = written_actions(reply, state)
        assert [a.kind for a in actions] == [w["kind"] for w in written], f"model wrote {written}, parsed {actions}"
        for a, w in zip(actions, written):
            if a.kind == "answer":
                check_answer(await answered(state, a), state, w)
                continue
            assert {k: getattr(a, k) for k in w} == w, f"model wrote {w}, parsed {a}"
            if a.kind == "select_entities":
                assert set(a.entity_ids) <= set(state.subgraph.entities), f"IDs outside the subgraph: {a}"
            if a.kind == "select_relation":
                assert (a.relation_id, a.direction) in {(c.id, c.direction) for c in state.candidate_relations}
    elif kind in (VALUE_ANSWER, VALUE_STATE):
        score = parse_score(reply)
        assert score is not None and 0.0 <= score <= 1.0, f"no score in {reply!r}"
        assert written_scores(reply) in ([score], []), f"model wrote {written_scores(reply)}, parsed {score}"
    else:
        n = candidate_count(prompt)
        assert n >= 1, "no candidates listed"
        scores = parse_scores(reply, n)
        assert None not in scores, f"a candidate got no score: {scores} from {reply!r}"
        written = written_scores(reply)
        assert not written or scores == written, f"model wrote {written}, parsed {scores}"


# -- spot cases named in the transcripts' README: the reading, stated outright -----------------------------------
def _record(date: str, n: int) -> dict:
    r = RECORDS[date][n - 1]
    assert r["n"] == n
    return r


def _parsed(date: str, n: int) -> tuple[list, TraversalState]:
    r = _record(date, n)
    state = state_from_prompt(r["prompt"], kind_of(r["prompt"]))
    return parse_action_lines(r["reply"], state), state


def test_a_relation_by_number_and_direction():
    (action,), state = _parsed("2026-11-22", 10)  # "SELECT_RELATION: 1 backward"
    assert _record("2026-11-22", 10)["reply"] == "SELECT_RELATION: 1 backward"
    assert (action.relation_id, action.direction) == ("movies:starred_actors", Direction.backward)
    (action,), _ = _parsed("2026-11-24", 31)  # "2 backward" out of four backward candidates
    assert (action.relation_id, action.direction) == ("films:starred_actors", Direction.backward)


def test_a_relation_by_id_and_direction():
    (action,), _ = _parsed("2026-11-22", 11)  # "SELECT_RELATION: movies:starred_actors backward"
    assert (action.relation_id, action.direction) == ("movies:starred_actors", Direction.backward)
    (action,), _ = _parsed("2026-11-22", 168)  # "SELECT_RELATION: wd:P26 forward"
    assert (action.relation_id, action.direction) == ("wd:P26", Direction.forward)


def test_a_relation_from_a_linked_kgs_merged_candidates():
    (action,), state = _parsed("2026-11-24", 28)  # "2 forward": films:starred_actors among films:* and catalog:*
    assert {c.kg for c in state.candidate_relations} == {"films", "catalog"}
    assert (action.relation_id, action.direction) == ("films:starred_actors", Direction.forward)


def test_answers_without_entities_keep_their_text():
    (unknown,), state = _parsed("2026-11-22", 83)  # "ANSWER: Unknown - ... yet |" when forced to answer
    assert state.must_answer
    assert unknown.kind == "answer" and unknown.entity_ids == [] and unknown.status == "incomplete"
    assert unknown.text.startswith("Unknown - the subgraph has no language facts")
    (none,), _ = _parsed("2026-11-24", 25)  # "ANSWER: NONE |"
    assert none.kind == "answer" and none.status == "none" and none.entity_ids == []


async def test_a_long_answer_keeps_every_film_the_model_cited():
    (answer,), state = _parsed("2026-11-24", 5)  # 30 films, one named "Nick Carter, Master Detective"
    done = (await answered(state, answer)).answer
    assert done is not None and len(done.entity_ids) == 30 and done.entity_ids[0] == "embedded:E175"
    assert "embedded:E29840" in done.entity_ids  # Nick Carter, Master Detective


async def test_an_answer_of_years_is_the_year_entities_written():
    (answer,), state = _parsed("2026-11-24", 11)  # "ANSWER: 1991, 1950, 1996 | embedded:E1148, ..."
    done = (await answered(state, answer)).answer
    assert done is not None
    assert done.entity_ids == ["embedded:E1148", "embedded:E1135", "embedded:E99"]
    assert [it.text for it in done.items] == ["1991", "1950", "1996"]


async def test_years_read_from_summaries_are_the_answer_not_the_films():
    """2026-11-24:18 — the years of Kenneth Branagh's films, read from the films' summaries, then the film IDs
    (the only IDs there were): the answer is the years."""
    (answer,), state = _parsed("2026-11-24", 18)
    done = (await answered(state, answer)).answer
    assert done is not None and done.entity_ids == []
    assert [it.text for it in done.items][:3] == ["1989", "1991", "1992"] and len(done.items) == 12


def test_entities_are_selected_as_written():
    (action,), _ = _parsed("2026-11-24", 4)  # all four actors
    assert action.entity_ids == ["embedded:E180", "embedded:E1302", "embedded:E3556", "embedded:E33106"]


def test_a_verdict_before_the_score_does_not_change_it():
    r = _record("2026-11-24", 6)  # "VERDICT: ... 4 actors ... all 30 films.\nSCORE: 1.0"
    assert "30" in r["reply"] and parse_score(r["reply"]) == 1.0
    assert parse_score(_record("2026-11-24", 19)["reply"]) == 0.6
