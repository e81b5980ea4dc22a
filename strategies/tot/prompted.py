"""The LLM-driven policy of Tree-of-Traversals: one prompt template per ASM state; one call proposes
up to k distinct actions and one call values a node's children (``batch=False``: the original k
samples, one value call per child).

Model output is parsed forgivingly (IDs, labels, numbers, upper/lower case, extra prose around the
action line); anything that still does not parse comes back as :class:`Invalid` so the ASM records
it and the search can retry with the reason shown in the next prompt.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable

from tot_mcp import prompts
from tot_mcp.kg_adapters.models import Direction, Entity, Relation, inverse_of
from tot_mcp.kg_adapters.text import key as norm
from tot_mcp.strategies.llm.base import LLM, LLMError
from tot_mcp.strategies.llm.replies import read_refusal

from .actions import (
    Action,
    Answer,
    ExpandKG,
    Invalid,
    SelectEntities,
    SelectRelation,
    Think,
    distinct,
)
from .policy import Policy
from .state import DEFAULT_MAX_EDGES, DEFAULT_MAX_SELECTED, ID_RE, AsmState, TraversalState


class PromptedPolicy(Policy):
    """:class:`Policy` backed by any :class:`LLM`. ``usage`` is the LLM's own counter (calls and
    tokens)."""

    #: the proposal calls' sampling temperature, and their reply budget per alternative
    temperature = 0.7
    max_tokens = 400

    def __init__(
        self,
        llm: LLM,
        *,
        max_entities: int = DEFAULT_MAX_SELECTED,
        max_edges: int = DEFAULT_MAX_EDGES,
        batch: bool = True,
        fused: bool = True,
        kg=None,
    ):
        """``batch`` (default) spends calls only where there is a choice: no call when a state has a
        single valid action, one call proposing up to k distinct actions, one call valuing all of a
        node's children, and none for a lone intermediate child (nothing to rank). ``batch=False``
        is the original protocol: the same prompt sampled k times, one value call per child.

        ``fused`` (the default; needs ``kg``) is the one-call protocol: the action prompt also lists
        the relations of the newest entities, and an ``EXPAND_KG: <IDs or NEWEST> -> <relation>
        <direction>`` reply decides the whole expansion, so the entity and relation prompts are
        skipped whenever that choice is still valid (the search carries it through at once,
        :meth:`chosen`). ``fused=False`` is the paper's three-step protocol."""
        super().__init__()
        self.llm = llm
        self.usage = llm.usage
        self.max_entities = max_entities
        self.max_edges = max_edges
        self.batch = batch
        self.fused = fused and kg is not None
        self.kg = kg
        self.system = prompts.load("tot_system").strip()

    # -- proposing ---------------------------------------------------------------------------------
    async def propose(self, state: TraversalState, k: int) -> list[Action]:
        if not self.batch:
            return await self._propose_sampled(state, k)
        state = unfollowed(state)
        only = only_option(state) or chosen_with_expand(state)
        if only is not None:
            return [only]
        frontier = await self._frontier_relations(state) if self.fused else None
        # room for an answer naming every entity of the subgraph (an ID costs ~10 tokens)
        room = self.max_tokens * max(1, min(k, 3)) + 10 * len(state.subgraph.entities)
        text = await self._complete(self.prompt_for(state, k, frontier=frontier), max_tokens=room)
        return parse_action_lines(text, state, newest=newest_entities(state, self.max_entities))[:k]

    def chosen(self, state: TraversalState) -> Action | None:
        return chosen_with_expand(state) if self.fused and self.batch else None

    async def _propose_sampled(self, state: TraversalState, k: int) -> list[Action]:
        state = unfollowed(state)
        prompt = self.prompt_for(state)
        texts = await asyncio.gather(
            *(self._complete(prompt) for _ in range(k)), return_exceptions=True
        )
        failed = next((t for t in texts if isinstance(t, BaseException)), None)
        if isinstance(failed, LLMError):
            raise failed
        if failed is not None:
            raise LLMError(str(failed)) from failed
        return distinct([parse_action_text(t, state) for t in texts if isinstance(t, str)])

    async def _frontier_relations(self, state: TraversalState) -> str | None:
        """For the one-call protocol: the newest entities (:func:`newest_entities`) and their
        relations, as the action prompt lists them."""
        if state.asm_state is not AsmState.DEFAULT or state.must_answer:
            return None
        newest = newest_entities(state, self.max_entities)
        if not newest:
            return None
        try:
            found = await (
                self.kg.get_relations(newest)
                if len(newest) <= self.kg.limits.max_ids
                else self.kg.relation_counts(newest)
            )
        except Exception:  # noqa: BLE001 - the listing is a shortcut; without it the three-step protocol runs
            return None
        if not found.relations:
            return None
        view = state.model_copy(
            update={"candidate_relations": found.relations, "relations_truncated": found.truncated}
        )
        return prompts.render(
            "tot_frontier_relations",
            count=len(newest),
            shown=", ".join(newest),
            relations=candidates_text(view),
        ).rstrip("\n")

    def prompt_for(self, state: TraversalState, k: int = 1, frontier: str | None = None) -> str:
        """The proposal prompt; with ``k`` > 1 it asks for up to k alternative action lines in one
        reply."""
        reply_intro = (
            prompts.load("tot_reply_alternatives").strip().format(k=k)
            if k > 1
            else prompts.load("tot_reply_one").strip()
        )
        common = {
            "reply_intro": reply_intro,
            "question": state.question,
            "subgraph": state.subgraph.render(),
            "trajectory": trajectory_text(state),
            "feedback": feedback_text(state),
            "budget": budget_text(state),
        }
        if state.asm_state is AsmState.SELECTING_ENTITIES:
            return prompts.render(
                "tot_selecting_entities",
                max_entities=self.max_entities,
                max_edges=self.max_edges,
                notes=notes_text(state),
                **common,
            )
        if state.asm_state is AsmState.SELECTING_RELATION:
            return prompts.render(
                "tot_selecting_relation",
                selected=", ".join(
                    f"{i} ({state.subgraph.label(i)})" for i in state.selected_entities
                ),
                candidates=candidates_text(state),
                **common,
            )
        answer = ANSWER_FORMATS
        if state.must_answer:  # the format offers only what is allowed now
            allowed = (
                "- ANSWER (no expansions are left: answer from the subgraph now, or say INCOMPLETE "
                "if it does not reach the answer)"
            )
            formats = answer
        else:
            think = (
                "uses one action: one expansion fewer is left after it"
                if state.think_costs_expansion()
                else "free, but not twice in a row"
            )
            allowed = (
                f"- THINK: reason about what is known and what is missing ({think})\n"
                "- EXPAND_KG: follow one relation one hop from entities you choose next\n"
                "- ANSWER: give the final answer once the subgraph shows it"
            )
            expand = "EXPAND_KG\n"
            if frontier:
                expand = (
                    'EXPAND_KG: <entity IDs separated by ", ", or NEWEST> -> '
                    "<relation ID> <forward|backward>   (the whole expansion in one line: "
                    "usually NEWEST and one of their relations listed above; it keeps at "
                    f"most {self.max_edges} edges, shared fairly among the entities)\n"
                    "EXPAND_KG   (alone: choose the entities and the relation in the next steps)\n"
                )
                common["budget"] = frontier + "\n\n" + common["budget"]
            formats = "THINK: <a short thought about what is still missing>\n" + expand + answer
        rule = prompts.render("tot_answer_rule", tau=f"{self.tau:g}").strip()
        rule += "\n" + notes_text(state)
        return prompts.render(
            "tot_default", allowed=allowed, formats=formats, answer_rule=rule, **common
        )

    # -- valuing -----------------------------------------------------------------------------------
    async def value(self, state: TraversalState) -> float:
        common = {"question": state.question, "subgraph": state.subgraph.render()}
        if state.asm_state is AsmState.DONE and state.answer is not None and state.answer.refuses:
            return 0.0  # a reasoned refusal is a verdict already: judging it again buys nothing
        if state.asm_state is AsmState.DONE and state.answer is not None:
            before = state.model_copy(
                update={"actions": state.actions[:-1], "asm_state": AsmState.DEFAULT}
            )
            prompt = prompts.render(
                "tot_value_answer",
                answer=answer_text(state.answer),
                trajectory=trajectory_text(before),
                scale=self._scale(),
                notes=notes_text(state),
                **common,
            )
            fallback, max_tokens = 0.0, 120  # a one-sentence verdict, then the score
        else:
            prompt = prompts.render(
                "tot_value_intermediate",
                trajectory=trajectory_text(state),
                notes=notes_text(state),
                **common,
            )
            fallback, max_tokens = 0.5, 24
        text = await self.llm.complete(
            prompt, system=self.system, max_tokens=max_tokens, temperature=0.0
        )
        score = parse_score(text)
        return fallback if score is None else score

    async def values(
        self,
        states: list[TraversalState],
        *,
        parent: TraversalState | None = None,
        parent_value: float | None = None,
    ) -> list[float]:
        if not self.batch:
            return [await self.value(s) for s in states]
        answers = [
            i for i, s in enumerate(states) if s.asm_state is AsmState.DONE and s.answer is not None
        ]
        # not judged again (see value)
        refusals = [i for i in answers if (a := states[i].answer) is not None and a.refuses]
        answers = [i for i in answers if i not in refusals]
        steps = [i for i in range(len(states)) if i not in answers and i not in refusals]
        # Only expansions that reached something tell the judge more than the proposer knew:
        # alternatives of one relation choice are valued together; the rest (a THINK beside
        # EXPAND_KG, two entity selections) keep the order the model proposed them in, best first,
        # just below their parent (no call).
        base = 0.5 if parent_value is None else parent_value
        out = {i: base * (1.0 - 0.05 * rank) for rank, i in enumerate(steps)}
        out.update((i, 0.0) for i in refusals)
        reached = [
            i
            for i in steps
            if states[i].actions and isinstance(states[i].actions[-1], SelectRelation)
        ]
        if len(reached) > 1:
            out.update(zip(reached, await self._value_steps([states[i] for i in reached], parent)))
        if len(answers) == 1:  # answers are always judged: τ decides whether the search stops
            out[answers[0]] = await self.value(states[answers[0]])
        elif answers:
            out.update(zip(answers, await self._value_answers([states[i] for i in answers])))
        return [out[i] for i in range(len(states))]  # every index is a step, an answer or a refusal

    async def _value_steps(
        self, states: list[TraversalState], parent: TraversalState | None
    ) -> list[float]:
        base = parent or states[0]
        labels = dict((i, e.label) for s in states for i, e in s.subgraph.entities.items())
        lines = [f"{n}. {step_text(s, base, labels)}" for n, s in enumerate(states, 1)]
        return await self._value_batch("tot_value_batch", base, lines, missing=0.5)

    async def _value_answers(self, states: list[TraversalState]) -> list[float]:
        lines = [f"{n}. {answer_text(s.answer)}" for n, s in enumerate(states, 1)]
        before = states[0].model_copy(
            update={"actions": states[0].actions[:-1]}
        )  # the trajectory up to the answer
        return await self._value_batch("tot_value_answers", before, lines, missing=0.0)

    async def _value_batch(
        self, template: str, base: TraversalState, lines: list[str], missing: float
    ) -> list[float]:
        """One call valuing the numbered candidate ``lines`` from ``base``'s question, subgraph and
        trajectory; ``missing``: the value of a candidate the reply leaves out."""
        prompt = prompts.render(
            template,
            question=base.question,
            subgraph=base.subgraph.render(),
            trajectory=trajectory_text(base),
            candidates="\n".join(lines),
            scale=self._scale(),
            notes=notes_text(base),
        )
        text = await self.llm.complete(
            prompt, system=self.system, max_tokens=12 * len(lines) + 24, temperature=0.0
        )
        return [missing if v is None else v for v in parse_scores(text, len(lines))]

    def _scale(self) -> str:
        """The judge's anchored scale, with the τ at which an answer ends the search."""
        return prompts.render("tot_judge_scale", tau=f"{self.tau:g}").strip()

    async def _complete(self, prompt: str, max_tokens: int | None = None) -> str:
        return await self.llm.complete(
            prompt,
            system=self.system,
            max_tokens=max_tokens or self.max_tokens,
            temperature=self.temperature,
        )

    async def aclose(self) -> None:
        close = getattr(self.llm, "aclose", None)
        if close is not None:
            await close()


