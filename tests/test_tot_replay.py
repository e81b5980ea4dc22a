"""Every real model reply recorded in ``fixtures/llm-transcripts`` goes through today's
Tree-of-Traversals parsers and must come out as a usable action or score — and as the one the model
wrote.

Why: the parsers are forgiving on purpose (IDs, numbers, labels, prose around the line), and
forgiving parsers fail quietly — a reply that parses into *some* valid action can still be the wrong
one. These replies are what a strong model really writes to the driver's prompts, so they pin the
parsing to real output while the prompts and parsers change. Each reply belongs to the prompt it
answered, so the state it is parsed against is rebuilt from that prompt's text
(:func:`state_from_prompt`), never from today's templates. The transcripts (gzipped JSONL, with the
model's notes and the README that describes them) are copies of ``../shared/llm-transcripts``, so a
fresh clone replays them.

An ANSWER is usable once the ASM has grounded what the model wrote in the subgraph (its items,
entity IDs, status), so answers are also applied by :class:`TraversalASM` — to a KG that knows none
of these entities: the answer transition judges by the subgraph alone.

A record that today's parser genuinely cannot read is listed in ``KNOWN_FAILURES`` as a strict xfail
(it flips to a failure once the parser is fixed, so the entry is removed then), never skipped or
loosened. A request the model never answered (``reply`` null) is skipped, saying so.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import re
from pathlib import Path

import pytest
from tot_fixtures import make_kg

from tot_mcp.kg_adapters.follow import Hop
from tot_mcp.kg_adapters.models import Direction, Entity, EntityMatch, Relation
from tot_mcp.kg_adapters.text import key as text_key
from tot_mcp.strategies.plan import Group, PlanReader
from tot_mcp.strategies.tot.actions import ExpandKG, Invalid, SelectEntities, SelectRelation
from tot_mcp.strategies.tot.asm import TraversalASM
from tot_mcp.strategies.tot.prompted import (
    chosen_with_expand,
    parse_action_lines,
    parse_score,
    parse_scores,
)
from tot_mcp.strategies.tot.state import AsmState, TraversalState

TRANSCRIPTS = Path(__file__).parent / "fixtures" / "llm-transcripts"
FILES = {
    "2026-11-22": "tot-prompts-2026-11-22.jsonl.gz",
    "2026-11-24": "tot-prompts-2026-11-24.jsonl.gz",
    "2026-11-28": "tot-prompts-2026-11-28.jsonl.gz",
    "check": "tot-prompts-2026-11-28-check.jsonl.gz",
    "fused": "tot-prompts-2026-11-28-fused.jsonl.gz",
    "econ": "tot-prompts-2026-11-28-econ.jsonl.gz",
}
EXPECTED_CALLS = {
    "2026-11-22": 174,
    "2026-11-24": 39,
    "2026-11-28": 70,
    "check": 229,
    "fused": 115,
    "econ": 110,
}  # per their README

# -- what kind of call a prompt was: by the text that only that prompt carries ---------------------
PROPOSE_DEFAULT = "propose_default"
PROPOSE_ENTITIES = "propose_entities"
PROPOSE_RELATION = "propose_relation"
VALUE_ANSWER = "value_answer"
VALUE_ANSWERS = "value_answers"
VALUE_STEPS = "value_steps"
VALUE_STATE = "value_state"
PLAN = "plan"
MARKERS = {
    PROPOSE_DEFAULT: "Choose the next action",
    PROPOSE_ENTITIES: "Select the entities",
    PROPOSE_RELATION: "Candidate relations of the selected entities",
    VALUE_ANSWER: "\nProposed answer:",
    VALUE_ANSWERS: "\nCandidate answers:",
    VALUE_STEPS: "\nCandidate next steps",
    VALUE_STATE: "How promising is this state",
    PLAN: "\nPlan how to answer the question",
}
#: each kind's system prompt begins so
SYSTEMS = {PLAN: "You plan how a question is answered"}
TOT_SYSTEM = "You answer questions by exploring a knowledge graph"
ASM_STATE = {
    PROPOSE_DEFAULT: AsmState.DEFAULT,
    PROPOSE_ENTITIES: AsmState.SELECTING_ENTITIES,
    PROPOSE_RELATION: AsmState.SELECTING_RELATION,
}
ALLOWED = {
    PROPOSE_DEFAULT: {"think", "expand_kg", "answer"},
    PROPOSE_ENTITIES: {"select_entities"},
    PROPOSE_RELATION: {"select_relation"},
}
# "no steps are left" (2026-11-24) / "the maximum depth is reached: you must answer now"
# (2026-11-22) / "Expansions left: 0. You must answer now." and "- ANSWER (no expansions are left:
# answer ..." (session 7; every action prompt there says "(... no expansions are left)" of
# INCOMPLETE, hence the colon)
MUST_ANSWER = re.compile(r"no steps are left|no expansions are left:|you must answer now", re.I)

# Records today's parser cannot read, as {record name (see record_name): why}; each becomes a strict
# xfail.
KNOWN_FAILURES: dict[str, str] = {}


def kind_of(prompt: str) -> str:
    kinds = [k for k, marker in MARKERS.items() if marker in prompt]
    assert len(kinds) == 1, (
        f"prompt matches {kinds or 'no'} call kind(s); cannot tell what it asked for"
    )
    return kinds[0]


def state_from_prompt(prompt: str, kind: str) -> TraversalState:
    """The minimal :class:`TraversalState` a prompt was rendered from, as far as the parsers look at
    it: the question, the subgraph's entities (`` <id>: <label> - <description> (same as ...)``
    lines of the ENTITIES block) with their twins (``(same as catalog:E1: <summary>; catalog:E2)``:
    the linked equivalents, and what their own KG says of them, which answers read values from), the
    ASM state for the kind of call, ``must_answer`` when the prompt said no steps are left, and in
    SELECTING_RELATION the selected entities and the numbered candidate relations (``1.
    embedded:directed_by forward: directed by [1]``). Edges and the trajectory are not rebuilt: no
    parser reads them, and grounding an answer looks at edges only for literal values, which none of
    these prompts shows (``test_no_prompt_shows_a_literal_value_on_an_edge``)."""
    question = re.search(r"^Question: (.*)$", prompt, re.M)
    assert question, "no 'Question:' line"
    state = TraversalState(
        question=question.group(1),
        asm_state=ASM_STATE.get(kind, AsmState.DEFAULT),
        max_hops=0 if MUST_ANSWER.search(prompt) else None,
    )
    block = re.search(r"^ENTITIES:\n(.*?)^EDGES:", prompt, re.M | re.S)
    assert block, "no ENTITIES block"
    sub = state.subgraph
    for line in block.group(1).splitlines():
        if line.strip() == "(none)":
            continue
        entity_id, _, rest = line.strip().partition(
            ": "
        )  # IDs have no spaces: the first ": " ends one
        twins = []
        at = rest.rfind(_SAME_AS)
        if at >= 0 and rest.endswith(")"):  # the twins' summaries may hold parentheses of their own
            twins = _TWIN_SEP.split(rest[at + len(_SAME_AS) : -1])
            rest = rest[:at]
        label, _, description = rest.partition(" - ")
        sub.add_entity(
            Entity(
                id=entity_id,
                label=label,
                description=description or None,
                kg=entity_id.split(":", 1)[0],
            )
        )
        for twin in twins:
            twin_id, _, summary = twin.partition(": ")
            sub.link(entity_id, twin_id)
            # a twin the subgraph does not list itself; linked by label, so it bears the same one
            if summary:
                sub.twins[twin_id] = Entity(
                    id=twin_id, label=label, description=summary, kg=twin_id.split(":", 1)[0]
                )
    if kind == PROPOSE_RELATION:
        selected = re.search(r"^Selected entities: (.*)$", prompt, re.M)
        assert selected, "no 'Selected entities:' line"
        state.selected_entities = [
            i
            for i in re.findall(r"(?:^|, )(\S+) \(", selected.group(1))
            if i in state.subgraph.entities
        ]
        listing = prompt.split("Candidate relations of the selected entities", 1)[1].split(
            "\n\n", 1
        )[0]
        state.candidate_relations = relations_listed(listing)
        state.relations_truncated = "(more relations exist" in listing
        assert state.candidate_relations, "no candidate relations listed"
    return state


_SAME_AS = " (same as "
#: twins are joined by "; " (by ", " in the older prompts), each "<ID>" or "<ID>: <summary>"; a
#: summary's own "; " is never followed by an ID
_TWIN_SEP = re.compile(r"[;,] (?=[A-Za-z][A-Za-z0-9_-]*:[^\s:;,]+(?:: |[;,] |$))")


def relations_listed(listing: str) -> list[Relation]:
    """The numbered relation lines of a listing (``1. embedded:directed_by forward: directed by
    [1]``), as the :class:`Relation` s that rendered them."""
    out = []
    for m in re.finditer(r"^\d+\. (\S+) (forward|backward): (.*?)(?: \[(\d+)\])?$", listing, re.M):
        rel_id, direction, meaning, count = m.groups()
        out.append(_relation(rel_id, direction, meaning, count))
    return out


def _relation(rel_id: str, direction: str, meaning: str, count: str | None) -> Relation:
    inverse = direction == "backward"
    return Relation(
        id=rel_id,
        direction=Direction(direction),
        kg=rel_id.split(":", 1)[0],
        label=meaning.removeprefix("inverse of ") if inverse else meaning,
        inverse_label=meaning if inverse and not meaning.startswith("inverse of ") else None,
        count=int(count) if count else None,
    )


def frontier_from_prompt(prompt: str) -> list[Relation] | None:
    """The relations of the one-call protocol's listing ("Relations of the newest entities (2:
    <IDs>):" and numbered lines); None when the prompt has none."""
    m = re.search(
        r"^Relations of the newest entities \(\d+: [^\n]*\):\n(.*?)(?:\n\n|\Z)", prompt, re.M | re.S
    )
    if m is None:
        return None
    relations = relations_listed(m.group(1))
    assert relations, "the newest entities' relations are not listed"
    return relations


