"""``tot-search``: answer one question (printing the answer and its search tree) or run a benchmark
file.

Usage errors (bad flags, unreadable files, unknown formats, KGs that do not open, an LLM backend
that cannot be built — no key, no model) print one line and exit 2. A malformed question line is
reported and skipped; the rest of the run goes on. In a benchmark run a question whose LLM failed
(after the backend's bounded retries) is recorded with its ``error`` in the JSONL and the run goes
on; a single question whose LLM failed prints one line ``tot-search: error: …`` and exits 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path

from tot_mcp.kg_adapters.errors import KGError
from tot_mcp.kg_adapters.sameness import with_flags
from tot_mcp.kg_adapters.spec import parse_kg_args
from tot_mcp.strategies.system import System, build_system, freeze_loaded_objects

USAGE_ERROR = 2
LLM_CHOICES = ("offline", "anthropic", "openai")


_BAD_LINES_SHOWN = 20  # malformed question lines reported one by one; the rest are counted


class UsageError(Exception):
    pass


def build_parser() -> argparse.ArgumentParser:
    from tot_mcp.strategies.benchmarks.formats import FORMATS
    from tot_mcp.strategies.registry import available

    p = argparse.ArgumentParser(
        prog="tot-search",
        description=(
            "Tree-of-Traversals over knowledge graphs: answer a question, or evaluate on a "
            "benchmark file."
        ),
    )
    p.add_argument(
        "question", nargs="?", help="a question to answer (mark the topic entity with [brackets])"
    )
    p.add_argument(
        "--kg",
        action="append",
        default=[],
        metavar="[NAME=]SPEC",
        help="a KG, NAME=SPEC or a bare SPEC named after its file (repeatable); default: the "
        "embedded movie KG",
    )
    p.add_argument(
        "--no-link",
        action="store_true",
        help="several --kg: do not link them (default: linked by label)",
    )
    p.add_argument(
        "--link",
        action="append",
        default=[],
        metavar="A=B",
        help="label-link only these KG pairs (repeatable; default: every pair)",
    )
    p.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="a tot-mcp TOML; its [[link]] rules and [linking] table decide how the --kg KGs link",
    )
    p.add_argument("--questions", type=Path, metavar="FILE", help="benchmark question file")
    p.add_argument(
        "--format",
        choices=FORMATS,
        default=None,
        help="question file format (default: from the name)",
    )
    p.add_argument(
        "--method",
        default=None,
        help=f"one of: {', '.join(available())} (default: auto with --llm, "
        "planning first and searching the tree only when the plan fails; tot offline)",
    )
    p.add_argument(
        "--task",
        choices=["answer", "linking"],
        default="answer",
        help="answer: the questions as given (default); linking: find each question's topic entity "
        "with its brackets removed and one typo in the mention (fixed seed), scored as linking "
        "accuracy@1",
    )
    p.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an option of the chosen method (repeatable; JSON values), e.g. --option beam=5",
    )
    p.add_argument(
        "--llm",
        default="offline",
        choices=list(LLM_CHOICES),
        help="policy backend (default offline): offline (no LLM), anthropic (ANTHROPIC_API_KEY), "
        "openai (any OpenAI-compatible server: --base-url, --model; OPENAI_API_KEY if it needs "
        "one)",
    )
    p.add_argument(
        "--model",
        default=None,
        help="model name for --llm anthropic/openai (default: TOT_ANTHROPIC_MODEL or "
        "claude-sonnet-5-5; TOT_OPENAI_MODEL)",
    )
    p.add_argument(
        "--base-url",
        default=None,
        metavar="URL",
        help="API base URL for --llm openai (e.g. http://localhost:8000/v1; default "
        "OPENAI_BASE_URL or https://api.openai.com/v1) or anthropic (a proxy)",
    )
    p.add_argument(
        "--llm-timeout",
        type=float,
        default=None,
        metavar="S",
        help="seconds per LLM request before it is retried (default 60)",
    )
    p.add_argument(
        "--llm-retries",
        type=int,
        default=None,
        metavar="N",
        help="retries of a failed LLM request: timeouts, 429/5xx, malformed bodies (default 2)",
    )
    p.add_argument(
        "-k", type=int, default=None, help="branching factor (default 3; 1 = Chain-of-Traversals)"
    )
    p.add_argument(
        "--max-hops",
        type=int,
        default=None,
        help="expansions (hops) a path may take before it must answer (default 4: a 3-hop question "
        "with one to spare)",
    )
    p.add_argument(
        "--max-depth",
        type=int,
        default=None,
        help="tot, chain: the paper's budget instead of --max-hops: actions before an answer is "
        "forced (an expansion takes 3; the paper used 7); ark: hops (default 3)",
    )
    p.add_argument(
        "--tau",
        type=float,
        default=None,
        help="accept an answer valued at least this (default 0.8)",
    )
    p.add_argument(
        "--max-expansions",
        type=int,
        default=None,
        help="give up after this many search steps, tree nodes expanded (default 25)",
    )
    p.add_argument(
        "--max-edges", type=int, default=None, help="edges kept per expansion (default 100)"
    )
    p.add_argument(
        "--skip",
        type=int,
        default=0,
        help="leave out the first N questions (e.g. the ones tuned on)",
    )
    p.add_argument(
        "--limit", type=int, default=None, help="only the first N questions (after --skip)"
    )
    p.add_argument(
        "--workers", type=int, default=1, help="questions answered concurrently (default 1)"
    )
    p.add_argument(
        "--out", type=Path, default=None, help="write one JSONL record per question here"
    )
    p.add_argument(
        "--html", type=Path, default=None, help="write a self-contained HTML trace report here"
    )
    p.add_argument(
        "--resume", action="store_true", help="skip questions already in --out and append the rest"
    )
    p.add_argument("--no-trace", action="store_true", help="leave search trees out of --out")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument(
        "--prices",
        type=Path,
        default=None,
        metavar="FILE",
        help='LLM prices for the cost estimate, TOML: [models."MODEL-ID"] '
        "input = 3.0 output = 15.0 cache_write = 3.75 cache_read = 0.30 "
        "(USD per million tokens; added to the built-in table)",
    )
    return p


def open_system(ns: argparse.Namespace, config) -> System:
    """What ``tot-mcp`` builds from the same ``--kg`` flags and ``--config`` (one composition root,
    :func:`strategies.system.build_system`): its KGs with their options, limits and result cache,
    linked by its rules (``--no-link`` / ``--link`` applied), the services with its retrieval
    settings; a benchmark waits for the indexes it needs."""
    config = config.model_copy(update={"linking": with_flags(config.linking, ns.no_link, ns.link)})
    return build_system(parse_kg_args(ns.kg), config, wait_for_builds=True)


def _guess_format(path: Path) -> str:
    if path.name.lower().endswith((".jsonl", ".json")):
        return "jsonl"
    text = path.read_text(encoding="utf-8", errors="replace")[:4000]
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    if (
        first.count("\t") == 2
        and first.rstrip().endswith(("/)", "#"))
        or "#" in first.split("\t")[-1]
    ):
        return "pathquestion"
    return "metaqa"


def _validate(ns: argparse.Namespace) -> None:
    if ns.question is None and ns.questions is None:
        raise UsageError("give a question, or --questions FILE")
    if ns.question is not None and not ns.question.strip():
        raise UsageError("the question is empty")
    if ns.question is not None and ns.questions is not None:
        raise UsageError("give either a question or --questions FILE, not both")
    for flag, low, high in (
        ("-k", 1, 10),
        ("--max-hops", 1, 10),
        ("--max-depth", 1, 50),
        ("--tau", 0, 1),
        ("--max-expansions", 1, 500),
        ("--workers", 1, 64),
        ("--llm-retries", 0, 20),
    ):
        value = getattr(ns, flag.lstrip("-").replace("-", "_"))
        if value is not None and not low <= value <= high:
            raise UsageError(f"{flag} must be between {low} and {high}")
    if ns.limit is not None and ns.limit < 1:
        raise UsageError("--limit must be ≥ 1")
    if ns.skip < 0:
        raise UsageError("--skip must be ≥ 0")
    if ns.resume and ns.out is None:
        raise UsageError("--resume needs --out (the file to continue)")
    if ns.questions is not None and not ns.questions.is_file():
        raise UsageError(f"--questions {ns.questions}: no such file")
    if ns.llm == "offline" and (
        ns.base_url or ns.llm_timeout is not None or ns.llm_retries is not None
    ):
        raise UsageError(
            "--base-url, --llm-timeout and --llm-retries need --llm anthropic or --llm openai"
        )
    if ns.llm_timeout is not None and not 0 < ns.llm_timeout <= 3600:
        raise UsageError("--llm-timeout must be between 0 and 3600 seconds")
    if ns.prices is not None:
        _prices(ns)  # a bad price file is a usage error before anything loads


def _prices(ns: argparse.Namespace):
    """The price table for the cost estimate: the built-in one, updated from ``--prices FILE``."""
    from tot_mcp.strategies.llm.prices import DEFAULT_PRICES, PricesError, load_prices

    if ns.prices is None:
        return DEFAULT_PRICES
    try:
        return load_prices(ns.prices)
    except PricesError as e:
        raise UsageError(str(e)) from None


def _llm_options(ns: argparse.Namespace) -> dict:
    """The LLM backend's options from the flags (handed to ``make_llm`` through
    ``MethodOptions.llm_options``)."""
    if ns.llm == "offline":
        return {}
    options = {"base_url": ns.base_url, "timeout": ns.llm_timeout, "max_retries": ns.llm_retries}
    return {k: v for k, v in options.items() if v is not None}


async def _check_llm(ns: argparse.Namespace) -> None:
    """Build (and close) the LLM backend once before the run (and before the KGs load), so a missing
    key or model is one usage error, not one error per question."""
    if ns.llm == "offline":
        return
    from tot_mcp.strategies.llm.base import LLMError
    from tot_mcp.strategies.llm.factory import make_llm

    try:
        llm = make_llm(ns.llm, model=ns.model, options=_llm_options(ns))
    except LLMError as e:
        raise UsageError(str(e)) from None
    close = getattr(llm, "aclose", None)
    if close is not None:
        await close()


def load_cli_config(ns: argparse.Namespace):
    from tot_mcp.strategies.settings import Config, load_config

    return load_config(ns.config) if ns.config is not None else Config()


def _check_method(ns: argparse.Namespace, config) -> None:
    """``--method`` and its options (flags, ``--option``, the config's ``[strategy.NAME]``)
    checked before anything loads: a typo costs no KG load."""
    from tot_mcp.strategies.registry import get

    given = strategy_options(ns)
    configured = config.strategy.get(ns.method, {})
    try:  # the config's own table first, so its mistake is not blamed on the flags
        get(ns.method).parse_options(configured)
    except KGError as e:
        raise UsageError(f"[strategy.{ns.method}] in {ns.config}: {e}") from None
    get(ns.method).parse_options({**configured, **given})


def strategy_options(ns: argparse.Namespace) -> dict:
    """The chosen strategy's options: the search flags it has (-k, --tau, ...; the tree search's)
    and every ``--option KEY=VALUE`` (validated by the strategy's options model, so a misspelt key
    is a usage error)."""
    from tot_mcp.strategies.registry import get

    try:
        fields = get(ns.method).options.model_fields
    except KGError as e:
        raise UsageError(str(e)) from None
    flags = {
        "k": ns.k,
        "max_hops": ns.max_hops,
        "max_depth": ns.max_depth,
        "tau": ns.tau,
        "max_expansions": ns.max_expansions,
        "max_edges_per_expansion": ns.max_edges,
    }
    given = {k: v for k, v in flags.items() if v is not None}
    unused = [f for f in given if f not in fields]
    if unused:
        names = {"k": "-k", "max_edges_per_expansion": "--max-edges"}
        raise UsageError(
            f"{', '.join(names.get(f, '--' + f.replace('_', '-')) for f in unused)}: not an option "
            f"of --method {ns.method} (its options: {', '.join(fields)})"
        )
    out = dict(given)
    for item in ns.option:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--option {item!r}: expected KEY=VALUE")
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw
        out[key.strip()] = value
    return out


def _method(ns: argparse.Namespace, system: System):
    from tot_mcp.strategies.methods import MethodOptions, make_method

    options = MethodOptions(
        llm=ns.llm, model=ns.model, llm_options=_llm_options(ns), options=strategy_options(ns)
    )
    return make_method(ns.method, options, system.services)  # checked by _check_method already


async def _one_question(ns: argparse.Namespace, system: System) -> int:
    kgs = list(system.kgs.values())
    from tot_mcp.strategies.llm.prices import cost_usd, format_cost
    from tot_mcp.strategies.methods import BenchmarkQuestion

    prices = _prices(ns)
    method = _method(ns, system)
    q = BenchmarkQuestion(id="cli", text=ns.question)
    result = await method(q, kgs[0])
    _write_one(ns, q, result, prices)
    if result.error:
        print(f"tot-search: error: {_one_line(result.error)}", file=sys.stderr)
        return 1
    shown = ", ".join(result.answer_labels) or result.answer_text or "none"
    print(f"answer: {shown}")
    if result.answer_ids:
        print(f"entities: {', '.join(result.answer_ids)}")
    if result.reason and result.status != "answered":
        print(f"{result.status}: {result.reason}")
    elif result.partial:
        print(f"partial: {result.partial_reason or 'the answer set is known to be incomplete'}")
    for link in result.links if result.status != "uncertain" else []:
        if link.note:
            print(f"linked: {link.note} ({link.id})")
    trace = result.trace or {}
    if trace.get("fell_back"):
        print(f"fell back to the tree search: {trace.get('fallback_reason', '')}")
    elif isinstance(trace.get("path"), str) and trace["path"]:
        print(f"path: {trace['path']}")
    print(
        f"value: {result.value:.2f}  status: {result.status}  search steps: {result.expansions}  "
        f"LLM calls: {result.usage.calls}  tokens: "
        f"{result.usage.input_tokens + result.usage.output_tokens}  cost: "
        f"{format_cost(cost_usd(result.usage, prices))}  latency: {result.latency_s:.2f}s"
    )
    if result.context:
        print(f"\ncontext ({(len(result.context) + 3) // 4} tokens, est.):\n{result.context}")
    if result.trace and result.trace.get("nodes") is not None:
        from tot_mcp.strategies.tot.search import SearchResult

        tree = SearchResult.model_validate(result.trace)
        print("\nsearch tree (* = chosen path, #n = expansion order):")
        print(tree.tree_text())
        if tree.subgraph_text:
            print("\nfinal local subgraph:")
            print(tree.subgraph_text)
    return 0


def _write_one(ns: argparse.Namespace, question, result, prices) -> None:
    """``--out`` (one JSONL record, appended) and ``--html`` (the trace report) for a single
    question, as for a questions file."""
    if ns.out is None and ns.html is None:
        return
    from tot_mcp.strategies.benchmarks.runner import score, summarize

    record = score(question, result, ns.method, prices)
    if ns.out is not None:
        ns.out.parent.mkdir(parents=True, exist_ok=True)
        with open(ns.out, "a", encoding="utf-8") as fh:
            fh.write(record.model_dump_json() + "\n")
        print(f"wrote {ns.out}", file=sys.stderr)
    if ns.html is not None:
        _write_html(ns, [record], summarize([record], ns.task), f"tot-search · {ns.method}")


def _write_html(ns: argparse.Namespace, records, summary, title: str) -> None:
    """``--html``: the trace report of ``records``."""
    from tot_mcp.strategies.benchmarks.report import render_report

    ns.html.parent.mkdir(parents=True, exist_ok=True)
    ns.html.write_text(render_report(records, summary, title), encoding="utf-8")
    print(f"wrote {ns.html}", file=sys.stderr)


async def _benchmark(ns: argparse.Namespace, system: System) -> int:
    kgs = list(system.kgs.values())
    from tot_mcp.strategies.benchmarks.formats import BadLine, read_questions
    from tot_mcp.strategies.benchmarks.runner import load_done, run_questions, summarize

    prices = _prices(ns)
    fmt = ns.format or _guess_format(ns.questions)
    try:
        items = list(read_questions(ns.questions, fmt))
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"--questions {ns.questions}: cannot read ({e})") from None
    bad = [i for i in items if isinstance(i, BadLine)]
    questions = [i for i in items if not isinstance(i, BadLine)]
    if not questions:  # nothing to run: most likely the wrong --format or the wrong file
        first = f"; first: {bad[0]}" if bad else ""
        raise UsageError(
            f"--questions {ns.questions}: no question could be read as {fmt} "
            f"({len(bad)} malformed line(s){first})"
        )
    for b in bad[:_BAD_LINES_SHOWN]:
        print(f"skipping malformed line: {b}", file=sys.stderr)
    if len(bad) > _BAD_LINES_SHOWN:
        print(
            f"... and {len(bad) - _BAD_LINES_SHOWN} more malformed lines skipped", file=sys.stderr
        )
    questions = questions[ns.skip :][: ns.limit]  # limit None: all
    if ns.task == "linking":
        from tot_mcp.strategies.benchmarks.linking import linking_question

        questions = [linking_question(q) for q in questions if q.topic]
    done = []
    if ns.out is not None:
        if ns.resume:
            done = load_done(ns.out)
        elif ns.out.exists() and ns.out.stat().st_size > 0:
            raise UsageError(
                f"--out {ns.out} exists; pass --resume to continue it or choose another file"
            )
        ns.out.parent.mkdir(parents=True, exist_ok=True)
    done_ids = {r.id for r in done}
    asked = {q.id for q in questions}
    done = [
        r for r in done if r.id in asked
    ]  # (the set made once: a resumed run may hold 10k records)
    todo = [q for q in questions if q.id not in done_ids]
    if ns.resume and done:
        print(f"resuming: {len(done)} done, {len(todo)} to go", file=sys.stderr)
    method = _method(ns, system)

    from tqdm import tqdm

    correct = [sum(r.correct for r in done)]
    with tqdm(
        total=len(questions),
        initial=len(done),
        file=sys.stderr,
        unit="q",
        dynamic_ncols=True,
        disable=ns.quiet,
    ) as bar:

        def tick(record) -> None:
            correct[0] += record.correct
            bar.update(1)
            bar.set_postfix(hits1=f"{correct[0] / max(1, bar.n):.3f}")

        new = await run_questions(
            todo,
            method,
            ns.method,
            kgs,
            out=ns.out,
            workers=ns.workers,
            keep_trace=not ns.no_trace,
            on_done=tick,
            prices=prices,
        )
    order = {q.id: i for i, q in enumerate(questions)}
    records = sorted(done + new, key=lambda r: order.get(r.id, 0))
    if (
        ns.resume and ns.prices is not None
    ):  # re-price the resumed records with the table of this run
        from tot_mcp.strategies.llm.base import LLMUsage
        from tot_mcp.strategies.llm.prices import cost_usd

        for r in done:
            tokens = r.model_dump(include=set(LLMUsage.model_fields) - {"calls"})
            r.cost_usd = cost_usd(LLMUsage(calls=r.llm_calls, **tokens), prices)
    summary = summarize(records, ns.task)
    if ns.html is not None:
        _write_html(ns, records, summary, f"tot-search · {ns.method} · {ns.questions.name}")
    print(
        f"method: {ns.method}  task: {ns.task}  llm: {ns.llm}  file: {ns.questions}  format: {fmt}"
        + (f"  skipped malformed lines: {len(bad)}" if bad else "")
    )
    print(summary.table())
    if len(kgs) > 1:  # linked
        st = system.linker.stats()
        print(
            f"{'link cache':<23}{st.lookups} lookups, hit rate {st.hit_rate:.3f}, {st.entries} "
            f"entries, {st.capped} capped"
        )
    for line in summary.job_lines():
        print(line)
    print(f"hits@1: {summary.hits1:.3f}")
    return 0


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def main(argv: list[str] | None = None) -> int:
    from tot_mcp.strategies.llm.base import LLMError

    parser = build_parser()
    ns = parser.parse_args(argv)
    if ns.method is None:
        ns.method = "tot" if ns.llm == "offline" else "auto"
    try:
        _validate(ns)
        try:
            config = load_cli_config(ns)
            _check_method(ns, config)
            parse_kg_args(ns.kg)  # a missing file, an unknown kind: before the LLM check, any load
            asyncio.run(_check_llm(ns))
            system = open_system(ns, config)
        except KGError as e:
            raise UsageError(str(e)) from None
        # the loaded KGs out of the collector's full scans (each ~0.3 s on MetaQA)
        freeze_loaded_objects()
        runner = _one_question if ns.question is not None else _benchmark

        async def run_and_close() -> int:
            try:
                return await runner(ns, system)
            finally:
                await system.aclose()

        code = asyncio.run(run_and_close())
    except UsageError as e:
        print(f"tot-search: error: {e}", file=sys.stderr)
        return USAGE_ERROR
    except (
        BrokenPipeError
    ):  # the reader went away (``tot-search ... | head``): stop quietly, like other CLIs
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        where = f"; rerun with --resume --out {ns.out} to continue" if ns.out else ""
        print(f"\ntot-search: interrupted{where}", file=sys.stderr)
        return 130
    except (KGError, LLMError) as e:
        print(f"tot-search: error: {_one_line(str(e))}", file=sys.stderr)
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main())
