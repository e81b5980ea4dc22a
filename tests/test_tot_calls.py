"""Calls are spent only where there is a choice: no call for a single option, one propose call per
expansion returning distinct actions, one value call for a node's children, no intermediate value
calls at k=1."""

from __future__ import annotations

from tot_fixtures import eid, make_kg

from tot_mcp.kg_adapters.models import Direction

from tot_mcp.strategies.llm.scripted import ScriptedLLM
from tot_mcp.strategies.tot.actions import ExpandKG, SelectEntities, SelectRelation
from tot_mcp.strategies.tot.asm import TraversalASM
from tot_mcp.strategies.tot.prompted import PromptedPolicy
from tot_mcp.strategies.tot.search import SearchConfig, TreeSearch

Q = "who directed the films [Keanu Reeves] acted in"


def respond(prompt: str) -> str:
    asked = prompt.rsplit("Reply with", 1)[-1]
    if "Candidate next steps" in prompt:
        lines = [
            ln
            for ln in prompt.split("Candidate next steps", 1)[1].splitlines()[1:]
            if ln[:1].isdigit()
        ]
        return "\n".join(
            f"{ln.split('.')[0]}. SCORE: {0.9 if 'directed_by' in ln else 0.2}" for ln in lines
        )
    if "Proposed answer:" in prompt:
        return (
            "SCORE: 0.9"
            if "Lana Wachowski" in prompt.split("Proposed answer:")[1]
            else "SCORE: 0.1"
        )
    if "Candidate answers:" in prompt:
        return "1. SCORE: 0.9\n2. SCORE: 0.1"
    if "SCORE" in asked:
        return "SCORE: 0.6"
    if "SELECT_RELATION" in asked:
        return (
            "SELECT_RELATION: directed_by forward\nSELECT_RELATION: release_year forward\n"
            "SELECT_RELATION: directed_by forward"
        )
    if "SELECT_ENTITIES" in asked:
        return "SELECT_ENTITIES: The Matrix, Speed"
    if ": Lana Wachowski" in prompt.split("Actions so far")[0]:
        return "ANSWER: Lana Wachowski, Jan de Bont"
    return "EXPAND_KG\nEXPAND_KG"


async def test_single_option_makes_no_call():
    kg = make_kg()
    asm = TraversalASM(kg)
    s = await asm.apply(await asm.initial_state(Q), ExpandKG())
    assert len(s.subgraph.entities) == 1
    llm = ScriptedLLM(respond)
    policy = PromptedPolicy(llm)
    assert await policy.propose(s, 3) == [SelectEntities(entity_ids=list(s.subgraph.entities))]
    s = await asm.apply(s, SelectEntities(entity_ids=list(s.subgraph.entities)))
    assert len(s.candidate_relations) == 1
    assert await policy.propose(s, 3) == [
        SelectRelation(
            relation_id=s.candidate_relations[0].id, direction=s.candidate_relations[0].direction
        )
    ]
    assert llm.usage.calls == 0


async def test_one_propose_call_returns_distinct_actions():
    kg = make_kg()
    asm = TraversalASM(kg)
    s = await asm.apply(await asm.initial_state(Q), ExpandKG())
    s = await asm.apply(s, SelectEntities(entity_ids=list(s.subgraph.entities)))
    s = await asm.apply(
        s,
        s
        and SelectRelation(
            relation_id=s.candidate_relations[0].id, direction=s.candidate_relations[0].direction
        ),
    )
    s = await asm.apply(
        await asm.apply(s, ExpandKG()),
        SelectEntities(entity_ids=[await eid(kg, "The Matrix"), await eid(kg, "Speed")]),
    )
    llm = ScriptedLLM(respond)
    actions = await PromptedPolicy(llm).propose(s, 3)
    assert llm.usage.calls == 1 and "Reply with up to 3 lines" in llm.prompts[0]
    assert [a.relation_id.split(":")[1] for a in actions] == ["directed_by", "release_year"]


async def test_k3_search_values_children_in_one_call_and_answers():
    llm = ScriptedLLM(respond)
    result = await TreeSearch(TraversalASM(make_kg()), PromptedPolicy(llm), SearchConfig(k=3)).run(
        Q
    )
    assert result.status == "answered"
    assert set(result.answer.labels) == {"Lana Wachowski", "Jan de Bont"}
    value_prompts = [p for p in llm.prompts if "SCORE" in p.rsplit("Reply with", 1)[-1]]
    # one batch call for the two relation alternatives, one for the answer
    assert sum("Candidate next steps" in p for p in value_prompts) == 1
    assert len(value_prompts) == 2
    expanded = [n for n in result.nodes if n.expanded_at is not None]
    propose_calls = len(llm.prompts) - len(value_prompts)
    assert propose_calls <= len(expanded)
    assert llm.usage.calls == propose_calls + 2 <= 7
    ranked = [
        n
        for n in result.nodes
        if n.action is not None
        and n.action.kind == "select_relation"
        and len(result.nodes[n.parent].children) > 1
    ]
    assert sorted(n.value for n in ranked) == [0.2, 0.9]


