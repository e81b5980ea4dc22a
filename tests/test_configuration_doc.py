"""docs/configuration.md is the one page of every configuration key: generated from the settings
models, it must match them, name every key with its default, and say what each of the file's own
keys does."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from scripts import config_doc
from tot_mcp.strategies.settings import Config

REPO = Path(__file__).resolve().parent.parent


def _tables(model: type[BaseModel], prefix: str = "") -> dict[str, type[BaseModel]]:
    """Every table of the file that is a model, by its dotted key: limits, server, kg, link..."""
    found = {}
    for key, field in model.model_fields.items():
        for candidate in (field.annotation, *getattr(field.annotation, "__args__", ())):
            if isinstance(candidate, type) and issubclass(candidate, BaseModel):
                found[prefix + key] = candidate
                found.update(_tables(candidate, prefix + key + "."))
    return found


def test_the_page_is_what_the_models_generate():
    on_disk = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert on_disk == config_doc.page(), (
        "docs/configuration.md is stale: run python -m scripts.config_doc --write"
    )


def test_every_key_of_the_file_is_listed_with_its_default_and_what_it_does():
    text = config_doc.page()
    tables = _tables(Config)
    assert {"limits", "server", "llm", "retrieval", "linking", "kg", "link"} <= set(tables)
    for table, model in tables.items():
        for key, field in model.model_fields.items():
            if field.exclude:
                continue
            kind, default = config_doc.type_name(field.annotation), config_doc.default_text(field)
            row = f"| `{key}` | {kind} | {default} |"
            assert row in text, f"{table}.{key} is missing from docs/configuration.md"
            assert field.description, (
                f"{table}.{key} has no description to show in docs/configuration.md"
            )


def test_every_strategy_has_its_options_table():
    from tot_mcp.strategies.registry import REGISTRY

    text = config_doc.page()
    for name in REGISTRY.names():
        assert f"### `[strategy.{name}]`" in text


def test_the_readme_links_the_page():
    assert "docs/configuration.md" in (REPO / "README.md").read_text(encoding="utf-8")
