"""A small bounded LRU mapping for per-backend caches (link resolutions, entity labels)."""

from __future__ import annotations

from collections import OrderedDict


class LRU(OrderedDict):
    """``put`` evicts the least recently used entries beyond ``size``; ``get_fresh`` marks a hit as recent."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def get_fresh(self, k):
        v = self.get(k)
        if v is not None:
            self.move_to_end(k)
        return v

    def put(self, k, v) -> None:
        self[k] = v
        self.move_to_end(k)
        while len(self) > self.size:
            self.popitem(last=False)
