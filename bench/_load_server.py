"""The load suite's server: paced token streams in every built-in api's format, in its own process.

Each request names its stream's shape in headers — ``x-load-events`` text deltas at ``x-load-rate``
per second — and the api is told by the path (:data:`FRAMERS`: ``/v1/messages`` is Anthropic,
``:streamRawPredict`` Claude on Vertex, ``/invoke-with-response-stream`` Claude on Bedrock,
``/converse-stream`` Bedrock ConverseStream, ``/chat/completions`` OpenAI chat, ``/responses``
OpenAI Responses, ``:streamGenerateContent`` Gemini, ``/api/chat`` Ollama, ``/v2/chat`` Cohere). Every delta's text is
the server's ``CLOCK_MONOTONIC`` nanoseconds at the moment it writes the delta (then a space), so
the client, on the same machine, measures the latency it adds from the server writing a byte to the
consumer receiving the event. Deltas follow an absolute schedule (the k-th at start + k / rate), so
a slow client is not hidden by a server that slows down with it.

Responses are chunked HTTP/1.1 on kept-alive connections. ``GET /stats`` answers the connections
open right now (itself included), the streams served and finished, so the client can check that it
closed every response and connection, and the server's CPU seconds so far (``cpu_s``), so a report
can show when the server, not the client, was the limit. The server runs on uvloop when it can be
imported (a server that falls behind would hide the client's own lateness behind its own).
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from typing import Any, Protocol

__all__ = ["FRAMERS", "framer_for", "serve"]

_MAX_HEAD = 64 * 1024


def stamp_ns() -> int:
    """Monotonic nanoseconds, comparable across processes of this machine."""
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class Framer(Protocol):
    """One api's body: its head, one delta, and its tail (which may repeat the text sent)."""

    media_type: str

    def head(self) -> bytes: ...
    def delta(self, text: str) -> bytes: ...
    def tail(self, text: str, deltas: int) -> bytes: ...


def _sse(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {_compact(data)}\n\n".encode()


def _halves(framed: bytes) -> tuple[bytes, bytes]:
    """A framed delta whose text was ``"\0"`` (JSON-escaped as ``\u0000``), cut where that text goes."""
    before, _, after = framed.partition(b"\\u0000")
    return before, after


class _Anthropic:
    media_type = "text/event-stream"
    _event = staticmethod(_sse)
    #: A delta's bytes before and after its text, as :meth:`_event` writes them: a stamp needs no
    #: escaping, so no JSON encoding per delta (the server shares the machine with the client it measures).
    _DELTA = _halves(
        _sse(
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "\0"}},
        )
    )

    def head(self) -> bytes:
        message: dict[str, Any] = {
            "id": "msg_load",
            "type": "message",
            "role": "assistant",
            "model": "claude-load",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 25, "output_tokens": 1},
        }
        start = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
        return self._event("message_start", {"type": "message_start", "message": message}) + self._event(
            "content_block_start", start
        )

    def delta(self, text: str) -> bytes:
        if text.replace(" ", "").isdigit():
            before, after = self._DELTA
            return before + text.encode() + after
        data = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}
        return self._event("content_block_delta", data)

    def tail(self, text: str, deltas: int) -> bytes:
        stop = {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None}}
        return (
            self._event("content_block_stop", {"type": "content_block_stop", "index": 0})
            + self._event("message_delta", {**stop, "usage": {"output_tokens": deltas}})
            + self._event("message_stop", {"type": "message_stop"})
        )


def _aws_event(event: str, payload: dict[str, Any]) -> bytes:
    from normalize.wire import encode_message  # the server process imports it only for AWS framing

    headers = {":event-type": event, ":content-type": "application/json", ":message-type": "event"}
    return encode_message(headers, _compact(payload).encode())


class _AnthropicBedrock:
    """Claude on Bedrock: each Anthropic event base64-wrapped in an AWS event-stream ``chunk``."""

    media_type = "application/vnd.amazon.eventstream"

    def __init__(self) -> None:
        self._sse = _Anthropic()

    @staticmethod
    def _wrap(sse: bytes) -> bytes:
        out = b""
        for frame in sse.split(b"\n\n"):
            for line in frame.split(b"\n"):
                if line.startswith(b"data: "):
                    out += _aws_event("chunk", {"bytes": base64.b64encode(line[6:]).decode()})
        return out

    def head(self) -> bytes:
        return self._wrap(self._sse.head())

    def delta(self, text: str) -> bytes:
        return self._wrap(self._sse.delta(text))

    def tail(self, text: str, deltas: int) -> bytes:
        return self._wrap(self._sse.tail(text, deltas))