def only_option(state: TraversalState) -> Action | None:
    """The single valid action of ``state`` when there is exactly one (no choice: no LLM call), else
    None."""
    if state.asm_state is AsmState.SELECTING_RELATION and len(state.candidate_relations) == 1:
        r = state.candidate_relations[0]
        return SelectRelation(relation_id=r.id, direction=r.direction)
    if state.asm_state is AsmState.SELECTING_ENTITIES and len(state.subgraph.entities) == 1:
        return SelectEntities(entity_ids=list(state.subgraph.entities))
    return None


def unfollowed(state: TraversalState) -> TraversalState:
    """``state`` with the candidate relations already followed from these same entities left out
    (the EXPANSIONS log shows what they gave; following them again adds nothing), unless that leaves
    none."""
    if state.asm_state is not AsmState.SELECTING_RELATION:
        return state
    chosen = set(state.selected_entities)
    done = {
        (x.relation_id, x.direction)
        for x in state.subgraph.expansions
        if chosen <= set(x.entity_ids)
    }
    keep = [r for r in state.candidate_relations if (r.id, r.direction) not in done]
    if not keep or len(keep) == len(state.candidate_relations):
        return state
    return state.model_copy(update={"candidate_relations": keep})


def merged_names(entities: Iterable[Entity]) -> bool:
    """Whether an entity shown is a merged same-name node (its summary says "things named")."""
    return any(e.description and "things named" in e.description for e in entities)


