"""Adapters on the kit's non-SSE framings, each with broken twins, for harness self-tests.

JSON lines: the NDJSON example adapter (``examples/ndjson_chat``, real Ollama recordings) is the good
one; its twins swap in a decoder with one defect. Two fakes on the AWS event stream replay real
Bedrock recordings (``tests/conformance/recordings``, attributed in NOTICE):

- ``converse``: the ConverseStream shape — typed event-stream messages, a ``metadata`` trailer (the
  usage) after the ``messageStop`` marker, errors typed in the ``x-amzn-ErrorType`` header and in
  exception messages — authenticated by a signing step (an HMAC of the final body bytes), no key header;
- ``claude_invoke``: Claude on Bedrock's InvokeModelWithResponseStream — each Anthropic event in base64
  inside a ``chunk`` message (an envelope), decoded by the real Anthropic decoder.

The twins each break one rule the harness must catch: ``done_at_marker`` ignores the trailer the api
promises after its marker; ``eof_is_success`` takes the end of the body for success; ``skips_bad_chunks``
drops a frame whose (inner) JSON does not parse instead of failing; ``misreads_vendor_errors`` does not
read the vendor's error frame as the vendor's error.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
from pathlib import Path
from typing import Any, Literal

from conformance import Capabilities, Target
from examples.ndjson_chat import ADAPTER as NDJSON_ADAPTER
from examples.ndjson_chat.adapter import WIRE as NDJSON_WIRE
from examples.ndjson_chat.adapter import ChatDecoder
from normalize import ErrorInfo, ErrorKind, MessageBuilder, Model, StopReason, StreamOptions
from normalize.wire import Base64Field
from streamfns.anthropic.decode import AnthropicDecoder
from streamfns.kit import (
    AWS_EVENTSTREAM,
    Decoder,
    Ending,
    ErrorSample,
    ErrorTable,
    EventStreamMessage,
    ServerSentEvent,
    Signature,
    SigningRequest,
    StreamFailure,
    VendorError,
    WireApi,
    WireRequest,
    encode_message,
    int_or_none,
    load_event,
    load_json,
    obj,
    text,
)

__all__ = [
    "CLAUDE_INVOKE",
    "CONVERSE",
    "RECORDINGS",
    "claude_invoke_target",
    "converse_target",
    "ndjson_target",
]

RECORDINGS = Path(__file__).with_name("recordings")
VENDOR = "Bedrock (test)"
_STOPS: dict[str, StopReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "toolUse",
    "max_tokens": "length",
}
_KINDS: dict[str, ErrorKind] = {
    "ValidationException": "invalid_request",
    "UnrecognizedClientException": "auth",
    "AccessDeniedException": "auth",
    "ResourceNotFoundException": "not_found",
    "ThrottlingException": "rate_limit",
    "throttlingException": "rate_limit",
    "ServiceUnavailableException": "overloaded",
    "serviceUnavailableException": "overloaded",
    "InternalServerException": "server",
    "internalServerException": "server",
    "modelStreamErrorException": "server",
}
_TYPES = {
    400: "ValidationException",
    401: "UnrecognizedClientException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    429: "ThrottlingException",
    503: "ServiceUnavailableException",
    529: "ServiceUnavailableException",
}


def _message_only(body: Any) -> VendorError | None:
    fields = obj(body)
    return VendorError(message=text(fields.get("message") or fields.get("Message"))) if fields else None


ERRORS = ErrorTable(vendor=VENDOR, kinds=_KINDS, extract=_message_only, type_headers=("x-amzn-errortype",))


def error_body(status: int, message: str) -> ErrorSample:
    """Bedrock's HTTP error: the message in the body, the type in a header."""
    kind = _TYPES.get(status, "InternalServerException")
    header = ("x-amzn-errortype", f"{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/")
    return ErrorSample(json.dumps({"message": message}).encode(), headers=(header,))


def stream_error(message: str) -> bytes:
    """An exception message, as Bedrock sends one mid-stream."""
    headers = {
        ":message-type": "exception",
        ":exception-type": "throttlingException",
        ":content-type": "application/json",
    }
    return encode_message(headers, json.dumps({"message": message}).encode())


