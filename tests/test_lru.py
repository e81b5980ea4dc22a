"""The one bounded map (kg_adapters/lru.py) behind the result cache, the link, entity, label and
vector caches, result handles and drawn trees: it never holds more than its bound, forgets the least
recently used first, and with an age limit forgets what is older than that."""

from __future__ import annotations

from tot_mcp.kg_adapters.lru import LRU


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_over_the_bound_the_least_recently_used_goes_first():
    lru = LRU(2)
    lru.put("a", 1)
    lru.put("b", 2)
    assert lru.get("a") == 1  # a is now the most recent
    lru.put("c", 3)
    assert "b" not in lru and lru.peek("a") == 1 and lru.peek("c") == 3
    assert len(lru) == 2 and lru.evictions == 1


def test_peek_does_not_refresh_so_insertion_order_decides():
    lru = LRU(2)
    lru.put("a", 1)
    lru.put("b", 2)
    assert lru.peek("a") == 1
    lru.put("c", 3)
    assert "a" not in lru and "b" in lru


def test_putting_a_key_again_replaces_it_as_the_most_recent():
    lru = LRU(2)
    lru.put("a", 1)
    lru.put("b", 2)
    lru.put("a", 10)
    lru.put("c", 3)
    assert lru.peek("a") == 10 and "b" not in lru


def test_a_weight_bound_counts_each_value_by_its_weight_and_skips_one_heavier_than_all():
    lru = LRU(10, weigh=len)
    lru.put("x", "aaaa")
    lru.put("y", "bbbbb")
    assert lru.weight == 9
    lru.put("z", "cc")  # 11 > 10: x (least recent) goes
    assert "x" not in lru and lru.weight == 7
    lru.put("huge", "h" * 11)
    assert "huge" not in lru and lru.weight == 7 and len(lru) == 2


def test_entries_expire_ttl_seconds_after_they_were_made():
    clock = Clock()
    lru = LRU(5, ttl=60, clock=clock)
    lru.put("new", 1)
    lru.put("old", 2, born=clock.t - 50)  # made 50 s ago elsewhere: 10 s left
    clock.t += 30
    assert lru.get("new") == 1 and lru.get("old") is None and "old" not in lru
    clock.t += 30
    assert lru.get("new", "gone") == "gone"
    assert (lru.hits, lru.misses, lru.expirations, len(lru)) == (1, 2, 2, 0)


def test_a_stored_none_is_told_apart_from_a_miss_by_the_default():
    lru = LRU(1)
    lru.put("k", None)
    missing = object()
    assert lru.get("k", missing) is None and lru.get("other", missing) is missing
