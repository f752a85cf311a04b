"""An adapter process as a StreamFn: each call hands its request to a started process and passes on
the events the process writes — exactly those, nothing added, nothing repaired.

This is how the harness judges an adapter written in another language. The StreamFn is deliberately
a faithful pipe, not a safety net: it adds no ``start``, no terminal and no error of its own, so the
grammar checks (G1–G7) see the stream the process made. A process that ends without a terminal gives
a stream that ends without one; a line that is not an event is left out of the stream and recorded.
Everything the process does wrong is a :class:`~conformance.process.child.Fault` in its report, for
the checks X1 and X2 (:mod:`conformance.checks.process`).

What the pipe does guarantee is that an abort always ends a stream: a stream ends at the process's
terminal, at the end of its stdout, or — after an abort the process ignores — when the abort grace is
over and the process is killed. (A process that just goes silent is the caller's to bound, as any
StreamFn's silence is: the harness's scenario deadline cancels the reader, which aborts the call.)
After the stream ended the harness gives the process its grace to exit
(:meth:`ProcessAdapter.settle_waits`), then :meth:`ProcessAdapter.collect` kills whatever still runs,
the process and everything it started, and hands over the reports.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from typing import Any, Literal

from conformance.process.child import AdapterProcess, ProcessReport
from conformance.process.pool import ProcessPool
from conformance.process.protocol import ABORT_LINE, event_from_line, request_line
from conformance.reading import TERMINAL_TYPES
from normalize import AssistantMessage, Context, DoneEvent, ErrorEvent, Model, StreamOptions

__all__ = ["AbortStyle", "ProcessAdapter", "ProcessStream"]

#: The most processes kept started at once.
MAX_POOL = 32
#: How the harness tells a process to abort: a line on stdin, or ``SIGINT``.
AbortStyle = Literal["line", "signal"]


class ProcessAdapter:
    """The StreamFn that runs ``command`` (a string, split as a shell would, or an argument list) once
    per call (see the module docstring).

    ``pool_size`` processes are kept started and ready; ``start_timeout_s`` bounds a start (until the
    ``ready`` line); ``abort`` says how an abort is told (``"line"``: ``{"type": "abort"}`` on stdin;
    ``"signal"``: ``SIGINT``); a process that has not ended its stream ``abort_grace_s`` after an
    abort is killed. ``env`` (default: this process's environment) and ``cwd`` are the process's.

    Made for the harness: it runs on the event loop of its first call, and :meth:`aclose` (which the
    harness awaits after the last scenario) kills every process it started.
    """

    def __init__(
        self,
        command: str | Sequence[str],
        *,
        pool_size: int = 4,
        start_timeout_s: float = 20.0,
        abort: AbortStyle = "line",
        abort_grace_s: float = 2.0,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
    ) -> None:
        argv = shlex.split(command) if isinstance(command, str) else [str(part) for part in command]
        if not argv:
            raise ValueError("the adapter command is empty")
        if not 1 <= pool_size <= MAX_POOL:
            raise ValueError(f"pool_size must be from 1 to {MAX_POOL}, not {pool_size}")
        if abort not in ("line", "signal"):
            raise ValueError(f"abort must be 'line' or 'signal', not {abort!r}")
        if not start_timeout_s > 0 or not abort_grace_s > 0:
            raise ValueError("start_timeout_s and abort_grace_s must be positive")
        self.argv = argv
        self.abort: AbortStyle = abort
        self.abort_grace_s = abort_grace_s
        self._pool_size = pool_size
        self._start_timeout_s = start_timeout_s
        self._env = env
        self._cwd = cwd
        self._pool: ProcessPool | None = None
        #: The processes of the calls since the last :meth:`collect`.
        self._current: list[_Call] = []
        self._all: list[AdapterProcess] = []

    def fresh(self) -> ProcessAdapter:
        """A new adapter of the same command and settings, with no process of its own yet."""
        return ProcessAdapter(
            self.argv,
            pool_size=self._pool_size,
            start_timeout_s=self._start_timeout_s,
            abort=self.abort,
            abort_grace_s=self.abort_grace_s,
            env=self._env,
            cwd=self._cwd,
        )

    @property
    def command(self) -> str:
        """The command, as a shell would show it."""
        return shlex.join(self.argv)

    def __repr__(self) -> str:
        return f"ProcessAdapter({self.command!r})"

    def __call__(self, model: Model, context: Context, options: StreamOptions | None = None) -> ProcessStream:
        """Start the call; the returned stream takes a process when it is first read."""
        call = _Call(self, request_line(model, context, options, aborted=_aborted(options)), options)
        self._current.append(call)
        return ProcessStream(call)

    def _pool_now(self) -> ProcessPool:
        if self._pool is None:
            self._pool = ProcessPool(
                self.argv, size=self._pool_size, start_timeout_s=self._start_timeout_s, env=self._env, cwd=self._cwd
            )
        return self._pool

    # -- the harness's side --------------------------------------------------------------------

    @property
    def start_timeout_s(self) -> float:
        """How long a process may take to say ready."""
        return self._start_timeout_s

    async def prepare(self) -> None:
        """Return once a started, ready process waits for the next call (or starting them failed):
        the harness waits here before a scenario, so start-up time never counts against the adapter."""
        await self._pool_now().wait_ready()

    def settle_waits(self) -> list[asyncio.Task[None]]:
        """The ends still to come of this scenario's processes (the harness waits for them, within
        its grace, as it waits for connections to close)."""
        return [call.process.exited for call in self._current if call.process is not None and call.process.running]

    async def collect(self, grace_s: float) -> list[ProcessReport]:
        """After the scenario's grace: kill what still runs, and the reports of this scenario's
        processes (and of starts that failed meanwhile)."""
        calls, self._current = self._current, []
        for call in calls:
            call.stop_abort_timer()  # the scenario is over: the kill below, not the timer, ends it
            process = call.process
            if process is None or not process.running:
                continue
            if call.terminal is not None or call.late_terminal:
                process.report.add("X2", f"still running {grace_s:g} s after its terminal event; killed")
            elif call.abort_sent:
                process.report.add(
                    "X1", f"ignored the abort: no terminal and still running {grace_s:g} s after it; killed"
                )
            else:
                process.report.add("X2", f"still running {grace_s:g} s after its stream ended; killed")
            process.kill_now()
        ended = [call.process.exited for call in calls if call.process is not None]
        if ended:
            await asyncio.wait(ended, timeout=3.0)
        reports: list[ProcessReport] = []
        pool = self._pool
        if pool is not None:
            for report in pool.failed_starts:
                report.close()
                reports.append(report)
            pool.failed_starts = []
        for call in calls:
            process = call.process
            if process is None:
                if call.failure is not None:
                    report = ProcessReport(pid=0)
                    report.add("X1", call.failure)
                    reports.append(report)
                continue
            report = process.report
            if process.running:
                process.kill_group()
                report.add("X2", "did not end even when killed")
            if report.leftover_count:
                names = ", ".join(report.leftover[:3])
                report.add("X2", f"left {report.leftover_count} process(es) running when it exited, killed: {names}")
            if call.terminal is not None and not process.killed and report.exit_code not in (0, None):
                report.add("X2", f"ended with {report.exit_text} after its terminal event")
            if call.terminal is not None and not process.killed and report.exit_signal is not None:
                report.add("X2", f"was {report.exit_text} after its terminal event")
            report.close()
            reports.append(report)
            if not process.running:
                process.release()  # its stream is over: its pipes (and what they buffered) can go
        # What has ended is forgotten: a run holds what its running processes hold, not every stream.
        self._all = [process for process in self._all if process.running]
        if pool is not None:
            pool.forget_ended()
        return reports

    def kill_all(self) -> None:
        """Kill every process this adapter started: signals only, from any thread (the harness's way
        out when the worker running the calls stopped responding)."""
        if self._pool is not None:
            self._pool.kill_all()
        for process in list(self._all):
            if process.running:
                process.kill_now()

    async def aclose(self) -> None:
        """Kill every process this adapter started and wait (briefly) for them to end."""
        if self._pool is not None:
            await self._pool.close()
            started = list(self._pool.started)
        else:
            started = []
        await asyncio.gather(*(process.close() for process in {*started, *self._all}))


def _aborted(options: StreamOptions | None) -> bool:
    signal = options.signal if options is not None else None
    return signal is not None and signal.aborted


class _Call:
    """One call's state: its request, its process, whether it was aborted and how it ended."""

    def __init__(self, adapter: ProcessAdapter, request: bytes, options: StreamOptions | None) -> None:
        self.adapter = adapter
        self.request = request
        self.signal = options.signal if options is not None else None
        self.process: AdapterProcess | None = None
        self.failure: str | None = None
        self.terminal: DoneEvent | ErrorEvent | None = None
        self.abort_sent = False
        self.lines = 0
        self.tail: asyncio.Task[None] | None = None
        self.closing: asyncio.Task[None] | None = None
        self._abort_timer: asyncio.TimerHandle | None = None
        #: The process wrote its terminal after the reader had left (nobody read it, but it was sent).
        self.late_terminal = False
        self._written = False
        #: The process closed its stdout: nothing more can come from it (an abort would be moot).
        self.stdout_ended = False

    def send_abort(self) -> None:
        """Tell the process to abort (once), and kill it if its stream has not ended within the grace.
        Until the request is written the abort line waits (the request is the first line a process
        reads), but the grace starts now: a process that never reads its stdin is killed all the same."""
        process = self.process
        if self.abort_sent or process is None or not process.running:
            return
        self.abort_sent = True
        if self._written:
            self._tell_abort(process)
        grace = self.adapter.abort_grace_s
        self._abort_timer = asyncio.get_running_loop().call_later(grace, self._abort_expired, grace)

    def request_written(self) -> None:
        """The request is written: an abort that came meanwhile is told now."""
        self._written = True
        if self.abort_sent and self.process is not None and self.process.running:
            self._tell_abort(self.process)

    def _tell_abort(self, process: AdapterProcess) -> None:
        if self.adapter.abort == "signal":
            process.interrupt()
        else:
            process.write_nowait(ABORT_LINE)

    def _abort_expired(self, grace: float) -> None:
        process = self.process
        if process is None or not process.running or self.terminal is not None or self.late_terminal:
            return
        process.report.add("X1", f"did not end its stream within {grace:g} s of the abort; killed")
        process.kill_now()

    def stop_abort_timer(self) -> None:
        timer, self._abort_timer = self._abort_timer, None
        if timer is not None:
            timer.cancel()


