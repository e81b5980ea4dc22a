"""``gather_eager``: ``asyncio.gather`` for calls that mostly answer from a cache.

Why: linking a frontier asks the link cache about each of its thousands of entities, and after a
bulk prefetch nearly every answer is a cache hit that never waits. ``asyncio.gather`` still makes a
task per call — scheduled, run on a later turn of the loop, its result collected — ~10 µs each, 100k
of them over 15 three-KG questions (a tenth of their time). Here each call first runs in place until
it completes or first waits; only a call that waits becomes a task, and those run concurrently as
with ``gather``. This is what Python 3.12's eager task factory does for every task; the package
supports 3.11.

Each call runs in a copy of the caller's context, as a task would, so a context variable it sets
does not leak out. A call that raises makes ``gather_eager`` raise it, after cancelling the calls
still waiting.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Coroutine, Iterable
from typing import Any, TypeVar

T = TypeVar("T")


async def gather_eager(calls: Iterable[Coroutine[Any, Any, T]]) -> list[T]:
    """The calls' results in order (see the module's docstring)."""
    calls = list(calls)
    results: list[Any] = [None] * len(calls)
    waiting: dict[int, asyncio.Future] = {}
    i = -1
    try:
        for i, coro in enumerate(calls):
            ctx = contextvars.copy_context()
            try:
                step = ctx.run(coro.send, None)
            except StopIteration as stop:
                results[i] = stop.value
                continue
            waiting[i] = asyncio.get_running_loop().create_task(_finish(coro, step), context=ctx)
    except BaseException:
        for coro in calls[i + 1 :]:  # never started: closed, not left unawaited
            coro.close()
        for task in waiting.values():
            task.cancel()
        raise
    if waiting:
        try:
            done = await asyncio.gather(*waiting.values())
        except BaseException:
            for task in waiting.values():
                task.cancel()
            raise
        for i, value in zip(waiting, done):
            results[i] = value
    return results


async def _finish(coro: Coroutine[Any, Any, T], step: Any) -> T:
    """Run ``coro`` on from where it first waited (on ``step``, the future it yielded, or None for a
    bare yield), as its task would have: wait for the future, resume the coroutine, which reads the
    future's outcome."""
    while True:
        try:
            if step is None:
                await asyncio.sleep(0)
            else:
                step._asyncio_future_blocking = False
                await asyncio.wait((step,))
        except asyncio.CancelledError as cancel:
            if step is not None:
                step.cancel()
            try:
                step = coro.throw(cancel)
            except StopIteration as stop:
                return stop.value
            continue
        try:
            step = coro.send(None)
        except StopIteration as stop:
            return stop.value
