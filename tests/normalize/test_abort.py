"""AbortController / AbortSignal."""

from __future__ import annotations

import asyncio
import threading

from normalize import AbortController, AbortSignal, sleep_unless_aborted


async def test_abort_wakes_waiters_runs_callbacks_and_is_idempotent() -> None:
    controller = AbortController()
    seen: list[str | None] = []
    controller.signal.add_callback(lambda signal: seen.append(signal.reason))
    waiter = asyncio.create_task(controller.signal.wait())
    await asyncio.sleep(0)
    assert not waiter.done()
    controller.abort("user pressed stop")
    controller.abort("second time")
    await asyncio.wait_for(waiter, 1)
    assert controller.signal.aborted
    assert controller.signal.reason == "user pressed stop"
    assert seen == ["user pressed stop"]


async def test_callback_added_after_abort_runs_at_once_and_can_be_removed() -> None:
    controller = AbortController()
    calls: list[AbortSignal] = []
    remove = controller.signal.add_callback(calls.append)
    remove()
    controller.abort()
    assert calls == []
    controller.signal.add_callback(calls.append)
    assert calls == [controller.signal]
    assert controller.signal.reason == "Request was aborted"


async def test_abort_from_another_thread_wakes_the_loop() -> None:
    controller = AbortController()
    timer = threading.Timer(0.05, controller.abort)
    timer.start()
    try:
        await asyncio.wait_for(controller.signal.wait(), 2)
    finally:
        timer.join()
    assert controller.signal.aborted


async def test_sleep_unless_aborted_returns_early() -> None:
    controller = AbortController()
    loop = asyncio.get_running_loop()
    loop.call_later(0.02, controller.abort)
    started = loop.time()
    assert await sleep_unless_aborted(10, controller.signal)
    assert loop.time() - started < 1
    assert not await sleep_unless_aborted(0.001, AbortController().signal)
    assert not await sleep_unless_aborted(0.001, None)
