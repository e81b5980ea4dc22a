"""A KG seen only through the public ``KnowledgeGraph`` interface: wraps a MemoryKG so that code which special-cases
known backends (the offline reasoner's in-memory view) takes its generic path. Subclass it to count or cap reads."""

from __future__ import annotations

from tot_mcp.kg_adapters.base import KnowledgeGraph
from tot_mcp.kg_adapters.memory import MemoryKG
from tot_mcp.kg_adapters.models import Direction


class DelegatingKG(KnowledgeGraph):
    def __init__(self, inner: MemoryKG) -> None:
        super().__init__(inner.name, inner.limits)
        self.inner = inner

    async def initialize(self, query, limit=10):
        return await self.inner.initialize(query, limit)

    async def get_relations(self, entity_ids):
        return await self.inner.get_relations(entity_ids)

    async def get_edges(self, entity_ids, relation_id, direction=Direction.forward, limit=None, offset=0):
        return await self.inner.get_edges(entity_ids, relation_id, direction, limit, offset)

    async def search_entities(self, text, limit=10):
        return await self.inner.search_entities(text, limit)

    async def describe_entity(self, entity_id):
        return await self.inner.describe_entity(entity_id)

    async def info(self):
        return await self.inner.info()
