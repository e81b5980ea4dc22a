"""Headless Tree-of-Traversals: the action-state machine, the policy contract and the best-first
tree search."""
