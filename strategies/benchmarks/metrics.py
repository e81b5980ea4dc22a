"""Answer metrics, on normalised labels (:func:`kg_adapters.text.key`: case-folded tokens, ``_`` = space).

* **Hits@1** — the top-ranked predicted answer equals one of the gold answers (0 if nothing predicted).
* **F1** — answer-set F1 between the set of predicted labels and the set of gold answers.
* **EM-in** — the Tree-of-Traversals paper's metric: some gold answer occurs, as a whole-token substring, in the
  answer text (the answer text and all predicted labels, normalised).
* **Recall@10** — for retrievers: share of gold answers among the first 10 retrieved labels.
"""

from __future__ import annotations

from kg_adapters.text import key


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
