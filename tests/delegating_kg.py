"""A backend seen only through the ``KnowledgeGraph`` contract: wraps a MemoryKG so that code which
special-cases known backends (the offline reasoner's in-memory view) takes its generic path. It
declares no capability and no vocabulary, as a remote backend would. Subclass it to count or cap
reads; put it behind a ``Graph`` to use it."""

from __future__ import annotations

from tot_mcp.kg_adapters.base import KnowledgeGraph
from tot_mcp.kg_adapters.memory import MemoryKG
from tot_mcp.kg_adapters.models import Direction


class DelegatingKG(KnowledgeGraph):
    def __init__(self, inner: MemoryKG) -> None:
        super().__init__(inner.name, inner.limits)
        self.inner = inner

    async def initialize(self, query, limit=10, named=frozenset()):
        return await self.inner.initialize(query, limit, named)

    async def search_entities(self, text, limit=10):
        return await self.inner.search_entities(text, limit)

    async def relations(self, entity_ids):
        return await self.inner.relations(entity_ids)

    async def edges(
        self,
        entity_ids,
        relation_id,
        direction=Direction.forward,
        limit=None,
        offset=0,
        labelled=True,
    ):
        return await self.inner.edges(entity_ids, relation_id, direction, limit, offset, labelled)

    async def adjacent_ids(self, *args, **options):
        return await self.inner.adjacent_ids(*args, **options)

    async def labels(self, entity_ids, key=False):
        return await self.inner.labels(entity_ids, key)

    async def describe_entity(self, entity_id):
        return await self.inner.describe_entity(entity_id)

    async def find(self, values, relation_id=None, limit=20):
        return await self.inner.find(values, relation_id, limit)

    async def info(self):
        return await self.inner.info()
