"""Headless Tree-of-Traversals: the action-state machine, the policy contract and the best-first tree search."""

from .actions import Action, Answer, ExpandKG, Invalid, SelectEntities, SelectRelation, Think, distinct, parse_action
from .policy import Policy
from .state import AsmState, Expansion, InvalidAction, LocalSubgraph, TraversalState

__all__ = [
    "Action", "Answer", "AsmState", "ExpandKG", "Expansion", "Invalid", "InvalidAction", "LocalSubgraph", "Policy",
    "SelectEntities", "SelectRelation", "Think", "TraversalState", "distinct", "parse_action",
]
