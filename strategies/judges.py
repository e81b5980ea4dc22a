"""Judgements the composite strategies ask for, each with an LLM-backed and an offline implementation.

* ARK's per-depth decision (``sufficient`` / ``expand`` / ``stop``): :class:`LLMArkJudge`, :class:`OfflineArkJudge`.
* The router's query analysis (complexity, relationship intensity, reasoning need, entity count):
  :class:`LLMQueryAnalyser`, :class:`RuleQueryAnalyser`.
* Rerank's "deepen" scoring of candidates by the LLM: :func:`llm_candidate_scores`.

Fallbacks are documented and recorded, never silent: an ARK judge answer that is not one of the three decisions
becomes ``stop`` with ``valid=False``; an analysis that is not valid JSON (or an LLM error) is replaced by the
rule-based analysis with ``source="rules"`` and the reason in ``fallback_reason``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Literal, Protocol

from pydantic import BaseModel, Field, ValidationError

import prompts
from strategies.llm.base import LLM, LLMError
from strategies.retrieval_common import STOPWORDS, QueryRelevance, RetrievedEntity

Decision = Literal["sufficient", "expand", "stop"]
QueryType = Literal["lookup", "multi_hop", "path", "subgraph"]


def extract_json(text: str) -> object | None:
    """The first JSON object or array in ``text`` (models like to wrap it in prose or code fences); else None."""
    if not isinstance(text, str):
        return None
    text = text.strip()
    try:
        return json.loads(text)
    except ValueError:
        pass
    for opener, closer in (("{", "}"), ("[", "]")):
        start = text.find(opener)
        end = text.rfind(closer)
        if start != -1 and end > start:
            try:
                return json.loads(text[start: end + 1])
            except ValueError:
                continue
    return None


# -- ARK ----------------------------------------------------------------------------------------------------
class ArkDecision(BaseModel):
    decision: Decision
    relations: list[str] | None = Field(default=None, description="Relation labels/IDs to follow when expanding")
    reason: str = ""
    valid: bool = Field(default=True, description="False when the judge's answer was unusable and 'stop' was forced")
    raw: str | None = Field(default=None, description="The judge's raw answer when it was not usable")


class ArkJudge(Protocol):
    name: str

    async def judge(
        self, query: str, depth: int, results: Sequence[RetrievedEntity], relations: Sequence[str]
    ) -> ArkDecision: ...


def parse_ark_decision(text: str) -> ArkDecision:
    """JSON ``{"decision": ...}`` or a bare keyword; anything else → ``stop`` marked invalid."""
    data = extract_json(text)
    if isinstance(data, dict):
        decision = str(data.get("decision", "")).strip().lower()
        if decision in ("sufficient", "expand", "stop"):
            rels = data.get("relations")
            rels = [str(r) for r in rels if str(r).strip()] if isinstance(rels, list) else None
            return ArkDecision(decision=decision, relations=rels or None, reason=str(data.get("reason", ""))[:500])
    elif isinstance(text, str):
        words = re.findall(r"[a-z]+", text.strip().lower())
        if len(words) <= 3:
            hits = [w for w in words if w in ("sufficient", "expand", "stop")]
            if len(set(hits)) == 1:
                return ArkDecision(decision=hits[0])  # type: ignore[arg-type]
    shown = text if isinstance(text, str) else repr(text)
    return ArkDecision(decision="stop", valid=False, reason="judge answer unusable; stopped", raw=shown[:500])


class LLMArkJudge:
    """Asks the LLM with ``prompts/ark_judge.txt``."""

    name = "llm"

    def __init__(self, llm: LLM, max_results_shown: int = 15) -> None:
        self.llm = llm
        self.max_results_shown = max_results_shown

    async def judge(
        self, query: str, depth: int, results: Sequence[RetrievedEntity], relations: Sequence[str]
    ) -> ArkDecision:
        lines = []
        for k, r in enumerate(results[: self.max_results_shown], 1):
            via = " → ".join(f"{s.label}{'' if s.direction.value == 'forward' else ' (inverse)'}" for s in r.path)
            lines.append(f"{k}. {r.label}" + (f"  (via {via})" if via else ""))
        prompt = prompts.render(
            "ark_judge",
            query=query,
            depth=depth,
            relations=", ".join(relations[:40]) or "(none)",
            results="\n".join(lines) or "(no results)",
        )
        try:
            text = await self.llm.complete(prompt, max_tokens=200, temperature=0.0)
        except LLMError as e:
            return ArkDecision(decision="stop", valid=False, reason=f"judge LLM failed: {e}", raw=None)
        return parse_ark_decision(text)


class OfflineArkJudge:
    """No LLM: estimates how many relations the question mentions (span ↔ relation-phrase similarity, see
    :meth:`QueryRelevance.estimate_hops`) and expands until the traversal is that deep; ``stop`` when nothing is
    left to expand. ``sufficient`` once depth ≥ the estimate and there are results."""

    name = "offline"

    def __init__(self, relevance: QueryRelevance, topic_labels: Sequence[str] = (), max_hops: int = 3) -> None:
        self.relevance = relevance
        self.topic_labels = list(topic_labels)
        self.max_hops = max_hops
        self._hops: dict[str, int] = {}

    def hops(self, query: str) -> int:
        if query not in self._hops:
            self._hops[query] = max(1, min(self.max_hops, self.relevance.estimate_hops(query, self.topic_labels)))
        return self._hops[query]

    async def judge(
        self, query: str, depth: int, results: Sequence[RetrievedEntity], relations: Sequence[str]
    ) -> ArkDecision:
        need = self.hops(query)
        if depth >= need and results:
            return ArkDecision(decision="sufficient", reason=f"query mentions ~{need} relation(s); depth {depth}")
        if not relations:
            return ArkDecision(decision="stop", reason="nothing left to expand")
        return ArkDecision(decision="expand", reason=f"query mentions ~{need} relation(s); depth {depth}")


# -- router analysis ----------------------------------------------------------------------------------------
class QueryAnalysis(BaseModel):
    complexity: float = Field(ge=0.0, le=1.0)
    relationship_intensity: float = Field(ge=0.0, le=1.0)
    reasoning_needed: bool
    entity_count: int = Field(ge=0)
    query_type: QueryType = "lookup"
    source: Literal["llm", "rules"] = "rules"
    fallback_reason: str | None = None


_REASONING_CUES = frozenset("why how compare compared difference both either same share shares shared also common "
                            "than before after between most least".split())
_SUBGRAPH_CUES = ("everything about", "all about", "related to", "connected to", "connections", "neighbourhood",
                  "neighborhood", "around", "overview")
_RELATION_CUES = frozenset("of by 's with whose share shares same also".split())


class RuleQueryAnalyser:
    """Rule-based analysis (no LLM). Relationship intensity and complexity grow with the number of relations the
    query mentions — estimated from the KG's own relation vocabulary when a :class:`QueryRelevance` is given, else
    from relational cue words — plus cues for comparison/reasoning and the number of entities."""

    name = "rules"

    def __init__(self, relevance: QueryRelevance | None = None) -> None:
        self.relevance = relevance

    def analyse(self, query: str, entity_labels: Sequence[str] = (), entity_count: int | None = None) -> QueryAnalysis:
        words = re.findall(r"\w+|'s", query.casefold())
        content = [w for w in words if w not in STOPWORDS]
        if self.relevance is not None:
            hops = self.relevance.estimate_hops(query, entity_labels)
        else:
            hops = min(4, sum(1 for w in words if w in _RELATION_CUES))
        mentions = re.findall(r"\[([^\[\]]+)\]", query)
        if entity_count is None:
            entity_count = len(mentions) or len(re.findall(r"\b[A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)*", query[1:]))
        reasoning = any(w in _REASONING_CUES for w in words)
        low = query.casefold()
        intensity = min(1.0, 0.3 * hops + 0.2 * any(w in ("share", "shares", "same", "also") for w in words)
                        + 0.2 * (entity_count >= 2))
        complexity = min(1.0, 0.1 + 0.2 * max(0, hops - 1) + 0.15 * reasoning + 0.15 * (entity_count >= 2)
                         + 0.1 * (len(content) > 12) + 0.15 * (hops >= 3))
        if entity_count >= 2:  # several anchors: what links them is the question
            qtype: QueryType = "path"
        elif any(c in low for c in _SUBGRAPH_CUES):
            qtype = "subgraph"
        elif hops >= 2:
            qtype = "multi_hop"
        else:
            qtype = "lookup"
        return QueryAnalysis(
            complexity=round(complexity, 3),
            relationship_intensity=round(intensity, 3),
            reasoning_needed=reasoning,
            entity_count=entity_count,
            query_type=qtype,
            source="rules",
        )


class LLMQueryAnalyser:
    """Asks the LLM (``prompts/router_analyse.txt``) for JSON; falls back to the rules on error or bad JSON."""

    name = "llm"

    def __init__(self, llm: LLM, fallback: RuleQueryAnalyser) -> None:
        self.llm = llm
        self.fallback = fallback

    async def analyse(
        self, query: str, entity_labels: Sequence[str] = (), entity_count: int | None = None
    ) -> QueryAnalysis:
        try:
            text = await self.llm.complete(prompts.render("router_analyse", query=query), max_tokens=200,
                                           temperature=0.0)
        except LLMError as e:
            return self._fallback(query, entity_labels, entity_count, f"LLM failed: {e}")
        data = extract_json(text)
        if not isinstance(data, dict):
            return self._fallback(query, entity_labels, entity_count, f"analysis is not JSON: {str(text)[:120]!r}")
        try:
            qtype = str(data.get("query_type", "lookup")).strip().lower()
            return QueryAnalysis(
                complexity=float(data["complexity"]),
                relationship_intensity=float(data["relationship_intensity"]),
                reasoning_needed=bool(data.get("reasoning_needed", False)),
                entity_count=int(data.get("entity_count", entity_count or 0)),
                query_type=qtype if qtype in ("lookup", "multi_hop", "path", "subgraph") else "lookup",
                source="llm",
            )
        except (KeyError, TypeError, ValueError, ValidationError) as e:
            return self._fallback(query, entity_labels, entity_count, f"analysis JSON invalid: {type(e).__name__}")

    def _fallback(self, query, labels, count, reason: str) -> QueryAnalysis:
        return self.fallback.analyse(query, labels, count).model_copy(update={"fallback_reason": reason})


# -- rerank deepening with the LLM -------------------------------------------------------------------------------
async def llm_candidate_scores(llm: LLM, query: str, candidates: Sequence[tuple[str, str]]) -> list[float] | None:
    """0–1 scores for ``(label, descriptor)`` candidates from the LLM; None when the answer is unusable."""
    listing = "\n".join(f"{k}. {label} — {desc}" for k, (label, desc) in enumerate(candidates, 1))
    try:
        text = await llm.complete(prompts.render("rerank_deepen", query=query, candidates=listing), max_tokens=400,
                                  temperature=0.0)
    except LLMError:
        return None
    data = extract_json(text)
    if not isinstance(data, list):
        return None
    scores = [0.0] * len(candidates)
    seen = False
    for item in data:
        if isinstance(item, dict):
            try:
                n, s = int(item["n"]), float(item["score"])
            except (KeyError, TypeError, ValueError):
                continue
            if 1 <= n <= len(candidates):
                scores[n - 1] = max(0.0, min(10.0, s)) / 10.0
                seen = True
    return scores if seen else None
