"""A made-up vendor, "Echo", declared on the kit: the smallest wire api that exercises all of it.

Events are ``data:`` lines of JSON — ``{"type": "text", "text": …}``, ``{"type": "call", "id", "name",
"args"}``, ``{"type": "usage", "input", "output"}``, ``{"type": "stop", "reason": "end"|"max"}``,
``{"type": "error", "error": {"type", "message"}}`` — and the terminal marker is ``data: [END]``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from conformance.loopback import Scripted, ScriptedEnd
from normalize import (
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    MessageBuilder,
    Model,
    StopReason,
    StreamOptions,
    UserMessage,
)
from streamfns.kit import (
    ApiKey,
    Decoder,
    ErrorTable,
    ServerSentEvent,
    WireApi,
    WireRequest,
    int_or_none,
    load_event,
    obj,
    parse_compat,
    text,
)

CONTEXT = Context(messages=[UserMessage(content="Say hello.")])
KEY = "echo-test-key-0123456789"
_STOPS: dict[str, StopReason] = {"end": "stop", "max": "length"}


@dataclass(frozen=True, slots=True)
class EchoCompat:
    """Echo's one quirk flag."""

    shout: bool = False


def build_request(model: Model, context: Context, options: StreamOptions) -> WireRequest:
    compat = parse_compat(EchoCompat, model.compat)
    prompt = " ".join(m.content for m in context.messages if isinstance(m, UserMessage) and isinstance(m.content, str))
    if compat.shout:
        prompt = prompt.upper()
    return WireRequest(
        url=f"{model.base_url.rstrip('/')}/v1/echo",
        payload={"model": model.id, "prompt": prompt, "temperature": options.temperature},
        headers={"accept": "text/event-stream", "x-echo-features": "a"},
    )


ERRORS = ErrorTable(vendor="Echo", kinds={"overloaded": "overloaded", "bad_key": "auth"}, overflow=("too long",))


class EchoDecoder(Decoder[ServerSentEvent]):
    def __init__(self, builder: MessageBuilder, model: Model) -> None:
        self.builder = builder

    def on_event(self, event: ServerSentEvent) -> None:
        if event.data == b"[END]":
            self.builder.finish()
            return
        data = load_event(event.data, "Echo")
        kind = data.get("type")
        builder = self.builder
        if kind == "text":
            builder.text_delta("text", text(data.get("text")))
        elif kind == "call":
            key = ("call", data.get("id"))
            if not builder.is_open(key):
                builder.tool_call_start(key, text(data.get("id")), text(data.get("name")))
            builder.tool_call_delta(key, text(data.get("args")))
        elif kind == "usage":
            builder.usage(input=int_or_none(data.get("input")), output=int_or_none(data.get("output")))
        elif kind == "stop":
            reason = text(data.get("reason"))
            builder.stop(reason, _STOPS.get(reason, "error"))
        elif kind == "error":
            raise ERRORS.from_event(data)
        elif kind == "boom":
            raise ZeroDivisionError(obj(data).get("why"))

    def on_eof(self) -> None:
        return


WIRE = WireApi(
    api="echo",
    vendor="Echo",
    key=ApiKey(env=("ECHO_API_KEY",), header="x-echo-key", scheme=None),
    build_request=build_request,
    decoder=EchoDecoder,
    errors=ERRORS,
    ending="[END]",
    joined_headers=frozenset({"x-echo-features"}),
)


def model(base_url: str = "http://127.0.0.1:9", **overrides: Any) -> Model:
    return Model(id="echo-1", api="echo", provider="echo", base_url=base_url, **overrides)


def options(**kwargs: Any) -> StreamOptions:
    return StreamOptions(api_key=KEY, **kwargs)


def sse(*events: dict[str, Any] | str) -> bytes:
    """``data:`` events: dicts as JSON, strings verbatim."""
    return b"".join(f"data: {item if isinstance(item, str) else json.dumps(item)}\n\n".encode() for item in events)


HELLO = [
    sse({"type": "text", "text": "Hel"}),
    sse({"type": "text", "text": "lo"}),
    sse({"type": "usage", "input": 5, "output": 2}, {"type": "stop", "reason": "end"}),
    sse("[END]"),
]


def reply(
    *chunks: bytes, end: ScriptedEnd = "eof", delay_s: float = 0.0, headers: list[tuple[str, str]] | None = None
) -> Scripted:
    return Scripted(
        headers=headers if headers is not None else [("content-type", "text/event-stream")],
        chunks=[(delay_s, chunk) for chunk in chunks],
        end=end,
    )


def error_reply(status: int, error_type: str, message: str, headers: list[tuple[str, str]] | None = None) -> Scripted:
    body = json.dumps({"error": {"type": error_type, "message": message}}).encode()
    return Scripted(
        status=status, headers=[("content-type", "application/json"), *(headers or [])], chunks=[(0.0, body)]
    )


async def run(
    base_url: str, opts: StreamOptions | None = None, *, context: Context = CONTEXT, **model_overrides: Any
) -> tuple[list[AssistantMessageEvent], AssistantMessage]:
    stream = WIRE.stream_fn(model(base_url, **model_overrides), context, opts if opts is not None else options())
    events = [event async for event in stream]
    return events, await stream.result()


def types(events: Sequence[AssistantMessageEvent]) -> list[str]:
    return [event.type for event in events]
