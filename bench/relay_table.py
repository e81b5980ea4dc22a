"""The model-in-the-loop table: `tot-search` runs answered by a real model through the LLM relay
(`../shared/tools/llm_relay.py`), scored per question set.

Why a script: the relay's usage figures are rough, so prompt tokens are counted from the request
files it wrote (characters of system + prompt / 4, per question, matched by the prompt's first
line), beside the runner's own Hits@1 and LLM-call counts.

    python bench/relay_table.py --run mqa2=relay/m2/tot-153.jsonl@relay/m2 \
        --run mqa3=relay/m3/tot-153.jsonl@relay/m3

Each run file names the relay that served it: a question asked through two relays (tot through one,
plan through another) is counted in each row from its own relay only.
"""

from __future__ import annotations

import argparse
import glob
import json
import statistics
from collections import defaultdict
from pathlib import Path


def prompt_tokens(relay_dir: Path) -> dict[str, int]:
    """Estimated prompt tokens per question (the text after "Question: " on a prompt's first
    line)."""
    per: dict[str, int] = defaultdict(int)
    for f in sorted(glob.glob(str(relay_dir / "req-*.json"))):
        r = json.loads(Path(f).read_text())
        first = r["prompt"].split("\n", 1)[0].removeprefix("Question: ").strip()
        per[first] += (len(r.get("system") or "") + len(r["prompt"])) // 4
    return per


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--run",
        action="append",
        required=True,
        metavar="LABEL=RUN.jsonl@RELAY_DIR[,RUN2.jsonl@DIR2]",
        help="tot-search --out files scored as one row, each with the relay directory that served "
        "it (repeatable)",
    )
    ns = p.parse_args()
    rows = []
    for item in ns.run:
        label, _, rest = item.partition("=")
        records, toks = [], []
        for part in rest.split(","):
            run, _, relay = part.partition("@")
            these = [
                json.loads(line) for line in Path(run).read_text().splitlines() if line.strip()
            ]
            tokens = prompt_tokens(Path(relay)) if relay else {}
            records += these
            toks += [tokens.get(r["question"].strip(), 0) for r in these]
        calls = [r["llm_calls"] for r in records]
        rows.append(
            (
                label,
                len(records),
                sum(r["hits1"] for r in records) / max(1, len(records)),
                statistics.median(calls) if calls else 0,
                max(calls, default=0),
                statistics.median(toks) if toks else 0,
                sum(r.get("partial", False) for r in records),
                sum(1 for r in records if r.get("error")),
            )
        )
    print(
        "| set | n | Hits@1 | median LLM calls | max calls | median prompt tokens | partial | "
        "errors |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for label, n, h, mc, xc, mt, part, err in rows:
        print(f"| {label} | {n} | {h:.3f} | {mc:g} | {xc} | {mt:,.0f} | {part} | {err} |")


if __name__ == "__main__":
    main()