def notes_text(state: TraversalState) -> str:
    """What every prompt that chooses or judges needs to read the subgraph the same way: the walk
    rules, and, when the subgraph shows them, what "(same as …)" and a merged same-name node
    mean."""
    notes = [prompts.load("tot_walk_rules").strip()]
    if state.subgraph.same_as:
        notes.append(prompts.load("tot_same_as").strip())
    if merged_names([*state.subgraph.entities.values(), *state.subgraph.twins.values()]):
        notes.append(prompts.load("merged_names").strip())
    return "\n".join(notes)


def chosen_with_expand(state: TraversalState) -> Action | None:
    """What a one-reply ``EXPAND_KG: <IDs> -> <relation>`` already chose for this state, when still
    valid (and not already turned down here: then the model is asked)."""
    chosen: Action | None = None
    if (
        state.asm_state is AsmState.SELECTING_ENTITIES
        and state.actions
        and isinstance(state.actions[-1], ExpandKG)
    ):
        ids = [i for i in state.actions[-1].entity_ids if i in state.subgraph.entities]
        chosen = SelectEntities(entity_ids=ids) if ids else None
    elif (
        state.asm_state is AsmState.SELECTING_RELATION
        and len(state.actions) >= 2
        and isinstance(state.actions[-2], ExpandKG)
        and state.actions[-2].relation_id
    ):
        x = state.actions[-2]
        direction = f" {x.direction.value}" if x.direction else ""
        chosen = _parse_relation(f"{x.relation_id}{direction}", state, "")
        chosen = None if isinstance(chosen, Invalid) else chosen
    last = state.last_invalid
    if (
        chosen is not None
        and last is not None
        and last.action is not None
        and last.action.key() == chosen.key()
    ):
        return None
    return chosen


