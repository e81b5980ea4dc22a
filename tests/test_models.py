"""The typed models every adapter returns: how they are built on the hot paths."""

from __future__ import annotations

from tot_mcp.kg_adapters.models import Entity, EntityMatch


def test_an_unvalidated_construct_fills_factory_defaults_without_marking_them_set():
    e = Entity(id="m:E1", label="x", kg="m")
    a = EntityMatch.model_construct(entity=e, score=1.0, match="exact", mention=None)
    b = EntityMatch.model_construct(entity=e, score=1.0, match="exact", mention=None)
    assert (
        a.same_as == [] and a.same_as is not b.same_as
    )  # a fresh list each time, as the factory makes
    assert "same_as" not in a.model_fields_set and "same_as" not in a.model_dump(exclude_unset=True)
    assert EntityMatch.model_construct(
        entity=e, score=1.0, match="x", same_as=["n:E2"]
    ).same_as == ["n:E2"]
