"""Run one method over a question file: concurrent, resumable, one flushed JSONL line per finished
question."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.errors import KGError
from tot_mcp.kg_adapters.text import key
from tot_mcp.strategies.llm.base import LLMError
from tot_mcp.strategies.llm.prices import ModelPrice, cost_usd, format_cost
from tot_mcp.strategies.methods import BenchmarkQuestion, Method, MethodResult

from . import metrics


class RunRecord(BaseModel):
    """One JSONL line of ``--out``."""

    id: str
    question: str
    gold: list[str]
    prediction: list[str] = Field(
        default_factory=list, description="Predicted answer labels, ranked."
    )
    prediction_ids: list[str] = Field(default_factory=list)
    answer_text: str = ""
    correct: bool = False
    hits1: float = 0.0
    f1: float = 0.0
    em_in: float = 0.0
    recall10: float | None = None
    context_recall: float | None = Field(
        default=None, description="Share of gold answers named in the context"
    )
    context_tokens: int | None = Field(
        default=None, description="The context's size, estimated (characters / 4)"
    )
    value: float = 0.0
    status: str = ""
    reason: str = Field(default="", description="One line: why this status")
    links: list[dict[str, Any]] = Field(
        default_factory=list, description="What the question was linked to, how"
    )
    partial: bool = Field(default=False, description="The method said its answer set is incomplete")
    partial_reason: str = ""
    latency_s: float = 0.0
    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    model: str = ""
    cost_usd: float | None = Field(
        default=0.0, description="Estimated USD; null when the model has no price."
    )
    expansions: int = 0
    method: str = ""
    error: str | None = None
    trace: dict[str, Any] | None = None


class Summary(BaseModel):
    n: int
    hits1: float
    f1: float
    em_in: float
    recall10: float | None = None
    context_recall: float | None = None
    context_tokens_median: float | None = None
    task: str = "answer"
    errors: int = 0
    mean_latency_s: float = 0.0
    median_latency_s: float = 0.0
    llm_calls: int = 0
    tokens: int = 0
    input_tokens: int = 0
    cache_read_tokens: int = 0
    output_tokens: int = 0
    cost_median_usd: float | None = 0.0
    cost_total_usd: float | None = 0.0
    unpriced: int = Field(
        default=0, description="Questions whose model has no price (their cost is unknown)."
    )

    def table(self) -> str:
        rows = [
            ("questions", str(self.n)),
            ("hits@1", f"{self.hits1:.3f}"),
            ("answer F1", f"{self.f1:.3f}"),
            ("EM-in", f"{self.em_in:.3f}"),
        ]
        if self.recall10 is not None:
            rows.append(("recall@10", f"{self.recall10:.3f}"))
        rows += [
            ("errors", str(self.errors)),
            ("latency mean / median", f"{self.mean_latency_s:.3f}s / {self.median_latency_s:.3f}s"),
            ("LLM calls (total)", str(self.llm_calls)),
            ("tokens (total)", str(self.tokens)),
            (
                "tokens in / cached read / out",
                f"{self.input_tokens} / {self.cache_read_tokens} / {self.output_tokens}",
            ),
            (
                "cost median / total (est.)",
                f"{format_cost(self.cost_median_usd)} / {format_cost(self.cost_total_usd)}"
                + (
                    f"  ({self.unpriced} question(s) with no price for the model)"
                    if self.unpriced
                    else ""
                ),
            ),
        ]
        width = max(len(r[0]) for r in rows)
        return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)

    def job_lines(self) -> list[str]:
        """Each job's figure on a line of its own (what ``tot-search`` prints after the table,
        before hits@1)."""
        lines = []
        if self.context_recall is not None:
            lines.append(f"context_recall: {self.context_recall:.3f}")
            lines.append(f"context_tokens_median: {self.context_tokens_median:.0f}")
        if self.recall10 is not None:
            lines.append(f"recall@10: {self.recall10:.3f}")
        if self.task == "linking":
            lines.append(f"linking_acc@1: {self.hits1:.3f}")
        return lines


def score(
    question: BenchmarkQuestion,
    result: MethodResult,
    method: str,
    prices: dict[str, ModelPrice] | None = None,
) -> RunRecord:
    gold = question.answers
    hits = metrics.hits_at_1(result.answer_labels, gold)
    return RunRecord(
        id=question.id,
        question=question.text,
        gold=gold,
        prediction=result.answer_labels,
        prediction_ids=result.answer_ids,
        correct=hits == 1.0,
        hits1=hits,
        f1=metrics.answer_f1(result.answer_labels, gold),
        em_in=metrics.em_in(result.answer_text, result.answer_labels, gold),
        recall10=metrics.recall_at(result.retrieved_labels, gold, 10)
        if result.retrieved_labels
        else None,
        context_recall=metrics.context_recall(result.context, gold)
        if result.context is not None
        else None,
        context_tokens=metrics.estimated_tokens(result.context)
        if result.context is not None
        else None,
        **result.model_dump(include=_SAME_NAMED),  # what the method said, under its own names
        llm_calls=result.usage.calls,
        **result.usage.model_dump(
            exclude={"calls"}
        ),  # the token counts and the model, under their own names
        cost_usd=cost_usd(result.usage, prices),
        method=method,
    )


#: the fields a record takes from the method's result as they are
_SAME_NAMED = {
    "answer_text",
    "value",
    "status",
    "reason",
    "links",
    "partial",
    "partial_reason",
    "latency_s",
    "expansions",
    "error",
    "trace",
}


def summarize(records: Sequence[RunRecord], task: str = "answer") -> Summary:
    n = len(records)
    if n == 0:
        return Summary(n=0, hits1=0.0, f1=0.0, em_in=0.0, task=task)
    recalls = [r.recall10 for r in records if r.recall10 is not None]
    ctx = [r for r in records if r.context_recall is not None]
    context_recalls = [r.context_recall for r in records if r.context_recall is not None]
    lat = [r.latency_s for r in records]
    costs = [r.cost_usd for r in records]
    known = [c for c in costs if c is not None]
    unpriced = len(costs) - len(known)
    return Summary(
        n=n,
        **{name: sum(getattr(r, name) for r in records) / n for name in ("hits1", "f1", "em_in")},
        recall10=(sum(recalls) / len(recalls)) if recalls else None,
        context_recall=sum(context_recalls) / len(ctx) if ctx else None,
        context_tokens_median=statistics.median(r.context_tokens or 0 for r in ctx)
        if ctx
        else None,
        task=task,
        errors=sum(1 for r in records if r.error),
        mean_latency_s=sum(lat) / n,
        median_latency_s=statistics.median(lat),
        **{
            name: sum(getattr(r, name) for r in records)
            for name in ("llm_calls", "input_tokens", "cache_read_tokens", "output_tokens")
        },
        tokens=sum(r.input_tokens + r.output_tokens for r in records),
        cost_median_usd=None if unpriced else statistics.median(known),
        cost_total_usd=None if unpriced else sum(known),
        unpriced=unpriced,
    )


def load_done(out: Path) -> list[RunRecord]:
    """Records already in ``out``; a torn last line (a crash mid-write) is cut off so appending
    stays valid."""
    if not out.exists():
        return []
    raw = out.read_bytes()
    records: list[RunRecord] = []
    good_end = 0
    pos = 0
    for line in raw.splitlines(keepends=True):
        pos += len(line)
        if not line.endswith(b"\n"):
            break
        try:
            records.append(RunRecord.model_validate_json(line))
        except ValueError:
            if line.strip():
                break
        good_end = pos
    if good_end < len(raw):
        with open(out, "r+b") as fh:
            fh.truncate(good_end)
    return records


async def topic_problem(question: BenchmarkQuestion, kgs: Sequence[Graph]) -> str | None:
    """Why the question's named topic entity cannot be found in any KG (None when it can, or none is
    named)."""
    if not question.topic:
        return None
    want = key(question.topic)
    for kg in kgs:
        try:
            hits = await kg.search_entities(question.topic, limit=5)
        except KGError:
            continue
        if any(key(h.entity.label) == want for h in hits):
            return None
    return f"topic entity {question.topic!r} is not in the KG"


async def run_questions(
    questions: Sequence[BenchmarkQuestion],
    method: Method,
    method_name: str,
    kgs: Sequence[Graph],
    *,
    out: Path | None = None,
    workers: int = 1,
    keep_trace: bool = True,
    on_done: Callable[[RunRecord], None] | None = None,
    prices: dict[str, ModelPrice] | None = None,
) -> list[RunRecord]:
    """Answer ``questions`` with ``workers`` running at once; each finished record is appended to
    ``out`` and flushed before the next is written, so an interrupted run loses at most the
    questions in flight."""
    sem = asyncio.Semaphore(max(1, workers))
    records: list[RunRecord] = []
    fh = open(out, "a", encoding="utf-8") if out is not None else None
    lock = asyncio.Lock()

    async def one(q: BenchmarkQuestion) -> None:
        async with sem:
            started = time.perf_counter()
            try:
                result = await method(q.public(), kgs[0])
            except (KGError, LLMError, ValueError) as e:
                result = MethodResult(status="error", error=f"{type(e).__name__}: {e}")
            result.latency_s = result.latency_s or (time.perf_counter() - started)
            # only a question left unanswered is checked for its topic: the check costs a remote KG
            # searches the method has made already
            if not (result.answer_ids or result.answer_labels) and (
                problem := await topic_problem(q, kgs)
            ):
                result = MethodResult(status="error", error=problem, latency_s=result.latency_s)
            record = score(q, result, method_name, prices)
            if not keep_trace:
                record.trace = None
            async with lock:
                records.append(record)
                if fh is not None:
                    fh.write(record.model_dump_json() + "\n")
                    fh.flush()
                if on_done is not None:
                    on_done(record)

    try:
        await asyncio.gather(*(one(q) for q in questions))
    finally:
        if fh is not None:
            fh.close()
    order = {q.id: i for i, q in enumerate(questions)}
    records.sort(key=lambda r: order.get(r.id, 0))
    return records