def _raise_exception(message: EventStreamMessage, builder: MessageBuilder) -> None:
    fields = obj(load_json(message.payload, VENDOR)) if message.payload else {}
    said = text(fields.get("message")) or message.error_message or ""
    raise ERRORS.from_event(VendorError(type=message.name, message=said))


def build_request(model: Model, context: Any, options: StreamOptions) -> WireRequest:
    contents: list[dict[str, Any]] = []
    for message in context.messages:
        blocks = [message.content] if isinstance(message.content, str) else message.content
        for block in blocks:
            if isinstance(block, str) or getattr(block, "type", "") == "text":
                contents.append({"text": block if isinstance(block, str) else block.text})
            elif getattr(block, "type", "") == "image":
                contents.append({"image": {"format": "png", "source": {"bytes": block.data}}})
    return WireRequest(
        url=f"{model.base_url.rstrip('/')}/model/{model.id}/converse-stream",
        payload={"messages": [{"role": "user", "content": contents}]},
    )


async def sign(request: SigningRequest) -> Signature:
    """An HMAC of the exact body bytes with the caller's secret: what SigV4 needs of the kit."""
    secret = request.options.api_key
    if not secret:
        raise StreamFailure(ErrorInfo.of("auth"), "no test credentials: set StreamOptions.api_key")
    digest = hmac.new(secret.encode(), request.body, hashlib.sha256).hexdigest()
    return Signature({"authorization": f"TEST-HMAC Credential=test, Signature={digest}"}, (secret,))


Defect = Literal["done_at_marker", "eof_is_success", "skips_bad_chunks", "misreads_vendor_errors"]


class ConverseDecoder(Decoder[EventStreamMessage]):
    """ConverseStream messages → builder calls; the stream is done at the ``metadata`` after ``messageStop``."""

    defect: Defect | None = None

    def __init__(self, builder: MessageBuilder, model: Model) -> None:
        self.builder, self.stopped = builder, False

    def on_event(self, message: EventStreamMessage) -> None:
        builder = self.builder
        if message.message_type != "event":
            if self.defect == "misreads_vendor_errors":
                raise StreamFailure(ErrorInfo.of("protocol"), f"{VENDOR} sent a message of an unknown type")
            _raise_exception(message, builder)
        data = load_event(message.payload, VENDOR)
        kind, key = message.event_type, ("block", data.get("contentBlockIndex"))
        if kind == "contentBlockStart":
            use = obj(obj(data.get("start")).get("toolUse"))
            if use:
                builder.tool_call_start(key, text(use.get("toolUseId")), text(use.get("name")))
        elif kind == "contentBlockDelta":
            delta = obj(data.get("delta"))
            reasoning = obj(delta.get("reasoningContent"))
            if "text" in delta:
                builder.text_delta(key, text(delta["text"]))
            elif "toolUse" in delta:
                builder.tool_call_delta(key, text(obj(delta["toolUse"]).get("input")))
            elif reasoning:
                builder.thinking_delta(key, text(reasoning.get("text")))
                if signature := text(reasoning.get("signature")):
                    builder.block_signature(key, signature)
        elif kind == "contentBlockStop" and builder.is_open(key):
            builder.block_end(key)
        elif kind == "messageStop":
            reason = text(data.get("stopReason"))
            builder.stop(reason, _STOPS.get(reason, "error"))
            self.stopped = True
            if self.defect == "done_at_marker":
                builder.finish()
        elif kind == "metadata":
            usage = obj(data.get("usage"))
            builder.usage(input=int_or_none(usage.get("inputTokens")), output=int_or_none(usage.get("outputTokens")))
            if self.stopped:
                builder.finish()

    def on_eof(self) -> None:
        if self.defect == "eof_is_success" and self.builder.output_started:
            if self.builder.stop_reason is None:
                self.builder.stop("end_turn", "stop")
            self.builder.finish()


