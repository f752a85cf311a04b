"""Anthropic Messages SSE events → builder calls. Pure: no I/O, no clock.

How vendor blocks appear in the normalized message:

- ``text``, ``thinking``, ``redacted_thinking`` and ``tool_use`` become text, thinking (redacted:
  the opaque ``data`` in ``thinking_signature``, a placeholder as text) and tool-call blocks; initial
  payloads in ``content_block_start`` are kept (a ``tool_use`` whose whole ``input`` comes in the
  start event keeps it);
- server-side tool blocks (``server_tool_use``, ``web_search_tool_result``, code execution, web fetch,
  MCP, tool search, advisor, ``fallback`` …) are executed by Anthropic, not by the caller: they are
  left out of the normalized message and take no content index, so the text blocks around them keep
  their order and a transcript replays as plain text. Citations (``citations_delta``) do not change
  the text and are not kept.

Stop reasons: ``end_turn``, ``stop_sequence`` and ``pause_turn`` → ``stop``; ``max_tokens`` and
``model_context_window_exceeded`` → ``length``; ``tool_use`` → ``toolUse``; ``refusal`` → error kind
``refusal``; ``sensitive`` → error kind ``content_filter``; anything else → error kind ``protocol``.
An ``event: error`` mid-stream raises :class:`StreamFailure` with the kind of the vendor's error type.
"""

from __future__ import annotations

from typing import Any, cast

import jiter

from normalize import ErrorInfo, ErrorKind, MessageBuilder, StopReason, repair_json
from streamfns._http import StreamFailure
from streamfns._sse import ServerSentEvent

__all__ = ["REDACTED_PLACEHOLDER", "AnthropicDecoder", "error_kind_for_type", "map_stop_reason"]

REDACTED_PLACEHOLDER = "[Reasoning redacted]"

_TEXT, _THINKING, _TOOL, _SKIP = 1, 2, 3, 0

_STOPS: dict[str, StopReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "toolUse",
}

_ERROR_KINDS: dict[str, ErrorKind] = {
    "invalid_request_error": "invalid_request",
    "authentication_error": "auth",
    "permission_error": "auth",
    "billing_error": "auth",
    "not_found_error": "not_found",
    "request_too_large": "context_overflow",
    "rate_limit_error": "rate_limit",
    "api_error": "server",
    "overloaded_error": "overloaded",
    "timeout_error": "timeout",
}


def error_kind_for_type(error_type: str | None, message: str = "") -> ErrorKind | None:
    """The error kind for an Anthropic error ``type`` (None when the type is unknown)."""
    if error_type == "invalid_request_error" and "prompt is too long" in message.lower():
        return "context_overflow"
    return _ERROR_KINDS.get(error_type or "")


def map_stop_reason(raw: str | None, details: dict[str, Any] | None) -> tuple[StopReason, ErrorInfo | None, str | None]:
    """Map a vendor stop reason to ``(stop_reason, error_info, error_message)``."""
    mapped = _STOPS.get(raw or "")
    if mapped is not None:
        return mapped, None, None
    if raw == "refusal":
        explanation = (details or {}).get("explanation")
        return "error", ErrorInfo.of("refusal"), explanation or "The model refused to complete the request"
    if raw == "sensitive":
        return "error", ErrorInfo.of("content_filter"), "Anthropic stopped the response: sensitive content"
    return "error", ErrorInfo.of("protocol"), f"Anthropic sent an unknown stop reason: {raw!r}"