def newest_entities(state: TraversalState, limit: int = DEFAULT_MAX_SELECTED) -> list[str]:
    """The entities a next hop usually starts from (``NEWEST`` in a reply): what the last expansion
    that reached anything reached — the question's entities before any. The question's own entities
    (and their twins) are left out unless they are all a hop reached: a walk does not pass back
    through them (the rule the prompts state, and ``plan``'s walk)."""
    sub = state.subgraph
    own = {t for i in state.topic_entities for t in (i, *sub.same_as.get(i, ()))}
    for x in reversed(sub.expansions):
        sources = set(x.entity_ids)
        reached: list[str] = []
        for e in sub.edges:  # an edge is kept once, seen from either end
            if e.relation != x.relation_id or e.target is None:
                continue
            if e.direction is x.direction and (e.via or e.source) in sources:
                reached.append(e.target)
            elif e.direction is not x.direction and e.target in sources:
                reached.append(e.source)
        reached = [i for i in dict.fromkeys(reached) if i in sub.entities]
        if reached:
            return ([i for i in reached if i not in own] or reached)[:limit]
    return [i for i in state.topic_entities if i in sub.entities][:limit]


# -- rendering helpers -----------------------------------------------------------------------------
def trajectory_text(state: TraversalState) -> str:
    """The actions so far, one a line; a one-reply expansion is one line (the steps it decided are
    not repeated), and a long list of IDs is shortened (the EXPANSIONS log names them)."""
    if not state.actions:
        return "(none yet)"
    shown: list[str] = []
    decided: ExpandKG | None = None
    for a in state.actions:
        if decided is not None and (
            (isinstance(a, SelectEntities) and a.entity_ids == decided.entity_ids)
            or (isinstance(a, SelectRelation) and a.relation_id == decided.relation_id)
        ):
            continue
        decided = a if isinstance(a, ExpandKG) and a.entity_ids else None
        shown.append(_short_ids(a.describe()))
    lines = [f"{i + 1}. {text}" for i, text in enumerate(shown)]
    if state.asm_state is AsmState.SELECTING_ENTITIES:
        lines.append("(an expansion is pending: its entities are not chosen yet)")
    elif state.asm_state is AsmState.SELECTING_RELATION:
        lines.append(
            "(an expansion is pending: relation not chosen yet for "
            f"{', '.join(state.selected_entities)})"
        )
    return "\n".join(lines)


