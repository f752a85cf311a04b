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
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
#: Set to 0 to run the command without a PID namespace (the fallback; for tests of it).
_NAMESPACE_ENV = "STREAMFNS_LAUNCHER_NAMESPACE"
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


def _enter_pid_namespace() -> bool:
    """Make the next fork the first process (the init) of a new PID namespace: nothing in it can see
    or signal a process outside, and when its init ends the kernel kills everything in it. As root
    a PID namespace alone; otherwise inside a user namespace that maps our uid and gid to themselves.
    False where the kernel (or a container's policy) does not allow it, or when
    ``STREAMFNS_LAUNCHER_NAMESPACE=0`` asks for the fallback."""
    if os.environ.pop(_NAMESPACE_ENV, "") == "0":
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        uid, gid = os.getuid(), os.getgid()
        flags = _CLONE_NEWPID if os.geteuid() == 0 else _CLONE_NEWPID | _CLONE_NEWUSER
        if libc.unshare(flags) != 0:
            return False
    except (OSError, AttributeError):
        return False
    if flags & _CLONE_NEWUSER:
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            with contextlib.suppress(OSError), open(f"/proc/self/{name}", "w") as handle:
                handle.write(text)
    return True


def _exec_command(command: list[str], exec_write: int) -> None:
    """In a fresh child: become the leader of a process group of its own (so a signal reaches a
    command run through a shell as well), die with the parent, and exec; report why not."""
    try:
        os.setpgid(0, 0)
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        os.execvp(command[0], command)
    except BaseException as exc:  # whatever stops the exec is reported, then the child ends
        with contextlib.suppress(OSError):
            os.write(exec_write, f"{type(exc).__name__}: {exc}".encode("utf-8", "replace")[:2000])
    os._exit(127)


def _status_of(status: int) -> dict[str, int | None]:
    if os.WIFEXITED(status):
        return {"exit": os.WEXITSTATUS(status), "signal": None}
    if os.WIFSIGNALED(status):
        return {"exit": None, "signal": os.WTERMSIG(status)}
    return {"exit": None, "signal": None}


def _init(command: list[str], exec_write: int, done_write: int, go_read: int) -> None:
    """The init of the namespace: run the command, reap, say how it ended, end when told."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)  # the launcher gone: so is the namespace
    child = os.fork()
    if child == 0:
        os.close(done_write)
        os.close(go_read)
        _exec_command(command, exec_write)
    os.close(exec_write)
    _release_stdio()  # the pipes are the command's: they end when it (and what it started) lets go
    signal.signal(signal.SIGINT, lambda _signum, _frame: _signal_group(child, signal.SIGINT))
    ended: dict[str, int | None] = {"exit": None, "signal": None}
    while True:
        try:
            done, status = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        if done == child:
            ended = _status_of(status)
            break
    with contextlib.suppress(OSError):
        os.write(done_write, json.dumps(ended).encode())
    os.close(done_write)
    with contextlib.suppress(OSError):
        os.read(go_read, 1)  # the launcher counts what is left, then lets go: ending here ends it all
    os._exit(0)


def _signal_group(leader: int, signum: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(leader, signum)


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, signum)


def _release_stdio() -> None:
    """Let go of the pipes: they must end when the command and its descendants end, not with us."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)


def _read_all(fd: int) -> bytes:
    data = b""
    with contextlib.suppress(OSError):
        while chunk := os.read(fd, 4096):
            data += chunk
    os.close(fd)
    return data


def main(argv: list[str]) -> int:
    status_fd = int(argv[1])
    command = argv[3:] if len(argv) > 3 and argv[2] == "--" else []
    parent = os.getppid()
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the harness went away before the line above: nothing to serve
        return 1
    report: dict[str, object] = {"exit": None, "signal": None, "leftover": [], "execError": None}
    if not command:
        report["execError"] = "no command given"
        os.write(status_fd, json.dumps(report).encode() + b"\n")
        return 2
    subreaper = _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    namespace = subreaper and _enter_pid_namespace()
    report["namespace"] = namespace
    ended = _run_in_namespace(command, status_fd) if namespace else _run_in_group(command, status_fd, subreaper)
    report.update(ended)
    os.write(status_fd, json.dumps(report).encode() + b"\n")
    return 0


def _run_in_namespace(command: list[str], status_fd: int) -> dict[str, object]:
    """Run the command under the init of a new PID namespace; kill the namespace at its end."""
    exec_read, exec_write = os.pipe()
    done_read, done_write = os.pipe()
    go_read, go_write = os.pipe()
    init = os.fork()
    if init == 0:
        for fd in (exec_read, done_read, go_write, status_fd):
            os.close(fd)
        _init(command, exec_write, done_write, go_read)
    for fd in (exec_write, done_write, go_read):
        os.close(fd)
    stopping = False

    def on_term(_signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True
        with contextlib.suppress(OSError):
            os.kill(init, signal.SIGKILL)  # the init gone, the kernel kills the whole namespace

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, lambda _signum, _frame: _signal(init, signal.SIGINT))  # the init passes it on
    _release_stdio()
    ended: dict[str, object] = {}
    exec_error = _read_all(exec_read)
    if exec_error:
        ended["execError"] = exec_error.decode("utf-8", "replace")
    with contextlib.suppress(ValueError):
        ended.update(json.loads(_read_all(done_read) or b"{}"))
    if "exit" not in ended:  # the init said nothing: it was killed (SIGTERM here), and the command with it
        ended.update({"exit": None, "signal": int(signal.SIGKILL)})
    leftover = [_name(pid) for pid in _descendants(init) if _running(pid)]
    os.close(go_write)  # the init ends: the kernel kills whatever is left in the namespace
    with contextlib.suppress(ChildProcessError):
        os.waitpid(init, 0)
    _reap()
    ended["leftover"] = leftover
    ended["stopped"] = stopping
    return ended


def _run_in_group(command: list[str], status_fd: int, subreaper: bool) -> dict[str, object]:
    """The fallback: the command in a process group of its own, its descendants swept after it
    (found through the subreaper where there is one; else its group is killed)."""
    exec_read, exec_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(exec_read)
        os.close(status_fd)
        _exec_command(command, exec_write)
    os.close(exec_write)
    stopping = False

    def on_term(_signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True
        _signal_group(pid, signal.SIGKILL)

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, lambda _signum, _frame: _signal_group(pid, signal.SIGINT))
    _release_stdio()
    ended: dict[str, object] = {}
    exec_error = _read_all(exec_read)
    if exec_error:
        ended["execError"] = exec_error.decode("utf-8", "replace")
    while True:
        try:
            done, status = os.waitpid(pid, 0)
        except InterruptedError:
            continue
        except ChildProcessError:
            break
        if done == pid:
            ended.update(_status_of(status))
            break
    _signal_group(pid, signal.SIGKILL)  # what is left in its group
    ended["leftover"] = _kill_descendants() if subreaper else []
    ended["stopped"] = stopping
    return ended


if __name__ == "__main__":
    sys.exit(main(sys.argv))