def newest_from_prompt(prompt: str) -> list[str] | None:
    """The entities ``NEWEST`` names in a reply: the IDs of the one-call listing's header
    ("Relations of the newest entities (2: m:E1, m:E2; NEWEST in a reply names all 2…):"); None when
    the prompt has none or shortened it."""
    m = re.search(
        r"^Relations of the newest entities \((\d+): ([^\n;]*)(?:;[^\n]*)?\):$", prompt, re.M
    )
    if m is None or "more" in m.group(2):
        return None
    ids = m.group(2).split(", ")
    assert len(ids) == int(m.group(1)), f"the header lists {len(ids)} IDs, says {m.group(1)}"
    return ids


def candidate_count(prompt: str) -> int:
    """How many candidates a batch value prompt listed (the numbered lines after its 'Candidate
    ...:' header)."""
    listing = re.split(
        r"^Candidate (?:answers|next steps)[^\n]*:\n", prompt, maxsplit=1, flags=re.M
    )[1]
    return len(re.findall(r"^\d+\. ", listing.split("\n\n", 1)[0], re.M))


# -- what the model wrote, read strictly by the documented reply formats ---------------------------
_LINE = re.compile(r"^(THINK|EXPAND_KG|ANSWER|SELECT_ENTITIES|SELECT_RELATION)\b:?\s*(.*)$")
_ID = re.compile(r"[A-Za-z][A-Za-z0-9_-]*:[^\s,;|()\[\]]+")


