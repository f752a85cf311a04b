"""One adapter process: started through the launcher, read line by line, its stderr drained, its end
observed, and everything it did wrong written down as :class:`Fault` s.

Nothing a process does can hold the harness: every read has a bound set by the caller, stderr is
drained into a bounded excerpt (a process that floods it never blocks on a full pipe, nor fills the
harness's memory), a line longer than :data:`~conformance.process.protocol.LINE_LIMIT` is a fault, and
:meth:`AdapterProcess.kill` ends the process and everything it started (see
:mod:`conformance.process._launcher`) with signals only — no wait that the process could stretch.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from conformance.process.protocol import LINE_LIMIT, READY

__all__ = ["AdapterProcess", "Fault", "ProcessReport"]

#: The launcher, run by path (standard library only; see its docstring).
_LAUNCHER = str(Path(__file__).with_name("_launcher.py"))
#: How much of stderr a report quotes: its start, and its end (where a traceback says what happened).
_STDERR_HEAD = 200
_STDERR_TAIL = 400
#: How many bytes of stderr are read at a time (and how much is kept: the excerpt's worth).
_STDERR_CHUNK = 65536
#: The environment variable a process can read to know it is spoken to in this protocol.
PROTOCOL_ENV = "STREAMFNS_PROCESS_PROTOCOL"
#: The most faults of one kind a report keeps (a process writing a million bad lines is judged on the
#: first of them; the rest are counted).
_FAULTS_KEPT = 20
#: How often the end of the launcher is looked for (seconds: from the first value, doubling, to the last).
_EXIT_POLL_S = (0.002, 0.05)


@dataclass(frozen=True, slots=True)
class Fault:
    """One thing a process did wrong: the check that judges it (``X1``: the protocol itself, pi level;
    ``X2``: a well-behaved process, streamfns level) and what happened."""

    check: Literal["X1", "X2"]
    detail: str


@dataclass(slots=True)
class ProcessReport:
    """What one process did, as plain data: its faults, its exit, what it wrote on stderr."""

    pid: int
    faults: list[Fault] = field(default_factory=list[Fault])
    exit_code: int | None = None
    exit_signal: int | None = None
    #: The command lines of the processes the launcher had to kill (the first few) and how many.
    leftover: list[str] = field(default_factory=list[str])
    leftover_count: int = 0
    stderr_bytes: int = 0
    stderr_excerpt: str = ""
    #: Faults not kept, past :data:`_FAULTS_KEPT` of a check.
    dropped: dict[str, int] = field(default_factory=dict[str, int])
    _seen: set[Fault] = field(default_factory=set[Fault], repr=False)

    def add(self, check: Literal["X1", "X2"], detail: str) -> None:
        """Record a fault: once (the same detail twice is one fault), and only the first
        :data:`_FAULTS_KEPT` of a check (the others are counted, see :meth:`close`)."""
        fault = Fault(check, detail)
        if fault in self._seen:
            return
        if sum(1 for kept in self.faults if kept.check == check) >= _FAULTS_KEPT:
            self.dropped[check] = self.dropped.get(check, 0) + 1
            return
        self._seen.add(fault)
        self.faults.append(fault)

    def close(self) -> None:
        """Say how many faults were not kept (once the process is over)."""
        for check, count in self.dropped.items():
            self.faults.append(Fault(check, f"… and {count} more such fault(s)"))  # pyright: ignore[reportArgumentType]
        self.dropped = {}

    @property
    def exit_text(self) -> str:
        """``exit status 1``, ``killed by SIGKILL``, or ``still running``."""
        if self.exit_signal is not None:
            try:
                name = signal.Signals(self.exit_signal).name
            except ValueError:
                name = f"signal {self.exit_signal}"
            return f"killed by {name}"
        if self.exit_code is not None:
            return f"exit status {self.exit_code}"
        return "still running"


class AdapterProcess:
    """A started adapter process (see the module docstring). Methods run on the event loop that
    started it; :meth:`kill_now` may run from any thread."""

    def __init__(self, proc: asyncio.subprocess.Process, status_fd: int, started_by: str) -> None:
        self._proc = proc
        self._status_fd = status_fd
        #: The command, as the reports name it.
        self.command = started_by
        self.report = ProcessReport(pid=proc.pid)
        self._stderr = bytearray()
        self._stderr_tail = bytearray()
        self._drain = asyncio.get_running_loop().create_task(self._drain_stderr(), name="conformance-process-stderr")
        self._exited = asyncio.get_running_loop().create_task(self._wait_exit(), name="conformance-process-exit")
        self.ready = False
        self.killed = False

    @classmethod
    async def start(
        cls, argv: list[str], *, env: dict[str, str] | None = None, cwd: str | None = None
    ) -> AdapterProcess:
        """Start ``argv`` through the launcher, in a session (process group) of its own, with pipes on
        its three standard streams. ``OSError`` when not even the launcher starts."""
        status_read, status_write = os.pipe()
        environment = dict(os.environ if env is None else env)
        environment[PROTOCOL_ENV] = "1"
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-I",
                "-S",
                _LAUNCHER,
                str(status_write),
                "--",
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                pass_fds=(status_write,),
                start_new_session=True,
                env=environment,
                cwd=cwd,
                limit=LINE_LIMIT,
            )
        except BaseException:
            os.close(status_read)
            raise
        finally:
            os.close(status_write)
        return cls(proc, status_read, " ".join(argv))

    # -- reading --------------------------------------------------------------------------------

    async def read_line(self) -> bytes | None:
        """The next stdout line without its newline; None at the end of stdout (a last line without a
        newline is still returned). ``ValueError`` for a line over the limit (the process is then
        past reading: the caller kills it)."""
        stdout = self._proc.stdout
        assert stdout is not None
        try:
            line = await stdout.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            return exc.partial or None
        except asyncio.LimitOverrunError as exc:
            # The line is not kept: what was buffered of it is read out and dropped.
            with contextlib.suppress(Exception):
                await stdout.read(max(exc.consumed, LINE_LIMIT))
            raise ValueError(f"a line longer than {LINE_LIMIT} bytes") from None
        return line[:-1]

    async def wait_ready(self) -> str | None:
        """Read the process's ``ready`` line; None when it came, else what came instead."""
        try:
            line = await self.read_line()
        except ValueError as exc:
            return f"wrote {exc} before saying ready"
        if line is None:
            return "ended before saying ready"
        try:
            data: Any = json.loads(line)
        except (ValueError, RecursionError):
            data = None
        # Any object whose type is "ready" (fields beyond it are left for later versions of the protocol).
        if type(data) is not dict or data.get("type") != READY["type"]:  # pyright: ignore[reportUnknownMemberType]
            return f"wrote {_quote(line)} where {json.dumps(READY)} was expected"
        self.ready = True
        return None

    # -- writing --------------------------------------------------------------------------------

    def write_nowait(self, data: bytes) -> bool:
        """Queue ``data`` on stdin without waiting (it is sent before a :meth:`close_stdin`); False
        when the process no longer reads it."""
        stdin = self._proc.stdin
        if stdin is None or stdin.is_closing():
            return False
        try:
            stdin.write(data)
        except (ConnectionError, RuntimeError, OSError):
            return False
        return True

    async def write(self, data: bytes) -> bool:
        """Write to stdin; False when the process no longer reads it (it closed stdin or ended)."""
        stdin = self._proc.stdin
        if stdin is None or stdin.is_closing():
            return False
        try:
            stdin.write(data)
            await stdin.drain()
        except (ConnectionError, RuntimeError, OSError):
            return False
        return True

    def close_stdin(self) -> None:
        """Close stdin: the call is over (the process should exit)."""
        stdin = self._proc.stdin
        if stdin is not None and not stdin.is_closing():
            with contextlib.suppress(OSError, RuntimeError):
                stdin.close()

    def interrupt(self) -> None:
        """Send ``SIGINT`` to the process (the launcher passes it on to the command)."""
        with contextlib.suppress(ProcessLookupError, OSError):
            self._proc.send_signal(signal.SIGINT)

    # -- ending ---------------------------------------------------------------------------------

    @property
    def exited(self) -> asyncio.Task[None]:
        """Done once the launcher has ended (the command and everything it started are gone) and the
        report holds the exit status."""
        return self._exited

    @property
    def running(self) -> bool:
        """True until the launcher has ended."""
        return not self._exited.done()

    def kill_now(self) -> None:
        """Make the launcher kill the command and everything it started (``SIGTERM`` to the launcher).
        Signals only: it returns at once, from any thread; nothing once the launcher was reaped (its
        pid may belong to another process by then)."""
        self.killed = True
        if self._proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError, OSError):
            os.kill(self._proc.pid, signal.SIGTERM)

    def kill_group(self) -> None:
        """``SIGKILL`` the launcher's process group: the last resort, and the way a platform without
        a subreaper ends what the command left behind in it. The group outlives a reaped launcher
        only while it has members, so its id cannot have been reused while anything is left in it."""
        with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
            os.killpg(self._proc.pid, signal.SIGKILL)

    async def _wait_exit(self) -> None:
        # Not Process.wait(): it returns only once every pipe is closed, which a process the launcher
        # could not reach (holding stdout) would put off for ever. The return code is set at the exit.
        delay = _EXIT_POLL_S[0]
        while self._proc.returncode is None:
            await asyncio.sleep(delay)
            delay = min(delay * 2, _EXIT_POLL_S[1])
        status = self._read_status()
        report = self.report
        if status is None:
            # The launcher itself was killed (it reports its command's end otherwise).
            code = self._proc.returncode or 0
            report.exit_signal = -code if code < 0 else None
            report.exit_code = code if code >= 0 else None
        else:
            exit_code, exit_signal = status.get("exit"), status.get("signal")
            report.exit_code = exit_code if type(exit_code) is int else None
            report.exit_signal = exit_signal if type(exit_signal) is int else None
            leftover = status.get("leftover")
            if type(leftover) is list:
                names = [str(name) for name in leftover]  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
                report.leftover, report.leftover_count = names[:10], len(names)
            exec_error = status.get("execError")
            if type(exec_error) is str:
                report.add("X1", f"could not be started: {exec_error[:300]}")
        self.kill_group()  # whatever is left in the group (where there is no subreaper)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(self._drain), 1.0)
        self._finish_stderr()

    def release(self) -> None:
        """Let go of the pipes (their descriptors), whatever still holds their other ends: once
        nothing more is to be read from the process."""
        self._drain.cancel()
        transport = getattr(self._proc, "_transport", None)  # asyncio keeps the pipes on its transport
        close = getattr(transport, "close", None)
        if callable(close):
            with contextlib.suppress(Exception):
                close()

    def _read_status(self) -> dict[str, Any] | None:
        fd, self._status_fd = self._status_fd, -1
        if fd < 0:
            return None
        try:
            os.set_blocking(fd, False)
            data = os.read(fd, 65536)
        except OSError:
            data = b""
        finally:
            os.close(fd)
        try:
            status: Any = json.loads(data.split(b"\n", 1)[0])
        except ValueError:
            return None
        return status if type(status) is dict else None  # pyright: ignore[reportUnknownVariableType]

    async def _drain_stderr(self) -> None:
        stderr = self._proc.stderr
        assert stderr is not None
        report = self.report
        while chunk := await stderr.read(_STDERR_CHUNK):
            report.stderr_bytes += len(chunk)
            if len(self._stderr) < _STDERR_HEAD:
                taken = _STDERR_HEAD - len(self._stderr)
                self._stderr += chunk[:taken]
                chunk = chunk[taken:]
            self._stderr_tail += chunk
            del self._stderr_tail[:-_STDERR_TAIL]

    def _finish_stderr(self) -> None:
        report = self.report
        if report.stderr_bytes:
            kept = len(self._stderr) + len(self._stderr_tail)
            gap = " … " if report.stderr_bytes > kept else ""
            head = self._stderr.decode("utf-8", "replace")
            tail = self._stderr_tail.decode("utf-8", "replace")
            report.stderr_excerpt = f"{head}{gap}{tail}"
            more = f" ({report.stderr_bytes} bytes in all)" if gap else ""
            report.add("X2", f"wrote to stderr: {report.stderr_excerpt!r}{more}")

    async def close(self) -> None:
        """Kill the process if it still runs, wait (briefly) for the launcher's report, let go of the
        pipes."""
        if self.running:
            self.kill_now()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(self._exited), 2.0)
        if self.running:
            self.kill_group()
        self.release()


def _quote(line: bytes) -> str:
    text = line[:120].decode("utf-8", "replace")
    return repr(text) + ("…" if len(line) > 120 else "")
