"""The wire of the adapter process protocol (``streamfns-process/1``, docs/process-protocol.md): the
request line the harness writes, the abort line, and reading one line the process wrote.

Only data crosses here: the request is built from the call's model, context and options (live
objects — the abort signal, an HTTP client, hooks — stay behind), and a line from the process
becomes a harness-built event or a ``ValueError`` saying why it is not one.
"""

from __future__ import annotations

import json
from typing import Any, Final

from conformance.reading import event_from_data
from normalize import AssistantMessage, Context, Model, StreamOptions

__all__ = [
    "ABORT_LINE",
    "LINE_LIMIT",
    "PROTOCOL_VERSION",
    "READY",
    "event_from_line",
    "options_json",
    "request_line",
]

PROTOCOL_VERSION: Final = 1
#: The line a process writes once it can take its request.
READY: Final = {"type": "ready"}
#: The line the harness writes to abort the call.
ABORT_LINE: Final = b'{"type": "abort"}\n'
#: The longest line the harness reads from a process (bytes): a longer one is a protocol failure,
#: so that a process writing without newlines cannot fill the harness's memory.
LINE_LIMIT: Final = 8 * 1024 * 1024


def _ms(seconds: float | None) -> int | None:
    return None if seconds is None else round(seconds * 1000)


def options_json(options: StreamOptions | None) -> dict[str, Any] | None:
    """The call's options as the request carries them: pi's names where pi has the option, the bounds
    only streamfns has under names of the same style; unset fields left out; None for no options."""
    if options is None:
        return None
    fields: dict[str, Any] = {
        "apiKey": options.api_key,
        "maxTokens": options.max_tokens,
        "temperature": options.temperature,
        "reasoning": options.reasoning,
        "thinkingBudgets": options.thinking_budgets,
        "sessionId": options.session_id,
        "cacheRetention": options.cache_retention,
        "headers": options.headers,
        "timeoutMs": _ms(options.timeout),
        "connectTimeoutMs": _ms(options.connect_timeout),
        "progressTimeoutMs": _ms(options.progress_timeout),
        "totalTimeoutMs": _ms(options.total_timeout),
        "maxRetries": options.max_retries,
        "maxRetryDelayMs": _ms(options.max_retry_delay_s),
    }
    return {key: value for key, value in fields.items() if value is not None}


def request_line(model: Model, context: Context, options: StreamOptions | None, *, aborted: bool) -> bytes:
    """The request line (UTF-8, newline-terminated; non-ASCII escaped, so no byte in it is a newline)."""
    request = {
        "type": "request",
        "protocol": PROTOCOL_VERSION,
        "model": model.to_json(),
        "context": context.to_json(),
        "options": options_json(options),
        "aborted": aborted,
    }
    return json.dumps(request, separators=(",", ":")).encode("ascii") + b"\n"


def event_from_line(line: bytes, partial: AssistantMessage) -> Any:
    """The event one stdout line holds (without its newline), built by the harness; ``ValueError``
    saying why when the line is not one event (not UTF-8, not JSON, not an event)."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"it is not UTF-8 ({exc.reason} at byte {exc.start})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"it is not JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise ValueError("it is not JSON this harness reads (nested too deep)") from None
    return event_from_data(data, partial)
