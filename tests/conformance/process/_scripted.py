"""What the scripted adapter processes of these tests share (standard library only: they are run by
path, and this module is found beside them): writing events, the messages they carry, and a short
text stream that honours an abort line."""

from __future__ import annotations

import json
import select
import sys
from typing import Any


def emit(event: dict[str, Any]) -> None:
    """One event, one line, flushed."""
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def message(text: str, stop: str, error: str | None = None, kind: str | None = None) -> dict[str, Any]:
    """A final message in pi's JSON form (an error one when ``error`` is given)."""
    msg: dict[str, Any] = {
        "role": "assistant",
        "content": [{"type": "text", "text": text}] if text else [],
        "api": "conformance",
        "provider": "conformance",
        "model": "scripted",
        "usage": {
            "input": 3,
            "output": 2,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 5,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
        },
        "stopReason": stop,
        "timestamp": 0,
    }
    if error is not None:
        msg["errorMessage"] = error
        msg["errorInfo"] = {"kind": kind, "retryable": False, "outputStarted": bool(text)}
    return msg


def stdin_line(timeout: float) -> dict[str, Any] | None:
    """The next stdin line within ``timeout`` seconds (None: none came, or stdin closed)."""
    ready, _, _ = select.select([sys.stdin], [], [], timeout)
    if not ready:
        return None
    line = sys.stdin.readline()
    return json.loads(line) if line.strip() else None


def finish_unless_aborted(wait_s: float = 0.3) -> None:
    """After a first delta "Hel": end aborted if an abort line comes within ``wait_s``, else finish
    "Hello" and end done."""
    said = stdin_line(wait_s)
    if said is not None and said.get("type") == "abort":
        emit(
            {
                "type": "error",
                "reason": "aborted",
                "error": message("Hel", "aborted", "aborted by the caller", "aborted"),
            }
        )
        return
    emit({"type": "text_delta", "contentIndex": 0, "delta": "lo"})
    emit({"type": "text_end", "contentIndex": 0, "content": "Hello"})
    emit({"type": "done", "reason": "stop", "message": message("Hello", "stop")})
