"""Entity search through Wikidata's ``wbsearchentities`` API — the ranking wikidata.org's own search
box uses, far better than label matching in SPARQL for the public service. Only used when the
endpoint is WDQS (or a ``search_api`` URL is configured)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import BackendError
from ..text import key
from .endpoint import JsonEndpoint
from .ids import QID


@dataclass(frozen=True)
class ApiHit:
    qid: str
    label: str
    description: str | None
    score: float
    match: str


async def wbsearchentities(api: JsonEndpoint, text: str, language: str, limit: int) -> list[ApiHit]:
    params = {
        "action": "wbsearchentities",
        "search": text,
        "language": language,
        "uselang": language,
        "type": "item",
        "limit": str(min(max(limit, 1), 50)),
        "format": "json",
    }
    data = await api.request("GET", params)
    if "error" in data:
        err = data["error"]
        info = err.get("info", err) if isinstance(err, dict) else err
        raise BackendError(f"{api.guard.url}: wbsearchentities refused the search: {info}")
    found = data.get("search")
    if not isinstance(found, list):
        raise BackendError(f"{api.guard.url}: wbsearchentities answer has no 'search' list")
    hits: list[ApiHit] = []
    wanted = key(text)
    for rank, item in enumerate(found):
        if not isinstance(item, dict) or not QID.match(str(item.get("id", ""))):
            continue
        label = str(item.get("label") or item["id"])
        match = item.get("match")
        matched = match if isinstance(match, dict) else {}
        matched_text = str(matched.get("text") or label)
        if label == text:
            score, how = 1.0, "exact"
        elif key(label) == wanted:
            score, how = 0.95, "casefold"
        elif key(matched_text) == wanted:
            score, how = 0.9, "alias"
        else:
            score, how = max(0.1, 0.8 - 0.02 * rank), "api"
        desc = item.get("description")
        hits.append(ApiHit(item["id"], label, str(desc) if desc else None, score, how))
    return hits