class ClaudeInvokeDecoder(Decoder[EventStreamMessage]):
    """Claude on Bedrock: each ``chunk`` message carries an Anthropic event in base64."""

    defect: Defect | None = None

    def __init__(self, builder: MessageBuilder, model: Model) -> None:
        self.builder, self.inner = builder, AnthropicDecoder(builder, model)

    def on_event(self, message: EventStreamMessage) -> None:
        if message.message_type != "event":
            _raise_exception(message, self.builder)
        inner = Base64Field().open(message.payload)
        if inner is None:
            raise StreamFailure(ErrorInfo.of("protocol"), f"{VENDOR} sent a chunk without its bytes")
        try:
            name = text(load_event(inner, VENDOR).get("type"))
        except StreamFailure:
            if self.defect == "skips_bad_chunks":
                return
            raise
        self.inner.on_event(ServerSentEvent(name, inner))

    def on_eof(self) -> None:
        self.inner.on_eof()


def _decoder(base: type[Any], defect: Defect | None) -> type[Any]:
    return type(f"{base.__name__}_{defect}", (base,), {"defect": defect}) if defect else base


def converse_wire(defect: Defect | None = None) -> WireApi[EventStreamMessage]:
    return WireApi(
        api="converse-test",
        vendor=VENDOR,
        key=None,
        signer=sign,
        build_request=build_request,
        framing=AWS_EVENTSTREAM,
        decoder=_decoder(ConverseDecoder, defect),
        errors=ERRORS,
        ending=Ending.frames("messageStop", after="trailer"),
        error_body=error_body,
        stream_error=stream_error,
        recordings={
            "text": "converse_text",
            "tool": "converse_tool",
            "parallel": "converse_parallel",
            "thinking": "converse_thinking",
        },
    )


def claude_invoke_wire(defect: Defect | None = None) -> WireApi[EventStreamMessage]:
    return WireApi(
        api="claude-invoke-test",
        vendor=VENDOR,
        key=None,
        signer=sign,
        build_request=build_request,
        framing=AWS_EVENTSTREAM,
        decoder=_decoder(ClaudeInvokeDecoder, defect),
        errors=ERRORS,
        ending=Ending.frames("message_stop"),
        envelope=Base64Field(),
        error_body=error_body,
        stream_error=stream_error,
        recordings={"text": "claude_invoke_text", "tool": "claude_invoke_tool"},
    )


CONVERSE = Capabilities(
    api="converse-test",
    tool_calls=True,
    parallel_tool_calls=True,
    thinking=True,
    usage_in_stream=True,
    images=True,
    retries=True,
)
CLAUDE_INVOKE = Capabilities(api="claude-invoke-test", tool_calls=True, images=True, retries=True)


def converse_target(defect: Defect | None = None) -> Target:
    wire = converse_wire(defect)
    files = [RECORDINGS / f"{name}.jsonl" for name in wire.recordings.values()]
    return Target(
        wire.stream_fn, CONVERSE, name=f"converse-test ({defect or 'good'})", cassettes=files, profile=wire.profile
    )


def claude_invoke_target(defect: Defect | None = None) -> Target:
    wire = claude_invoke_wire(defect)
    files = [RECORDINGS / f"{name}.jsonl" for name in wire.recordings.values()]
    name = f"claude-invoke-test ({defect or 'good'})"
    return Target(wire.stream_fn, CLAUDE_INVOKE, name=name, cassettes=files, profile=wire.profile)


class _NDJSONTwin(ChatDecoder):
    defect: Defect | None = None

    def on_event(self, line: bytes) -> None:
        if self.defect == "misreads_vendor_errors" and line.startswith(b'{"error"'):
            return  # a vendor error taken for noise: the stream then ends without its marker
        try:
            super().on_event(line)
        except StreamFailure as failure:
            if self.defect == "skips_bad_chunks" and failure.info.kind == "protocol":
                return
            raise

    def on_eof(self) -> None:
        if self.defect == "eof_is_success" and self.builder.output_started:
            self.builder.stop("stop", "stop")
            self.builder.finish()


def ndjson_target(defect: Defect | None = None) -> Target:
    """The NDJSON example as its declaration gives it to the harness, or its twin with ``defect``."""
    target = Target.from_adapter(NDJSON_ADAPTER)
    if defect is None:
        return target
    wire = dataclasses.replace(NDJSON_WIRE, decoder=_decoder(_NDJSONTwin, defect))
    return dataclasses.replace(target, stream_fn=wire.stream_fn, name=f"ndjson-chat ({defect})")


#: The declarations, as ``cassettes --adapter`` names them.
CONVERSE_WIRE = converse_wire()
CLAUDE_INVOKE_WIRE = claude_invoke_wire()
