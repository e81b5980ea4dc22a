"""Reading what a model wrote when JSON was asked for: models wrap it in prose or code fences."""

from __future__ import annotations

import json


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

