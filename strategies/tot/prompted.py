"""The LLM-driven policy of Tree-of-Traversals: one prompt template per ASM state, k samples per expansion.

Model output is parsed forgivingly (IDs, labels, numbers, upper/lower case, extra prose around the action line);
anything that still does not parse comes back as :class:`Invalid` so the ASM records it and the search can retry
with the reason shown in the next prompt.
"""

from __future__ import annotations

import asyncio
import re

import prompts
from kg_adapters.models import Direction
from kg_adapters.text import key as norm
from strategies.llm.base import LLM, LLMError

from .actions import Action, Answer, ExpandKG, Invalid, SelectEntities, SelectRelation, Think, distinct
from .policy import Policy
from .state import AsmState, TraversalState

_ID_RE = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,31}:[^\s,;|\[\]()]+")


class PromptedPolicy(Policy):
    """:class:`Policy` backed by any :class:`LLM`. ``usage`` is the LLM's own counter (calls and tokens)."""

    def __init__(self, llm: LLM, *, temperature: float = 0.7, max_tokens: int = 256, max_entities: int = 10):
        super().__init__()
        self.llm = llm
        self.usage = llm.usage
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.max_entities = max_entities
        self.system = prompts.load("tot_system").strip()

    # -- proposing ---------------------------------------------------------------------------------------------
    async def propose(self, state: TraversalState, k: int) -> list[Action]:
        prompt = self.prompt_for(state)
        texts = await asyncio.gather(*(self._complete(prompt) for _ in range(k)), return_exceptions=True)
        actions: list[Action] = []
        for t in texts:
            if isinstance(t, LLMError):
                raise t
            if isinstance(t, BaseException):
                raise LLMError(str(t)) from t
            actions.append(parse_action_text(t, state))
        return distinct(actions)

    def prompt_for(self, state: TraversalState) -> str:
        common = {
            "question": state.question,
            "subgraph": state.subgraph.render(),
            "trajectory": trajectory_text(state),
            "feedback": feedback_text(state),
        }
        if state.asm_state is AsmState.SELECTING_ENTITIES:
            return prompts.render("tot_selecting_entities", max_entities=self.max_entities, **common)
        if state.asm_state is AsmState.SELECTING_RELATION:
            return prompts.render(
                "tot_selecting_relation",
                selected=", ".join(f"{i} ({state.subgraph.label(i)})" for i in state.selected_entities),
                candidates=candidates_text(state),
                **common,
            )
        if state.must_answer:
            allowed = "- ANSWER (the maximum depth is reached: you must answer now)"
        else:
            allowed = (
                "- THINK: reason about what is known and what is missing\n"
                "- EXPAND_KG: gather more facts from the knowledge graph\n"
                "- ANSWER: give the final answer once the subgraph supports it"
            )
        return prompts.render("tot_default", allowed=allowed, **common)

    # -- valuing -----------------------------------------------------------------------------------------------
    async def value(self, state: TraversalState) -> float:
        common = {"question": state.question, "subgraph": state.subgraph.render(), "trajectory": trajectory_text(state)}
        if state.asm_state is AsmState.DONE and state.answer is not None:
            ans = state.answer
            shown = ans.text + (f" ({', '.join(ans.entity_ids)})" if ans.entity_ids else "")
            prompt = prompts.render("tot_value_answer", answer=shown, **common)
            fallback = 0.0
        else:
            prompt = prompts.render("tot_value_intermediate", **common)
            fallback = 0.5
        text = await self.llm.complete(prompt, system=self.system, max_tokens=32, temperature=0.0)
        score = parse_score(text)
        return fallback if score is None else score

    async def _complete(self, prompt: str) -> str:
        return await self.llm.complete(
            prompt, system=self.system, max_tokens=self.max_tokens, temperature=self.temperature
        )

    async def aclose(self) -> None:
        close = getattr(self.llm, "aclose", None)
        if close is not None:
            await close()


# -- rendering helpers ---------------------------------------------------------------------------------------------
def trajectory_text(state: TraversalState) -> str:
    if not state.actions:
        return "(none yet)"
    return "\n".join(f"{i + 1}. {a.describe()}" for i, a in enumerate(state.actions))


def feedback_text(state: TraversalState) -> str:
    last = state.last_invalid
    if last is None or last.asm_state is not state.asm_state:
        return ""
    return f"\nYour previous reply was rejected: {last.reason}. Follow the reply format exactly.\n"


def candidates_text(state: TraversalState) -> str:
    lines = []
    for n, r in enumerate(state.candidate_relations, 1):
        meaning = r.label if r.direction is Direction.forward else (r.inverse_label or f"inverse of {r.label}")
        count = f" [{r.count}]" if r.count is not None else ""
        lines.append(f"{n}. {r.id} {r.direction.value}: {meaning}{count}")
    if state.relations_truncated:
        lines.append("(more relations exist; only these are shown)")
    return "\n".join(lines)


