"""What the router keeps about its decisions (the seed design's ``route_stats``): counts and
latencies per route, query types, analysis sources and rule fallbacks, for one services object.
Thread-safe."""

from __future__ import annotations

import statistics
import threading
from collections import deque
from typing import Any

from pydantic import BaseModel, Field


class RouteStatsSnapshot(BaseModel):
    total: int
    routes: dict[str, int]
    query_types: dict[str, int]
    analysis_sources: dict[str, int]
    fallbacks: int = Field(
        description="Analyses where the LLM failed or returned bad JSON and the rules were used"
    )
    median_seconds: dict[str, float]


class RouteStats:
    """Counts and latencies per route for one runtime. Thread-safe."""

    def __init__(self, window: int = 1000) -> None:
        self._lock = threading.Lock()
        self._routes: dict[str, int] = {}
        self._types: dict[str, int] = {}
        self._sources: dict[str, int] = {}
        self._fallbacks = 0
        self._seconds: dict[str, deque[float]] = {}
        self._window = window

    def record(self, route: str, analysis: Any, seconds: float) -> None:
        with self._lock:
            self._routes[route] = self._routes.get(route, 0) + 1
            self._types[analysis.query_type] = self._types.get(analysis.query_type, 0) + 1
            self._sources[analysis.source] = self._sources.get(analysis.source, 0) + 1
            self._fallbacks += analysis.fallback_reason is not None
            self._seconds.setdefault(route, deque(maxlen=self._window)).append(seconds)

    def snapshot(self) -> RouteStatsSnapshot:
        with self._lock:
            return RouteStatsSnapshot(
                total=sum(self._routes.values()),
                routes=dict(self._routes),
                query_types=dict(self._types),
                analysis_sources=dict(self._sources),
                fallbacks=self._fallbacks,
                median_seconds={
                    k: round(statistics.median(v), 4) for k, v in self._seconds.items() if v
                },
            )
