"""The kit's idle clock (``Scope.read``): one timer per stream (shared with the progress clock), never
armed per read, and never a timeout for bytes that came in time."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
import weakref
from collections.abc import Awaitable, Callable, Generator

import pytest

from streamfns.kit.scope import (
    Idle,
    Scope,
    Stalled,
    _current_task,  # pyright: ignore[reportPrivateUsage] - the reader itself is checked
    _Watch,  # pyright: ignore[reportPrivateUsage] - its timer is the one the clocks set
)


async def _stalled_read(scope: Scope, expected: type[BaseException] = Idle, bound_s: float = 20.0) -> float:
    """Seconds until a read of a server that never answers ends with ``expected`` (``bound_s``: a bound,
    so a clock that never fires fails the test rather than hanging it)."""
    started = time.monotonic()
    with pytest.raises(expected):
        async with asyncio.timeout(bound_s):
            await scope.read(asyncio.sleep(3600))
    return time.monotonic() - started


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


def _busy_turns(loop: asyncio.AbstractEventLoop, turns: int, then: Callable[[], object] | None) -> None:
    """Hold the loop for 0.1 s in each of its next ``turns`` turns (as a thousand streams each handed
    64 KiB do on a slow core), then call ``then`` in the last of them."""

    def hog(left: int) -> None:
        time.sleep(0.1)
        if left > 1:
            loop.call_soon(hog, left - 1)
        elif then is not None:
            then()

    loop.call_soon(hog, turns)


def _clocked(clock: str) -> Scope:
    """A scope whose ``clock`` (idle or progress) runs out after 0.05 s of waiting on the server."""
    if clock == "idle":
        return Scope(None, None, None, idle_timeout=0.05)
    scope = Scope(None, None, progress_timeout=0.05)
    scope.watch_progress()
    return scope


# With a 0.05 s clock and 0.1 s turns the deadline passes in the first busy turn and the clock looks
# in the second, then twice more, a turn apart: the bytes come in any turn up to its last look (at 4,
# the wake-up is queued behind that look). The server was late by at most the loop's own lag; what
# came may be content, so the progress clock looks again once the task has run too. (These turns are
# asyncio's: uvloop runs due timers before a turn's callbacks, so its looks come a turn earlier.)
@pytest.mark.parametrize("turns", [1, 2, 3, 4])
@pytest.mark.parametrize("clock", ["idle", "progress"])
async def test_bytes_that_came_while_the_loop_was_busy_for_turns_past_the_deadline_are_not_a_timeout(
    clock: str, turns: int
) -> None:
    loop = asyncio.get_running_loop()
    scope = _clocked(clock)
    arrived: asyncio.Future[bytes] = loop.create_future()
    _busy_turns(loop, turns, lambda: arrived.set_result(b"data"))
    try:
        async with asyncio.timeout(10):
            assert await scope.read(arrived) == b"data"
    finally:
        scope.close()


async def _polls() -> bytes:
    """A transport that waits for bytes by yielding bare (``sleep(0)``): always queued to run, never
    woken by its server."""
    while True:  # noqa: ASYNC110 - the polling transport under test
        await asyncio.sleep(0)


# The clocks' patience is for reads that were woken with what they awaited: a read still parked on
# its server runs the clock out under a busy loop, and so does one that polls with bare yields (kept
# open for ever otherwise).
@pytest.mark.parametrize("read", ["parked under a busy loop", "polling"])
@pytest.mark.parametrize(("clock", "ran_out"), [("idle", Idle), ("progress", Stalled)])
async def test_a_read_the_server_never_answers_runs_the_clock_out(
    clock: str, ran_out: type[Exception], read: str
) -> None:
    scope = _clocked(clock)
    if read == "polling":
        waited: Awaitable[object] = _polls()
    else:
        _busy_turns(asyncio.get_running_loop(), 6, None)
        waited = asyncio.sleep(3600)
    try:
        with pytest.raises(ran_out):
            async with asyncio.timeout(10):
                await scope.read(waited)
    finally:
        scope.close()


async def test_a_wait_past_the_idle_timeout_is_idle() -> None:
    scope = Scope(None, None, None, idle_timeout=0.05)
    try:
        await _stalled_read(scope, bound_s=10)
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


@contextlib.contextmanager
def _watch_timers(loop: asyncio.AbstractEventLoop) -> Generator[list[asyncio.TimerHandle]]:
    """The timers the loop's watch of the scopes' clocks sets meanwhile (not asyncio.sleep's)."""
    armed: list[asyncio.TimerHandle] = []
    call_at = loop.call_at

    def keeping(when: float, callback: object, *args: object, **kwargs: object) -> asyncio.TimerHandle:
        handle = call_at(when, callback, *args, **kwargs)  # type: ignore[arg-type]
        if isinstance(getattr(callback, "__self__", None), _Watch):
            armed.append(handle)
        return handle

    loop.call_at = keeping  # type: ignore[method-assign]
    try:
        yield armed
    finally:
        loop.call_at = call_at  # type: ignore[method-assign]


async def test_a_sends_allowance_leaves_no_cancelled_timer_in_the_loop() -> None:
    # asyncio keeps a cancelled timer in its heap until it is due: the send's timer, cancelled once
    # the head came, stayed there for the stream's whole life (an idle timeout and the allowance),
    # with its context, for the garbage collector to walk. The clock now keeps one timer, never
    # cancelled before the stream ends, and still times out a later, shorter wait on time.
    scope = Scope(None, None, None, idle_timeout=0.2)
    try:
        with _watch_timers(asyncio.get_running_loop()) as armed:
            assert await scope.read(asyncio.sleep(0.3, result="head"), 30.0) == "head"  # past idle, within allowance
            for _ in range(3):
                await scope.read(asyncio.sleep(0))
            assert armed, "the clock armed a timer"
            assert [h for h in armed if h.cancelled()] == []
            # the send's 30 s allowance does not delay this wait's timeout (the clock fires every 0.2 s at most)
            assert await _stalled_read(scope, bound_s=10) < 5.0
    finally:
        scope.close()


async def test_the_idle_and_progress_clocks_share_one_timer() -> None:
    # A timer is four objects a stream (the handle, the loop's own, its context, the bound callback):
    # the two clocks of a stream share one, re-armed only when it fires.
    scope = Scope(None, None, progress_timeout=120.0, idle_timeout=60.0)
    try:
        with _watch_timers(asyncio.get_running_loop()) as armed:
            assert await scope.read(asyncio.sleep(0, result="head"), 15.0) == "head"  # the send
            scope.watch_progress()
            for _ in range(100):
                scope.begin_read(True)
                try:
                    await asyncio.sleep(0)
                finally:
                    scope.end_read()
    finally:
        scope.close()
    assert len(armed) == 1, "one timer for both clocks"


@pytest.mark.parametrize("progress_first", [False, True], ids=["read-first", "watch-first"])
@pytest.mark.parametrize(
    ("idle", "progress", "expected"),
    [(0.1, 30.0, Idle), (30.0, 0.1, Stalled)],
    ids=["idle-nearer", "progress-nearer"],
)
async def test_with_both_clocks_the_nearer_one_lands_on_time(
    idle: float, progress: float, expected: type[Exception], progress_first: bool
) -> None:
    scope = Scope(None, None, progress_timeout=progress, idle_timeout=idle)
    try:
        if progress_first:
            scope.watch_progress()
        assert await scope.read(asyncio.sleep(0, result="head")) == "head"
        if not progress_first:
            scope.watch_progress()  # due before the timer the read set: the timer is brought forward
        elapsed = await _stalled_read(scope, expected)
        assert elapsed < 10.0, "the nearer clock, not the farther one, ended the wait"
    finally:
        scope.close()


async def test_a_clock_that_stopped_watching_leaves_the_other_on_time() -> None:
    # The progress clock is unwatched between attempts; the shared timer still serves the idle clock.
    scope = Scope(None, None, progress_timeout=0.2, idle_timeout=0.3)
    try:
        scope.watch_progress()
        scope.unwatch_progress()
        await asyncio.sleep(0.4)  # the timer fires with the progress clock unwatched and no wait: nothing lands
        assert await scope.read(asyncio.sleep(0.05, result="bytes")) == "bytes"
        await _stalled_read(scope)
    finally:
        scope.close()


async def test_the_scopes_of_a_loop_share_one_timer() -> None:
    # A timer a stream is four objects a stream for the collector: every scope on a loop is watched by
    # the loop's one timer, set again only when it fires.
    scopes = [Scope(None, None, progress_timeout=300.0, idle_timeout=120.0) for _ in range(200)]
    try:
        with _watch_timers(asyncio.get_running_loop()) as armed:
            for scope in scopes:  # as the kit runs a call: the send, then the body under the progress clock
                await scope.read(asyncio.sleep(0))
                scope.watch_progress()
                await scope.read(asyncio.sleep(0))
    finally:
        for scope in scopes:
            scope.close()
    assert len(armed) == 1, f"{len(armed)} timers for 200 scopes"
    assert armed[0].cancelled(), "the timer stops with the last scope"


async def test_a_short_clock_among_long_ones_lands_on_time() -> None:
    patient = [Scope(None, None, progress_timeout=300.0, idle_timeout=120.0) for _ in range(50)]
    waits = [asyncio.ensure_future(scope.read(asyncio.sleep(3600))) for scope in patient]
    short = Scope(None, None, None, idle_timeout=0.1)
    try:
        await asyncio.sleep(0.05)
        started = time.monotonic()
        with pytest.raises(Idle):
            async with asyncio.timeout(20):
                await short.read(asyncio.sleep(3600))
        assert time.monotonic() - started < 5.0
        assert not any(wait.done() for wait in waits), "the long clocks did not run out with it"
    finally:
        for wait in waits:
            wait.cancel()
        await asyncio.gather(*waits, return_exceptions=True)
        for scope in [*patient, short]:
            scope.close()


@pytest.mark.parametrize("closed", [True, False], ids=["scope-closed", "scope-left-open"])
def test_the_loops_watch_does_not_keep_its_loop(closed: bool) -> None:
    # The watches are found through a table keyed by the loop: it holds them weakly, so a loop that is
    # gone is not kept, even when a scope on it was never closed.
    loop = asyncio.new_event_loop()

    async def one_read() -> Scope:
        scope = Scope(None, None, progress_timeout=300.0, idle_timeout=120.0)
        scope.watch_progress()
        await scope.read(asyncio.sleep(0))
        if closed:
            scope.close()
        return scope

    scope = loop.run_until_complete(one_read())
    loop.close()
    gone = weakref.ref(loop)
    del loop, scope
    gc.collect()
    assert gone() is None


def _loop_factories() -> list[object]:
    factories: list[object] = [pytest.param(asyncio.new_event_loop, id="asyncio")]
    try:
        import uvloop
    except ImportError:  # the extra is optional; make test installs it
        return factories
    return [*factories, pytest.param(uvloop.new_event_loop, id="uvloop")]


@pytest.mark.parametrize("new_loop", _loop_factories())
def test_the_scope_reads_its_loops_own_clock_and_current_task(
    new_loop: Callable[[], asyncio.AbstractEventLoop],
) -> None:
    # The per-read readers skip a Python frame each; they must read what loop.time() and
    # current_task() read, on asyncio's loop (time.monotonic, the 3.11 task table) and uvloop's.
    seen: list[tuple[float, float, float, object, object]] = []

    async def probe() -> None:
        loop = asyncio.get_running_loop()
        scope = Scope(None, None, None, idle_timeout=30.0)
        try:
            before = loop.time()
            now = scope._now()  # pyright: ignore[reportPrivateUsage] - the reader itself is checked
            after = loop.time()
            seen.append((before, now, after, _current_task(loop), asyncio.current_task()))
        finally:
            scope.close()

    with asyncio.Runner(loop_factory=new_loop) as runner:
        runner.run(probe())
    ((before, now, after, task, current),) = seen
    # uvloop's clock is cached per turn of the loop (millisecond steps): same turn, same reading.
    assert before <= now <= after
    assert task is not None
    assert task is current


def test_a_loop_with_a_clock_of_its_own_is_read_through_it() -> None:
    # A loop that overrides time() (a test's fake clock, a simulation) keeps its clock for the idle
    # deadlines: the monotonic shortcut is for asyncio's own time() alone.
    class Shifted(asyncio.SelectorEventLoop):
        def time(self) -> float:
            return super().time() + 1_000_000.0

    readings: list[float] = []

    async def probe() -> None:
        scope = Scope(None, None, None, idle_timeout=30.0)
        try:
            readings.append(scope._now())  # pyright: ignore[reportPrivateUsage]
        finally:
            scope.close()

    with asyncio.Runner(loop_factory=Shifted) as runner:
        runner.run(probe())
    assert readings[0] > time.monotonic() + 999_000.0


async def test_a_scope_whose_look_fails_leaves_the_others_watched() -> None:
    class Broken(Scope):
        __slots__ = ()

        def look(self) -> None:
            raise RuntimeError("a bug in one scope")

    loop = asyncio.get_running_loop()
    reported: list[object] = []
    loop.set_exception_handler(lambda _loop, context: reported.append(context.get("exception")))
    broken = Broken(None, None, None, idle_timeout=0.1)
    sound = Scope(None, None, None, idle_timeout=0.1)
    waiting = asyncio.ensure_future(broken.read(asyncio.sleep(3600)))
    await asyncio.sleep(0)  # the broken scope is watched first, so its look comes first
    try:
        with pytest.raises(Idle):
            async with asyncio.timeout(20):
                await sound.read(asyncio.sleep(3600))
        assert any(isinstance(exc, RuntimeError) for exc in reported), "the failure was reported"
    finally:
        loop.set_exception_handler(None)
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)
        broken.close()
        sound.close()


async def test_a_clock_of_any_finite_length_beside_a_short_one() -> None:
    # Rounding a look's time to a 5 ms grain must not overflow for a clock of 1e308 seconds (any
    # finite, positive length passes the options' checks); the short clock still lands on time.
    scope = Scope(None, None, progress_timeout=1e308, idle_timeout=0.05)
    try:
        scope.watch_progress()
        assert await _stalled_read(scope) < 5.0
    finally:
        scope.close()