def written_actions(
    reply: str, state: TraversalState, newest: list[str] | None = None
) -> list[dict]:
    """Each action line of ``reply`` as the format defines it, as the fields the parsed action must
    have: the independent reading that the forgiving parser has to agree with (``newest``: what
    ``NEWEST`` names)."""
    out: list[dict] = []
    for line in reply.splitlines():
        m = _LINE.match(line.strip())
        if not m:
            continue
        verb, rest = m.groups()
        if verb == "THINK":
            want = {"kind": "think", "text": rest}
        elif verb == "EXPAND_KG":  # alone, or "<IDs or NEWEST> -> <relation ID> <forward|backward>"
            left, arrow, right = rest.partition("->")
            relation = direction = None
            if arrow:
                relation, direction = right.split()
                direction = Direction(direction)
            ids = list(newest or []) if left.strip() == "NEWEST" else _ID.findall(left)
            want = {
                "kind": "expand_kg",
                "entity_ids": ids,
                "relation_id": relation,
                "direction": direction,
            }
        elif verb == "SELECT_ENTITIES":  # a twin a summary shows is the entity it is the same as
            sub = state.subgraph
            ids = [
                i
                if i in sub.entities
                else next((o for o in sub.same_as.get(i, ()) if o in sub.entities), i)
                for i in _ID.findall(rest)
            ]
            want = {"kind": "select_entities", "entity_ids": list(dict.fromkeys(ids))}
        elif verb == "SELECT_RELATION":  # "<number or relation ID> <forward|backward>"
            ref, direction = rest.split()
            rel_id = state.candidate_relations[int(ref) - 1].id if ref.isdigit() else ref
            want = {
                "kind": "select_relation",
                "relation_id": rel_id,
                "direction": Direction(direction),
            }
        elif "|" in rest:  # the older prompts' "<answer text> | <entity IDs>" or "NONE |"
            text, _, ids = rest.partition("|")
            want = {"kind": "answer", "text": text.strip(), "entity_ids": _ID.findall(ids)}
        else:  # today's "item ; item" (IDs or values), "NONE", "INCOMPLETE: <items or nothing>"
            incomplete = re.fullmatch(r"INCOMPLETE\b:?\s*(.*)", rest.strip())
            status = "none" if rest.strip() == "NONE" else "incomplete" if incomplete else "answer"
            body = incomplete.group(1) if incomplete else "" if status == "none" else rest
            want = {
                "kind": "answer",
                "status": status,
                "items": list(dict.fromkeys(i.strip() for i in body.split(";") if i.strip())),
            }
        if want not in out:
            out.append(want)
    return out


