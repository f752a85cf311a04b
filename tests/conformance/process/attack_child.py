"""An adapter process that attacks the harness's process bridge, in one named way.

``python attack_child.py MODE TOKEN [ARG]`` — TOKEN marks the process (and what it starts) so a test
can look for leftovers in /proc; ARG is a mode's number (how many lines, bytes, processes). Every
process that could outlive the run writes its pid to ``$ATTACK_PID_FILE`` (one per line), so the test
can kill it itself, whatever the harness did. Standard library only, so that it starts fast. Nothing
here runs forever: every wait is bounded (a leftover dies on its own within a minute).
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import sys
import time
from typing import Any
from urllib.parse import urlsplit

from _scripted import emit, finish_unless_aborted, message  # beside this script (run by path)

MODE = sys.argv[1]
TOKEN = sys.argv[2]
ARG = int(sys.argv[3]) if len(sys.argv) > 3 else 0

_PR_SET_PDEATHSIG = 1


def raw(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def note_pid() -> None:
    """Tell the test this process may outlive the run (it kills it, whatever the harness did)."""
    path = os.environ.get("ATTACK_PID_FILE")
    if path:
        with open(path, "a") as handle:
            handle.write(f"{os.getpid()}\n")


def play(request: dict[str, Any]) -> None:
    """start, a text block, then done — or an aborted error when an abort line comes first."""
    if request.get("aborted"):
        emit({"type": "start"})
        emit({"type": "error", "reason": "aborted", "error": message("", "aborted", "aborted", "aborted")})
        return
    emit({"type": "start"})
    emit({"type": "text_start", "contentIndex": 0})
    emit({"type": "text_delta", "contentIndex": 0, "delta": "Hel"})
    finish_unless_aborted()


def escape_and_kill_launcher(sig: int) -> None:
    """Leave the launcher's reach: no parent-death signal, a session of our own, then stop (or kill)
    the launcher, our parent — a process of the same user may signal it."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, 0, 0, 0, 0)
    os.setsid()
    note_pid()
    os.kill(os.getppid(), sig)
    time.sleep(40)


