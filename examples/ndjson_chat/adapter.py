"""An adapter for an NDJSON chat server (the shape of Ollama's ``/api/chat``: one JSON object per line),
written only against the public kit: the kit does HTTP, framing, retries, timeouts, abort and closing."""

from __future__ import annotations

import json
from typing import Any

import normalize as nz
from streamfns import kit

STOPS = kit.StopTable(vendor="Ollama", stops={"stop": "stop", "length": "length"})


def _message(message: nz.Message) -> dict[str, Any]:
    if isinstance(message, nz.SystemMessage):  # a mid-conversation update: this server takes system turns
        return {"role": "system", "content": nz.system_update_text(message)}
    if isinstance(message, nz.ToolResultMessage):
        text = "".join(b.text for b in message.content if isinstance(b, nz.TextContent))
        return {"role": "tool", "tool_name": message.tool_name, "content": text}
    blocks = [message.content] if isinstance(message.content, str) else message.content
    text = "".join(b if isinstance(b, str) else b.text for b in blocks if isinstance(b, str | nz.TextContent))
    out: dict[str, Any] = {"role": message.role, "content": text}
    if images := [b.data for b in blocks if isinstance(b, nz.ImageContent)]:
        out["images"] = images
    if calls := [b for b in blocks if isinstance(b, nz.ToolCall)]:
        out["tool_calls"] = [{"function": {"name": c.name, "arguments": c.arguments}} for c in calls]
    return out


def build_request(model: nz.Model, context: nz.Context, options: nz.StreamOptions) -> kit.WireRequest:
    transcript = nz.transcript_for(model, context)
    system = [{"role": "system", "content": transcript.prompt}] if transcript.prompt else []
    payload: dict[str, Any] = {
        "model": model.id,
        "messages": [*system, *map(_message, transcript.turns)],
        "stream": True,
        "think": bool(options.reasoning and options.reasoning != "off"),
        "options": {"num_predict": options.max_tokens} if options.max_tokens else {},
    }
    if transcript.tools:
        tools = [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in transcript.tools]
        payload["tools"] = [{"type": "function", "function": tool} for tool in tools]
    return kit.WireRequest(url=f"{model.base_url.rstrip('/')}/api/chat", payload=payload)


ERRORS = kit.ErrorTable(vendor="NDJSON chat", kinds={})  # {"error": "..."}: the kind comes from the status


class ChatDecoder(kit.Decoder[bytes]):
    def __init__(self, builder: nz.MessageBuilder, model: nz.Model) -> None:
        self.builder, self.calls = builder, 0

    def on_event(self, line: bytes) -> None:  # one JSON line
        chunk, builder = kit.load_event(line, "NDJSON chat"), self.builder
        if "error" in chunk:
            raise ERRORS.from_event(chunk)
        message = kit.obj(chunk.get("message"))
        builder.thinking_delta("thinking", kit.text(message.get("thinking")))
        builder.text_delta("text", kit.text(message.get("content")))
        for call in map(kit.obj, kit.array(message.get("tool_calls"))):
            function, key = kit.obj(call.get("function")), ("call", self.calls)
            call_id = kit.text(call.get("id")) or f"call_{self.calls}"
            builder.tool_call_start(key, call_id, kit.text(function.get("name")))
            builder.tool_call_delta(key, json.dumps(function.get("arguments", {})))
            builder.block_end(key)
            self.calls += 1
        if chunk.get("done") is True:
            counts = (kit.int_or_none(chunk.get(name)) for name in ("prompt_eval_count", "eval_count"))
            builder.usage(input=next(counts), output=next(counts))
            reason = kit.text(chunk.get("done_reason")) or "stop"
            STOPS.stop(builder, reason)  # the builder makes "stop" "toolUse" when a complete call exists
            builder.finish()


def strip_done(frame: kit.FrameView) -> kit.Drop | bytes | None:
    """The final line with ``done`` false: a body that never says it is done."""
    line = frame.fields()
    return kit.FrameView.encode({**line, "done": False}) if line.get("done") is True else None


WIRE = kit.WireApi(
    api="ndjson-chat",
    vendor="NDJSON chat",
    key=kit.ApiKey(env=("NDJSON_CHAT_API_KEY",), required=False),
    build_request=build_request,
    framing=kit.NDJSON,
    decoder=ChatDecoder,
    errors=ERRORS,
    ending=kit.Ending('"done": true', strip_done),
    error_body=lambda status, message: kit.ErrorSample(json.dumps({"error": message}).encode()),
    stream_error=lambda message: json.dumps({"error": message}).encode() + b"\n",
    recordings={"text": "text", "tool": "tool", "parallel": "parallel", "thinking": "thinking"},
)
stream_ndjson_chat = WIRE.stream_fn
