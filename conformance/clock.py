"""The harness's clock: the time that passes for one thread, not the time the machine was busy elsewhere.

A verdict depends on what the adapter did, never on how loaded the machine is. So every bound the
harness holds an adapter to — a scenario's deadline, the abort bound of A2, the idle timeout of C3,
the grace for closing connections and finishing tasks, the run's budget, the watchdog's steps — is
counted on a :class:`ThreadClock` of the thread the adapter runs in: wall time minus the time that
thread was ready to run but waited for a CPU. Six busy processes on two cores stretch a run's wall
time several times over; they add nothing to this clock.

What still counts, on a quiet machine and a loaded one alike: the time the thread runs (the adapter's
own work, a loop that spins) and the time it sleeps or waits (for a socket, a timer, a lock, or a
blocking call such as ``time.sleep``). So a stream that hangs, an adapter that spins and a call that
blocks the event loop are bounded exactly as before.

On Linux the kernel counts, per thread, the time it spent runnable but not running (``run_delay`` in
``/proc/self/task/<tid>/schedstat``). Waiting for Python's interpreter lock while another thread of
the same process holds it is sleeping, to the kernel, and counts: a harness run keeps no busy thread
beside the adapter's, but a process that does (a test suite's leftovers) slows the harness as it
would any work of its own. Where it does not (macOS, Windows, a kernel built without
scheduler statistics) :attr:`ThreadClock.load_aware` is False and the clock is the wall clock:
verdicts there are as load-sensitive as any wall-clock bound.

Lower bounds on the adapter's own waiting (R1: a retry no sooner than ``retry-after``) are measured
on the wall clock instead: load can only lengthen a wait, so a wall-clock lower bound never fails
because of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["Later", "ThreadClock"]

_NS = 1e-9


def _open_schedstat(native_id: int) -> int | None:
    """A descriptor on the thread's scheduler statistics, or None where there are none to read."""
    try:
        fd = os.open(f"/proc/self/task/{native_id}/schedstat", os.O_RDONLY)
    except OSError:
        return None
    try:
        fields = os.pread(fd, 128, 0).split()
        ok = len(fields) >= 2 and all(field.isdigit() for field in fields[:2])
    except OSError:
        ok = False
    if not ok:
        os.close(fd)
        return None
    return fd


class ThreadClock:
    """Seconds that passed for the thread ``native_id`` (default: the calling thread): wall time minus
    the time it waited for a CPU (see the module docstring).

    Readings are absolute: they start out equal to ``time.monotonic()`` when the thread starts and fall
    behind it by the time the thread has waited for a CPU since. So two clocks of the same thread,
    made at different times or read from different threads, agree, and a deadline set as
    ``time.monotonic() + seconds`` before the thread started is a deadline on its clock. A clock never
    goes backwards. Use one instance per reading thread (each remembers its last reading).
    """

    __slots__ = ("_delay", "_fd", "_last", "_lock")

    def __init__(self, native_id: int | None = None) -> None:
        self._fd = _open_schedstat(threading.get_native_id() if native_id is None else native_id)
        self._lock = threading.Lock()
        #: The thread's total wait for a CPU at the last successful read (seconds).
        self._delay = 0.0
        self._last = -math.inf
        self._delay = self._read_delay()

    @property
    def load_aware(self) -> bool:
        """True when the time the thread waited for a CPU is known and left out (else: wall time)."""
        return self._fd is not None

    def now(self) -> float:
        """The clock's reading (seconds; only differences between readings mean anything)."""
        value = time.monotonic() - self._read_delay()
        # Read from another thread, the wait the thread is in right now is not counted yet (the kernel
        # adds it when the thread gets its CPU): the reading then runs ahead and must not step back.
        if value < self._last:
            return self._last
        self._last = value
        return value

    def close(self) -> None:
        """Stop reading the kernel's statistics (the clock keeps counting at the wall clock's rate)."""
        with self._lock:
            fd, self._fd = self._fd, None
            if fd is not None:
                os.close(fd)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    def _read_delay(self) -> float:
        fd = self._fd
        if fd is None:
            return self._delay
        try:
            self._delay = int(os.pread(fd, 128, 0).split()[1]) * _NS
        except (OSError, IndexError, ValueError):
            # The thread has ended (its statistics are gone): count on from the last reading.
            self.close()
        return self._delay

    # -- waiting on the clock (in the event loop of the thread the clock counts) --------------------------

    async def wait(
        self, waited: Iterable[asyncio.Future[Any]], seconds: float, *, return_when: str = asyncio.ALL_COMPLETED
    ) -> bool:
        """``asyncio.wait(waited, return_when=...)`` for at most ``seconds`` on this clock; True when
        it returned because what it waited for happened (not because the time was up)."""
        pending = set(waited)
        if not pending:
            return True
        deadline = self.now() + seconds
        while True:
            # The wall clock runs at least as fast as this one: a wall-clock wait of the remaining
            # time never overshoots, and a load that slowed this clock only means waiting again.
            remaining = deadline - self.now()
            done, left = await asyncio.wait(pending, timeout=max(remaining, 0.0), return_when=return_when)
            if not left or (done and return_when == asyncio.FIRST_COMPLETED):
                return True
            if remaining <= 0:
                return False

    def call_later(self, seconds: float, callback: Callable[[], object]) -> Later:
        """Call ``callback`` once ``seconds`` have passed on this clock (in the running event loop)."""
        return Later(self, self.now() + seconds, callback)


class Later:
    """A callback due at a reading of a :class:`ThreadClock` (see :meth:`ThreadClock.call_later`);
    :meth:`cancel` before it ran and it never runs."""

    __slots__ = ("_callback", "_clock", "_deadline", "_handle", "_loop")

    def __init__(self, clock: ThreadClock, deadline: float, callback: Callable[[], object]) -> None:
        self._clock = clock
        self._deadline = deadline
        self._callback = callback
        self._loop = asyncio.get_running_loop()
        self._handle: asyncio.TimerHandle | None = None
        self._arm()

    def _arm(self) -> None:
        self._handle = self._loop.call_later(max(self._deadline - self._clock.now(), 0.0), self._due)

    def _due(self) -> None:
        if self._clock.now() < self._deadline:
            self._arm()  # the machine's load held the loop back: not due yet on this clock
            return
        self._handle = None
        self._callback()

    def cancel(self) -> None:
        """Never call the callback (no effect once it ran)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
