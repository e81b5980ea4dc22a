"""A real model's refusals, replayed: ``fixtures/relay-2026-11-28-refusals.jsonl`` holds the prompts
the program sent through ``../shared/tools/llm_relay.py`` and the replies a careful model wrote to
them (2026-11-28, dev questions on the embedded movie KG asking for relations it lacks). Replayed
through today's program, the same calls must be made in the same order (the same question, the
same kind of prompt: a prompt's wording may change, its place in the run may not), and the replies
must end the question as ``unsupported`` within one call (plan) or two (tot)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval_fixtures import run_checked_strategy, shared_embedder
from tot_mcp.strategies.llm.scripted import ScriptedLLM
from tot_mcp.strategies.services import Services

RECORDED = [
    json.loads(line)
    for line in (Path(__file__).parent / "fixtures" / "relay-2026-11-28-refusals.jsonl")
    .read_text()
    .splitlines()
]
CASES = sorted({(r["method"], r["question"]) for r in RECORDED})


@pytest.fixture(scope="module")
def services(embedded_kg, tmp_path_factory):
    return Services(
        [embedded_kg],
        embedder_factory=shared_embedder,
        cache_dir=tmp_path_factory.mktemp("relay-cache"),
    )


@pytest.mark.parametrize("method,question", CASES)
async def test_a_real_models_refusal_replays_to_unsupported_in_at_most_two_calls(
    embedded_kg, services, method, question
):
    turns = sorted(
        (r for r in RECORDED if (r["method"], r["question"]) == (method, question)),
        key=lambda r: r["n"],
    )
    llm = ScriptedLLM([t["reply"] for t in turns])
    out = await run_checked_strategy(method, services, embedded_kg, question, llm)
    assert out.status == "unsupported" and not out.results and out.value == 0
    if not llm.prompts:  # the checks before the model now refuse it themselves: cheaper still
        assert out.usage.calls == 0 and out.reason.startswith("the movies KG has no ")
        return
    assert [_kind(p) for p in llm.prompts] == [_kind(t["prompt"]) for t in turns], (
        "another call was made"
    )
    assert [s.split(":", 1)[0] for s in llm.systems] == [
        t["system"].split(":", 1)[0] for t in turns
    ]
    assert out.usage.calls == len(turns) <= (1 if method == "plan" else 2)
    assert out.reason and "\n" not in out.reason


def _kind(prompt: str) -> tuple[str, str]:
    """A prompt's question and the request it ends with (its last paragraph's first words)."""
    question = prompt.split("\n", 1)[0]
    asks = next(p for p in reversed(prompt.split("\n\n")) if p.strip()).split()[:3]
    return question, " ".join(asks)
