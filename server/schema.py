"""Equivalent, cheaper output schemas for clients to validate against.

Pydantic emits ``$ref``s into ``$defs`` and ``anyOf: [{X}, {"type": "null"}]`` for optional fields.
Clients (the Python SDK included) re-validate every structured result against the tool's
``outputSchema`` with jsonschema, where resolving references and trying ``anyOf`` branches costs
more than the KG lookup itself (~1.1 ms → ~0.65 ms for a small ``get_edges`` page). Inlining the
(non-recursive) definitions and folding ``null`` into ``type`` accepts exactly the same documents.
"""

from __future__ import annotations

from typing import Any

_MAX_DEPTH = 32  # deeper means a recursive model: keep its $ref rather than unrolling it
# Keywords that constrain every instance whatever its type: folding null into "type" would change
# their meaning.
_TYPE_INDEPENDENT = frozenset(
    {"const", "not", "allOf", "anyOf", "oneOf", "if", "then", "else", "$ref"}
)


def lean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    defs = schema.get("$defs", {})
    out = _lean(schema, defs, 0)
    if _has_ref(out):  # something stayed referenced (recursion): keep the definitions it needs
        out["$defs"] = defs
    return out


def _lean(node: Any, defs: dict[str, Any], depth: int) -> Any:
    if isinstance(node, list):
        return [_lean(x, defs, depth) for x in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and depth < _MAX_DEPTH:
        target = defs.get(ref.removeprefix("#/$defs/"))
        if target is not None:
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            return {**_lean(target, defs, depth + 1), **_lean(siblings, defs, depth)}
    out = {k: _lean(v, defs, depth) for k, v in node.items() if k != "$defs"}
    return _fold_nullable(out)


def _fold_nullable(node: dict[str, Any]) -> dict[str, Any]:
    """``anyOf: [{type: T, ...}, {type: null}]`` → ``{type: [T, null], ...}`` when that means the
    same thing."""
    branches = node.get("anyOf")
    if not (isinstance(branches, list) and len(branches) == 2 and {"type": "null"} in branches):
        return node
    other = branches[0] if branches[1] == {"type": "null"} else branches[1]
    if (
        not isinstance(other.get("type"), str)
        or set(other) & _TYPE_INDEPENDENT
        or set(other) & (set(node) - {"anyOf"})
    ):
        return node
    folded = {**other, "type": [other["type"], "null"]}
    if "enum" in folded:  # enum restricts every value, null included
        folded["enum"] = [*folded["enum"], None]
    rest = {k: v for k, v in node.items() if k != "anyOf"}
    return {**folded, **rest}


def _has_ref(node: Any) -> bool:
    if isinstance(node, dict):
        return "$ref" in node or any(_has_ref(v) for v in node.values())
    if isinstance(node, list):
        return any(_has_ref(v) for v in node)
    return False


def model_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """An input schema as a client model reads it on every turn: the definitions inlined, no
    ``title`` (the property name says it), an optional argument typed by what to pass (``"string"``,
    not ``["string", "null"]`` with ``default: null``: leaving it out means the default). Accepts
    every call the full schema accepts except an explicit ``null``, which the server still takes."""
    return _for_model(lean_schema(schema))


def _for_model(node: Any) -> Any:
    if isinstance(node, list):
        return [_for_model(x) for x in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "properties" and isinstance(value, dict):  # property names are data, not keywords
            out[key] = {name: _for_model(sub) for name, sub in value.items()}
        else:
            out[key] = _for_model(value)
    if "default" in out and out["default"] is None:
        del out["default"]
        kind = out.get("type")
        if isinstance(kind, list) and "null" in kind:
            rest = [t for t in kind if t != "null"]
            out["type"] = rest[0] if len(rest) == 1 else rest
            if "enum" in out:
                out["enum"] = [v for v in out["enum"] if v is not None]
    return out


def model_text(description: str | None) -> str | None:
    """A tool description as one paragraph of plain words: docstring indentation and line breaks
    folded, RST literals (````x````) unquoted."""
    if description is None:
        return None
    return " ".join(description.replace("``", "").split())