class _Converse:
    """Bedrock ConverseStream: AWS event-stream messages."""

    media_type = "application/vnd.amazon.eventstream"

    def head(self) -> bytes:
        return _aws_event("messageStart", {"role": "assistant"})

    def delta(self, text: str) -> bytes:
        return _aws_event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": text}})

    def tail(self, text: str, deltas: int) -> bytes:
        usage = {"inputTokens": 25, "outputTokens": deltas, "totalTokens": 25 + deltas}
        return (
            _aws_event("contentBlockStop", {"contentBlockIndex": 0})
            + _aws_event("messageStop", {"stopReason": "end_turn"})
            + _aws_event("metadata", {"usage": usage, "metrics": {"latencyMs": 1}})
        )


class _Completions:
    media_type = "text/event-stream"

    @staticmethod
    def _chunk(delta: dict[str, Any], finish: str | None = None, usage: dict[str, int] | None = None) -> bytes:
        value = {
            "id": "chatcmpl-load",
            "object": "chat.completion.chunk",
            "created": 1782955817,
            "model": "gpt-load",
            "choices": [] if usage else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
            "usage": usage,
        }
        return f"data: {_compact(value)}\n\n".encode()

    def head(self) -> bytes:
        return self._chunk({"role": "assistant", "content": ""})

    def delta(self, text: str) -> bytes:
        return self._chunk({"content": text})

    def tail(self, text: str, deltas: int) -> bytes:
        usage = {"prompt_tokens": 25, "completion_tokens": deltas, "total_tokens": 25 + deltas}
        return self._chunk({}, "stop") + self._chunk({}, usage=usage) + b"data: [DONE]\n\n"


class _Responses:
    media_type = "text/event-stream"
    _ITEM = "msg_0load"

    def __init__(self) -> None:
        self._sequence = 0

    def _event(self, kind: str, **fields: Any) -> bytes:
        value = {"type": kind, "sequence_number": self._sequence, **fields}
        self._sequence += 1
        return f"event: {kind}\ndata: {_compact(value)}\n\n".encode()

    def _response(self, kind: str, status: str, output: list[dict[str, Any]], deltas: int = 0) -> bytes:
        usage = None
        if status == "completed":
            usage = {"input_tokens": 25, "output_tokens": deltas, "total_tokens": 25 + deltas}
        response = {
            "id": "resp_0load",
            "object": "response",
            "created_at": 1760000000,
            "status": status,
            "model": "gpt-load",
            "output": output,
            "usage": usage,
        }
        return self._event(kind, response=response)

    def _where(self) -> dict[str, Any]:
        return {"item_id": self._ITEM, "output_index": 0, "content_index": 0}

    def head(self) -> bytes:
        item: dict[str, Any] = {
            "id": self._ITEM,
            "type": "message",
            "status": "in_progress",
            "content": [],
            "role": "assistant",
        }
        part: dict[str, Any] = {"type": "output_text", "annotations": [], "text": ""}
        return (
            self._response("response.created", "in_progress", [])
            + self._event("response.output_item.added", output_index=0, item=item)
            + self._event("response.content_part.added", **self._where(), part=part)
        )

    def delta(self, text: str) -> bytes:
        return self._event("response.output_text.delta", **self._where(), delta=text, logprobs=[])

    def tail(self, text: str, deltas: int) -> bytes:
        part: dict[str, Any] = {"type": "output_text", "annotations": [], "text": text}
        item: dict[str, Any] = {
            "id": self._ITEM,
            "type": "message",
            "status": "completed",
            "content": [part],
            "role": "assistant",
        }
        return (
            self._event("response.output_text.done", **self._where(), text=text, logprobs=[])
            + self._event("response.content_part.done", **self._where(), part=part)
            + self._event("response.output_item.done", output_index=0, item=item)
            + self._response("response.completed", "completed", [item], deltas)
        )


class _Gemini:
    media_type = "text/event-stream"

    def __init__(self) -> None:
        self._step = 0

    def _chunk(self, text: str, *, finish: bool = False) -> bytes:
        self._step += 1
        candidate: dict[str, Any] = {"content": {"parts": [{"text": text}], "role": "model"}, "index": 0}
        if finish:
            candidate["finishReason"] = "STOP"
        usage = {"promptTokenCount": 25, "candidatesTokenCount": self._step, "totalTokenCount": 25 + self._step}
        data = {"candidates": [candidate], "usageMetadata": usage, "modelVersion": "gemini-load"}
        return f"data: {_compact(data)}\r\n\r\n".encode()

    def head(self) -> bytes:
        return b""

    def delta(self, text: str) -> bytes:
        return self._chunk(text)

    def tail(self, text: str, deltas: int) -> bytes:
        return self._chunk("", finish=True)


class _Ollama:
    media_type = "application/x-ndjson"

    @staticmethod
    def _line(content: str, **extra: Any) -> bytes:
        value = {
            "model": "llama-load",
            "created_at": "2025-06-09T17:59:00.000000Z",
            "message": {"role": "assistant", "content": content},
            **extra,
        }
        return _compact(value).encode() + b"\n"

    def head(self) -> bytes:
        return b""

    def delta(self, text: str) -> bytes:
        return self._line(text, done=False)

    def tail(self, text: str, deltas: int) -> bytes:
        return self._line("", done_reason="stop", done=True, prompt_eval_count=25, eval_count=deltas)