def _load(data: bytes) -> dict[str, Any]:
    try:
        value = jiter.from_json(data)
    except ValueError:
        # Some Anthropic-compatible servers put raw control characters in event JSON; repairing
        # them is deterministic. Anything else is malformed.
        try:
            value = jiter.from_json(repair_json(data.decode("utf-8", "replace")).encode())
        except ValueError as exc:
            raise StreamFailure(
                ErrorInfo.of("protocol"), f"Anthropic sent malformed JSON in an event: {exc}: {data[:200]!r}"
            ) from None
    if not isinstance(value, dict):
        raise StreamFailure(ErrorInfo.of("protocol"), f"Anthropic sent a non-object event: {data[:200]!r}")
    return cast("dict[str, Any]", value)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class AnthropicDecoder:
    """Feeds one response's events to a :class:`MessageBuilder` (see the module docstring)."""

    __slots__ = ("_builder", "_kinds", "_message_started")

    def __init__(self, builder: MessageBuilder) -> None:
        self._builder = builder
        self._kinds: dict[int, int] = {}
        self._message_started = False

    def handle(self, sse: ServerSentEvent) -> None:
        """Apply one server-sent event; raises :class:`StreamFailure` for vendor errors."""
        if sse.event == "ping":
            return
        data = _load(sse.data)
        kind = data.get("type", sse.event)
        builder = self._builder
        if kind == "content_block_delta":
            delta = data.get("delta")
            if not isinstance(delta, dict):
                return
            delta = cast("dict[str, Any]", delta)
            index = data.get("index")
            block_kind = self._kinds.get(index) if isinstance(index, int) else None
            delta_type = delta.get("type")
            if delta_type == "text_delta":
                if block_kind == _TEXT:
                    builder.text(index, str(delta.get("text", "")))
            elif delta_type == "input_json_delta":
                if block_kind == _TOOL:
                    builder.tool_args(index, str(delta.get("partial_json", "")))
            elif delta_type == "thinking_delta":
                if block_kind == _THINKING:
                    builder.thinking(index, str(delta.get("thinking", "")))
            elif delta_type == "signature_delta" and block_kind == _THINKING:
                builder.signature(index, str(delta.get("signature", "")))
            return
        if kind == "content_block_start":
            self._block_start(data)
        elif kind == "content_block_stop":
            index = data.get("index")
            if isinstance(index, int) and self._kinds.get(index, _SKIP) != _SKIP:
                builder.end_block(index)
        elif kind == "message_start":
            self._message_start(data)
        elif kind == "message_delta":
            self._message_delta(data)
        elif kind == "message_stop":
            builder.finish()
        elif kind == "error":
            self._error(data)

    def _block_start(self, data: dict[str, Any]) -> None:
        index = data.get("index")
        block = data.get("content_block")
        if not isinstance(index, int) or not isinstance(block, dict):
            return
        block = cast("dict[str, Any]", block)
        builder = self._builder
        block_type = block.get("type")
        if block_type == "text":
            self._kinds[index] = _TEXT
            builder.start_text(index, str(block.get("text") or ""))
        elif block_type == "thinking":
            self._kinds[index] = _THINKING
            builder.start_thinking(
                index, str(block.get("thinking") or ""), signature=str(block.get("signature") or "") or None
            )
        elif block_type == "redacted_thinking":
            self._kinds[index] = _THINKING
            builder.start_thinking(index, REDACTED_PLACEHOLDER, signature=str(block.get("data") or ""), redacted=True)
        elif block_type == "tool_use":
            self._kinds[index] = _TOOL
            initial = block.get("input")
            builder.tool_call_start(
                index,
                str(block.get("id") or ""),
                str(block.get("name") or ""),
                arguments=cast("dict[str, Any]", initial) if isinstance(initial, dict) else None,
            )
        else:
            self._kinds[index] = _SKIP

    def _message_start(self, data: dict[str, Any]) -> None:
        builder = self._builder
        message = data.get("message")
        message = cast("dict[str, Any]", message) if isinstance(message, dict) else {}
        if self._message_started:
            if builder.output_started:
                raise StreamFailure(
                    ErrorInfo.of("protocol", output_started=True),
                    "Anthropic sent a second message_start after content had started (a spliced stream)",
                )
            builder.reset_for_retry()
        self._message_started = True
        message_id = message.get("id")
        if isinstance(message_id, str):
            builder.message.response_id = message_id
        usage = message.get("usage")
        if isinstance(usage, dict):
            self._usage(cast("dict[str, Any]", usage))

    def _usage(self, usage: dict[str, Any]) -> None:
        # Only fields that are present and numeric overwrite: proxies omit some (pi #6611).
        cache_creation = usage.get("cache_creation")
        one_hour = (
            _int(cast("dict[str, Any]", cache_creation).get("ephemeral_1h_input_tokens"))
            if isinstance(cache_creation, dict)
            else None
        )
        details = usage.get("output_tokens_details")
        reasoning = _int(cast("dict[str, Any]", details).get("thinking_tokens")) if isinstance(details, dict) else None
        self._builder.usage(
            input=_int(usage.get("input_tokens")),
            output=_int(usage.get("output_tokens")),
            cache_read=_int(usage.get("cache_read_input_tokens")),
            cache_write=_int(usage.get("cache_creation_input_tokens")),
            cache_write_1h=one_hour,
            reasoning=reasoning,
        )

    def _message_delta(self, data: dict[str, Any]) -> None:
        usage = data.get("usage")
        if isinstance(usage, dict):
            self._usage(cast("dict[str, Any]", usage))
        delta = data.get("delta")
        if not isinstance(delta, dict):
            return
        delta = cast("dict[str, Any]", delta)
        raw = delta.get("stop_reason")
        if raw is None:
            return
        details = delta.get("stop_details")
        mapped, info, message = map_stop_reason(
            str(raw), cast("dict[str, Any]", details) if isinstance(details, dict) else None
        )
        self._builder.stop(str(raw), mapped, error=info, error_message=message)

    def _error(self, data: dict[str, Any]) -> None:
        error = data.get("error")
        error = cast("dict[str, Any]", error) if isinstance(error, dict) else {}
        error_type = str(error.get("type") or "")
        text = str(error.get("message") or "").strip() or "no message"
        kind = error_kind_for_type(error_type, text) or "server"
        raise StreamFailure(
            ErrorInfo.of(kind, code=error_type or None, output_started=self._builder.output_started),
            f"Anthropic stream error ({error_type or 'unknown'}): {text}",
        )
