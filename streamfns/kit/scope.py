"""The scope of one streaming call: an abort, the total deadline and the progress clock, landed as
exceptions at whichever of the kit's awaits is pending (see :class:`Scope`)."""

from __future__ import annotations

import asyncio
import inspect
import math
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, cast

from normalize.abort import AbortSignal

__all__ = ["Aborted", "Expired", "Idle", "Scope", "Stalled"]


class Aborted(Exception):
    """The call's signal was aborted."""


class Expired(Exception):
    """``total_timeout`` ran out."""


class Stalled(Exception):
    """The progress timeout ran out (see :meth:`Scope.watch_progress`)."""


class Idle(Exception):
    """One wait on the server went past the idle timeout (see :meth:`Scope.read`)."""


def _clock_of(loop: asyncio.AbstractEventLoop) -> Callable[[], float]:
    """``loop.time`` as a call with no Python frame of its own where that is the same clock: asyncio's
    own loops read ``time.monotonic()`` in a Python method; uvloop's (and any loop that overrides it)
    keep their own, read through it."""
    if getattr(type(loop), "time", None) is asyncio.BaseEventLoop.time:
        return time.monotonic
    return loop.time


def _task_reader() -> Callable[[asyncio.AbstractEventLoop], asyncio.Task[Any] | None]:
    """``asyncio.current_task`` with no Python frame of its own: on 3.11 that function is Python, a
    lookup in the C table of current tasks it reads (the same table, read the same way); elsewhere
    (C from 3.12, or a table not found) the function itself."""
    table = cast("dict[asyncio.AbstractEventLoop, asyncio.Task[Any]] | None", vars(asyncio.tasks).get("_current_tasks"))
    if inspect.isfunction(asyncio.current_task) and type(table) is dict:
        return table.get
    return asyncio.current_task


#: The current task of a loop, read once per event (see _task_reader).
_current_task = _task_reader()


class _Watch:
    """The idle and progress clocks of every scope on one event loop, watched by one timer.

    A timer a stream would be four objects (the handle, the loop's own, its context, the bound
    callback) for the garbage collector to walk, a thousand streams at a time. Each scope asks for a
    look at its clocks by a time (:meth:`want`); the watch's one timer is due at the earliest time
    asked, and when it fires, every scope due by then looks (and asks again for what it still needs).
    Scopes round the times they ask for up to a grain of their clocks (see ``Scope._want``), so a
    thousand streams' looks fall on a few instants: a firing scans the scopes it watches, about once
    a second at the default clocks, whatever their number.

    Found through a table that holds it weakly (:func:`_watch_of`): the scopes it watches and its
    timer keep it, and it keeps its loop; nothing outside keeps either once they are unreachable.
    """

    __slots__ = ("__weakref__", "_due", "_handle", "_scopes", "loop", "now")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        #: The loop's clock, one per loop (see _clock_of), read by its scopes once per event.
        self.now = _clock_of(loop)
        #: The scopes watched, each with the time it asked for a look by.
        self._scopes: dict[Scope, float] = {}
        self._handle: asyncio.TimerHandle | None = None
        self._due = math.inf  # when the timer is due (inf: none set)

    def want(self, scope: Scope, due: float) -> None:
        """``scope`` wants a look at its clocks at ``due`` at the latest (it had asked for a later
        one, or for none)."""
        self._scopes[scope] = due
        if due < self._due:
            if self._handle is not None:
                self._handle.cancel()  # rare: a clock shorter than every other on the loop
            self._due = due
            self._handle = self.loop.call_at(due, self._fire)

    def drop(self, scope: Scope) -> None:
        """``scope`` wants no look any more (it closed); the timer stops with the last scope."""
        self._scopes.pop(scope, None)
        if not self._scopes and self._handle is not None:
            self._handle.cancel()
            self._handle = None
            self._due = math.inf

    def _fire(self) -> None:
        self._handle = None
        # While the due scopes look, what they ask for is only noted (no due time is below -inf):
        # the timer is set once, after them, for the earliest look asked.
        self._due = -math.inf
        scopes = self._scopes
        now = self.loop.time()
        due = [scope for scope, at in scopes.items() if at <= now]
        for scope in due:
            del scopes[scope]
        try:
            for scope in due:
                try:
                    scope.look()
                except Exception as exc:  # a bug in one scope's look must not leave the others unwatched
                    self.loop.call_exception_handler(
                        {"message": "a streamfns scope failed to look at its clocks", "exception": exc}
                    )
        finally:
            self._due = math.inf
            if scopes:
                self._due = earliest = min(scopes.values())
                self._handle = self.loop.call_at(earliest, self._fire)


