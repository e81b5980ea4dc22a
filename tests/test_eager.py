"""gather_eager is asyncio.gather for calls that mostly answer from a cache: same results in the
same order, the same errors and cancellation, each call in its own context — but a call that never
waits makes no task."""

from __future__ import annotations

import asyncio
import contextvars

import pytest

from tot_mcp.kg_adapters.eager import gather_eager

WHO = contextvars.ContextVar("who", default="caller")


async def cached(x: int) -> int:
    return x * 10


async def fetched(x: int, delay: float = 0.01) -> int:
    await asyncio.sleep(delay)
    return x * 10


async def test_results_come_in_order_whether_a_call_waits_or_not():
    calls = [cached(1), fetched(2, 0.03), cached(3), fetched(4, 0.01), fetched(5, 0)]
    assert await gather_eager(calls) == [10, 20, 30, 40, 50]
    assert await gather_eager([]) == []


async def test_calls_that_never_wait_make_no_task_and_waiting_ones_run_together():
    made = []
    loop = asyncio.get_running_loop()
    real = loop.create_task

    def counting(*args, **kwargs):
        made.append(args[0])
        return real(*args, **kwargs)

    loop.create_task = counting
    try:
        assert await gather_eager(cached(i) for i in range(1000)) == [i * 10 for i in range(1000)]
        assert made == []
        started = loop.time()
        assert await gather_eager(fetched(i, 0.05) for i in range(20)) == [
            i * 10 for i in range(20)
        ]
        assert loop.time() - started < 0.5  # together, not one after another (20 × 0.05 s)
        assert len(made) == 20
    finally:
        del loop.create_task


def waits_until_cancelled(cancelled: list[bool]):
    """A call that waits ten seconds unless cancelled, noting its cancellation in ``cancelled``."""

    async def slow():
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    return slow


async def test_an_error_is_raised_and_the_calls_still_waiting_are_cancelled():
    cancelled: list[bool] = []
    slow = waits_until_cancelled(cancelled)

    async def failing():
        await asyncio.sleep(0.01)
        raise ValueError("no")

    async def failing_at_once():
        raise KeyError("k")

    with pytest.raises(ValueError):
        await gather_eager([slow(), failing()])
    await asyncio.sleep(0)
    assert cancelled == [True]
    never_started = fetched(9)
    with pytest.raises(KeyError):
        await gather_eager([failing_at_once(), never_started])
    assert never_started.cr_frame is None  # closed, not left to warn "never awaited"


async def test_cancelling_the_caller_cancels_what_its_calls_wait_on():
    cancelled: list[bool] = []
    slow = waits_until_cancelled(cancelled)

    task = asyncio.ensure_future(gather_eager([slow(), cached(1)]))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled == [True]


async def test_each_call_runs_in_its_own_copy_of_the_callers_context():
    async def sets(value: str, wait: bool) -> str:
        WHO.set(value)
        if wait:
            await asyncio.sleep(0)
        return WHO.get()

    WHO.set("caller")
    assert await gather_eager([sets("a", False), sets("b", True)]) == ["a", "b"]
    assert WHO.get() == "caller"
