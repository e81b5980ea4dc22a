"""Knowledge-graph backends behind one Tree-of-Traversals interface (see
:mod:`kg_adapters.base`)."""

from .base import KnowledgeGraph, Limits
from .graph import Graph
from .errors import BackendError, InvalidInput, KGError, NotFound, RateLimited, UnknownKG
from .models import (
    Direction,
    Edge,
    EdgePage,
    Entity,
    EntityDescription,
    EntityMatch,
    KGInfo,
    Literal,
    Relation,
)

__all__ = [
    "BackendError",
    "Direction",
    "Edge",
    "EdgePage",
    "Entity",
    "EntityDescription",
    "EntityMatch",
    "InvalidInput",
    "Graph",
    "KGError",
    "KGInfo",
    "KnowledgeGraph",
    "Limits",
    "Literal",
    "NotFound",
    "RateLimited",
    "Relation",
    "UnknownKG",
]
