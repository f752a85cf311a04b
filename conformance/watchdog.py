"""The run's time bounds (:class:`Limits`) and the watchdog that enforces them whatever the adapter does.

The adapter under test runs in a worker thread, on an event loop of its own; the caller's thread
only waits for it and watches. So nothing the adapter does can keep a run from ending with a report:

- a stream that hangs is cancelled at its scenario's deadline (in the worker, by the harness);
- once a scenario has hung, later ones get the shorter ``hang_deadline_s`` (the run is failing
  anyway), and no scenario starts after ``run_budget_s`` — checks left without their scenarios fail,
  naming what hung;
- a blocking call (``time.sleep``, a synchronous HTTP request) stops the worker's loop, so nothing
  in it can fire; the watchdog notices from the caller's thread that the current scenario (or
  clean-up step) overran its bound and gives up on the worker: the report is built from what was
  observed, and the worker thread is left to finish on its own (it is a daemon thread);
- ``SystemExit``/``KeyboardInterrupt`` raised in an adapter's task escape the worker's loop; they
  are recorded against the scenario that was running and the loop resumes;
- whatever the adapter leaves running is cancelled at the end within a bound; a loop that still has
  tasks which refuse to end is kept (never closed under them, never garbage-collected mid-run).

Every bound is counted on the worker thread's :class:`~conformance.clock.ThreadClock` — wall time
minus the time the thread waited for a CPU — by the worker for its own waits and by the caller for
the steps it watches, so a loaded machine stretches a run's wall time without failing it (see
:mod:`conformance.clock`). ``Limits.bound_s`` is the hard bound on a run's time on that clock (about
76 s with the defaults; wall time on a quiet machine), stated in the report. The watchdog costs
nothing per scenario: the caller sleeps until the worker says it is done or the current step's
deadline passes. Memory is bounded too: a stream is read up to
``Limits.max_events`` events or ``Limits.max_stream_size`` of event data, then no further.

What it cannot bound: the adapter runs in the harness's own process, so ``os._exit()`` (or a crash
of the interpreter: a segfault in a C extension, the process killed) in its code ends the process
at once — no report, and the exit status the adapter chose. Only running the adapter in a child
process could report that; run the harness where a missing report counts as a failure (CI does).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, fields
from typing import Any

from conformance.clock import ThreadClock
from conformance.text import describe_exception

__all__ = ["Limits", "Worker"]

#: Slack the watchdog allows a step beyond the bounds the harness itself enforces in it (seconds).
_SLACK_S = 1.0
#: How much smaller the caps on a stream get once one stream was cut off at them.
_FLOOD_SHRINK = 100
#: The fields of ``Limits`` that are counts, not seconds.
_CAPS = frozenset({"max_events", "max_stream_size"})
#: Event loops whose tasks refused to end: kept, so that nothing runs (or is collected) under them.
_QUARANTINE: list[asyncio.AbstractEventLoop] = []


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """Timeouts and bounds, in seconds on the harness's clock (:mod:`conformance.clock`: the time the
    machine's load kept the harness from running does not count), short on purpose so a run takes
    seconds.

    - ``idle_timeout_s``: ``StreamOptions.timeout`` in ordinary scenarios (long enough never to fire);
    - ``stall_timeout_s``: ``StreamOptions.timeout`` in the stall scenarios (C3), which must end
      ``timeout`` within that plus ``timeout_slack_s``;
    - ``abort_bound_s``: an abort mid-stream must end the stream this soon (A2);
    - ``abort_delay_s``: how long after the first content event the abort (or cancellation) lands, so
      the adapter is blocked on a silent socket; ``trigger_s``: with no content event by then, it
      lands anyway;
    - ``retry_after_s``: the ``retry-after`` the R1 scenario sends; ``max_retry_delay_s`` is passed as
      ``StreamOptions.max_retry_delay_s``;
    - ``scenario_deadline_s``: a scenario still running after this is cancelled and reported as a
      hang; after the first hang, ``hang_deadline_s`` (if shorter) applies instead;
    - ``run_budget_s``: no scenario starts after this much of the run has passed;
    - ``unwind_s``: how long a cancelled consumer (or the adapter's leftover tasks) get to finish;
    - ``grace_s``: how long to wait for connections to close and tasks to finish after a terminal;
    - ``max_events`` / ``max_stream_size`` (counts, not seconds): the most events, and the largest
      total size of their JSON (characters of text plus one per value), read from one stream; past
      either the harness stops reading it and records that it never ended. Once a stream was cut
      off, later ones get a hundredth of each (the run is failing anyway), so that a run's memory
      stays bounded by about one cut-off stream, not one per scenario.
    """

    idle_timeout_s: float = 2.0
    stall_timeout_s: float = 0.5
    timeout_slack_s: float = 1.0
    abort_bound_s: float = 0.2
    abort_delay_s: float = 0.05
    trigger_s: float = 0.3
    retry_after_s: float = 0.2
    max_retry_delay_s: float = 2.0
    scenario_deadline_s: float = 8.0
    hang_deadline_s: float = 3.0
    run_budget_s: float = 60.0
    unwind_s: float = 1.0
    grace_s: float = 0.5
    max_events: int = 100_000
    max_stream_size: int = 32_000_000

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if item.name in _CAPS:
                if type(value) is not int or value < 1:
                    raise ValueError(f"Limits.{item.name} must be a positive int, not {value!r}")
            elif not 0 <= value < math.inf:
                raise ValueError(f"Limits.{item.name} must be a non-negative number of seconds, not {value!r}")

    def deadline_after_hangs(self, hangs: int) -> float:
        """The deadline of the next scenario once ``hangs`` scenarios have hung."""
        return min(self.scenario_deadline_s, self.hang_deadline_s) if hangs else self.scenario_deadline_s

    def events_after_floods(self, floods: int) -> int:
        """The cap on the next stream's events once ``floods`` streams were cut off."""
        return max(1, self.max_events // _FLOOD_SHRINK) if floods else self.max_events

    def stream_size_after_floods(self, floods: int) -> int:
        """The cap on the next stream's size once ``floods`` streams were cut off."""
        return max(1, self.max_stream_size // _FLOOD_SHRINK) if floods else self.max_stream_size

    def scenario_bound_s(self, deadline_s: float) -> float:
        """How long a scenario with ``deadline_s`` may take before the watchdog calls the worker's loop
        blocked: the deadline, the waits the harness itself bounds around it (a cancellation landing
        and unwinding, the hang's own unwinding, the leftover-task grace) and one second of slack."""
        return deadline_s + self.trigger_s + self.abort_delay_s + 2 * self.unwind_s + self.grace_s + _SLACK_S

    @property
    def cleanup_s(self) -> float:
        """The bound on the end of a run: connections given their grace, leftover tasks and the
        adapter's async generators their time to unwind, then slack."""
        return self.grace_s + 3 * self.unwind_s + _SLACK_S

    @property
    def bound_s(self) -> float:
        """The most a run takes, whatever the adapter does: the budget, one scenario started just
        before it ran out, and the clean-up."""
        return self.run_budget_s + self.scenario_bound_s(self.scenario_deadline_s) + self.cleanup_s


class Worker:
    """Runs one coroutine in a daemon thread on its own event loop, watched from the caller.

    The work reports what it is doing with :meth:`step` (a description and how long it may take);
    :meth:`wait` (in the caller's loop) returns None once the work has finished, or why the watchdog
    gave up on it. ``on_escape`` receives every ``SystemExit``/``KeyboardInterrupt`` that escaped the
    worker's loop from a task other than the work itself (the loop then resumes); ``cleanup`` runs
    in the worker's loop once the work is done, within ``cleanup_s``. Step bounds are seconds on the
    worker thread's :class:`~conformance.clock.ThreadClock`, set by the worker on its clock and
    checked by the caller on its own clock of the worker thread (the two agree).
    """

    def __init__(self, *, limits: Limits, on_escape: Callable[[BaseException], None]) -> None:
        self._limits = limits
        self._on_escape = on_escape
        # Before the thread starts its clock is time.monotonic() (see ThreadClock): a fair first deadline.
        self._state: tuple[str, float] = ("starting", time.monotonic() + limits.scenario_deadline_s)
        #: The worker thread's clock, read in the worker thread (made there, first thing).
        self._own: ThreadClock | None = None
        #: The caller's clock of the worker thread (made once the thread has started).
        self._watch: ThreadClock | None = None
        self._finished = threading.Event()
        self._notify: Callable[[], None] = lambda: None
        #: An exception raised by the work itself (a harness bug), described in the worker thread
        #: (so no exception object crosses to the caller's), for the caller to report.
        self.failure: str | None = None
        self._thread: threading.Thread | None = None
        self._signal: asyncio.Future[None] | None = None

    def step(self, doing: str, seconds: float) -> None:
        """The work is now ``doing`` something that must be over within ``seconds`` (called in the
        worker thread)."""
        own = self._own
        self._state = (doing, (own.now() if own is not None else time.monotonic()) + seconds)

    @property
    def doing(self) -> str:
        """What the work said it was doing last."""
        return self._state[0]

    def start(
        self,
        work: Callable[[], Coroutine[Any, Any, None]],
        cleanup: Callable[[], Coroutine[Any, Any, None]],
    ) -> None:
        """Start the thread (once)."""
        caller = asyncio.get_running_loop()
        signal: asyncio.Future[None] = caller.create_future()
        self._signal = signal

        def notify() -> None:
            if not signal.done():
                signal.set_result(None)

        def wake() -> None:
            with contextlib.suppress(RuntimeError):  # the caller's loop is already closed
                caller.call_soon_threadsafe(notify)

        self._notify = wake
        self._thread = threading.Thread(target=self._main, args=(work, cleanup), name="conformance-worker", daemon=True)
        self._thread.start()
        native_id = self._thread.native_id
        self._watch = ThreadClock(native_id) if native_id is not None else None

    async def wait(self, bound_s: float) -> str | None:
        """Wait for the work; None when it finished, else why the watchdog gave up on it (a step
        overran its bound, or the whole run ``bound_s``). A failure of the work itself is left in
        :attr:`failure` (never raised here: in this thread it could pass for the caller's own)."""
        watch = self._watch
        clock: Callable[[], float] = watch.now if watch is not None else time.monotonic
        hard = clock() + bound_s
        while not self._finished.is_set():
            doing, deadline = self._state
            now = clock()
            if now >= hard:
                return f"the run did not end within its bound of {bound_s:g} s (while {doing})"
            if now >= deadline:
                return (
                    f"{doing} blocked the event loop: the harness could not regain control, so the run "
                    "stopped there (a blocking call in the adapter, such as time.sleep or a synchronous request?)"
                )
            assert self._signal is not None, "start() first"
            # The worker's clock runs no faster than the wall clock: waking at the wall-clock
            # deadline is never late, and a load that held the worker back only means another wait.
            await asyncio.wait({self._signal}, timeout=min(deadline, hard) - now)
        return None

    # -- the worker thread ----------------------------------------------------------------------------

    def _main(
        self,
        work: Callable[[], Coroutine[Any, Any, None]],
        cleanup: Callable[[], Coroutine[Any, Any, None]],
    ) -> None:
        self._own = ThreadClock()
        loop = asyncio.new_event_loop()
        try:
            self._attempt(loop, work(), "conformance-main")
            self.step("cleaning up after the adapter", self._limits.cleanup_s + _SLACK_S)
            self._attempt(loop, self._cleanup(cleanup), "conformance-cleanup")
            if all(task.done() for task in asyncio.all_tasks(loop)):
                loop.close()
            else:
                _QUARANTINE.append(loop)
        finally:
            self._finished.set()
            self._notify()

    def _attempt(self, loop: asyncio.AbstractEventLoop, job: Coroutine[Any, Any, None], name: str) -> None:
        try:
            self._drive(loop, loop.create_task(job, name=name))
        except BaseException as exc:  # the harness's own failure, reported by the caller
            self.failure = self.failure or describe_exception(exc)

    def _drive(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[None]) -> None:
        """Run ``task`` to completion; an exit or interrupt escaping from another task is the
        adapter's, recorded, and the loop resumes where it stopped."""
        while True:
            try:
                loop.run_until_complete(task)
            except BaseException as exc:
                if task.done():
                    raise
                self._on_escape(exc)
            else:
                return

    async def _cleanup(self, cleanup: Callable[[], Coroutine[Any, Any, None]]) -> None:
        clock = self._own or ThreadClock()
        unwind = self._limits.unwind_s
        await _bounded(clock, cleanup(), self._limits.grace_s + unwind + _SLACK_S)
        current = asyncio.current_task()
        left = [task for task in asyncio.all_tasks() if task is not current]
        for task in left:
            task.cancel()
        if left:
            await clock.wait(left, unwind)
        loop = asyncio.get_running_loop()
        await _bounded(clock, loop.shutdown_asyncgens(), unwind)


async def _bounded(clock: ThreadClock, work: Coroutine[Any, Any, None], seconds: float) -> None:
    """Run ``work`` for at most ``seconds`` on ``clock``; past that it is cancelled and not waited for
    (code that ignores cancellation must not hold the harness)."""
    task = asyncio.get_running_loop().create_task(work, name="conformance-bounded")
    await clock.wait({task}, seconds)
    if not task.done():
        task.cancel()
    else:
        with contextlib.suppress(BaseException):
            task.result()
