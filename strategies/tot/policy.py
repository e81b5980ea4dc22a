"""The policy contract: what the tree search asks of whoever chooses actions (an LLM or the offline
policy)."""

from __future__ import annotations

import abc

from tot_mcp.strategies.llm.base import LLMUsage

from .actions import Action
from .state import TraversalState


class Policy(abc.ABC):
    """Proposes actions and judges states. The driver (:mod:`strategies.tot.search`) guarantees, per
    ``state.asm_state``:

    * ``DEFAULT`` — ``state.subgraph`` holds at least the linked topic entities
      (``state.topic_entities``, may be empty when linking found nothing); ``selected_entities`` and
      ``candidate_relations`` are empty. Valid: :class:`Think`, :class:`Answer` (entity IDs should
      be in the subgraph), :class:`ExpandKG`. When ``state.must_answer`` is true (``state.depth >=
      state.max_depth``) only :class:`Answer` is accepted. An expansion already under way when max
      depth is passed is allowed to finish (as in the paper's code).
    * ``SELECTING_ENTITIES`` — the last action was ExpandKG. Valid: :class:`SelectEntities` with IDs
      that are keys of ``state.subgraph.entities`` (at most ``Limits.max_ids``).
    * ``SELECTING_RELATION`` — ``state.selected_entities`` holds the chosen IDs and
      ``state.candidate_relations`` holds the ``get_relations`` result for them (each Relation with
      its ``direction``; ``relations_truncated`` if capped). Valid: :class:`SelectRelation` whose
      (``relation_id``, ``direction``) is among the candidates.
    * ``DONE`` — only passed to :meth:`value`: ``state.answer`` is the answer to judge.

    ``state.depth`` counts the valid actions taken (``len(state.actions)``);
    ``state.subgraph.expansions[-1]`` is the most recent expansion (with ``edges_added == 0`` when
    it found nothing new). ``state.invalid_actions[-1]`` is the feedback for the most recent
    rejected proposal, if any. States are read-only to policies: never mutate them.
    """

    usage: LLMUsage
    #: the value at which the search accepts an answer (it sets this before it starts), for prompts
    #: to state
    tau: float = 0.8
    #: whether the facts gathered decide what this policy does next, so two branches reaching the
    #: same entities over the same pairs are one place (an LLM reads the subgraph); False for a
    #: policy that reads the relations walked as its plan (the offline policy), for which an inverse
    #: relation or an empty hop is another step
    facts_decide: bool = True

    def __init__(self) -> None:
        self.usage = LLMUsage()

    @abc.abstractmethod
    async def propose(self, state: TraversalState, k: int) -> list[Action]:
        """Up to ``k`` distinct candidate actions for ``state``, best first (fewer is fine; never
        empty unless there is nothing sensible to do). Unparseable model output may be returned as
        :class:`Invalid`."""

    @abc.abstractmethod
    async def value(self, state: TraversalState) -> float:
        """0..1. For a DONE state, how likely ``state.answer`` is correct; otherwise how promising
        the trajectory is for reaching a correct answer."""

    async def values(
        self,
        states: list[TraversalState],
        *,
        parent: TraversalState | None = None,
        parent_value: float | None = None,
    ) -> list[float]:
        """The values of one node's children, in order (``parent`` is the expanded state,
        ``parent_value`` its value). The default asks :meth:`value` once per state; a policy may
        judge them together (one LLM call) or skip judging when there is nothing to rank."""
        return [await self.value(s) for s in states]

    def chosen(self, state: TraversalState) -> Action | None:
        """The action an earlier reply already decided for ``state``, if any (the one-call expansion
        names its entities and relation with EXPAND_KG): the search applies it at once, with no
        call, so one proposal is one node and its alternatives are valued by what they reached. None
        (the default): ask :meth:`propose`."""
        return None

    def caveat(self, state: TraversalState) -> str | None:
        """Why the answer of ``state`` cannot be of the kind the question asks, when the policy
        knows (e.g. the relation the question names is in a KG no walk from its entities reaches);
        reported as a partial answer."""
        return None

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release clients the policy owns."""