class ProcessStream:
    """The events of one call (iterate it once); :meth:`result` is the terminal's message."""

    def __init__(self, call: _Call) -> None:
        self._call = call
        self._events = self._run()

    def __aiter__(self) -> AsyncIterator[Any]:
        return _Cursor(self._events, self._call)

    async def result(self) -> AssistantMessage:
        """The terminal event's message (reading the stream to its end if nobody did); ``RuntimeError``
        when the process wrote no terminal."""
        async for _event in self._events:
            pass
        terminal = self._call.terminal
        if terminal is None:
            raise RuntimeError("the adapter process wrote no terminal event")
        return terminal.message if isinstance(terminal, DoneEvent) else terminal.error

    async def aclose(self) -> None:
        """Stop reading: the process is told to abort (if its stream had not ended)."""
        await self._events.aclose()

    async def _run(self) -> AsyncGenerator[Any]:
        call = self._call
        adapter = call.adapter
        taken = await adapter._pool_now().take()  # pyright: ignore[reportPrivateUsage]
        if isinstance(taken, str):
            call.failure = taken
            return
        process = call.process = taken
        adapter._all.append(process)  # pyright: ignore[reportPrivateUsage]
        remove: Callable[[], None] | None = None
        try:
            if call.signal is not None:
                # The signal may fire in any thread: the abort is sent from this loop — and while the
                # request is still being written, its line waits for it (send_abort).
                loop = asyncio.get_running_loop()
                remove = call.signal.add_callback(lambda _signal: _soon(loop, call.send_abort))
            if not await process.write(call.request):
                process.report.add("X1", "closed its stdin before the request was written")
            call.request_written()
            partial = AssistantMessage()
            while (event := await self._next_event(process, partial)) is not None:
                yield event
                if type(event) in TERMINAL_TYPES:
                    call.terminal = event
                    return
        finally:
            if remove is not None:
                remove()
            if call.terminal is None and process.running and not call.stdout_ended:
                # The reader left (or was cancelled) before the end: the call is over. The process is
                # told to abort and its stdin closed; it should end its stream and exit.
                call.send_abort()
            else:
                call.stop_abort_timer()
            process.close_stdin()
            call.tail = asyncio.get_running_loop().create_task(_tail(call), name="conformance-process-tail")

    async def _next_event(self, process: AdapterProcess, partial: AssistantMessage) -> Any | None:
        """The next event the process wrote; None once its stdout will give no more (the fault is
        recorded). Lines that are not events are recorded and skipped."""
        call = self._call
        while True:
            try:
                line = await process.read_line()
            except ValueError as exc:
                process.report.add("X1", f"wrote {exc}; killed")
                process.kill_now()
                return None
            if line is None:
                call.stdout_ended = True
                await asyncio.wait([process.exited], timeout=1.0)
                process.report.add("X1", f"closed its stdout ({process.report.exit_text}) before its terminal event")
                return None
            call.lines += 1
            try:
                return event_from_line(line, partial)
            except ValueError as exc:
                process.report.add("X1", f"stdout line {call.lines} is not an event: {exc}: {_quote(line)}")


