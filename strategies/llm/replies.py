"""Reading what a model wrote: JSON wrapped in prose or code fences, and a reasoned "the graph does
not have this" (``NOT_IN_GRAPH: ...``), which the plan and tree-search replies share."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Literal


def extract_json(text: str) -> object | None:
    """The first JSON object or array in ``text`` (models like to wrap it in prose or code fences);
    else None."""
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
                return json.loads(text[start : end + 1])
            except ValueError:
                continue
    return None


# -- "the graph does not have this" ----------------------------------------------------------
#: what a refusal says is missing → the status it gets (strategies.results.STATUSES)
REFUSAL_STATUS = {"entity": "no_entity", "relation": "unsupported"}
REASON_CHARS = 200  # a reason is one line a person reads next to the status

_MARK = re.compile(r"^[\s*`>#\-\u2022]*(?:\(?\d{1,2}[.):]\s+)?[\s*`]*")
_REFUSAL = re.compile(
    r"^(?:(?:answer|path)\b\s*\d*\s*[:=.)-]?\s*)?[*`\s]*"
    r"not[\s_-]*in[\s_-]*(?:the[\s_-]*)?(?:knowledge[\s_-]*)?graph\b[*`]*(.*)$",
    re.I,
)
_KIND = re.compile(r"^\W*(entit(?:y|ies)|relations?(?:hips?)?)\b", re.I)
_ENTITY_WORDS = re.compile(
    r"\b(?:entit(?:y|ies)|linked|no such|not found|unknown (?:film|person|name))\b", re.I
)


@dataclass(frozen=True)
class Refusal:
    """A model's reasoned "the graph does not have this": what is missing and why, in its words.
    A refusal is the answer, not a failure to answer, so the caller stops there instead of
    searching on."""

    kind: Literal["entity", "relation"]
    reason: str

    @property
    def status(self) -> str:
        return REFUSAL_STATUS[self.kind]


def read_refusal(line: str) -> Refusal | None:
    """``NOT_IN_GRAPH: <entity|relation> — <reason>`` → a :class:`Refusal`, read forgivingly, as
    models vary it: any case, spaces or hyphens for the underscores, list markers, ``ANSWER:`` or
    ``PATH:`` before it, any dash or colon after the kind. A missing kind is guessed from the
    reason (entity words → entity, else relation); a missing reason gets a default one. None when
    the line is not a refusal."""
    m = _REFUSAL.match(_MARK.sub("", (line or "").strip()))
    if m is None:
        return None
    rest = m.group(1).strip()
    k = _KIND.match(rest)
    kind: Literal["entity", "relation"]
    if k:
        kind = "entity" if k.group(1).lower().startswith("entit") else "relation"
        rest = rest[k.end() :]
    else:
        kind = "entity" if _ENTITY_WORDS.search(rest) else "relation"
    reason = " ".join(rest.strip(" \t:;,.-–—|()*`").split())
    if len(reason) > 1 and reason[0] == reason[-1] and reason[0] in "\"'":  # a quoted reason
        reason = reason[1:-1].strip()
    if not reason:
        reason = (
            "the model found the question's entity is not in the graph"
            if kind == "entity"
            else "the model found no relation in the graph for what the question asks"
        )
    if len(reason) > REASON_CHARS:
        reason = reason[: REASON_CHARS - 1].rstrip() + "…"
    return Refusal(kind=kind, reason=reason)


def find_refusal(text: str) -> Refusal | None:
    """The first refusal line of a reply (see :func:`read_refusal`), else None."""
    for line in (text or "").splitlines():
        r = read_refusal(line)
        if r is not None:
            return r
    return None