def _short_ids(text: str, keep: int = 6) -> str:
    """``text`` with a run of more than ``keep`` comma-separated IDs cut to its first ``keep``."""

    def cut(m: re.Match) -> str:
        ids = m.group(0).split(", ")
        if len(ids) <= keep:
            return m.group(0)
        return ", ".join(ids[:keep]) + f" +{len(ids) - keep} more"

    return re.sub(rf"{ID_RE.pattern}(?:, {ID_RE.pattern})+", cut, text)


def budget_text(state: TraversalState) -> str:
    """The budget in expansions (hops), exactly as the ASM counts it
    (:meth:`TraversalState.expansions_left`)."""
    n = state.expansions_left()
    hop = "an expansion follows one relation one hop from the entities chosen"
    if state.asm_state is not AsmState.DEFAULT:
        return f"This expansion completes once you choose. Expansions left after it: {n}" + (
            " (then you must answer)." if n == 0 else f" ({hop})."
        )
    if n == 0:
        return "Expansions left: 0. You must answer now."
    return f"Expansions left: {n} ({hop}; one begun always completes). Then you must answer."


#: the answer formats every ANSWER prompt offers (and the parser reads)
ANSWER_FORMATS = prompts.load("tot_answer_formats").strip()


def answer_text(ans) -> str:
    """An answer as the value prompts show it: its grounded items once, and what was dropped."""
    if ans.status == "none":
        return "NONE"
    if ans.refuses:
        return ans.describe().removeprefix("ANSWER: ")
    items = " ; ".join(
        f"{it.text} ({it.entity_id})" if it.entity_id else it.text for it in ans.items
    )
    head = "INCOMPLETE: " if ans.status == "incomplete" else ""
    text = head + (items or ans.text or "(nothing)")
    if ans.ungrounded:
        text += f"\n(not shown in the subgraph, dropped: {'; '.join(ans.ungrounded[:5])})"
    return text


def feedback_text(state: TraversalState) -> str:
    last = state.last_invalid
    if last is None or last.asm_state is not state.asm_state:
        return ""
    return f"\nYour previous reply was rejected: {last.reason}. Follow the reply format exactly.\n"


def meaning(r: Relation) -> str:
    """What following ``r`` in its direction means: its label, or its inverse's."""
    return r.label if r.direction is Direction.forward else (r.inverse_label or inverse_of(r.label))


def candidates_text(state: TraversalState) -> str:
    lines = []
    for n, r in enumerate(state.candidate_relations, 1):
        count = f" [{r.count}]" if r.count is not None else ""
        lines.append(f"{n}. {r.id} {r.direction.value}: {meaning(r)}{count}")
    if state.relations_truncated:
        lines.append("(more relations exist; only these are shown)")
    return "\n".join(lines)


