"""Best-first tree search over ASM states (the "tree" of Tree-of-Traversals; k=1 is
Chain-of-Traversals).

Each expansion takes the most valuable unexpanded node (ties → deeper, then older), asks the policy
for up to k distinct actions, applies each through the ASM and scores the new children with the
policy's value function (all of one node's children in one :meth:`Policy.values` call).
Because every unexpanded node stays on the frontier, a branch whose children score low is abandoned
for a better node elsewhere: that is the backtracking. The search stops when an answer scores ≥ τ —
unless the model ranked another action above it (on the answer's own path, a sibling proposed before
it) whose branch still holds a node valued higher: that branch is searched first
(docs/tot-search.md, "Where this differs from the paper"). A node in DEFAULT at depth ≥ max_depth
may only answer; after ``max_expansions`` it returns its best answer so far (status ``below_tau``)
or gives up (``no_answer``).

Calls go where they can change the answer: a child that repeats a node already in the tree, or a
sibling's expansion that reached the same entities over the same pairs (an inverse relation), or an
expansion that found nothing beside one that found something, is dropped before any value call; a
THINK proposed beside other actions is dropped (whatever it leads to, the expansion already does);
an answer already judged elsewhere keeps its value; and once an answer valued at least ``floor`` is
in hand, nodes valued below ``floor`` are not expanded.

It also stops at once when the model's best proposal is a reasoned refusal (``NOT_IN_GRAPH``:
status ``unsupported`` or ``no_entity``, its reason kept): searching on cannot find what the graph
lacks. A refusal offered only as a lower-ranked alternative stays in the tree, valued 0 without a
judge, as the outcome should nothing better be found.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Literal, cast

from pydantic import BaseModel, Field

from tot_mcp.kg_adapters.models import Direction
from tot_mcp.strategies.llm.base import LLMError, LLMUsage

from .actions import Action, Answer, AnswerItem, ExpandKG, Invalid, Think, distinct
from .asm import TraversalASM, was_rejected
from .policy import Policy
from .state import DEFAULT_MAX_HOPS, AsmState, InvalidAction, LocalSubgraph, TraversalState


class SearchConfig(BaseModel):
    k: int = Field(
        default=3, ge=1, le=10, description="Branching factor: actions sampled per expansion."
    )
    max_hops: int | None = Field(
        default=DEFAULT_MAX_HOPS,
        ge=1,
        le=10,
        description="Expansions (hops) a trajectory may begin before it must answer.",
    )
    max_depth: int | None = Field(
        default=None,
        ge=1,
        le=50,
        description="The paper's budget instead: actions "
        "before an answer is forced (an expansion takes 3; the paper used 7).",
    )
    tau: float = Field(
        default=0.8, ge=0.0, le=1.0, description="Accept an answer whose value reaches this."
    )
    max_expansions: int = Field(
        default=25,
        ge=1,
        le=500,
        description=(
            "Give up after this many search steps: a node expanded, or a step a reply decided "
            "ahead (ASM steps, as the paper counts)."
        ),
    )
    invalid_penalty: float = Field(
        default=0.1, ge=0.0, le=1.0, description="Value lost by a retry node."
    )
    floor: float = Field(
        default=0.3,
        ge=0.0,
        le=1.0,
        description="Once an answer valued at least this is in "
        "hand, nodes valued below it are not expanded.",
    )


class StateSummary(BaseModel):
    """What a trace needs of a node's state (the full subgraph is kept only for the result)."""

    asm_state: AsmState
    depth: int
    entities: int
    edges: int
    selected_entities: list[str] = Field(default_factory=list)
    candidate_relations: list[str] = Field(
        default_factory=list, description="'id (direction)' strings."
    )
    last_expansion: str | None = None

    @classmethod
    def of(cls, state: TraversalState) -> "StateSummary":
        last = None
        if state.subgraph.expansions:
            x = state.subgraph.expansions[-1]
            last = (
                f"{x.relation_id} ({x.direction.value}) from {', '.join(x.entity_ids)}: "
                f"+{x.edges_added} edges"
            )
            if x.note:
                last += f" — {x.note}"
        return cls(
            asm_state=state.asm_state,
            depth=state.depth,
            entities=len(state.subgraph.entities),
            edges=len(state.subgraph.edges),
            selected_entities=list(state.selected_entities),
            candidate_relations=[
                f"{r.id}{' (backward)' if r.direction is Direction.backward else ''}"
                for r in state.candidate_relations
            ],
            last_expansion=last,
        )