#: Each loop's watch, by the loop's id, held weakly (see _Watch): a watch is kept by its scopes and its
#: timer, never by this table, so neither it nor its loop outlives them.
_watches: weakref.WeakValueDictionary[int, _Watch] = weakref.WeakValueDictionary()


def _watch_of(loop: asyncio.AbstractEventLoop) -> _Watch:
    """The running loop's watch (made when it has none; an id reused by a new loop gets a new one)."""
    watch = _watches.get(id(loop))
    if watch is None or watch.loop is not loop:
        watch = _watches[id(loop)] = _Watch(loop)
    return watch


class Scope:
    """Turns an abort or the total deadline into an exception at whichever of our awaits is pending.

    On abort (or at the deadline) it cancels the task that is awaiting :meth:`run` — only while it
    awaits there, so the cancellation always lands in our read and never in the consumer's own code —
    then takes the cancellation back (``Task.uncancel``). This is the mechanism of ``asyncio.timeout``;
    it costs nothing per read, where racing every read against the signal would cost a task per chunk.
    The progress clock (:meth:`watch_progress`) lands the same way, as ``Stalled``, and so does the
    idle clock (:meth:`read`), as ``Idle``: a wait on the server longer than ``idle_timeout``, on any
    transport. Neither clock arms a timer per read, nor a timer per stream: the loop's watch (one timer
    for every scope on the loop) has the scope look when the earlier clock may have run out; the look
    reads when each clock last restarted, and asks for the next look the nearer deadline left needs.
    """

    __slots__ = (
        "_clock_due",
        "_deadline",
        "_fired",
        "_grain",
        "_idle_armed",
        "_idle_s",
        "_loop",
        "_now",
        "_progress_armed",
        "_progress_at",
        "_progress_confirm",
        "_progress_s",
        "_reading_since",
        "_remove",
        "_signal",
        "_task",
        "_timer",
        "_wait_id",
        "_watch",
        "_watching",
    )

    def __init__(
        self,
        signal: AbortSignal | None,
        total_timeout: float | None,
        progress_timeout: float | None = None,
        idle_timeout: float | None = None,
    ) -> None:
        self._signal = signal
        self._loop = asyncio.get_running_loop()
        #: The loop's watch of every scope's clocks (see _Watch).
        self._watch = _watch_of(self._loop)
        # The loop's clock, read once per event (see _clock_of): the watch's, one per loop.
        self._now = self._watch.now
        self._task: asyncio.Task[Any] | None = None
        self._fired: type[Exception] | None = None
        self._remove = signal.add_callback(self._on_abort) if signal is not None else None
        self._deadline = self._loop.time() + total_timeout if total_timeout else None
        self._timer = self._loop.call_at(self._deadline, self._fire, Expired) if self._deadline is not None else None
        # The idle and progress clocks are looked at by the loop's watch (see _Watch), by the earlier
        # time either asks for (inf: none asked), rounded up to a sixteenth of the shorter clock, at
        # least 5 ms and at most a second: a look that late is within the slack every clock has
        # (see _check_idle), and it lets the watch's timer serve many scopes at each firing.
        self._clock_due = math.inf
        clocks = [clock for clock in (idle_timeout, progress_timeout) if clock]
        self._grain = min(1.0, max(0.005, min(clocks) / 16)) if clocks else 1.0
        self._progress_s = progress_timeout
        self._progress_at = 0.0
        #: Whether the timer watches the progress clock (it is watched, and not being confirmed).
        self._progress_armed = False
        #: The progress clock's look again next turn, while it confirms a stall (see _check_progress).
        self._progress_confirm: asyncio.Handle | None = None
        self._watching = False
        self._idle_s = idle_timeout
        #: Whether the timer watches the idle clock (a wait began since it last found none pending).
        self._idle_armed = False
        # When the pending wait on the server began, its allowance added (None: no such wait now),
        # and a count of the waits, which tells them apart.
        self._reading_since: float | None = None
        self._wait_id = 0

    def _on_abort(self, _signal: AbortSignal) -> None:
        # abort() may run on another thread; the cancellation itself happens on the loop.
        if not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._fire, Aborted)

    def _fire(self, reason: type[Exception]) -> None:
        if self._fired is not None:
            return
        self._fired = reason
        if self._task is not None:
            self._task.cancel()

    def _pending(self) -> type[Exception] | None:
        if self._signal is not None and self._signal.aborted:
            return Aborted
        if self._deadline is not None and self._loop.time() >= self._deadline:
            return Expired
        return self._fired

    async def run(self, awaitable: Awaitable[Any]) -> Any:
        """Await ``awaitable``; raise ``Aborted``/``Expired``/``Stalled`` instead if that happens first (or did)."""
        if self._signal is None and self._deadline is None and not self._watching and self._idle_s is None:
            return await awaitable
        self._raise_pending(awaitable)
        return await self._landing(awaitable)

    async def read(self, awaitable: Awaitable[Any], allowance: float = 0.0) -> Any:
        """:meth:`run` for a wait on the server (a send, a read): it also raises ``Idle`` when the wait
        lasts longer than the idle timeout, plus ``allowance`` (a send's: connecting is bounded by the
        connect timeout, then the head by the idle timeout). Only these waits count: the consumer's
        time between two reads, a retry's back-off or a hook's work never do."""
        idle = self._idle_s
        if idle is None:
            return await self.run(awaitable)
        signal = self._signal
        if self._fired is not None or (signal is not None and signal.aborted) or self._deadline is not None:
            self._raise_pending(awaitable)
        self._start_idle_clock(idle, allowance)
        try:
            return await self._landing(awaitable)
        finally:
            self._reading_since = None

    def _start_idle_clock(self, idle: float, allowance: float) -> None:
        """A wait on the server begins now: the idle clock runs from now plus ``allowance``."""
        now = self._now()
        self._reading_since = now + allowance
        self._wait_id += 1
        if not self._idle_armed:
            # Due an idle timeout from now, the allowance left out. The idle clock always asks for a
            # look at most an idle timeout ahead (_check_idle keeps to that too), so its look is never
            # due after the deadline of a wait that begins later. Looking before this wait's deadline,
            # _check_idle asks again for the rest of it.
            self._arm_idle(now + idle)

    def _arm_idle(self, due: float) -> None:
        """The idle clock, watched from ``due`` on (it was not)."""
        self._idle_armed = True
        self._want(due)

    def _want(self, due: float) -> None:
        """A look at the clocks by ``due`` (rounded up to the grain), asked of the loop's watch unless
        an earlier one is asked already. A look is never put off: when it comes, each clock asks
        again for what it still needs (see look)."""
        # Rounded up without an int: a clock may be any finite length (1e308 s beside a 0.05 s one
        # would overflow ceil(due / grain)).
        due += -due % self._grain
        if due < self._clock_due:
            self._clock_due = due
            self._watch.want(self, due)

    def look(self) -> None:
        """The look the scope asked its loop's watch for (see _Watch): each clock it watches looks at
        its own deadline, and asks for the next look it needs."""
        self._clock_due = math.inf
        due = self._check_idle() if self._idle_armed else None
        if self._progress_armed:
            progress_due = self._check_progress()
            if progress_due is not None and (due is None or progress_due < due):
                due = progress_due
        if due is not None:
            self._want(due)

    def begin_read(self, progress: bool = False) -> None:
        """Start a wait on the server that the caller awaits itself — :meth:`read` without a coroutine
        of its own, for the steady state's one read per event; with ``progress``, :meth:`progress`
        first, at the same reading of the clock. Raises what already happened. The caller then awaits
        the read, calls :meth:`landed` if that raises ``CancelledError``, and :meth:`end_read` in any
        case::

            scope.begin_read(progress=True)
            try:
                chunk = await response.read()
            except asyncio.CancelledError:
                scope.landed()
                raise
            finally:
                scope.end_read()
        """
        # Once per event at real traffic's pace: one reading of the clock, and the usual case (nothing
        # fired, no total deadline, the idle timer armed) in a few tests and stores.
        now = self._now()
        if progress:
            self._progress_at = now
            if self._fired is Stalled:
                self._fired = None  # it ran out while the consumer held the stream (see progress)
                self._arm_progress()
        signal = self._signal
        if self._fired is not None or (signal is not None and signal.aborted) or self._deadline is not None:
            pending = self._pending()
            if pending is not None:
                raise pending
        idle = self._idle_s
        if idle is not None:
            self._reading_since = now
            self._wait_id += 1
            if not self._idle_armed:  # its look is never due later than this wait (see _start_idle_clock)
                self._arm_idle(now + idle)
        self._task = _current_task(self._loop)

    def landed(self) -> None:
        """In a wait begun with :meth:`begin_read` that was cancelled: raise what fired (an abort, a
        deadline, a clock) when the cancellation was the scope's own, taken back from the task;
        return (the caller re-raises) when it was somebody else's."""
        fired = self._fired
        task = self._task
        if fired is not None and task is not None and task.uncancel() == 0:
            raise fired from None

    def end_read(self) -> None:
        """End a wait begun with :meth:`begin_read`."""
        self._reading_since = None
        self._task = None

    def _raise_pending(self, awaitable: Awaitable[Any]) -> None:
        """Raise what already happened (an abort, the deadline, a clock that ran out), closing ``awaitable``."""
        pending = self._pending()
        if pending is not None:
            if inspect.iscoroutine(awaitable):
                awaitable.close()
            raise pending

    async def _landing(self, awaitable: Awaitable[Any]) -> Any:
        """Await ``awaitable`` where a firing lands: the cancellation it sends the task comes back as
        its exception (and is taken back from the task); any other cancellation goes on."""
        # Read for the scope's own loop: current_task without one asks get_running_loop, which on 3.11
        # makes a getpid system call each time (a fork check).
        task = self._task = _current_task(self._loop)
        try:
            return await awaitable
        except asyncio.CancelledError:
            fired = self._fired
            if fired is not None and task is not None and task.uncancel() == 0:
                raise fired from None
            raise
        finally:
            self._task = None

    def _check_idle(self) -> float | None:
        """The idle clock's look: when to look again (None: not before the next wait arms it)."""
        idle = self._idle_s
        assert idle is not None
        since = self._reading_since
        if since is None:
            self._idle_armed = False  # no wait pending: the next one arms the clock again
            return None
        deadline = since + idle
        now = self._loop.time()
        if now < deadline:
            # Never more than an idle timeout ahead: no later wait's deadline comes before that, while
            # a send's allowance may put this wait's further out (see _start_idle_clock).
            return min(deadline, now + idle)
        # Past the deadline with the wait still pending, unless its bytes came in this same turn of the
        # loop and the task has not run yet (a busy loop runs due timers and I/O callbacks in one
        # batch): confirm two turns later, once every wake-up queued by now has run. The next wait
        # arms the clock again meanwhile.
        self._idle_armed = False
        self._loop.call_soon(self._confirm_idle, self._wait_id, 1)
        return None

    def _confirm_idle(self, wait: int, turns: int) -> None:
        if self._reading_since is None or self._wait_id != wait:
            return  # that wait ended in time
        if turns:
            self._loop.call_soon(self._confirm_idle, wait, turns - 1)
            return
        if self._woken():
            # The transport did wake the read: bytes came (or its end, or its failure), but a loop
            # busier than the idle timeout has not run the task yet. Not a silent server: the wait's
            # clock restarts from now, and the timer watches it again.
            idle = self._idle_s
            assert idle is not None
            now = self._loop.time()
            self._reading_since = now
            self._arm_idle(now + idle)
            return
        self._fire(Idle)

    def _woken(self) -> bool:
        """Whether the task in our wait was woken with what it awaited (a future now done) and is
        queued to run: its bytes came, or the read's end or failure did. Under a loop whose turns take
        longer than a clock's timeout (a thousand streams each handed 64 KiB on a slow core), a timer
        runs before the wake-up of such a read, even two turns on. asyncio has no public way to ask
        this: it reads ``Task._fut_waiter``. Anything else counts as not woken, as before this check:
        a task of another implementation, and one that yields bare (``sleep(0)``), which a transport
        polling for bytes that never come would do for ever."""
        task = self._task
        waiter: object = getattr(task, "_fut_waiter", None) if task is not None else None
        return isinstance(waiter, asyncio.Future) and waiter.done()

    def watch_progress(self) -> None:
        """Start the progress clock: ``Stalled`` lands unless :meth:`progress` is called at least
        every ``progress_timeout`` seconds, until :meth:`unwatch_progress`."""
        if self._progress_s is None:
            return
        self._watching = True
        self._progress_at = self._loop.time()
        self._arm_progress()

    def progress(self) -> None:
        """Restart the progress clock: content arrived, or the consumer, which held the stream since
        it was handed content, asks for more (its own time is not the server's)."""
        # One clock read and a store per batch of events: the timer reads the time when it fires
        # instead of being moved each time.
        self._progress_at = self._loop.time()
        if self._fired is Stalled:
            # It ran out while the consumer held the stream, not while we waited on the server.
            self._fired = None
            self._arm_progress()

    def _arm_progress(self) -> None:
        assert self._progress_s is not None
        self._progress_confirm = None
        self._progress_armed = True
        self._want(self._progress_at + self._progress_s)

    def _check_progress(self) -> float | None:
        """The progress clock's look: when to look again (None: it is being confirmed)."""
        assert self._progress_s is not None
        due = self._progress_at + self._progress_s
        if self._loop.time() < due:
            return due
        # As the idle clock does (see _check_idle): look again two turns on, once every wake-up queued
        # by now has run, and again while the task's read has been woken but not run (see _woken):
        # what came may be content, which restarts the clock.
        self._progress_armed = False
        self._progress_confirm = self._loop.call_soon(self._confirm_progress, 1)
        return None

    def _confirm_progress(self, turns: int) -> None:
        assert self._progress_s is not None
        if self._loop.time() < self._progress_at + self._progress_s:
            self._arm_progress()
            return
        if turns or self._woken():
            self._progress_confirm = self._loop.call_soon(self._confirm_progress, max(0, turns - 1))
            return
        self._progress_confirm = None
        self._fire(Stalled)

    def unwatch_progress(self) -> None:
        """Stop the progress clock; a stall it raised is over (the next attempt starts a new clock)."""
        self._watching = False
        # The shared timer stays for the idle clock (it finds nothing to do when that is not watched
        # either); a confirmation under way is stopped.
        self._progress_armed = False
        if self._progress_confirm is not None:
            self._progress_confirm.cancel()
            self._progress_confirm = None
        if self._fired is Stalled:
            # An abort or a deadline that came meanwhile was not lost: _pending reads the signal and
            # the clock themselves.
            self._fired = None

    def idle_over(self) -> None:
        """Forget an idle timeout that landed (the attempt it ended is over; a retry starts afresh)."""
        if self._fired is Idle:
            self._fired = None

    def close(self) -> None:
        """Stop listening to the signal and the clocks."""
        if self._remove is not None:
            self._remove()
        if self._timer is not None:
            self._timer.cancel()
        self._watch.drop(self)
        self._clock_due = math.inf
        if self._progress_confirm is not None:
            self._progress_confirm.cancel()
            self._progress_confirm = None
        self._idle_armed = self._progress_armed = False