class _Cohere:
    media_type = "text/event-stream"
    _DELTA = _halves(
        _sse(
            "content-delta",
            {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": "\0"}}}},
        )
    )

    def head(self) -> bytes:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": [],
            "tool_plan": "",
            "tool_calls": [],
            "citations": [],
        }
        start = {"type": "content-start", "index": 0, "delta": {"message": {"content": {"type": "text", "text": ""}}}}
        return _sse("message-start", {"id": "load", "type": "message-start", "delta": {"message": message}}) + _sse(
            "content-start", start
        )

    def delta(self, text: str) -> bytes:
        if text.replace(" ", "").isdigit():
            before, after = self._DELTA
            return before + text.encode() + after
        return _sse(
            "content-delta", {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": text}}}}
        )

    def tail(self, text: str, deltas: int) -> bytes:
        tokens = {"input_tokens": 25, "output_tokens": deltas}
        end = {"type": "message-end", "delta": {"finish_reason": "COMPLETE", "usage": {"tokens": tokens}}}
        return _sse("content-end", {"type": "content-end", "index": 0}) + _sse("message-end", end) + b"data: [DONE]\n\n"


#: Path fragment → the framer of that api (checked in this order).
FRAMERS: dict[str, type[Framer]] = {
    "/v1/messages": _Anthropic,
    ":streamRawPredict": _Anthropic,
    "/invoke-with-response-stream": _AnthropicBedrock,
    "/converse-stream": _Converse,
    "/chat/completions": _Completions,
    "/responses": _Responses,
    ":streamGenerateContent": _Gemini,
    "/api/chat": _Ollama,
    "/v2/chat": _Cohere,
}


def framer_for(path: str) -> Framer | None:
    """A fresh framer for a request path, or None when no api serves it."""
    for fragment, kind in FRAMERS.items():
        if fragment in path:
            return kind()
    return None


class _Stats:
    def __init__(self) -> None:
        self.open = 0
        self.started = 0
        self.finished = 0


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, str, dict[str, str], bytes] | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, path, _version = [*lines[0].split(" ", 2), "", ""][:3]
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name:
            headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0") or "0")
    body = await reader.readexactly(length) if length else b""
    return method, path, headers, body


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data) if data else b""


async def _stream(writer: asyncio.StreamWriter, framer: Framer, events: int, rate: float, stats: _Stats) -> None:
    stats.started += 1
    head = f"HTTP/1.1 200 OK\r\ncontent-type: {framer.media_type}\r\ntransfer-encoding: chunked\r\n\r\n"
    writer.write(head.encode() + _chunk(framer.head()))
    await writer.drain()
    started = time.monotonic()
    sent: list[str] = []
    for k in range(events):
        delay = started + (k + 1) / rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        text = f"{stamp_ns()} "
        sent.append(text)
        writer.write(_chunk(framer.delta(text)))
        await writer.drain()  # a client that cannot keep up: wait for it rather than buffer without end
    writer.write(_chunk(framer.tail("".join(sent), events)) + b"0\r\n\r\n")
    await writer.drain()
    stats.finished += 1


async def _connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, stats: _Stats) -> None:
    stats.open += 1
    try:
        while (request := await _read_request(reader)) is not None:
            _method, path, headers, _body = request
            if path == "/stats":
                figures = {"open": stats.open, "started": stats.started, "finished": stats.finished}
                data = _compact({**figures, "cpu_s": time.process_time()}).encode()
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(data)
                )
                writer.write(data)
                await writer.drain()
                continue
            framer = framer_for(path)
            if framer is None:
                writer.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                await writer.drain()
                continue
            events = int(headers.get("x-load-events", "10"))
            rate = float(headers.get("x-load-rate", "20"))
            await _stream(writer, framer, events, rate, stats)
    except (ConnectionError, asyncio.IncompleteReadError):
        pass  # the client went away: nothing to answer
    finally:
        stats.open -= 1
        writer.close()


def serve(port_pipe: Any, stop: Any, backlog: int = 100) -> None:
    """Serve on a loopback port (sent through ``port_pipe``) until the ``stop`` event is set, on
    uvloop when it can be imported; ``backlog``: connections the kernel queues before they are
    accepted (thousands of streams connect within a second)."""
    stats = _Stats()

    async def run() -> None:
        server = await asyncio.start_server(
            lambda r, w: _connection(r, w, stats), "127.0.0.1", 0, backlog=backlog, limit=_MAX_HEAD
        )
        port = server.sockets[0].getsockname()[1]
        port_pipe.send(f"http://127.0.0.1:{port}")
        async with server:
            # The stop flag is a multiprocessing Event (another process sets it): poll it.
            while not stop.is_set():  # noqa: ASYNC110
                await asyncio.sleep(0.05)

    try:
        import uvloop
    except ImportError:
        asyncio.run(run())
    else:
        uvloop.run(run())