class _Cursor:
    """One ``async for`` over a process stream. Dropping it before the terminal (a ``break``: CPython
    frees the cursor as the loop exits) aborts the call at once, as a reader that leaves the stream
    of any adapter does — rather than whenever the garbage collector gets to the generator."""

    __slots__ = ("_call", "_events", "_finished")

    def __init__(self, events: AsyncGenerator[Any], call: _Call) -> None:
        self._events = events
        self._call = call
        self._finished = False

    def __aiter__(self) -> _Cursor:
        return self

    async def __anext__(self) -> Any:
        try:
            return await anext(self._events)
        except StopAsyncIteration:
            self._finished = True
            raise

    def __del__(self) -> None:
        if self._finished or self._call.terminal is not None:
            return
        self._finished = True
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (interpreter shutdown): the generator is finalized by the GC
            return
        self._call.send_abort()
        self._call.closing = loop.create_task(self._events.aclose(), name="conformance-process-close")


async def _tail(call: _Call) -> None:
    """Read what the process writes once its stream is over, until it ends: after its terminal, it
    should write nothing; after the reader left, the terminal it writes (read by nobody) is noted,
    so that a process that answered the abort is not said to have ignored it."""
    process = call.process
    if process is None:
        return
    partial = AssistantMessage()
    said = False
    with contextlib.suppress(ValueError):
        while (line := await process.read_line()) is not None:
            if call.terminal is not None:
                if not said:  # once: the first line says it
                    process.report.add("X2", f"wrote after its terminal event: {_quote(line)}")
                    said = True
                continue
            try:
                event = event_from_line(line, partial)
            except ValueError:
                continue
            if type(event) in TERMINAL_TYPES:
                call.late_terminal = True
                call.stop_abort_timer()


def _soon(loop: asyncio.AbstractEventLoop, callback: Callable[[], None]) -> None:
    """Run ``callback`` on ``loop`` (from any thread); nothing once the loop is closed."""
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(callback)


def _quote(line: bytes) -> str:
    text = line[:120].decode("utf-8", "replace")
    return repr(text) + ("…" if len(line) > 120 else "")