SearchStatus = Literal[
    "answered", "below_tau", "incomplete", "unsupported", "no_entity", "no_answer"
]


class SearchNode(BaseModel):
    id: int
    parent: int | None = None
    action: Action | None = None
    value: float | None = None
    depth: int = 0
    retry: bool = Field(
        default=False, description="A node that only carries rejected proposals as feedback."
    )
    expanded_at: int | None = Field(
        default=None, description="Order in which this node was expanded (0-based)."
    )
    children: list[int] = Field(default_factory=list)
    rejected: list[InvalidAction] = Field(
        default_factory=list, description="Proposals the ASM turned down here."
    )
    summary: StateSummary
    state: TraversalState | None = Field(
        default=None, exclude=True, description="In memory only; not serialised."
    )

    @property
    def terminal(self) -> bool:
        return self.summary.asm_state is AsmState.DONE


class RankedAnswer(BaseModel):
    """The answer as reported: the model's items as the subgraph shows them (entities and values),
    best first."""

    items: list[AnswerItem] = Field(default_factory=list)
    entity_ids: list[str] = Field(default_factory=list, description="The items that are entities.")
    labels: list[str] = Field(
        default_factory=list, description="The items' names (entity labels or values)."
    )
    text: str = ""
    dropped: list[str] = Field(
        default_factory=list,
        description="Items the model gave that the subgraph does not show (not reported).",
    )


class SearchResult(BaseModel):
    question: str
    status: SearchStatus
    reason: str = Field(default="", description="One line: why the graph cannot answer.")
    answer: RankedAnswer = Field(default_factory=RankedAnswer)
    value: float = 0.0
    expansions: int = 0
    nodes: list[SearchNode] = Field(default_factory=list)
    path: list[int] = Field(
        default_factory=list, description="Node IDs from the root to the answer node."
    )
    subgraph: LocalSubgraph = Field(default_factory=LocalSubgraph)
    subgraph_text: str = ""
    topic_entities: list[str] = Field(default_factory=list)
    labels: dict[str, str] = Field(
        default_factory=dict, description="Label of every entity seen in the tree."
    )
    usage: LLMUsage = Field(default_factory=LLMUsage)
    latency_s: float = 0.0
    config: SearchConfig = Field(default_factory=SearchConfig)
    error: str | None = None
    partial: bool = Field(default=False, description="The answer set is known to be incomplete.")
    partial_reason: str = ""

    def tree_text(self) -> str:
        """The search tree, indented, one node a line, the chosen path marked with ``*``."""
        by_id = {n.id: n for n in self.nodes}
        labels = dict(self.labels)
        labels.update((i, e.label) for i, e in self.subgraph.entities.items())
        on_path = set(self.path)
        lines: list[str] = []

        def walk(node_id: int, indent: int) -> None:
            n = by_id[node_id]
            what = describe_action(n.action, labels) if n.action else f"ROOT: {self.question}"
            if n.retry:
                what = "RETRY (the proposals above were rejected)"
            val = "  -" if n.value is None else f"{n.value:.2f}"
            mark = "*" if node_id in on_path else " "
            order = f" #{n.expanded_at}" if n.expanded_at is not None else ""
            lines.append(f"{mark} {'  ' * indent}[{val}] {what}{order}")
            done_here = n.action is not None and (
                n.action.kind == "select_relation"
                or (n.action.kind == "expand_kg" and n.summary.asm_state is AsmState.DEFAULT)
            )
            if done_here and n.summary.last_expansion:  # the expansion this node completed
                lines.append(f"  {'  ' * indent}    → {n.summary.last_expansion}")
            for r in n.rejected:
                lines.append(f"  {'  ' * indent}    ✗ rejected: {r.reason}")
            for c in n.children:
                walk(c, indent + 1)

        if self.nodes:
            walk(self.nodes[0].id, 0)
        return "\n".join(lines)


