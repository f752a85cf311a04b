"""The kit's idle clock (``Scope.read``): one timer per stream, never armed per read, and never a
timeout for bytes that came in time."""

from __future__ import annotations

import asyncio
import time

import pytest

from streamfns.kit.scope import Idle, Scope


async def test_bytes_that_came_in_the_turn_the_deadline_passed_are_not_a_timeout() -> None:
    # A busy loop runs due timers and I/O callbacks in one batch: the bytes are in, the task that
    # waits for them has not run yet, and the deadline has passed. That read succeeded.
    loop = asyncio.get_running_loop()
    scope = Scope(None, None, None, idle_timeout=0.05)
    arrived: asyncio.Future[bytes] = loop.create_future()

    def busy() -> None:
        time.sleep(0.2)  # the loop is held past the deadline…
        loop.call_soon(arrived.set_result, b"data")  # …and the bytes are there when it comes back

    loop.call_soon(busy)
    try:
        assert await scope.read(arrived) == b"data"
    finally:
        scope.close()


async def test_a_wait_past_the_idle_timeout_is_idle() -> None:
    scope = Scope(None, None, None, idle_timeout=0.05)
    try:
        with pytest.raises(Idle):
            async with asyncio.timeout(10):  # a bound, so a clock that never fires fails, not hangs
                await scope.read(asyncio.sleep(3600))
    finally:
        scope.close()


async def test_a_send_is_allowed_its_connect_timeout_before_the_idle_clock_runs() -> None:
    # Connecting is bounded by the connect timeout (1,000 connects at once take seconds on a loaded
    # machine); the idle timeout bounds the wait for the head after it.
    scope = Scope(None, None, None, idle_timeout=0.05)
    try:
        assert await scope.read(asyncio.sleep(0.2, result="head"), 30.0) == "head"
        with pytest.raises(Idle):
            async with asyncio.timeout(10):  # the send's allowance must not push this wait's deadline
                await scope.read(asyncio.sleep(3600), 0.05)
    finally:
        scope.close()


async def test_many_reads_arm_one_timer() -> None:
    loop = asyncio.get_running_loop()
    armed: list[float] = []
    call_at = loop.call_at

    def counting(when: float, callback: object, *args: object) -> asyncio.TimerHandle:
        armed.append(when)
        return call_at(when, callback, *args)  # type: ignore[arg-type]

    scope = Scope(None, None, None, idle_timeout=60.0)
    loop.call_at = counting  # type: ignore[method-assign]
    try:
        for _ in range(1000):
            await scope.read(asyncio.sleep(0))
    finally:
        loop.call_at = call_at  # type: ignore[method-assign]
        scope.close()
    assert len(armed) == 1, "the clock keeps one timer, re-armed only when it fires"
