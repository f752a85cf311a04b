"""The launcher between the harness and an adapter process: it runs the command, and when the command
ends (or the harness says stop) it kills everything the command started, then reports.

Run by path, not imported: ``python -I -S _launcher.py STATUS_FD -- COMMAND [ARG…]`` (standard library
only, no ``site``: it starts in milliseconds). The command inherits the launcher's stdin, stdout and
stderr (the harness's pipes), and the launcher lets go of its own copies, so the pipes end when the
command and what it started end.

Why a launcher: a hostile or careless adapter may start processes of its own (a helper server, a
double fork that leaves the process group). On Linux the launcher makes itself a *child subreaper*,
so every orphaned descendant is re-parented to it, never to init: when the command exits, whatever it
left running is still the launcher's descendant, and is killed. Where that is not available, the
command's process group is killed instead. The launcher also dies with the harness thread that
started it (``PR_SET_PDEATHSIG``), and the command with the launcher.

On ``SIGTERM`` (the harness giving up on the process) the launcher kills the command and every
descendant. ``SIGINT`` is passed on to the command: it is how an adapter that asked for a signal is
told to abort. The last thing the launcher does is write one JSON line to ``STATUS_FD``:
``{"exit": code | null, "signal": n | null, "leftover": [names of processes it had to kill],
"execError": text | null}``.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import sys
import time

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
#: How long the launcher keeps sweeping for descendants that are still appearing (a fork in flight).
_SWEEP_S = 2.0


def _prctl(option: int, value: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _children_map() -> dict[int, list[int]]:
    """Parent pid → child pids, read from /proc (empty where there is no /proc)."""
    found: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: the fields follow the last ")".
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1:
            found.setdefault(int(fields[1]), []).append(int(name))
    return found


def _descendants(root: int) -> list[int]:
    tree = _children_map()
    found: list[int] = []
    todo = list(tree.get(root, []))
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(tree.get(pid, []))
    return found


def _name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            words = handle.read().split(b"\0")
        return " ".join(word.decode("utf-8", "replace") for word in words if word)[:200] or f"pid {pid}"
    except OSError:
        return f"pid {pid}"


def _reap() -> None:
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _kill_descendants() -> list[str]:
    """SIGKILL every descendant still running (re-parented to us: we are their subreaper), sweeping
    until none is left or a fork in flight had its time; their command lines."""
    killed: list[str] = []
    deadline = time.monotonic() + _SWEEP_S
    seen: set[int] = set()
    while time.monotonic() < deadline:
        alive = [pid for pid in _descendants(os.getpid()) if _running(pid)]
        if not alive:
            break
        for pid in alive:
            if pid not in seen:
                seen.add(pid)
                killed.append(_name(pid))
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)
        _reap()
    _reap()
    return killed


def _running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return False
    fields = stat[stat.rfind(b")") + 2 :].split()
    return bool(fields) and fields[0] != b"Z"


def main(argv: list[str]) -> int:
    status_fd = int(argv[1])
    command = argv[3:] if len(argv) > 3 and argv[2] == "--" else []
    parent = os.getppid()
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the harness went away before the line above: nothing to serve
        return 1
    subreaper = _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    report: dict[str, object] = {"exit": None, "signal": None, "leftover": [], "execError": None}
    if not command:
        report["execError"] = "no command given"
        os.write(status_fd, json.dumps(report).encode() + b"\n")
        return 2
    stopping = False

    def on_term(_signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)

    def on_int(_signum: int, _frame: object) -> None:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGINT)

    exec_read, exec_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the command
        try:
            os.close(exec_read)
            os.close(status_fd)
            _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
            os.execvp(command[0], command)
        except BaseException as exc:  # whatever stops the exec is reported, then the child ends
            with contextlib.suppress(OSError):
                os.write(exec_write, f"{type(exc).__name__}: {exc}".encode("utf-8", "replace")[:2000])
        os._exit(127)
    os.close(exec_write)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_int)
    # Let go of the pipes: they must end when the command and its descendants end, not with us.
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    exec_error = b""
    with contextlib.suppress(OSError):
        while chunk := os.read(exec_read, 4096):
            exec_error += chunk
    os.close(exec_read)
    if exec_error:
        report["execError"] = exec_error.decode("utf-8", "replace")
    while True:
        try:
            done, status = os.waitpid(pid, 0)
        except InterruptedError:
            continue
        except ChildProcessError:
            break
        if done == pid:
            if os.WIFEXITED(status):
                report["exit"] = os.WEXITSTATUS(status)
            elif os.WIFSIGNALED(status):
                report["signal"] = os.WTERMSIG(status)
            break
    # Without a subreaper (not Linux) the harness kills the process group once we are gone.
    report["leftover"] = _kill_descendants() if subreaper else []
    report["stopped"] = stopping
    os.write(status_fd, json.dumps(report).encode() + b"\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