async def test_k1_makes_no_intermediate_value_calls():
    llm = ScriptedLLM(respond)
    result = await TreeSearch(TraversalASM(make_kg()), PromptedPolicy(llm), SearchConfig(k=1)).run(
        Q
    )
    assert result.status == "answered" and "Lana Wachowski" in result.answer.labels
    asked = [p.rsplit("Reply with", 1)[-1] for p in llm.prompts]
    assert sum("SCORE" in a for a in asked) == 1 and "Proposed answer:" in llm.prompts[-1]
    assert all("Reply with exactly one line" in p for p in llm.prompts[:-1])


async def test_batch_false_keeps_the_sampled_protocol():
    state = await TraversalASM(make_kg()).initial_state(Q)
    old = ScriptedLLM(["EXPAND_KG", "EXPAND_KG", "THINK: films first"])
    assert len(await PromptedPolicy(old, batch=False).propose(state, 3)) == 2
    assert old.usage.calls == 3 and len(set(old.prompts)) == 1
    new = ScriptedLLM(respond)
    assert await PromptedPolicy(new).propose(state, 3) == [ExpandKG()]
    assert new.usage.calls == 1


async def test_alternatives_that_reached_nothing_yet_are_ranked_as_proposed_without_a_call():
    """EXPAND_KG beside a THINK (or two entity selections) tell a judge nothing the proposer did not
    know: they keep the model's order, just below their parent; only relation choices, which reached
    something, are judged."""
    from tot_mcp.strategies.tot.actions import Think

    kg = make_kg()
    asm = TraversalASM(kg)
    root = await asm.initial_state(Q)
    kids = [await asm.apply(root, ExpandKG()), await asm.apply(root, Think(text="his films first"))]
    llm = ScriptedLLM(respond)
    values = await PromptedPolicy(llm).values(kids, parent=root, parent_value=0.8)
    assert llm.usage.calls == 0 and values[0] == 0.8 and values[1] < values[0]
    s = await asm.apply(kids[0], SelectEntities(entity_ids=root.topic_entities))
    films = await asm.apply(
        s,
        SelectRelation(
            relation_id="m:starred_actors", direction=s.candidate_relations[0].direction
        ),
    )
    films = await asm.apply(films, ExpandKG())
    films = await asm.apply(
        films, SelectEntities(entity_ids=[await eid(kg, "The Matrix"), await eid(kg, "Speed")])
    )
    two = [
        await asm.apply(films, SelectRelation(relation_id=r.id, direction=r.direction))
        for r in films.candidate_relations[:2]
    ]
    scores = await PromptedPolicy(llm).values(two, parent=films, parent_value=0.8)
    assert llm.usage.calls == 1 and len(scores) == 2


async def test_the_one_call_protocol_decides_a_whole_expansion_in_one_reply():
    """fused: the action prompt lists the newest entities' relations; `EXPAND_KG: <IDs> ->
    <relation>` then needs no entity or relation prompt. A choice that is not valid falls back to
    asking step by step."""
    kg = make_kg()
    asm = TraversalASM(kg)
    s = await asm.initial_state(Q)
    keanu = s.topic_entities[0]
    llm = ScriptedLLM([f"EXPAND_KG: {keanu} -> m:starred_actors backward"])
    policy = PromptedPolicy(llm, kg=kg, fused=True)
    (expand,) = await policy.propose(s, 1)
    assert (
        "Relations of the newest entities (1:" in llm.prompts[0]
        and "m:starred_actors backward" in llm.prompts[0]
    )
    s = await asm.apply(s, expand)
    (select,) = await policy.propose(s, 1)
    s = await asm.apply(s, select)
    (relation,) = await policy.propose(s, 1)
    s = await asm.apply(s, relation)
    assert llm.usage.calls == 1 and len(s.subgraph.expansions) == 1
    assert {s.subgraph.label(i) for i in s.subgraph.expansions[0].entities_added} == {
        "The Matrix",
        "Speed",
    }
    # a relation the films do not have: the relation prompt is asked after all
    films = ", ".join(s.subgraph.expansions[0].entities_added)
    bad = ScriptedLLM(
        [f"EXPAND_KG: {films} -> m:written_by forward", "SELECT_RELATION: m:directed_by forward"]
    )
    p2 = PromptedPolicy(bad, kg=kg, fused=True)
    t = await asm.apply(s, (await p2.propose(s, 1))[0])
    t = await asm.apply(t, (await p2.propose(t, 1))[0])
    assert len(t.candidate_relations) > 1 and bad.usage.calls == 1
    (asked,) = await p2.propose(t, 1)
    assert bad.usage.calls == 2 and asked == SelectRelation(relation_id="m:directed_by")


def newest_line(prompt: str) -> str:
    return next(ln for ln in prompt.splitlines() if ln.startswith("Relations of the newest"))