def describe_action(action: Action, labels: dict[str, str]) -> str:
    """Like ``action.describe()`` but entity IDs are shown with their labels when known."""

    def name(i: str) -> str:
        return f"{labels[i]} ({i})" if i in labels else i

    if action.kind == "select_entities":
        return "SELECT_ENTITIES: " + ", ".join(name(i) for i in action.entity_ids)  # type: ignore[union-attr]
    if action.kind == "answer" and action.entity_ids:  # type: ignore[union-attr]
        return f"ANSWER: {action.text} [{', '.join(action.entity_ids)}]"  # type: ignore[union-attr]
    return action.describe()


class SearchProgress(BaseModel):
    expansions: int
    max_expansions: int
    node: int
    best_answer_value: float | None = None
    message: str = ""


ProgressCallback = Callable[[SearchProgress], Awaitable[None] | None]


class TreeSearch:
    """Runs Tree-of-Traversals for one question with a given policy over the ASM's KGs."""

    def __init__(
        self, asm: TraversalASM, policy: Policy, config: SearchConfig | None = None
    ) -> None:
        self.asm = asm
        self.policy = policy
        self.config = config or SearchConfig()
        self._judged: dict[tuple, float] = {}

    async def run(self, question: str, progress: ProgressCallback | None = None) -> SearchResult:
        started = time.perf_counter()
        usage_before = self.policy.usage.snapshot()
        cfg = self.config
        self.policy.tau = cfg.tau
        root_state = await self.asm.initial_state(
            question, max_depth=cfg.max_depth, max_hops=cfg.max_hops
        )
        nodes: list[SearchNode] = [
            SearchNode(id=0, value=1.0, state=root_state, summary=StateSummary.of(root_state))
        ]
        best_answer: SearchNode | None = None
        expansions = order = 0  # ASM steps taken (the budget), nodes expanded
        error: str | None = None
        seen: dict[tuple, int] = {
            root_state.signature(): 0
        }  # duplicate detection (a transposition table)
        self._judged = {}  # answers valued so far, by what they answer
        while expansions < cfg.max_expansions:
            floor = (
                cfg.floor
                if best_answer is not None
                and not _refuses(best_answer)
                and (best_answer.value or 0) >= cfg.floor
                and self.policy.facts_decide
                else 0.0
            )
            held = (
                best_answer is not None and (best_answer.value or 0) >= cfg.tau
            )  # held up by what ranks above
            node = self._select(
                nodes, within=self._ranked_above(best_answer, nodes) if held else None, floor=floor
            )
            if node is None:
                break
            node.expanded_at = order
            order += 1
            expansions += 1
            try:
                refused, steps = await self._expand(node, nodes, seen)
            except LLMError as e:
                error = f"LLM failed: {e}"
                break
            expansions += steps  # steps a reply decided ahead are ASM steps: the budget has them
            for cid in node.children:
                child = nodes[cid]
                if child.terminal and (
                    best_answer is None or _better(child, best_answer, self.policy.facts_decide)
                ):
                    best_answer = child
            if refused is not None:
                best_answer = refused
            if progress is not None:
                msg = node.action.describe() if node.action else "root"
                report = progress(
                    SearchProgress(
                        expansions=expansions,
                        max_expansions=cfg.max_expansions,
                        node=node.id,
                        best_answer_value=best_answer.value if best_answer else None,
                        message=f"expanded {msg}",
                    )
                )
                if inspect.isawaitable(report):
                    await report
            if refused is not None:
                break
            if (
                best_answer is not None
                and (best_answer.value or 0) >= cfg.tau
                and not self._ranked_above(best_answer, nodes)
            ):
                break
        return self._result(question, nodes, best_answer, expansions, usage_before, started, error)

    # -- internals ---------------------------------------------------------------------------------
    @staticmethod
    def _select(
        nodes: list[SearchNode], within: list[SearchNode] | None = None, floor: float = 0.0
    ) -> SearchNode | None:
        """Most valuable unexpanded, non-terminal node (of ``within`` when given), valued at least
        ``floor``; ties → deeper, then the earlier one."""
        pool = within or nodes
        open_nodes = (
            n
            for n in pool
            if n.expanded_at is None and not n.terminal and (n.value or 0.0) >= floor
        )
        return max(
            open_nodes, key=lambda n: (n.value or 0.0, n.depth), default=None
        )  # max keeps the first of ties

    @staticmethod
    def _ranked_above(answer: SearchNode | None, nodes: list[SearchNode]) -> list[SearchNode]:
        """The open nodes that keep an answer from ending the search: in the branches of siblings
        the model proposed before a node on the answer's path, those valued higher than the answer.
        The paper stops at the first answer ≥ τ; here an answer given "just in case" beside the
        expansion the model ranked first waits for that expansion. Alternatives ranked below the
        path never hold it up."""
        if answer is None or _refuses(answer):
            return []
        bar = answer.value or 0.0
        out: list[SearchNode] = []
        cur = answer
        while cur.parent is not None:
            parent = nodes[cur.parent]
            for sid in parent.children[: parent.children.index(cur.id)]:
                stack = [nodes[sid]]
                while stack:
                    n = stack.pop()
                    stack.extend(nodes[c] for c in n.children)
                    if n.expanded_at is None and not n.terminal and (n.value or 0.0) > bar:
                        out.append(n)
            cur = parent
        return out

    async def _expand(
        self, node: SearchNode, nodes: list[SearchNode], seen: dict[tuple, int]
    ) -> tuple[SearchNode | None, int]:
        """Apply the policy's proposals; a child that repeats a node already in the tree (the same
        facts, state, selection and budget) or a sibling's place is dropped before it is valued, so
        backtracking goes somewhere new instead of paying again for the same calls. A THINK is kept
        (beside an answer it is the "not yet" branch) unless EXPAND_KG is proposed beside it: its
        branch would only redo that expansion. A proposal that already decided its next steps
        (:meth:`Policy.chosen`) is carried through them: its child holds what the whole expansion
        reached.

        Returns the refusal child when the model's best valid proposal is a reasoned refusal (the
        search ends there, and no value call is made: the model said why; a judge adds nothing), and
        how many decided steps were applied."""
        state = _state_of(node)
        proposals: list[Action] = distinct(await self.policy.propose(state, self.config.k))[
            : self.config.k
        ]
        if (
            any(isinstance(a, ExpandKG) for a in proposals) and self.policy.facts_decide
        ):  # it would redo it
            node.rejected += [
                InvalidAction(
                    asm_state=state.asm_state,
                    action=a,
                    reason="a thought beside EXPAND_KG: the expansion is the step",
                )
                for a in proposals
                if isinstance(a, Think)
            ]
            proposals = [a for a in proposals if not isinstance(a, Think)]
        last_rejected: TraversalState | None = None
        repeats = steps = 0
        kept: list[TraversalState] = []
        for action in proposals:
            new_state = await self.asm.apply(state, action)
            if was_rejected(state, new_state):
                node.rejected.append(new_state.invalid_actions[-1])
                last_rejected = new_state
                continue
            new_state, ahead = await self._carry_through(new_state)
            steps += ahead
            if not isinstance(action, Think):
                sig = new_state.signature()
                reason = (
                    f"repeats node {seen[sig]}"
                    if sig in seen
                    else (_same_place(new_state, kept, state) if self.policy.facts_decide else "")
                )
                if reason:
                    node.rejected.append(
                        InvalidAction(
                            asm_state=state.asm_state,
                            action=new_state.actions[-1],
                            reason=f"{reason}: nothing new",
                        )
                    )
                    repeats += 1
                    continue
            kept.append(new_state)
        found = [s for s in kept if (x := _expansion_of(s, state)) is None or x.edges_added]
        for s in kept:
            if (
                found and s not in found and self.policy.facts_decide
            ):  # empty, beside one that found something
                node.rejected.append(
                    InvalidAction(
                        asm_state=state.asm_state,
                        action=s.actions[-1],
                        reason="the expansion found nothing new",
                    )
                )
                repeats += 1
                continue
            if not isinstance(s.actions[-1], Think):
                seen[s.signature()] = len(nodes)
            # the child's action is the proposal (as applied), not the steps it decided ahead
            _add_child(node, nodes, s, action=s.actions[len(state.actions)])
        first = nodes[node.children[0]] if node.children else None
        if first is not None and _refuses(first):
            first.value = 0.0
            return first, steps
        if node.children:
            # All children judged together (one call for an LLM policy; the default asks per child);
            # an answer judged before elsewhere in the tree keeps that value and is not judged
            # again.
            kids = [nodes[c] for c in node.children]
            key = {c.id: _answer_key(c, self.policy.facts_decide) for c in kids}
            fresh = [c for c in kids if key[c.id] is None or key[c.id] not in self._judged]
            for c in kids:
                if (k := key[c.id]) is not None and k in self._judged:
                    c.value = self._judged[k]
            if fresh:
                scores = await self.policy.values(
                    [_state_of(c) for c in fresh], parent=state, parent_value=node.value
                )
                for c, v in zip(fresh, list(scores) + [None] * (len(fresh) - len(scores))):
                    c.value = _clamp(v)
                    if (k := key[c.id]) is not None:
                        self._judged[k] = c.value
        if not node.children and not repeats:  # (every proposal a repeat: a dead end, not a retry)
            # Nothing valid came back: keep one retry node carrying the feedback so the policy can
            # try again, valued a little below its parent so an alternative elsewhere wins ties.
            _add_child(
                node,
                nodes,
                last_rejected or self._no_proposal(state),
                retry=True,
                value=max(0.0, (node.value or 0.0) - self.config.invalid_penalty),
            )
        return None, steps

    async def _carry_through(self, state: TraversalState) -> tuple[TraversalState, int]:
        """``state`` after the steps the policy already decided for it (no call), and how many were
        applied. A decided step the ASM turns down stops there, its rejection kept as feedback for
        the next prompt."""
        steps = 0
        while (action := self.policy.chosen(state)) is not None:
            new = await self.asm.apply(state, action)
            steps += 1
            if was_rejected(state, new):
                return new, steps
            state = new
        return state, steps

    @staticmethod
    def _no_proposal(state: TraversalState) -> TraversalState:
        new = state.fork()
        new.invalid_actions.append(
            InvalidAction(
                asm_state=state.asm_state,
                action=Invalid(reason="no action proposed"),
                reason="no action proposed",
            )
        )
        return new

    def _result(
        self,
        question: str,
        nodes: list[SearchNode],
        best: SearchNode | None,
        expansions: int,
        usage_before: LLMUsage,
        started: float,
        error: str | None,
    ) -> SearchResult:
        partial, why, reason = False, "", ""
        status: SearchStatus
        refusal = _refusal(best) if best is not None else None
        if (
            best is not None and refusal is not None
        ):  # the graph does not have this: nothing answers
            status = cast(SearchStatus, refusal.status)  # a refusal's is one of REFUSALS
            answer, reason = RankedAnswer(), refusal.text
            path = _path_to(best, nodes)
            final = _state_of(best)
        elif best is not None:
            final = _state_of(best)
            ans = final.answer
            assert ans is not None
            status = "answered" if (best.value or 0) >= self.config.tau else "below_tau"
            if ans.status == "incomplete":
                status = "incomplete"
            answer = RankedAnswer(
                items=list(ans.items),
                entity_ids=list(ans.entity_ids),
                labels=[it.text for it in ans.items],
                text=ans.text,
                dropped=list(ans.ungrounded),
            )
            partial, why = partial_reason(final)
            caveat = self.policy.caveat(final)
            if caveat:
                partial, why = True, caveat + (f"; {why}" if why else "")
            path = _path_to(best, nodes)
        else:
            status, answer, path = "no_answer", RankedAnswer(text="no answer found"), []
            expanded = [n for n in nodes if n.expanded_at is not None] or nodes
            final = _state_of(max(expanded, key=lambda n: (n.value or 0.0, n.depth)))
        labels: dict[str, str] = {}
        for n in nodes:
            if n.state is not None:
                for i, e in n.state.subgraph.entities.items():
                    labels.setdefault(i, e.label)
        return SearchResult(
            question=question,
            labels=labels,
            status=status,
            answer=answer,
            value=(best.value or 0.0) if best else 0.0,
            expansions=expansions,
            nodes=nodes,
            path=path,
            subgraph=final.subgraph,
            subgraph_text=final.subgraph.render(),
            topic_entities=list(_state_of(nodes[0]).topic_entities),
            usage=self.policy.usage.since(usage_before),
            latency_s=time.perf_counter() - started,
            config=self.config,
            error=error,
            partial=partial,
            partial_reason=why,
            reason=reason,
        )


