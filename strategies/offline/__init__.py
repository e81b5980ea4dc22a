"""Tree-of-Traversals without an LLM: relation-path reasoning from the KG and sentence embeddings
alone."""

from __future__ import annotations

from tot_mcp.kg_adapters.models import EntityMatch

from .paths import OfflineReasoner, Plan, Reasoning
from .policy import OfflinePolicy
from .settings import OfflineSettings

__all__ = [
    "OfflinePolicy",
    "OfflineReasoner",
    "OfflineSettings",
    "Plan",
    "Reasoning",
    "topics_from_matches",
]


def topics_from_matches(matches: list[EntityMatch]) -> list[str]:
    """The topic entities among ``initialize``'s matches: the exact-label ones if any, else the
    case-insensitive ones, else the single best match (fuzzy hits are alternatives to choose from,
    not all topics)."""
    for kinds in (("exact",), ("casefold",)):
        ids = [m.entity.id for m in matches if m.match in kinds]
        if ids:
            return ids
    mentions = [m for m in matches if m.match == "mention"]
    if mentions:
        top = max(m.score for m in mentions)
        return [m.entity.id for m in mentions if m.score >= top - 1e-9]
    return [matches[0].entity.id] if matches else []
