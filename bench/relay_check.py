"""The real-model check of issue 38: a fixed list of held-out dev questions answered through the LLM
relay (``../shared/tools/llm_relay.py``), by the default LLM method (``auto``: plan first), by
``--method tot`` (its default protocol: the one-call expansion) and by ``tot-steps`` (the tree
search with the paper's three-step expansion, ``policy={"fused": false}``), tabulated as exact
answer sets, LLM calls per question (median, max) and prompt characters.

Why a script: the questions must be the same for every method of one check, and none may be one the
prompts were read on. They are drawn per set by a seeded random choice (``--seed``, default 39) from
the dev samples, leaving out every question of the recorded transcripts (``tests/fixtures``) — so
once a check's transcript is kept (``--export``), the next check draws fresh questions; ``--list``
prints them with the seed. Every set is one ``tot-search`` run per method, so the numbers are the
CLI's.

    mkdir -p relay-run && python ../shared/tools/llm_relay.py 8790 relay-run &
    # a model answers
    python -m bench.relay_check --port 8790 --relay-dir relay-run --out runs/relay-check
    # one method
    python -m bench.relay_check --port 8790 --relay-dir relay-run --methods tot
    python -m bench.relay_check --out runs/relay-check --table-only    # the table again
    python -m bench.relay_check --list                                 # the questions

Prompt characters are ``len(system) + len(prompt)`` of the relay's request files, matched to a
question by the prompt's first line (``Question: ...``); without ``--relay-dir`` the runner's token
estimate × 4 stands in. The three-KG set of ``bench.linked3`` (a SPARQL endpoint and a store) is not
among the sets: it needs that script's setup; linked-MetaQA (two KGs, files) is.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import statistics
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from bench.datasets import BENCHMARKS

REPO = Path(__file__).resolve().parents[1]
TRANSCRIPTS = REPO / "tests" / "fixtures"
METHODS = ("auto", "tot", "tot-steps")  # auto: what tot-search --llm runs by default
#: the tot-search arguments of each method (tot-steps: the tree search, three-step expansion)
METHOD_ARGS = {
    "auto": [],
    "tot": ["--method", "tot"],
    "tot-steps": ["--method", "tot", "--option", 'policy={"fused": false}'],
}


@dataclass(frozen=True)
class RelaySet:
    key: str
    questions: str  # relative to BENCHMARKS
    fmt: str
    kgs: tuple[str, ...]  # --kg arguments, paths relative to BENCHMARKS ("embedded" as it is)
    n: int


SETS = (
    RelaySet("mqa2", "metaqa/2-hop/qa_dev_sample.txt", "metaqa", ("embedded",), 6),
    RelaySet("mqa3", "metaqa/3-hop/qa_dev_sample.txt", "metaqa", ("embedded",), 6),
    RelaySet(
        "pq3",
        "pathquestion/PQ-3H/dev_sample.txt",
        "pathquestion",
        ("pathquestion/kb/3H-kb.txt",),
        6,
    ),
    RelaySet(
        "linked2",
        "linked-metaqa/dev_2hop.txt",
        "metaqa",
        ("films=linked-metaqa/films.txt", "catalog=linked-metaqa/catalog.ttl"),
        3,
    ),
    RelaySet(
        "linked3hop",
        "linked-metaqa/dev_3hop.txt",
        "metaqa",
        ("films=linked-metaqa/films.txt", "catalog=linked-metaqa/catalog.ttl"),
        3,
    ),
)


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[\[\]_]", " ", text).lower().split())


def used_questions() -> set[str]:
    """Every question a recorded transcript holds (they were read when the prompts were written)."""
    seen: set[str] = set()
    for path in TRANSCRIPTS.rglob("*.jsonl*"):
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as f:
            for line in f:
                try:
                    q = json.loads(line).get("question") if line.strip() else None
                except ValueError:  # not a transcript
                    break
                if q:
                    seen.add(_norm(q))
    return seen


def _question_text(line: str, fmt: str) -> str:
    text = line.split("\t", 1)[0]
    return text


def choose(data: Path, seed: int) -> dict[str, list[str]]:
    """Per set, the chosen lines of its question file (in file order), by
    ``random.Random(seed)``."""
    used = used_questions()
    rng = random.Random(seed)
    out: dict[str, list[str]] = {}
    for s in SETS:
        lines = [
            ln for ln in (data / s.questions).read_text(encoding="utf-8").splitlines() if ln.strip()
        ]
        fresh = [ln for ln in lines if _norm(_question_text(ln, s.fmt)) not in used]
        picked = sorted(rng.sample(range(len(fresh)), s.n))
        out[s.key] = [fresh[i] for i in picked]
    return out


def run_set(s: RelaySet, lines: list[str], method: str, ns: argparse.Namespace) -> Path:
    qfile = ns.out / f"{s.key}.questions.txt"
    qfile.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = ns.out / f"{method}-{s.key}.jsonl"
    cmd = [  # this interpreter's tot-search, whether or not its venv is on PATH
        sys.executable,
        "-m",
        "tot_mcp.strategies.search_cli",
        "--questions",
        str(qfile),
        "--format",
        s.fmt,
        "--llm",
        "anthropic",
        "--base-url",
        f"http://127.0.0.1:{ns.port}",
        "--llm-timeout",
        "3600",
        "--llm-retries",
        "0",
        "--out",
        str(out),
        "--resume",
        "--quiet",
    ]
    for kg in s.kgs:
        name, eq, path = kg.partition("=")
        cmd += [
            "--kg",
            kg if kg == "embedded" else f"{name}={ns.data / path}" if eq else str(ns.data / kg),
        ]
    cmd += METHOD_ARGS[method]
    print("$", " ".join(cmd), file=sys.stderr, flush=True)
    env = {**os.environ, "ANTHROPIC_API_KEY": os.environ.get("ANTHROPIC_API_KEY", "relay")}
    first = _last_request(ns.relay_dir) + 1
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
    if ns.relay_dir is not None:  # which of the relay's requests this run made
        ranges = _ranges(ns.out)
        ranges[f"{method}-{s.key}"] = ranges.get(f"{method}-{s.key}", []) + [
            [first, _last_request(ns.relay_dir)]
        ]
        (ns.out / "relay-requests.json").write_text(json.dumps(ranges, indent=1), encoding="utf-8")
    return out


def _last_request(relay_dir: Path | None) -> int:
    nums = [int(f.stem.split("-")[1]) for f in relay_dir.glob("req-*.json")] if relay_dir else []
    return max(nums, default=0)


def _ranges(out: Path) -> dict[str, list[list[int]]]:
    path = out / "relay-requests.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def prompt_chars(relay_dir: Path | None, spans: list[list[int]]) -> dict[str, int]:
    """Characters sent per question (system + prompt) in the relay's requests numbered within
    ``spans``, by the prompt's first line."""
    per: dict[str, int] = defaultdict(int)
    if relay_dir is None:
        return per
    for f in sorted(relay_dir.glob("req-*.json")):
        n = int(f.stem.split("-")[1])
        if not any(a <= n <= b for a, b in spans):
            continue
        r = json.loads(f.read_text(encoding="utf-8"))
        first = r["prompt"].split("\n", 1)[0].removeprefix("Question: ").strip()
        per[first] += len(r.get("system") or "") + len(r["prompt"])
    return per