def _add_child(node: SearchNode, nodes: list[SearchNode], state: TraversalState, **fields) -> None:
    """A new node one step below ``node`` holding ``state`` (``fields``: its action, or that it is a
    retry)."""
    child = SearchNode(
        id=len(nodes),
        parent=node.id,
        depth=node.depth + 1,
        state=state,
        summary=StateSummary.of(state),
        **fields,
    )
    nodes.append(child)
    node.children.append(child.id)


def _expansion_of(child: TraversalState, parent: TraversalState):
    """The expansion ``child`` completed over ``parent``, if its step was one."""
    if len(child.subgraph.expansions) > len(parent.subgraph.expansions):
        return child.subgraph.expansions[-1]
    return None


def _pairs(state: TraversalState) -> frozenset:
    return frozenset(
        frozenset((e.source, e.target)) for e in state.subgraph.edges if e.target is not None
    )


def _same_place(new: TraversalState, siblings: list[TraversalState], parent: TraversalState) -> str:
    """Why ``new`` adds nothing its siblings have not: an expansion reaching the same entities
    joined in the same pairs as one ranked before it (e.g. a relation and its inverse: "children"
    forward, "parents" backward), or "". The model's first choice is kept; valuing and searching the
    second would decide the same place again."""
    if _expansion_of(new, parent) is None:
        return ""
    for n, s in enumerate(siblings, 1):
        if _expansion_of(s, parent) is None:
            continue
        if set(s.subgraph.entities) == set(new.subgraph.entities) and _pairs(s) == _pairs(new):
            return f"reaches what proposal {n} reaches"
    return ""