def step_text(state: TraversalState, parent: TraversalState, labels: dict[str, str]) -> str:
    """What a child state adds to its parent: the action taken and, for an expansion, what it
    reached (a whole expansion decided in one reply: the entities, the relation and what it
    reached)."""
    if len(state.actions) <= len(parent.actions):
        return "(no change)"
    action = state.actions[-1]
    expanded = len(state.subgraph.expansions) > len(parent.subgraph.expansions)
    if expanded and isinstance(state.actions[len(parent.actions)], ExpandKG):
        x = state.subgraph.expansions[-1]
        who = ", ".join(f"{i} ({labels.get(i, i)})" for i in x.entity_ids[:6])
        more = f" +{len(x.entity_ids) - 6} more" if len(x.entity_ids) > 6 else ""
        text = f"EXPAND_KG: {who}{more} -> {x.relation_id} {x.direction.value}"
    elif isinstance(action, SelectEntities):
        text = "SELECT_ENTITIES: " + ", ".join(
            f"{i} ({labels.get(i, i)})" for i in action.entity_ids
        )
    else:
        text = action.describe()
    if isinstance(action, SelectRelation) and expanded:
        x = state.subgraph.expansions[-1]
        reached = [f"{labels.get(i, i)} ({i})" for i in x.entities_added[:8]]
        more = f", ... (+{len(x.entities_added) - 8} more)" if len(x.entities_added) > 8 else ""
        text += f" -> {x.edges_added} new edges"
        if reached:
            text += f", reaching {', '.join(reached)}{more}"
        if x.note:
            text += f" ({x.note})"
    return text


# -- parsing ---------------------------------------------------------------------------------------
_ACTION_LINE = re.compile(
    r"^\W*(THINK|EXPAND[_ ]?KG|ANSWER|SELECT[_ ]?ENTITIES|SELECT[_ ]?RELATION"
    r"|NOT[_ -]?IN[_ -]?(?:THE[_ -]?)?GRAPH)\b\s*:?\s*(.*)$",
    re.I,
)


def parse_action_text(text: str, state: TraversalState, newest: list[str] | None = None) -> Action:
    """One model reply → one action for ``state``'s ASM state (or :class:`Invalid` saying why not);
    ``newest``: the entities ``EXPAND_KG: NEWEST -> …`` names."""
    raw = (text or "").strip()
    if not raw:
        return Invalid(raw=raw, reason="empty reply")
    m = next(
        (m for m in (_ACTION_LINE.match(line.strip()) for line in raw.splitlines()) if m), None
    )
    if m is None:
        return Invalid(
            raw=raw[:500],
            reason=(
                "no action line (THINK / EXPAND_KG / ANSWER / SELECT_ENTITIES / SELECT_RELATION)"
            ),
        )
    verb, rest = re.sub(r"[_ -]", "", m.group(1).upper()), m.group(2).strip()  # EXPAND KG: EXPANDKG
    if verb == "THINK":
        return (
            Think(text=rest) if rest else Invalid(raw=raw[:500], reason="THINK without a thought")
        )
    if verb == "EXPANDKG":
        return _parse_expand(rest, state, newest)
    if verb == "ANSWER":
        return _parse_answer(rest, state, raw)
    if verb.startswith("NOT"):  # the refusal without its "ANSWER:": what else could it mean
        return _parse_answer(f"NOT_IN_GRAPH: {rest}", state, raw)
    if verb == "SELECTENTITIES":
        ids = _entity_refs(rest, state)
        if not ids:
            return Invalid(
                raw=raw[:500], reason="SELECT_ENTITIES names no entity of the local subgraph"
            )
        return SelectEntities(entity_ids=ids)
    return _parse_relation(rest, state, raw)


def _parse_expand(rest: str, state: TraversalState, newest: list[str] | None = None) -> Action:
    """``EXPAND_KG`` alone, or ``EXPAND_KG: <IDs or NEWEST> -> <relation> <direction>`` (the
    one-call protocol). A choice that names nothing usable is simply dropped: the expansion then
    asks for entities and relation step by step."""
    left, arrow, right = rest.partition("->")
    if left.strip(" .,:;\"'").upper() == "NEWEST":
        ids = list(newest or [])
    else:
        ids = _entity_refs(left, state) if left.strip() else []
    if not ids:
        return ExpandKG()
    relation = direction = None
    if arrow and right.strip():
        direction = _direction_named(right)
        relation = re.sub(r"\b(forward|backward)\b", "", right, flags=re.I).strip(" .,;") or None
    return ExpandKG(entity_ids=ids, relation_id=relation, direction=direction)


