"""A pool of started adapter processes, so that start-up time never counts against the adapter.

The pool keeps up to ``size`` processes that said ``ready``, starting one at a time in a background
task (a node process loading a library costs half a second of CPU: several at once would compete with
the scenario being timed). A call takes a ready process, or waits for the next one. A process that
does not say ``ready`` within the start timeout is a fault of the adapter (X1); after two such starts
in a row the pool gives up, and every later call is told why at once instead of waiting again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque

from conformance.process.child import AdapterProcess, ProcessReport

__all__ = ["ProcessPool"]

#: Starts that fail in a row before the pool stops trying.
_GIVE_UP_AFTER = 2


class ProcessPool:
    """Ready processes of one command (see the module docstring). Runs on one event loop."""

    def __init__(
        self,
        argv: list[str],
        *,
        size: int,
        start_timeout_s: float,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
    ) -> None:
        self._argv = argv
        self._size = size
        self._start_timeout_s = start_timeout_s
        self._env = env
        self._cwd = cwd
        self._ready: deque[AdapterProcess] = deque()
        self._changed = asyncio.Event()
        self._filler: asyncio.Task[None] | None = None
        self._failures = 0
        self._closed = False
        #: Why the pool gave up (every start failed), else None.
        self.failure: str | None = None
        #: Reports of processes that failed to start, not yet handed to a caller.
        self.failed_starts: list[ProcessReport] = []
        #: Every process the pool ever started (for :meth:`kill_all`).
        self.started: list[AdapterProcess] = []

    def _fill(self) -> None:
        if self._closed or self.failure is not None:
            return
        if self._filler is None or self._filler.done():
            self._filler = asyncio.get_running_loop().create_task(self._run_filler(), name="conformance-process-pool")

    async def _run_filler(self) -> None:
        while not self._closed and self.failure is None and len(self._ready) < self._size:
            problem: str | None
            process: AdapterProcess | None = None
            try:
                process = await AdapterProcess.start(self._argv, env=self._env, cwd=self._cwd)
            except OSError as exc:
                problem = f"could not be started: {exc}"
            else:
                self.started.append(process)
                if self._closed:  # closed meanwhile (kill_all, from another thread): not wanted
                    await process.close()
                    return
                try:
                    # asyncio.timeout, not wait_for: no task of its own (which a check could take for
                    # one the adapter left running).
                    async with asyncio.timeout(self._start_timeout_s):
                        problem = await process.wait_ready()
                except TimeoutError:
                    problem = f"did not say ready within {self._start_timeout_s:g} s"
            if problem is None and process is not None:
                self._failures = 0
                self._ready.append(process)
            else:
                self._failures += 1
                if process is not None:
                    await process.close()
                    report = process.report
                    report.add("X1", f"{problem} ({report.exit_text})")
                    self.failed_starts.append(report)
                    problem = f"{problem} ({report.exit_text})"
                    if report.stderr_excerpt:
                        problem = f"{problem}; stderr: {report.stderr_excerpt[:200]!r}"
                if self._failures >= _GIVE_UP_AFTER:
                    self.failure = f"the adapter process {problem}"
            self._changed.set()

    async def take(self) -> AdapterProcess | str:
        """A ready process (the pool starts its replacement), or why there is none."""
        while True:
            if self._ready:
                process = self._ready.popleft()
                if process.running:
                    self._fill()
                    return process
                continue  # it ended while waiting in the pool: the next one
            if self.failure is not None:
                return self.failure
            if self._closed:
                return "the adapter's process pool is closed"
            self._changed.clear()
            self._fill()
            await self._changed.wait()

    async def wait_ready(self) -> None:
        """Return once a ready process waits in the pool, or the pool gave up (or is closed)."""
        while not self._ready and self.failure is None and not self._closed:
            self._changed.clear()
            self._fill()
            await self._changed.wait()

    def kill_all(self) -> None:
        """Kill every process the pool started and start no more (signals and a flag only: from any
        thread)."""
        self._closed = True
        for process in list(self.started):
            if process.running:
                process.kill_now()

    def forget_ended(self) -> None:
        """Drop the processes that have ended (what they buffered goes with them)."""
        self.started = [process for process in self.started if process.running]

    async def close(self) -> None:
        """Stop starting processes and kill the ready ones."""
        self._closed = True
        filler = self._filler
        if filler is not None and not filler.done():
            filler.cancel()
            with contextlib.suppress(BaseException):
                await filler
        ready, self._ready = list(self._ready), deque()
        await asyncio.gather(*(process.close() for process in ready))
        self._changed.set()