def _answer_key(node: SearchNode, facts_decide: bool = True) -> tuple | None:
    """What an answer node answers (status and items), for judging it once; None for other nodes."""
    ans = node.state.answer if node.state is not None and node.terminal and facts_decide else None
    if ans is None or ans.refuses:
        return None
    return (ans.status, frozenset(it.id for it in ans.items) or ans.text)


def _better(a: SearchNode, b: SearchNode, by_items: bool = True) -> bool:
    """Whether answer ``a`` beats the best so far, ``b``: valued higher, or (``by_items``) as high
    with more of its items entities of the graph (an entity reached over an edge over a name read in
    a summary)."""
    va, vb = a.value or 0.0, b.value or 0.0
    if va != vb or not by_items:
        return va > vb
    ents = lambda n: len(n.state.answer.entity_ids) if n.state is not None and n.state.answer else 0  # noqa: E731
    return ents(a) > ents(b)


def _refuses(node: SearchNode) -> bool:
    return _refusal(node) is not None


def _refusal(node: SearchNode) -> Answer | None:
    """The node's answer when it is a reasoned refusal (the search ends there)."""
    answer = node.state.answer if node.terminal and node.state is not None else None
    return answer if answer is not None and answer.refuses else None


def _state_of(node: SearchNode) -> TraversalState:
    """The state of a node of a running search: each holds one (only a node read back from JSON
    has none, and is never searched)."""
    if node.state is None:
        raise ValueError(f"node {node.id} has no state: a search node read back cannot be searched")
    return node.state


def _path_to(node: SearchNode, nodes: list[SearchNode]) -> list[int]:
    """Node IDs from the root to ``node``."""
    path: list[int] = []
    cur: SearchNode | None = node
    while cur is not None:
        path.append(cur.id)
        cur = nodes[cur.parent] if cur.parent is not None else None
    return path[::-1]


def partial_reason(state: TraversalState) -> tuple[bool, str]:
    """Whether the answer's trajectory is known to have left answers out, and one line saying why:
    an expansion the edge cap cut, or the answer said INCOMPLETE."""
    sub = state.subgraph
    cut = [(n, x) for n, x in enumerate(sub.expansions, 1) if x.truncated]
    reasons = [
        f"expansion {n} ({x.relation_id} {x.direction.value}) {x.cut_text(sub.label)}"
        for n, x in cut
    ]
    if state.answer is not None and state.answer.status == "incomplete":
        reasons.insert(0, "the search ran out of expansions before reaching the answer")
    return bool(reasons), "; ".join(reasons)


def _clamp(v: float | None) -> float:
    if v is None:
        return 0.0
    try:
        v = float(v)
    except (TypeError, ValueError):
        return 0.0
    if v != v:  # NaN
        return 0.0
    return min(1.0, max(0.0, v))