def main() -> None:
    if MODE == "ready-then-exit":
        emit({"type": "ready"})
        os._exit(0)
    emit({"type": "ready"})
    if MODE == "deaf":  # never reads stdin: the harness's write of a large request fills the pipe
        time.sleep(40)
        return
    request = json.loads(sys.stdin.readline())
    if MODE == "good":
        play(request)
    elif MODE == "signal-abort":
        # An adapter declared with --abort signal: SIGINT ends the stream aborted.
        interrupted: list[int] = []
        signal.signal(signal.SIGINT, lambda signum, _frame: interrupted.append(signum))
        emit({"type": "start"})
        emit({"type": "text_start", "contentIndex": 0})
        emit({"type": "text_delta", "contentIndex": 0, "delta": "Hel"})
        deadline = time.monotonic() + 5.0  # long: only an abort that never arrives ends it with done
        while time.monotonic() < deadline and not interrupted:
            time.sleep(0.01)
        if interrupted:
            aborted = message("Hel", "aborted", "aborted by the caller", "aborted")
            emit({"type": "error", "reason": "aborted", "error": aborted})
            return
        emit({"type": "text_delta", "contentIndex": 0, "delta": "lo"})
        emit({"type": "text_end", "contentIndex": 0, "content": "Hello"})
        emit({"type": "done", "reason": "stop", "message": message("Hello", "stop")})
    elif MODE == "close-stdout-keep-socket":
        url = urlsplit(str(request["model"]["baseUrl"]))
        sock = socket.create_connection((url.hostname or "127.0.0.1", url.port or 80))
        sock.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
        emit({"type": "start"})
        os.close(1)  # no terminal, no more output, but the process (and its connection) live on
        time.sleep(40)
        sock.close()
    elif MODE == "kill-launcher":
        play(request)
        escape_and_kill_launcher(signal.SIGKILL)
    elif MODE == "stop-launcher":
        play(request)
        escape_and_kill_launcher(signal.SIGSTOP)
    elif MODE == "bad-lines":
        raw(b"not an event\n" * ARG)
        play(request)
    elif MODE == "bad-utf8":
        emit({"type": "start"})
        raw(b'{"type": "text_start", "contentIndex": 0, "x": "\xff\xfe"}\n')
        play(request)
    elif MODE == "crlf":
        for event in (
            {"type": "start"},
            {"type": "text_start", "contentIndex": 0},
            {"type": "text_delta", "contentIndex": 0, "delta": "Hello"},
            {"type": "text_end", "contentIndex": 0, "content": "Hello"},
            {"type": "done", "reason": "stop", "message": message("Hello", "stop")},
        ):
            raw(json.dumps(event).encode() + b"\r\n")
    elif MODE == "ready-twice":
        emit({"type": "ready"})
        play(request)
    elif MODE == "stderr-flood":
        chunk = b"e" * 65536
        for _ in range(ARG // len(chunk)):
            sys.stderr.buffer.write(chunk)
        sys.stderr.buffer.flush()
        play(request)
    elif MODE == "event-flood":
        emit({"type": "start"})
        emit({"type": "text_start", "contentIndex": 0})
        line = b'{"type":"text_delta","contentIndex":0,"delta":"x"}\n' * 1000
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            raw(line)
    elif MODE == "big-lines":
        emit({"type": "start"})
        emit({"type": "text_start", "contentIndex": 0})
        delta = "x" * (8 * 1024 * 1024 - 100)
        line = json.dumps({"type": "text_delta", "contentIndex": 0, "delta": delta}).encode() + b"\n"
        for _ in range(ARG):
            raw(line)
        emit({"type": "text_end", "contentIndex": 0, "content": ""})
        emit({"type": "done", "reason": "stop", "message": message("", "stop")})
    elif MODE == "nested":
        # Tool arguments nested ARG deep, written by hand (json.dumps would recurse that deep).
        emit({"type": "start"})
        emit({"type": "toolcall_start", "contentIndex": 0})
        arguments = b'{"a":' * ARG + b"{}" + b"}" * ARG
        raw(
            b'{"type": "toolcall_end", "contentIndex": 0, "toolCall": {"type": "toolCall", "id": "t1", '
            b'"name": "f", "arguments": ' + arguments + b"}}\n"
        )
        emit({"type": "done", "reason": "stop", "message": message("", "stop")})
    elif MODE == "absurd-values":
        emit({"type": "start"})
        done = message("", "stop")
        done["usage"]["input"] = 10**300
        done["usage"]["cost"]["total"] = float("nan")
        done["timestamp"] = 10**30
        sys.stdout.write(json.dumps({"type": "done", "reason": "stop", "message": done}) + "\n")
        sys.stdout.flush()
    elif MODE == "huge-int":
        emit({"type": "start"})
        raw(b'{"type": "text_start", "contentIndex": ' + b"9" * 5000 + b"}\n")
        play(request)
    elif MODE == "fork-burst":
        for _ in range(ARG):
            if os.fork() == 0:
                time.sleep(40)
                os._exit(0)
        play(request)
    elif MODE == "close-stdin":
        os.close(0)  # it reads nothing more (the harness's abort line, its end of stdin)
        for event in (
            {"type": "start"},
            {"type": "text_start", "contentIndex": 0},
            {"type": "text_delta", "contentIndex": 0, "delta": "Hello"},
            {"type": "text_end", "contentIndex": 0, "content": "Hello"},
            {"type": "done", "reason": "stop", "message": message("Hello", "stop")},
        ):
            emit(event)
    elif MODE == "terminal-then-flood":
        play(request)
        line = b'{"type":"text_delta","contentIndex":0,"delta":"x"}\n' * 1000
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            raw(line)
    else:
        raise SystemExit(f"unknown mode {MODE}")


if __name__ == "__main__":
    main()
