"""Verdicts that do not depend on the machine's load (issue 19): the harness's clock leaves out the time
a thread waited for a CPU, deadlines are counted on it, and a connection counts as closed when the
client closes it, however late the server sees it.

The broken and hostile adapters (test_conformance_broken.py, test_conformance_hostile.py) prove the
other half: a stream that hangs, a loop that blocks and a response that is never closed still fail.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import os
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import httpx
import pytest

import conformance
import conformance.loopback
import conformance.session
from conformance.clock import ThreadClock
from conformance.observe import Scenario, Timing, drive
from normalize import AbortController, AssistantMessageEvent, Context, Model, StreamOptions
from streamfns.anthropic import ADAPTER, stream_anthropic
from tests.conformance._fakes import hangs, well_behaved

T = TypeVar("T")

ANTHROPIC = conformance.Target.from_adapter(ADAPTER)
MODEL = Model(id="conformance-model", api="faux", provider="conformance")


# -- the clock ------------------------------------------------------------------------------------------


def test_clocks_of_one_thread_agree_whichever_thread_reads_them() -> None:
    """Another thread's reading of this thread's clock is never behind this thread's own earlier
    reading, and never ahead of the wall clock. (It may run ahead of a later reading by the CPU wait
    the kernel has not accounted yet — documented on ``now`` — so the two are not ordered that way.)"""
    own = ThreadClock()
    before = own.now()
    seen: list[float] = []
    native_id = threading.get_native_id()
    reader = threading.Thread(target=lambda: seen.append(ThreadClock(native_id).now()))
    reader.start()
    reader.join()
    wall = time.monotonic()
    after = ThreadClock().now()
    assert before <= seen[0] <= wall
    assert before <= after <= time.monotonic()


def test_without_scheduler_statistics_the_clock_is_the_wall_clock() -> None:
    clock = ThreadClock(native_id=2**31 - 1)  # no such thread: nothing to read
    assert not clock.load_aware
    before = time.monotonic()
    reading = clock.now()
    assert before <= reading <= time.monotonic()


def test_time_asleep_counts() -> None:
    """A blocking call (what stops an adapter's event loop) is time that passes on the clock."""
    clock = ThreadClock()
    start = clock.now()
    time.sleep(0.2)
    assert clock.now() - start >= 0.19


@pytest.mark.slow
def test_time_spent_waiting_for_a_cpu_does_not_count() -> None:
    """A thread that must share its CPU with a busy process (a 'hog') for 0.6 s of wall time gets about
    half of it; only that half passes on its clock."""
    if not ThreadClock().load_aware or not hasattr(os, "sched_setaffinity"):
        pytest.skip("the system reports no per-thread wait for a CPU: the clock is the wall clock")
    # In a thread of its own: pinning it to one CPU must not pin the test's thread.
    wall, counted = _in_a_thread(lambda: _spin_beside_a_hog(0.6))
    assert wall >= 0.6
    assert counted <= 0.75 * wall, (wall, counted)


def _in_a_thread(fn: Callable[[], T]) -> T:
    outcome: list[T] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            outcome.append(fn())
        except BaseException as exc:  # re-raised in the test's thread
            failure.append(exc)

    runner = threading.Thread(target=target)
    runner.start()
    runner.join(30)
    if failure:
        raise failure[0]
    return outcome[0]


def _spin_beside_a_hog(seconds: float) -> tuple[float, float]:
    """Spin ``seconds`` of wall time on one CPU that a busy child process is pinned to as well; the wall
    time and the time the clock counted."""
    cpu = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})  # 0: the calling thread
    command = f"import os; os.sched_setaffinity(0, {{{cpu}}}); print(flush=True)\nwhile True: pass"
    with subprocess.Popen([sys.executable, "-c", command], stdout=subprocess.PIPE) as hog:
        try:
            assert hog.stdout is not None
            hog.stdout.readline()  # pinned: from now on it competes for our CPU
            clock = ThreadClock()
            wall_start, start = time.monotonic(), clock.now()
            while time.monotonic() - wall_start < seconds:
                pass
            return time.monotonic() - wall_start, clock.now() - start
        finally:
            hog.kill()  # this process's own child, by its handle


async def test_a_wait_on_the_clock_ends_when_done_or_at_its_bound() -> None:
    clock = ThreadClock()
    loop = asyncio.get_running_loop()
    never: asyncio.Future[None] = loop.create_future()
    start = clock.now()
    assert await clock.wait({never}, 0.05) is False
    assert clock.now() - start >= 0.05
    ready: asyncio.Future[None] = loop.create_future()
    ready.set_result(None)
    assert await clock.wait({never, ready}, 5.0, return_when=asyncio.FIRST_COMPLETED) is True
    never.cancel()


async def test_a_callback_on_the_clock_runs_once_when_due_and_never_once_cancelled() -> None:
    clock = ThreadClock()
    calls: list[str] = []
    start = clock.now()
    clock.call_later(0.03, lambda: calls.append(f"due after {clock.now() - start >= 0.03}"))
    clock.call_later(0.01, lambda: calls.append("cancelled")).cancel()
    await asyncio.sleep(0.1)
    assert calls == ["due after True"]


# -- deadlines on the clock --------------------------------------------------------------------------------