def _parse_answer(rest: str, state: TraversalState, raw: str) -> Action:
    """``NONE``; ``INCOMPLETE: items``; ``NOT_IN_GRAPH: <entity|relation> — <reason>`` (a refusal,
    read by :func:`read_refusal`); ``item ; item ; ...`` (IDs, names or values); or the older
    ``text | IDs`` (the text's items when the subgraph shows them, else the IDs). Grounding is the
    ASM's: here only the claims."""
    body = rest.strip()
    refusal = read_refusal(body)
    if refusal is not None:
        return Answer(status=refusal.status, text=refusal.reason)
    head = body.split(None, 1)[0].strip(" :.,|-").upper() if body else ""
    if head == "NONE" and len(body.strip(" |")) <= 6:
        return Answer(status="none", text="NONE")
    # "INCOMPLETE: …", or the older prompts' "Unknown - the subgraph has no … |"
    status = "incomplete" if head in _NOT_REACHED else "answer"
    if head == "INCOMPLETE":
        body = body[len(head) :].lstrip(" :-|")
    sub = state.subgraph
    text, bar, id_part = body.partition("|")
    ids = [i for i in ID_RE.findall(id_part) if i in sub.entities]
    if head == "UNKNOWN":  # the sentence is the text; only IDs after "|" are claims
        return Answer(claims=ids, status=status, text=text.strip())
    claims = _split_items(text, state)
    if bar:
        grounded = [g for g in (sub.ground(c) for c in claims) if g is not None]
        values = [g for g in grounded if g.entity_id is None]
        others = [g for g in grounded if g.entity_id and g.entity_id not in ids]
        if (
            ids and not values and not others
        ):  # the text names the cited IDs: the IDs say it exactly
            claims = ids
        elif ids and not values:
            claims = ids + [g.entity_id for g in others]
        claims = claims or ids
    if not claims and status == "answer":
        return Invalid(raw=raw[:500], reason="ANSWER without an answer")
    return Answer(claims=claims, status=status, text=text.strip())


#: first words of an answer that says the subgraph did not reach the answer
_NOT_REACHED = {"INCOMPLETE", "UNKNOWN"}


def _split_items(text: str, state: TraversalState) -> list[str]:
    """Answer items: separated by ``;`` (or new lines); a single item with commas is split on them
    too when more of its pieces are shown in the subgraph than the whole ("Nick Carter, Master
    Detective" stays whole)."""
    parts = [p.strip(" \"'") for p in re.split(r"[;\n]", text) if p.strip(" .\"'")]
    if len(parts) == 1 and "," in parts[0]:
        pieces = [p.strip(" \"'") for p in parts[0].split(",") if p.strip(" .\"'")]
        sub = state.subgraph
        if sum(sub.ground(p) is not None for p in pieces) > (sub.ground(parts[0]) is not None):
            parts = pieces
    return parts


def _entity_refs(text: str, state: TraversalState) -> list[str]:
    """Entity IDs named in ``text``: explicit IDs first — a twin shown in a summary ("same as
    catalog:E1") read as the entity it is the same as — else labels of subgraph entities
    (comma-separated)."""
    sub = state.subgraph
    ids = [
        i
        if i in sub.entities
        else next((o for o in sub.same_as.get(i, ()) if o in sub.entities), None)
        for i in ID_RE.findall(text)
    ]
    found = [i for i in ids if i is not None]
    if found:
        return list(dict.fromkeys(found))
    by_label: dict[str, str] = {}
    for i, e in state.subgraph.entities.items():
        by_label.setdefault(norm(e.label), i)
    out = []
    for part in re.split(r"[,;\n]| and ", text):
        hit = by_label.get(norm(part.strip(" .\"'")))
        if hit and hit not in out:
            out.append(hit)
    return out


def _direction_named(text: str) -> Direction | None:
    """The direction a reply names (``backward`` wins when it names both), or None."""
    low = text.lower()
    return (
        Direction.backward if "backward" in low else Direction.forward if "forward" in low else None
    )


