"""Prompt templates are data: one ``.txt`` file per template, filled with :meth:`str.format`-style
fields."""

from __future__ import annotations

from functools import cache
from importlib.resources import files


@cache
def load(name: str) -> str:
    """The text of ``prompts/<name>.txt``; raises FileNotFoundError naming the template."""
    path = files("tot_mcp.prompts") / f"{name}.txt"
    if not path.is_file():
        raise FileNotFoundError(f"no prompt template {name!r} in prompts/")
    return path.read_text(encoding="utf-8")


def render(name: str, **fields: object) -> str:
    return load(name).format(**fields)