def written_scores(reply: str) -> list[float]:
    return [float(x) for x in re.findall(r"SCORE:\s*(\d+(?:\.\d+)?)", reply)]


# -- the records -----------------------------------------------------------------------------------
def load(date: str) -> list[dict]:
    path = TRANSCRIPTS / FILES[date]
    with (gzip.open if path.suffix == ".gz" else open)(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


RECORDS = {
    date: load(date) for date in FILES
}  # in the repository: a missing one fails, never skips


def record_name(source: str, r: dict) -> str:
    """``2026-11-22:10``; session 7 numbers each run (``set``) from 1, so its names carry the run:
    ``session7:pq3:123``."""
    return f"{source}:{r['set']}:{r['n']}" if "set" in r else f"{source}:{r['n']}"


def _params() -> list:
    params = []
    for source, records in RECORDS.items():
        for r in records:
            kind = kind_of(r["prompt"])
            name = record_name(source, r)
            reason = KNOWN_FAILURES.get(name)
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            if r["reply"] is None:
                marks = [
                    pytest.mark.skip(
                        reason="the request was never answered (reply is null): nothing to parse"
                    )
                ]
            params.append(pytest.param(r, kind, id=f"{name}-{kind}", marks=marks))
    return params


def test_the_transcripts_are_complete():
    assert {d: len(RECORDS[d]) for d in EXPECTED_CALLS if d in RECORDS} == {
        d: n for d, n in EXPECTED_CALLS.items() if d in RECORDS
    }
    for source, rs in RECORDS.items():
        runs: dict[str, list[int]] = {}
        for r in rs:
            runs.setdefault(r.get("set", ""), []).append(r["n"])
        for run, ns in runs.items():
            assert ns == list(range(1, len(ns) + 1)), (
                f"{source} {run}: calls out of order or missing"
            )
    assert not {k for k in KNOWN_FAILURES if k.split(":")[0] in RECORDS} - {
        record_name(s, r) for s, rs in RECORDS.items() for r in rs
    }


def test_no_prompt_shows_a_literal_value_on_an_edge():
    """What :func:`state_from_prompt` leaves out: an answer grounded on an edge's literal value
    would need the edges rebuilt too. The shown edges all reach entities (``<ID> (<label>)``)."""
    for rs in RECORDS.values():
        for r in rs:
            edges = re.search(r"^EDGES:\n(.*?)(?:\n\n|^EXPANSIONS:)", r["prompt"], re.M | re.S)
            for line in edges.group(1).splitlines() if edges else []:
                group = re.match(
                    r"^    \S+ \[.*?\] \(\d+\): (.*)$", line
                )  # "<relation> [<reading>] (n): ..."
                if group is None:
                    assert line == "  (none)" or re.match(r"^  \S+ \(.*\):$", line), (
                        f"{r['n']}: {line!r}"
                    )
                    continue
                for other in re.split(r", (?=\S+:\S+ \(|\.\.\. )", group[1]):
                    assert other.startswith("... (+") or re.match(rf"{_ID.pattern} \(", other), (
                        f"{r['n']}: {line}"
                    )


async def answered(state: TraversalState, action) -> TraversalState:
    return await TraversalASM(make_kg()).apply(state, action)


def check_answer(done: TraversalState, state: TraversalState, written: dict) -> None:
    """The grounded answer is usable and is what the model wrote: NONE stays NONE; nothing it wrote
    is dropped; entities only among the IDs it cited (all of them, when the answer is entities);
    values only from its text."""
    assert done.asm_state is AsmState.DONE and done.answer is not None, (
        f"turned down: {done.last_invalid.reason}"
    )
    ans = done.answer
    if "items" in written:
        return check_items(ans, state, written)
    assert set(ans.entity_ids) <= set(state.subgraph.entities), (
        f"IDs outside the subgraph: {ans.entity_ids}"
    )
    assert ans.entity_ids or ans.text.strip(), "an answer with neither entities nor text"
    if written["text"] == "NONE" and not written["entity_ids"]:
        assert ans.status == "none", ans
        return
    if (
        written["text"].split(" ", 1)[0].strip(" -:").upper() == "UNKNOWN"
    ):  # the older prompts' "ran out"
        assert ans.status == "incomplete" and ans.text == written["text"].strip(), ans
        return
    assert ans.status == "answer" and ans.items, ans
    assert not ans.ungrounded, f"dropped what the model wrote: {ans.ungrounded}"
    if written["entity_ids"] and all(it.entity_id for it in ans.items):
        assert ans.entity_ids == written["entity_ids"], f"model cited {written['entity_ids']}"
    for it in ans.items:
        if it.entity_id is None:
            assert text_key(it.text) in text_key(written["text"]), (
                f"a value the model did not write: {it}"
            )


def check_items(ans, state: TraversalState, written: dict) -> None:
    """Today's ``item ; item`` answers: the status the model wrote (NONE, INCOMPLETE, an answer),
    and its items one for one — every item it wrote is grounded (nothing dropped), each grounded
    item is one it wrote (an ID as that entity, a name or value as written), the IDs in the order
    written."""
    assert ans.status == written["status"], f"model wrote {written}, parsed {ans}"
    if ans.status == "none":
        assert not ans.items and not ans.entity_ids, ans
        return
    assert set(ans.entity_ids) <= set(state.subgraph.entities), (
        f"IDs outside the subgraph: {ans.entity_ids}"
    )
    assert ans.items or ans.status == "incomplete", ans
    assert not ans.ungrounded, f"dropped what the model wrote: {ans.ungrounded}"

    def same(w: str, it) -> bool:
        return w == it.entity_id if _ID.fullmatch(w) else text_key(w) == text_key(it.text)

    for w in written["items"]:
        assert any(same(w, it) for it in ans.items), f"{w!r} is not in the answer {ans.items}"
    for it in ans.items:
        assert any(same(w, it) for w in written["items"]), f"{it} is not an item the model wrote"
    cited = [w for w in written["items"] if _ID.fullmatch(w)]
    assert [i for i in ans.entity_ids if i in cited] == cited, (
        f"model cited {cited}, answer has {ans.entity_ids}"
    )


def check_one_call_expansion(
    state: TraversalState, action: ExpandKG, frontier: list[Relation]
) -> None:
    """An ``EXPAND_KG: <IDs> -> <relation> <direction>`` decides the next two states without a call:
    the policy reads the entities back in SELECTING_ENTITIES, and the relation in SELECTING_RELATION
    — here against the relations the prompt listed for the newest entities, when the choice is one
    of them."""
    pending = state.model_copy(
        update={"actions": [action], "asm_state": AsmState.SELECTING_ENTITIES}
    )
    assert chosen_with_expand(pending) == SelectEntities(entity_ids=action.entity_ids)
    if (action.relation_id, action.direction) not in {(r.id, r.direction) for r in frontier}:
        return
    pending = state.model_copy(
        update={
            "actions": [action, SelectEntities(entity_ids=action.entity_ids)],
            "asm_state": AsmState.SELECTING_RELATION,
            "selected_entities": action.entity_ids,
            "candidate_relations": frontier,
        }
    )
    assert chosen_with_expand(pending) == SelectRelation(
        relation_id=action.relation_id, direction=action.direction
    )


# -- the plan strategy's prompts -------------------------------------------------------------------
def plan_reader_from_prompt(prompt: str) -> tuple[PlanReader, int, int]:
    """The :class:`PlanReader` a plan prompt's reply was read with, fed from the prompt as
    ``plan._run`` feeds it: the numbered entities (``1. pq:E268: label - description``), the
    vocabulary's groups ("Relations of the question's entities:", "After <relation> <direction> (hop
    n; m entities sampled):", each with its `` <relation ID> <direction> [edges]: meaning`` lines;
    the samples are not shown, and the reader does not look at them), the KGs (the namespaces of the
    IDs shown); and the prompt's k and max_hops."""
    head = "(number. ID: label - description):\n"
    assert head in prompt, "no entity list"
    matches = []
    for line in prompt.split(head, 1)[1].split("\n\n", 1)[0].splitlines():
        if line.startswith("A summary ending"):  # the advice on merged same-name nodes
            continue
        number, _, rest = line.partition(". ")
        entity_id, _, rest = rest.partition(": ")
        assert number == str(len(matches) + 1) and _ID.fullmatch(entity_id), (
            f"not an entity line: {line!r}"
        )
        label, _, description = rest.partition(" - ")
        matches.append(
            EntityMatch(
                entity=Entity(
                    id=entity_id,
                    label=label,
                    description=description or None,
                    kg=entity_id.split(":", 1)[0],
                ),
                score=1.0,
                match="exact",
            )
        )
    vocabulary = re.split(
        r"from a sample of them(?: \(at most \d+ distinct entities\))?:\n", prompt, maxsplit=1
    )[1]
    vocabulary = vocabulary.split("\n\n", 1)[0]
    groups: list[Group] = []
    for line in vocabulary.splitlines():
        after = re.fullmatch(
            r"After (?:\S+ (?:forward|backward) -> )*(\S+) (forward|backward) \(hop (\d+); \d+ "
            r"entities sampled\):",
            line,
        )
        relation = re.fullmatch(r"  (\S+) (forward|backward)(?: \[(\d+)\])?: (.*)", line)
        if line == "Relations of the question's entities:":
            groups.append(Group(None, 1, [], []))
        elif after:
            groups.append(
                Group(
                    Hop(relation_id=after[1], direction=Direction(after[2])),
                    int(after[3]) + 1,
                    [],
                    [],
                )
            )
        elif relation and groups:
            groups[-1].relations.append(
                _relation(relation[1], relation[2], relation[4], relation[3])
            )
        else:
            assert line == "(no relations found)", f"not a vocabulary line: {line!r}"
    kg_names = {i.split(":", 1)[0] for i in _ID.findall(prompt)}
    k = re.search(r"write up to (\d+) relation paths", prompt)
    max_hops = re.search(r"A path has 1 to (\d+) hops", prompt)
    assert k and max_hops, "no k or max_hops in the prompt"
    return PlanReader(matches, groups, kg_names), int(k[1]), int(max_hops[1])


def written_paths(reply: str) -> list[tuple[list[str], list[Hop]]]:
    """Each ``PATH: <entity ID> -> <relation ID> <forward|backward> -> ...`` line, as the start and
    hops written."""
    out = []
    for line in reply.splitlines():
        if not line.strip().startswith("PATH:"):
            continue
        start, *hops = line.strip().removeprefix("PATH:").strip().split(" -> ")
        parts = [h.split() for h in hops]
        assert all(len(p) == 2 for p in parts), f"not the PATH format: {line!r}"
        out.append(([start], [Hop(relation_id=r, direction=Direction(d)) for r, d in parts]))
    return out


def check_plan(prompt: str, reply: str) -> None:
    reader, k, max_hops = plan_reader_from_prompt(prompt)
    written = written_paths(reply)
    assert written, f"no PATH line in {reply!r}"
    for line, (start, hops) in zip(
        [ln for ln in reply.splitlines() if ln.strip().startswith("PATH:")], written
    ):
        read = reader.read(line, 1, max(max_hops, len(hops)))  # every line on its own
        assert [(p.start, p.hops) for p in read] == [(start, hops)], (
            f"model wrote {line!r}, read {read}"
        )
    expected = list(
        {(tuple(s), tuple(h)): (s, h) for s, h in written if len(h) <= max_hops}.values()
    )[:k]
    got = [
        (p.start, p.hops) for p in reader.read(reply, k, max_hops)
    ]  # the reply as plan._run reads it
    assert got == expected, f"model wrote {expected}, read {got}"


@pytest.mark.parametrize("record, kind", _params())
def test_a_recorded_reply_parses_into_what_the_model_wrote(record: dict, kind: str):
    # not async: an event loop for each of ~1000 records doubled the module's time; answers run one
    # of their own
    prompt, reply = record["prompt"], record["reply"]
    if "system" in record:  # the call's system prompt is the one of its kind
        assert record["system"].startswith(SYSTEMS.get(kind, TOT_SYSTEM)), record["system"][:80]
    if kind == PLAN:
        check_plan(prompt, reply)
    elif kind in ASM_STATE:
        state = state_from_prompt(prompt, kind)
        newest = newest_from_prompt(prompt)
        actions = parse_action_lines(reply, state, newest=newest)
        assert actions, "no action parsed"
        assert not [a for a in actions if isinstance(a, Invalid)], f"rejected: {actions}"
        allowed = {"answer"} if state.must_answer else ALLOWED[kind]
        assert {a.kind for a in actions} <= allowed, (
            f"{[a.kind for a in actions]} not allowed in {kind}"
        )
        written = written_actions(reply, state, newest)
        assert [a.kind for a in actions] == [w["kind"] for w in written], (
            f"model wrote {written}, parsed {actions}"
        )
        for a, w in zip(actions, written):
            if a.kind == "answer":
                check_answer(asyncio.run(answered(state, a)), state, w)
                continue
            assert {k: getattr(a, k) for k in w} == w, f"model wrote {w}, parsed {a}"
            if a.kind == "expand_kg" and a.relation_id:
                frontier = frontier_from_prompt(prompt)
                assert frontier, "a one-call EXPAND_KG answered a prompt that did not offer it"
                check_one_call_expansion(state, a, frontier)
            if a.kind == "select_entities":
                assert set(a.entity_ids) <= set(state.subgraph.entities), (
                    f"IDs outside the subgraph: {a}"
                )
            if a.kind == "select_relation":
                assert (a.relation_id, a.direction) in {
                    (c.id, c.direction) for c in state.candidate_relations
                }
    elif kind in (VALUE_ANSWER, VALUE_STATE):
        score = parse_score(reply)
        assert score is not None and 0.0 <= score <= 1.0, f"no score in {reply!r}"
        assert written_scores(reply) in ([score], []), (
            f"model wrote {written_scores(reply)}, parsed {score}"
        )
    else:
        n = candidate_count(prompt)
        assert n >= 1, "no candidates listed"
        scores = parse_scores(reply, n)
        assert None not in scores, f"a candidate got no score: {scores} from {reply!r}"
        written = written_scores(reply)
        assert not written or scores == written, f"model wrote {written}, parsed {scores}"


# -- spot cases named in the transcripts' README: the reading, stated outright ---------------------
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
    (action,), state = _parsed(
        "2026-11-24", 28
    )  # "2 forward": films:starred_actors among films:* and catalog:*
    assert {c.kg for c in state.candidate_relations} == {"films", "catalog"}
    assert (action.relation_id, action.direction) == ("films:starred_actors", Direction.forward)


def test_answers_without_entities_keep_their_text():
    (unknown,), state = _parsed(
        "2026-11-22", 83
    )  # "ANSWER: Unknown - ... yet |" when forced to answer
    assert state.must_answer
    assert unknown.kind == "answer" and unknown.entity_ids == [] and unknown.status == "incomplete"
    assert unknown.text.startswith("Unknown - the subgraph has no language facts")
    (none,), _ = _parsed("2026-11-24", 25)  # "ANSWER: NONE |"
    assert none.kind == "answer" and none.status == "none" and none.entity_ids == []


async def test_a_long_answer_keeps_every_film_the_model_cited():
    (answer,), state = _parsed(
        "2026-11-24", 5
    )  # 30 films, one named "Nick Carter, Master Detective"
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
    """2026-11-24:18 — the years of Kenneth Branagh's films, read from the films' summaries, then
    the film IDs (the only IDs there were): the answer is the years."""
    (answer,), state = _parsed("2026-11-24", 18)
    done = (await answered(state, answer)).answer
    assert done is not None and done.entity_ids == []
    assert [it.text for it in done.items][:3] == ["1989", "1991", "1992"] and len(done.items) == 12


def test_entities_are_selected_as_written():
    (action,), _ = _parsed("2026-11-24", 4)  # all four actors
    assert action.entity_ids == [
        "embedded:E180",
        "embedded:E1302",
        "embedded:E3556",
        "embedded:E33106",
    ]


def test_a_verdict_before_the_score_does_not_change_it():
    r = _record("2026-11-24", 6)  # "VERDICT: ... 4 actors ... all 30 films.\nSCORE: 1.0"
    assert "30" in r["reply"] and parse_score(r["reply"]) == 1.0
    assert parse_score(_record("2026-11-24", 19)["reply"]) == 0.6


def test_a_twin_a_summary_shows_is_selected_as_the_entity_it_is():
    """check:tot-linked2:3 — the model offered the catalog twin of the film it had chosen as a
    second choice: it is the same film, so the two lines are one choice (a reply naming only the
    twin is that film, not nothing)."""
    (r,) = [r for r in RECORDS["check"] if (r["set"], r["n"]) == ("tot-linked2", 3)]
    state = state_from_prompt(r["prompt"], kind_of(r["prompt"]))
    assert [a.entity_ids for a in parse_action_lines(r["reply"], state)] == [["films:E29563"]]
    (only,) = parse_action_lines("SELECT_ENTITIES: catalog:E8875", state)
    assert only.entity_ids == ["films:E29563"]