def _parse_relation(rest: str, state: TraversalState, raw: str) -> Action:
    cands = state.candidate_relations
    if not cands:
        return Invalid(raw=raw[:500], reason="SELECT_RELATION but there are no candidate relations")
    direction = _direction_named(rest)
    chosen = None
    m = re.match(r"^\s*#?(\d+)\b", rest)
    if m and 1 <= int(m.group(1)) <= len(cands):
        chosen = cands[int(m.group(1)) - 1]
        direction = direction or chosen.direction
        if direction is not chosen.direction:
            chosen = next(
                (c for c in cands if c.id == chosen.id and c.direction is direction), chosen
            )
    else:
        ids = ID_RE.findall(rest)
        rel_id = next((i for i in ids if any(c.id == i for c in cands)), None)
        if rel_id is None:  # a bare label like "directed by"
            rel_id = next(
                (c.id for c in cands if norm(c.label) and norm(c.label) in norm(rest)), None
            )
        if rel_id is None:
            return Invalid(raw=raw[:500], reason="SELECT_RELATION names no candidate relation")
        options = [c for c in cands if c.id == rel_id]
        chosen = next(
            (c for c in options if direction is None or c.direction is direction), options[0]
        )
        direction = direction or chosen.direction
    return SelectRelation(relation_id=chosen.id, direction=direction)


_LIST_MARK = re.compile(r"^\s*(?:\(?\d{1,2}[.):]|[-*\u2022])\s+")


def parse_action_lines(
    text: str, state: TraversalState, newest: list[str] | None = None
) -> list[Action]:
    """A reply listing alternative actions, one a line (list markers allowed) → the distinct parsed
    actions, best first. Lines that do not parse are dropped when another line does; a reply with no
    usable line gives one :class:`Invalid` (via :func:`parse_action_text`) so the rejection is
    recorded and fed back. ``newest``: the entities ``NEWEST`` names (the prompt listed them)."""
    actions: list[Action] = []
    for line in (text or "").splitlines():
        line = _LIST_MARK.sub("", line.strip())
        if _ACTION_LINE.match(line):
            actions.append(parse_action_text(line, state, newest))
    valid = [a for a in actions if not isinstance(a, Invalid)]
    if valid:
        return distinct(valid)
    return [actions[0] if actions else parse_action_text(text, state, newest)]


def parse_scores(text: str, n: int) -> list[float | None]:
    """One score per candidate from a reply like ``1. SCORE: 0.8`` / ``2: score 0.1`` (or bare
    numbers a line, in order); None for a candidate the reply leaves out."""
    out: list[float | None] = [None] * n
    for line in (text or "").splitlines():
        line = line.strip()
        if not line:
            continue
        m = re.search(r"score", line, re.I)
        idx = None
        if m:
            num = re.search(r"(\d+)", line[: m.start()])
            idx = int(num.group(1)) - 1 if num else None
            value = parse_score(line[m.start() :])
        else:
            value = parse_score(
                _LIST_MARK.sub("", line) if re.match(r"^\s*\d+[.):]\s+\S", line) else line
            )
            lead = re.match(r"^\s*(\d+)[.):]\s+\S", line)
            idx = int(lead.group(1)) - 1 if lead else None
        if value is None:
            continue
        if idx is None or not 0 <= idx < n or out[idx] is not None:
            idx = next((i for i, v in enumerate(out) if v is None), None)
        if idx is not None:
            out[idx] = value
    return out


def parse_score(text: str) -> float | None:
    """``"SCORE: 0.7"``, ``"0.7"``, ``"7/10"``, ``"85/100"`` → 0..1; None when no number is
    there."""
    if not text:
        return None
    m = re.search(r"score\s*[:=]?\s*(-?\d+(?:\.\d+)?)\s*(?:/\s*(10|100)\b)?", text, re.I)
    if m is None:
        m = re.search(r"(-?\d+(?:\.\d+)?)\s*(?:/\s*(10|100)\b)?", text)
    if m is None:
        return None
    v = float(m.group(1))
    if m.group(2):
        v /= float(m.group(2))
    elif v > 1.0 and v <= 10.0:
        v /= 10.0
    elif v > 10.0:
        v /= 100.0
    return min(1.0, max(0.0, v))