# -- parsing -------------------------------------------------------------------------------------------------------
_ACTION_LINE = re.compile(r"^\W*(THINK|EXPAND[_ ]?KG|ANSWER|SELECT[_ ]?ENTITIES|SELECT[_ ]?RELATION)\b\s*:?\s*(.*)$", re.I)


def parse_action_text(text: str, state: TraversalState) -> Action:
    """One model reply → one action for ``state``'s ASM state (or :class:`Invalid` saying why not)."""
    raw = (text or "").strip()
    if not raw:
        return Invalid(raw=raw, reason="empty reply")
    found = None
    for line in raw.splitlines():
        m = _ACTION_LINE.match(line.strip())
        if m:
            found = (m.group(1).upper().replace(" ", "_"), m.group(2).strip())
            break
    if found is None:
        return Invalid(raw=raw[:500], reason="no action line (THINK / EXPAND_KG / ANSWER / SELECT_ENTITIES / SELECT_RELATION)")
    verb, rest = found
    verb = {"EXPANDKG": "EXPAND_KG", "SELECTENTITIES": "SELECT_ENTITIES", "SELECTRELATION": "SELECT_RELATION"}.get(verb, verb)
    if verb == "THINK":
        return Think(text=rest) if rest else Invalid(raw=raw[:500], reason="THINK without a thought")
    if verb == "EXPAND_KG":
        return ExpandKG()
    if verb == "ANSWER":
        return _parse_answer(rest, state, raw)
    if verb == "SELECT_ENTITIES":
        ids = _entity_refs(rest, state)
        if not ids:
            return Invalid(raw=raw[:500], reason="SELECT_ENTITIES names no entity of the local subgraph")
        return SelectEntities(entity_ids=ids)
    return _parse_relation(rest, state, raw)


def _parse_answer(rest: str, state: TraversalState, raw: str) -> Action:
    text, _, id_part = rest.partition("|")
    ids = [i for i in _ID_RE.findall(id_part) if i in state.subgraph.entities]
    if not ids:  # IDs inline with the text, or only labels given
        ids = _entity_refs(rest, state)
    text = _ID_RE.sub("", text).strip(" ,;()[]") or ", ".join(state.subgraph.label(i) for i in ids)
    if not text and not ids:
        return Invalid(raw=raw[:500], reason="ANSWER without an answer")
    return Answer(entity_ids=ids, text=text)


def _entity_refs(text: str, state: TraversalState) -> list[str]:
    """Entity IDs named in ``text``: explicit IDs first, else labels of subgraph entities (comma-separated)."""
    ids = [i for i in _ID_RE.findall(text) if i in state.subgraph.entities]
    if ids:
        return list(dict.fromkeys(ids))
    by_label: dict[str, str] = {}
    for i, e in state.subgraph.entities.items():
        by_label.setdefault(norm(e.label), i)
    out = []
    for part in re.split(r"[,;\n]| and ", text):
        i = by_label.get(norm(part.strip(" .\"'")))
        if i and i not in out:
            out.append(i)
    return out


def _parse_relation(rest: str, state: TraversalState, raw: str) -> Action:
    cands = state.candidate_relations
    if not cands:
        return Invalid(raw=raw[:500], reason="SELECT_RELATION but there are no candidate relations")
    low = rest.lower()
    direction = Direction.backward if "backward" in low else Direction.forward if "forward" in low else None
    chosen = None
    m = re.match(r"^\s*#?(\d+)\b", rest)
    if m and 1 <= int(m.group(1)) <= len(cands):
        chosen = cands[int(m.group(1)) - 1]
        direction = direction or chosen.direction
        if direction is not chosen.direction:
            chosen = next((c for c in cands if c.id == chosen.id and c.direction is direction), chosen)
    else:
        ids = _ID_RE.findall(rest)
        rel_id = next((i for i in ids if any(c.id == i for c in cands)), None)
        if rel_id is None:  # a bare label like "directed by"
            rel_id = next((c.id for c in cands if norm(c.label) and norm(c.label) in norm(rest)), None)
        if rel_id is None:
            return Invalid(raw=raw[:500], reason="SELECT_RELATION names no candidate relation")
        options = [c for c in cands if c.id == rel_id]
        chosen = next((c for c in options if direction is None or c.direction is direction), options[0])
        direction = direction or chosen.direction
    return SelectRelation(relation_id=chosen.id, direction=direction)


def parse_score(text: str) -> float | None:
    """``"SCORE: 0.7"``, ``"0.7"``, ``"7/10"``, ``"85/100"`` → 0..1; None when no number is there."""
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
