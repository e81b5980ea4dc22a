"""Answer metrics, on normalised labels (:func:`kg_adapters.text.key`: case-folded tokens, ``_`` =
space).

* **Hits@1** — the top-ranked predicted answer equals one of the gold answers (0 if nothing
  predicted).
* **F1** — answer-set F1 between the set of predicted labels and the set of gold answers.
* **EM-in** — the Tree-of-Traversals paper's metric: some gold answer occurs, as a whole-token
  substring, in the answer text (the answer text and all predicted labels, normalised).
* **Recall@10** — for retrievers: share of gold answers among the first 10 retrieved labels.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from tot_mcp.kg_adapters.text import key


def _keys(items: list[str]) -> list[str]:
    return [k for k in (key(x) for x in items) if k]


def hits_at_1(predicted: list[str], gold: list[str]) -> float:
    p = _keys(predicted)
    return 1.0 if p and p[0] in set(_keys(gold)) else 0.0


def answer_f1(predicted: list[str], gold: list[str]) -> float:
    p, g = set(_keys(predicted)), set(_keys(gold))
    if not p or not g:
        return 0.0
    tp = len(p & g)
    if tp == 0:
        return 0.0
    precision, recall = tp / len(p), tp / len(g)
    return 2 * precision * recall / (precision + recall)


def em_in(answer_text: str, predicted: list[str], gold: list[str]) -> float:
    haystack = f" {' '.join(_keys([answer_text, *predicted]))} "
    return 1.0 if any(f" {g} " in haystack for g in _keys(gold)) else 0.0


def recall_at(retrieved: list[str], gold: list[str], n: int = 10) -> float:
    g = set(_keys(gold))
    if not g:
        return 0.0
    return len(set(_keys(retrieved[:n])) & g) / len(g)


def answer_key(label: str) -> str:
    """Gold answers and labels compare case- and ``_``-insensitively (PathQuestion writes
    ``anna_of_x``)."""
    return " ".join(label.replace("_", " ").casefold().split())


def ranking_metrics(
    ranked_labels: Sequence[str], gold: Iterable[str], k: int = 10
) -> dict[str, float]:
    """Hits@1, Recall@k (gold found in the top k / min(|gold|, k)), nDCG@k (binary gains) and
    MRR."""
    gold_keys = {answer_key(g) for g in gold if g}
    # a label listed twice (merged same-name nodes) counts once
    keys = list(dict.fromkeys(answer_key(lab) for lab in ranked_labels))
    if not gold_keys:
        return {"hits@1": 0.0, f"recall@{k}": 0.0, f"ndcg@{k}": 0.0, "mrr": 0.0}
    rel = [1.0 if x in gold_keys else 0.0 for x in keys]
    top = rel[:k]
    dcg = sum(g / math.log2(r + 2) for r, g in enumerate(top))
    ideal = sum(1.0 / math.log2(r + 2) for r in range(min(len(gold_keys), k)))
    first = next((r for r, g in enumerate(rel) if g), None)
    return {
        "hits@1": rel[0] if rel else 0.0,
        f"recall@{k}": sum(top) / min(len(gold_keys), k),
        f"ndcg@{k}": dcg / ideal if ideal else 0.0,
        "mrr": 1.0 / (first + 1) if first is not None else 0.0,
    }


def context_recall(context: str, gold: list[str]) -> float:
    """Share of the gold answers named (as a whole-token substring, normalised) in a retrieved
    context."""
    g = set(_keys(gold))
    if not g:
        return 0.0
    text = f" {key(context)} "
    return sum(1 for x in g if f" {x} " in text) / len(g)


def estimated_tokens(text: str) -> int:
    """A context's size in tokens, estimated as characters / 4 (the usual rule for English with BPE
    tokenizers)."""
    return (len(text) + 3) // 4
