"""An adapter for OpenAI-compatible chat servers, written only against the public kit: it says what
the server expects and sends; the kit does HTTP, retries, timeouts, abort, error bodies and closing."""

from __future__ import annotations

import json
from typing import Any

import normalize as nz
from streamfns import kit

STOPS = kit.StopTable(vendor="Chat server", stops={"stop": "stop", "length": "length", "tool_calls": "toolUse"})


def _part(block: nz.TextContent | nz.ImageContent) -> dict[str, Any]:
    if isinstance(block, nz.TextContent):
        return {"type": "text", "text": block.text}
    return {"type": "image_url", "image_url": {"url": f"data:{block.mime_type};base64,{block.data}"}}


def _text(blocks: list[Any]) -> str:
    return "".join(block.text for block in blocks if isinstance(block, nz.TextContent))


def _message(message: nz.Message) -> dict[str, Any]:
    if isinstance(message, nz.SystemMessage):  # a mid-conversation update, as a system turn
        return {"role": "system", "content": nz.system_update_text(message)}
    if isinstance(message, nz.UserMessage):
        content = message.content
        return {"role": "user", "content": content if isinstance(content, str) else [*map(_part, content)]}
    if isinstance(message, nz.ToolResultMessage):
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": _text(message.content)}
    calls = [
        {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": json.dumps(call.arguments)}}
        for call in message.content
        if isinstance(call, nz.ToolCall)
    ]
    return {"role": "assistant", "content": _text(message.content) or None, **({"tool_calls": calls} if calls else {})}


def build_request(model: nz.Model, context: nz.Context, options: nz.StreamOptions) -> kit.WireRequest:
    transcript = nz.transcript_for(model, context)  # safe to replay to this model, split into prompt/tools/turns
    messages = [*map(_message, transcript.turns)]
    payload: dict[str, Any] = {
        "model": model.id,
        "messages": [{"role": "system", "content": transcript.prompt}, *messages] if transcript.prompt else messages,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if transcript.tools:
        payload["tools"] = [
            {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
            for t in transcript.tools
        ]
    if options.max_tokens:
        payload["max_tokens"] = options.max_tokens
    return kit.WireRequest(url=f"{model.base_url.rstrip('/')}/chat/completions", payload=payload)


ERRORS = kit.ErrorTable(vendor="Chat server", kinds={"invalid_api_key": "auth"})


class ChatDecoder(kit.Decoder[kit.ServerSentEvent]):
    def __init__(self, builder: nz.MessageBuilder, model: nz.Model) -> None:
        self.builder, self.finish_reason = builder, ""

    def on_event(self, event: kit.ServerSentEvent) -> None:
        if event.data == b"[DONE]":
            return self.on_eof()
        chunk, builder = kit.load_event(event.data, "Chat server"), self.builder
        if "error" in chunk:
            raise ERRORS.from_event(chunk)
        if builder.response_id is None:  # the first chunk's id names the response
            builder.response(id=kit.text(chunk.get("id")))
        if usage := kit.obj(chunk.get("usage")):
            cached = kit.int_or_none(kit.obj(usage.get("prompt_tokens_details")).get("cached_tokens")) or 0
            prompt = kit.int_or_none(usage.get("prompt_tokens")) or 0
            builder.usage(
                input=prompt - cached, output=kit.int_or_none(usage.get("completion_tokens")), cache_read=cached
            )
        for choice in map(kit.obj, kit.array(chunk.get("choices"))[:1]):
            delta = kit.obj(choice.get("delta"))
            builder.thinking_delta("thinking", kit.text(delta.get("reasoning_content")))
            builder.text_delta("text", kit.text(delta.get("content")))
            for call in map(kit.obj, kit.array(delta.get("tool_calls"))):
                key, function = ("call", call.get("index")), kit.obj(call.get("function"))
                if not builder.is_open(key):
                    builder.tool_call_start(key, kit.text(call.get("id")), kit.text(function.get("name")))
                builder.tool_call_delta(key, kit.text(function.get("arguments")))
            self.finish_reason = kit.text(choice.get("finish_reason")) or self.finish_reason
        return None

    def on_eof(self) -> None:
        if self.finish_reason:  # without one the kit ends the stream as truncated
            STOPS.stop(self.builder, self.finish_reason)
            self.builder.finish()


WIRE = kit.WireApi(
    api="compatible-chat",
    vendor="Chat server",
    key=kit.ApiKey(env=("CHAT_API_KEY",)),
    build_request=build_request,
    decoder=ChatDecoder,
    errors=ERRORS,
    ending="a finish_reason",
)
stream_compatible_chat = WIRE.stream_fn