class _Slowed(ThreadClock):
    """As if the thread got a ``share`` of a CPU: that share of the wall time passes on this clock."""

    __slots__ = ("_origin", "_share")

    def __init__(self, share: float) -> None:
        super().__init__()
        self._origin = time.monotonic()
        self._share = share

    def now(self) -> float:
        return self._origin + (time.monotonic() - self._origin) * self._share


def _slow(model: Model, context: Context, options: StreamOptions | None = None) -> AsyncIterator[AssistantMessageEvent]:
    """A well-behaved stream that first takes 0.2 s to answer."""

    async def events() -> AsyncIterator[AssistantMessageEvent]:
        await asyncio.sleep(0.2)
        async for event in well_behaved(model, context, options):
            yield event

    return events()


async def _drive(fn: Callable[..., Any], clock: ThreadClock) -> conformance.observe.Observation:
    controller = AbortController()
    timing = Timing(deadline_s=0.1, abort_delay_s=0.0, trigger_s=0.3, unwind_s=0.5)
    obs, task = await drive(
        fn,
        MODEL,
        Context(),
        StreamOptions(signal=controller.signal),
        scenario=Scenario(key="load"),
        controller=controller,
        timing=timing,
        clock=clock,
    )
    assert task.done()
    return obs


async def test_a_scenario_deadline_is_counted_on_the_clock() -> None:
    """0.2 s of wall time is past a 0.1 s deadline on the wall clock, and within it for a thread that got
    a tenth of a CPU: the stream is judged, not cut off as a hang."""
    on_the_wall = await _drive(_slow, ThreadClock(native_id=2**31 - 1))
    assert on_the_wall.hung
    loaded = await _drive(_slow, _Slowed(0.1))
    assert not loaded.hung
    assert loaded.outcome() == "done(stop)"


async def test_a_stream_that_never_ends_still_hangs_on_a_loaded_machine() -> None:
    started = time.monotonic()
    obs = await _drive(hangs, _Slowed(0.25))
    assert obs.hung
    assert time.monotonic() - started >= 0.4  # the 0.1 s deadline, at a quarter of the wall clock's speed


# -- what counts as closed ---------------------------------------------------------------------------------


class _SlowBody(httpx.AsyncByteStream):
    """A response body the client starts reading only after a pause (a client busy elsewhere)."""

    def __init__(self, inner: httpx.AsyncByteStream, pause_s: float) -> None:
        self._inner = inner
        self._pause_s = pause_s

    async def __aiter__(self) -> AsyncIterator[bytes]:
        await asyncio.sleep(self._pause_s)
        async for chunk in self._inner:
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class _SlowTransport(httpx.AsyncBaseTransport):
    def __init__(self) -> None:
        self._inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._inner.handle_async_request(request)
        stream = response.stream
        assert isinstance(stream, httpx.AsyncByteStream)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_SlowBody(stream, 0.1),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


class _SlowReader:
    """The Anthropic adapter behind a client that reads each body 0.1 s late, then closes it as usual."""

    def __init__(self) -> None:
        self._client = httpx.AsyncClient(transport=_SlowTransport())

    def __call__(self, model: Model, context: Context, options: StreamOptions | None = None, /) -> Any:
        return stream_anthropic(
            model, context, dataclasses.replace(options or StreamOptions(), http_client=self._client)
        )

    async def aclose(self) -> None:
        await self._client.aclose()


@pytest.mark.slow
def test_a_response_read_after_the_server_finished_is_not_a_leak(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server finishes each body at once and ends its side after 10 ms; the client reads it 100 ms
    later and then closes it. That is what a loaded machine does to a fast adapter: L1 passes."""
    monkeypatch.setattr(
        conformance.session, "LoopbackServer", functools.partial(conformance.LoopbackServer, linger_s=0.01)
    )
    ended: list[object] = []
    end_our_side = conformance.loopback._end_our_side  # pyright: ignore[reportPrivateUsage]

    def counted(writer: asyncio.StreamWriter) -> None:
        ended.append(writer)
        end_our_side(writer)

    monkeypatch.setattr(conformance.loopback, "_end_our_side", counted)
    report = conformance.run_sync(_SlowReader(), capabilities=ANTHROPIC.capabilities, checks=["L1", "P1"])
    assert report.verdict == "conformant", report.to_text()
    assert report.result("L1").message.endswith("case(s) checked")
    assert ended, "the server never finished before the client closed: the case did not arise"


def test_a_clock_outlives_its_thread() -> None:
    """The worker thread ends before the watchdog's last reading: the clock counts on, never back."""
    go = threading.Event()
    started = threading.Event()
    native: list[int] = []

    def work() -> None:
        native.append(threading.get_native_id())
        started.set()
        go.wait()

    worker = threading.Thread(target=work)
    worker.start()
    started.wait()
    clock = ThreadClock(native[0])
    aware = clock.load_aware
    first = clock.now()
    go.set()
    worker.join()
    assert aware == ThreadClock().load_aware
    readings = [first]
    # The thread's statistics go once the system has reaped it (a moment after join()): from then on
    # the clock counts wall time from its last reading.
    give_up = time.monotonic() + 5
    while True:
        readings.append(clock.now())
        if not clock.load_aware or time.monotonic() > give_up:
            break
        time.sleep(0.01)
    readings.append(clock.now())
    assert not clock.load_aware
    assert readings == sorted(readings)