def exact(record: dict) -> bool:
    return {_norm(p) for p in record.get("prediction", [])} == {
        _norm(g) for g in record.get("gold", [])
    }


def table(ns: argparse.Namespace) -> str:
    lines = [
        "| method | set | n | exact answer sets | Hits@1 | LLM calls median | max | prompt chars "
        "(all) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for method in METHODS:
        every: list[dict] = []
        for s in [*SETS, None]:
            if s is None:
                recs, label = every, "all"
            else:
                path = ns.out / f"{method}-{s.key}.jsonl"
                if not path.is_file():
                    continue
                recs = [
                    json.loads(ln)
                    for ln in path.read_text(encoding="utf-8").splitlines()
                    if ln.strip()
                ]
                every += recs
                label = s.key
            if not recs:
                continue
            ranges = _ranges(ns.out)
            keys = [f"{method}-{x.key}" for x in SETS] if s is None else [f"{method}-{s.key}"]
            per = prompt_chars(ns.relay_dir, [span for k in keys for span in ranges.get(k, [])])
            chars = sum(per.get(r["question"].strip(), 4 * r.get("input_tokens", 0)) for r in recs)
            calls = [r["llm_calls"] for r in recs]
            lines.append(
                f"| {method} | {label} | {len(recs)} | {sum(map(exact, recs))}/{len(recs)} | "
                f"{statistics.fmean(r['hits1'] for r in recs):.2f} | {statistics.median(calls):g} "
                f"| {max(calls)} | {chars:,} |"
            )
    return "\n".join(lines)


def export(ns: argparse.Namespace, path: Path) -> int:
    """The check's requests and the model's replies as a transcript for the replay tests: one JSON
    object a line (``set`` = the run, ``n`` from 1 in each, ``question``, ``system``, ``prompt``,
    ``max_tokens``, ``reply``), gzipped; returns how many. A request never answered has ``reply``
    null."""
    rows = []
    for run, spans in _ranges(ns.out).items():
        n = 0
        for a, b in spans:
            for i in range(a, b + 1):
                req = json.loads((ns.relay_dir / f"req-{i:04d}.json").read_text(encoding="utf-8"))
                resp = ns.relay_dir / f"resp-{i:04d}.txt"
                n += 1
                rows.append(
                    {
                        "set": run,
                        "n": n,
                        "question": req["prompt"]
                        .split("\n", 1)[0]
                        .removeprefix("Question: ")
                        .strip(),
                        "system": req.get("system"),
                        "prompt": req["prompt"],
                        "max_tokens": req.get("max_tokens"),
                        "reply": resp.read_text(encoding="utf-8") if resp.is_file() else None,
                    }
                )
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    return len(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, help="the relay's port (llm_relay.py PORT DIR)")
    p.add_argument(
        "--relay-dir",
        type=Path,
        default=None,
        help="the relay's directory (its req-NNNN.json files give the prompt characters)",
    )
    p.add_argument("--out", type=Path, default=REPO / "runs" / "relay-check")
    p.add_argument("--data", type=Path, default=BENCHMARKS)
    p.add_argument(
        "--seed",
        type=int,
        default=39,
        help="the draw (38: the 2026-11-28 check, "
        "now in the fixtures and so left out of every later draw)",
    )
    p.add_argument("--methods", nargs="+", choices=METHODS, default=["auto", "tot"])
    p.add_argument("--list", action="store_true", help="print the chosen questions and stop")
    p.add_argument("--table-only", action="store_true")
    p.add_argument(
        "--export",
        type=Path,
        metavar="FILE.jsonl.gz",
        help="write the requests and replies of a finished check as a replay transcript, and stop",
    )
    ns = p.parse_args(argv)
    if ns.export is not None:
        if ns.relay_dir is None:
            p.error("--export needs --relay-dir")
        print(f"{export(ns, ns.export)} calls written to {ns.export}")
        return 0
    if not ns.data.is_dir():
        print(f"relay_check: no benchmark data at {ns.data}", file=sys.stderr)
        return 2
    chosen = choose(ns.data, ns.seed)
    if ns.list:
        print(f"seed {ns.seed}; questions used in tests/fixtures transcripts left out")
        for key, lines in chosen.items():
            for ln in lines:
                print(f"{key}\t{ln.split(chr(9), 1)[0]}")
        return 0
    ns.out.mkdir(parents=True, exist_ok=True)
    if not ns.table_only:
        if ns.port is None:
            p.error("--port is needed to run (or --table-only / --list)")
        for method in ns.methods:
            for s in SETS:
                run_set(s, chosen[s.key], method, ns)
    print(
        f"seed {ns.seed}: {sum(map(len, chosen.values()))} questions "
        f"({', '.join(f'{k} {len(v)}' for k, v in chosen.items())})"
    )
    print(table(ns))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