async def test_the_default_protocol_spends_one_call_a_hop_and_one_to_judge():
    """With a KG the one-call expansion is the default: `EXPAND_KG: NEWEST -> <relation>` per hop
    (NEWEST: what the last hop reached, listed in full), then the answer and its judge — four calls
    for two hops, one tree node per expansion, and the trajectory shows each expansion once."""
    steps = [
        "EXPAND_KG: NEWEST -> m:starred_actors backward",
        "EXPAND_KG: NEWEST -> m:directed_by forward",
        "ANSWER: Lana Wachowski ; Jan de Bont",
    ]

    def reply(prompt: str) -> str:
        if "Proposed answer:" in prompt:
            return "VERDICT: both directors reached over edges.\nSCORE: 1.0"
        done = prompt.split("EXPANSIONS:", 1)[1].count(" → ") if "EXPANSIONS:" in prompt else 0
        return steps[done]

    kg = make_kg()
    llm = ScriptedLLM(reply)
    policy = PromptedPolicy(llm, kg=kg)
    result = await TreeSearch(TraversalASM(kg), policy, SearchConfig(k=3)).run(Q)
    assert result.status == "answered"
    assert set(result.answer.labels) == {"Lana Wachowski", "Jan de Bont"}
    assert llm.usage.calls == 4 and len(result.nodes) == 4  # root, two expansions, the answer
    assert "→ m:directed_by (forward) from" in result.tree_text()  # what each expansion reached
    keanu = await eid(kg, "Keanu Reeves")
    films = ", ".join([await eid(kg, "The Matrix"), await eid(kg, "Speed")])
    assert newest_line(llm.prompts[1]).startswith(
        f"Relations of the newest entities (2: {films}; NEWEST in a reply names all 2"
    )
    trajectory = llm.prompts[2].split("Actions so far:\n", 1)[1].split("\n\n", 1)[0]
    assert trajectory.splitlines() == [
        f"1. EXPAND_KG: {keanu} -> m:starred_actors backward",
        f"2. EXPAND_KG: {films} -> m:directed_by forward",
    ]


async def test_newest_leaves_out_the_question_entity_unless_it_is_all_a_hop_reaches():
    """A walk does not pass back through the question's entity ("films sharing a director with X"
    are the other films), unless it is all a hop reaches ("the spouse of X's spouse")."""
    from tot_mcp.strategies.tot.prompted import newest_entities

    kg = make_kg(
        "m",
        [
            ("Film A", "directed_by", "Dee"),
            ("Film B", "directed_by", "Dee"),
            ("Film C", "directed_by", "Dee"),
            ("Xan", "spouse", "Yul"),
        ],
    )
    asm = TraversalASM(kg)

    async def walk(question: str, relation: str) -> list[str]:
        s = await asm.initial_state(question)
        for direction in (Direction.forward, Direction.backward):
            for a in (
                ExpandKG(),
                SelectEntities(entity_ids=newest_entities(s)),
                SelectRelation(relation_id=relation, direction=direction),
            ):
                s = await asm.apply(s, a)
        return [s.subgraph.label(i) for i in newest_entities(s)]

    others = await walk("which films share a director with [Film A]", "m:directed_by")
    assert sorted(others) == ["Film B", "Film C"]
    assert await walk("who is the spouse of [Xan]'s spouse", "m:spouse") == ["Xan"]


async def test_expansions_decided_in_one_reply_are_valued_together_after_repeats_are_dropped():
    """Three one-line expansions: the inverse relation reaching the same place is dropped before any
    call, and the other two — which reached something — are valued in one call saying what each
    reached."""
    kg = make_kg(
        "m",
        [
            ("Speed", "starred_actors", "Keanu Reeves"),
            ("Keanu Reeves", "acted_in", "Speed"),
            ("Keanu Reeves", "born_in", "Beirut"),
        ],
    )
    three = [
        "EXPAND_KG: NEWEST -> m:acted_in forward",
        "EXPAND_KG: NEWEST -> m:starred_actors backward",
        "EXPAND_KG: NEWEST -> m:born_in forward",
    ]

    def reply(prompt: str) -> str:
        if "Candidate next steps" in prompt:
            return "1. SCORE: 0.9\n2. SCORE: 0.2"
        if "Proposed answer:" in prompt:
            return "VERDICT: reached.\nSCORE: 0.9"
        return "ANSWER: Speed" if "EXPANSIONS:" in prompt else "\n".join(three)

    llm = ScriptedLLM(reply)
    result = await TreeSearch(TraversalASM(kg), PromptedPolicy(llm, kg=kg), SearchConfig(k=3)).run(
        "which films did [Keanu Reeves] act in"
    )
    assert result.answer.labels == ["Speed"] and result.status == "answered"
    valued = [p for p in llm.prompts if "Candidate next steps" in p]
    assert len(valued) == 1 and llm.usage.calls == 4  # propose, value two, propose answer, judge
    listed = valued[0].split("Candidate next steps", 1)[1].split("\n\n", 1)[0]
    assert "-> m:acted_in forward -> 1 new edges, reaching Speed" in listed
    assert "m:born_in forward" in listed and "m:starred_actors" not in listed
    rejected = [r.reason for n in result.nodes for r in n.rejected]
    assert any("reaches what proposal 1 reaches" in r for r in rejected)
