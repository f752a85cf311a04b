"""An adapter process for the tests: well behaved, or hostile in one named way.

``python hostile_child.py MODE TOKEN`` — TOKEN only marks the process (and what it starts) so a test
can look for leftovers in /proc. The stream it plays is scripted (it sends no HTTP, except in the
``linger-socket`` mode, which opens a connection to ``model.baseUrl`` and keeps it).
Standard library only, so that it starts fast.
"""

from __future__ import annotations

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


def play(request: dict[str, Any], *, ignore_abort: bool = False) -> None:
    """start, a text block, then done — or an aborted error when the abort comes first."""
    if request.get("aborted"):
        emit({"type": "start"})
        emit({"type": "error", "reason": "aborted", "error": message("", "aborted", "aborted", "aborted")})
        return
    emit({"type": "start"})
    emit({"type": "text_start", "contentIndex": 0})
    emit({"type": "text_delta", "contentIndex": 0, "delta": "Hel"})
    if ignore_abort:
        while True:  # deaf to the abort line (stdin is never read again)
            time.sleep(0.05)
    finish_unless_aborted()


def main() -> None:
    if MODE == "never-ready":
        time.sleep(60)
        return
    if MODE == "bad-ready":
        print("loading…", flush=True)
        time.sleep(60)
        return
    emit({"type": "ready"})
    line = sys.stdin.readline()
    request = json.loads(line)
    if MODE == "good":
        play(request)
    elif MODE == "waits-for-eof":
        play(request)
        sys.stdin.read()  # as the protocol says: exit once the harness closes stdin
    elif MODE == "stderr-noise":
        sys.stderr.write("DeprecationWarning: something the library says\n")
        sys.stderr.flush()
        play(request)
    elif MODE == "bad-line":
        emit({"type": "start"})
        sys.stdout.write("debug: got the request\n")
        sys.stdout.flush()
        emit({"type": "text_start", "contentIndex": 0})
        emit({"type": "text_delta", "contentIndex": 0, "delta": "Hello"})
        emit({"type": "text_end", "contentIndex": 0, "content": "Hello"})
        emit({"type": "done", "reason": "stop", "message": message("Hello", "stop")})
    elif MODE == "unknown-event":
        emit({"type": "start"})
        emit({"type": "text_chunk", "text": "Hello"})
        emit({"type": "done", "reason": "stop", "message": message("", "stop")})
    elif MODE == "crash":
        emit({"type": "start"})
        emit({"type": "text_start", "contentIndex": 0})
        emit({"type": "text_delta", "contentIndex": 0, "delta": "Hel"})
        raise RuntimeError("the adapter crashed mid-stream")
    elif MODE == "exit-quietly":
        emit({"type": "start"})
        os._exit(0)
    elif MODE == "segfault":
        emit({"type": "start"})
        os.kill(os.getpid(), signal.SIGSEGV)
    elif MODE == "ignore-abort":
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        play(request, ignore_abort=True)
    elif MODE == "hang":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(120)
    elif MODE == "flood-line":
        sys.stdout.write("x" * (9 * 1024 * 1024))
        sys.stdout.flush()
        time.sleep(60)
    elif MODE == "after-terminal":
        play(request)
        emit({"type": "text_delta", "contentIndex": 0, "delta": "more"})
    elif MODE == "exit-status":
        play(request)
        sys.stdout.flush()
        os._exit(3)
    elif MODE == "linger":
        play(request)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(120)
    elif MODE == "linger-socket":
        url = urlsplit(str(request["model"]["baseUrl"]))
        host: str = url.hostname or "127.0.0.1"
        port: int = url.port or 80
        sock = socket.create_connection((host, port))
        sock.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
        play(request)
        time.sleep(120)
        sock.close()
    elif MODE == "daemon":
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                # The grandchild: out of the process group, re-parented when its parent exits.
                with open(os.environ["HOSTILE_PID_FILE"], "w") as handle:
                    handle.write(str(os.getpid()))
                os.execvp(sys.executable, [sys.executable, "-c", "import time; time.sleep(120)", TOKEN])
            os._exit(0)
        time.sleep(0.2)
        play(request)
    else:
        raise SystemExit(f"unknown mode {MODE}")


if __name__ == "__main__":
    main()
