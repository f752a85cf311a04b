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

The server shares the machine with the clients it measures, so a delta costs it as little as it can:
one clock for every stream (:class:`_Ticker`, no task, timer or sleep per delta), a template filled
with the stamp (:class:`_Template`, no JSON encoding per delta), and one write. On the 2-core machine
of the published figures that is about 15 µs of server CPU a delta (half of it the kernel's loopback
send), against 25 µs for a task per stream that sleeps and drains.

Responses are chunked HTTP/1.1 on kept-alive connections. ``GET /stats`` answers the connections
open right now (itself included), the streams served and finished, so the client can check that it
closed every response and connection, and the server's CPU seconds so far (``cpu_s``), so a report
can show when the server, not the client, was the limit. The server runs on uvloop when it can be
imported (a server that falls behind would hide the client's own lateness behind its own).
"""

from __future__ import annotations

import asyncio
import base64
import heapq
import json
import struct
import time
import zlib
from typing import Any, Protocol, cast

__all__ = ["FRAMERS", "framer_for", "serve"]

_MAX_HEAD = 64 * 1024


def stamp_ns() -> int:
    """Monotonic nanoseconds, comparable across processes of this machine."""
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class Framer(Protocol):
    """One api's body: its head, one delta, and its tail (which may repeat the text sent). ``delta``
    fills a :class:`_Template` for the server's own stamps; ``encoded_delta`` always encodes (the
    two give the same bytes)."""

    media_type: str

    def head(self) -> bytes: ...
    def delta(self, text: str) -> bytes: ...
    def encoded_delta(self, text: str) -> bytes: ...
    def tail(self, text: str, deltas: int) -> bytes: ...


def _sse(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {_compact(data)}\n\n".encode()


#: The JSON forms of the sentinels a template is rendered with: the text (``"\0"``, inside its string)
#: and up to two counts (``"\x01"``, ``"\x02"``: rendered as strings, quotes and all, where the count goes).
TEXT_HOLE = b"\\u0000"
COUNT_HOLES = (b'"\\u0001"', b'"\\u0002"')


def _stamp(text: str) -> bool:
    """Whether ``text`` is one of the server's own delta texts (digits and spaces: no JSON escaping)."""
    return text.isascii() and text.replace(" ", "").isdigit()


class _Template:
    """A delta's bytes rendered once with sentinel holes (:data:`TEXT_HOLE`, :data:`COUNT_HOLES`), then
    filled per delta by joining bytes: no JSON encoding per delta for the server, which shares the
    machine with the clients it measures. A test checks the fill equals the JSON encoding."""

    __slots__ = ("_parts",)

    def __init__(self, rendered: bytes, *holes: bytes) -> None:
        parts: list[bytes] = []
        rest = rendered
        for hole in holes:  # in the order they lie in ``rendered``
            before, found, rest = rest.partition(hole)
            if not found:
                raise ValueError(f"no {hole!r} in the rendered template")
            parts.append(before)
        parts.append(rest)
        self._parts = tuple(parts)

    def fill(self, *values: bytes) -> bytes:
        parts = self._parts
        out = bytearray(parts[0])
        for value, part in zip(values, parts[1:], strict=True):
            out += value
            out += part
        return bytes(out)


class _Anthropic:
    media_type = "text/event-stream"
    _event = staticmethod(_sse)

    @staticmethod
    def encoded_delta(text: str) -> bytes:
        data = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}
        return _sse("content_block_delta", data)

    _DELTA = _Template(encoded_delta("\0"), TEXT_HOLE)

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
        return self._DELTA.fill(text.encode()) if _stamp(text) else self.encoded_delta(text)

    def tail(self, text: str, deltas: int) -> bytes:
        stop = {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None}}
        return (
            self._event("content_block_stop", {"type": "content_block_stop", "index": 0})
            + self._event("message_delta", {**stop, "usage": {"output_tokens": deltas}})
            + self._event("message_stop", {"type": "message_stop"})
        )


def _aws_event(event: str, payload: dict[str, Any]) -> bytes:
    """An AWS event-stream message, encoded by the library's own encoder (the reference the fast
    path below is checked against)."""
    from normalize.wire import encode_message  # the server process imports it only for AWS framing

    headers = {":event-type": event, ":content-type": "application/json", ":message-type": "event"}
    return encode_message(headers, _compact(payload).encode())


#: Each event type's encoded headers (they never change), cut from a message the library encoded.
_AWS_HEADERS: dict[str, bytes] = {}
_PRELUDE = struct.Struct(">II")
_CRC = struct.Struct(">I")


def _aws_frame(event: str, payload: bytes) -> bytes:
    """:func:`_aws_event` for a payload already JSON: the headers encoded once per event type, then per
    message only the prelude and the two CRCs (Bedrock's bodies cost the server ~40–60 µs a delta
    through the general encoder, more than the clients it measures)."""
    headers = _AWS_HEADERS.get(event)
    if headers is None:
        empty = _aws_event(event, {})
        headers = _AWS_HEADERS[event] = empty[12 : -4 - len(b"{}")]
    prelude = _PRELUDE.pack(16 + len(headers) + len(payload), len(headers))
    body = b"".join((prelude, _CRC.pack(zlib.crc32(prelude)), headers, payload))
    return body + _CRC.pack(zlib.crc32(body))


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
        # One SSE event in, one message out: its data line base64-wrapped, JSON by hand (base64's
        # alphabet needs no escaping), framed by _aws_frame.
        sse = self._sse.delta(text)
        start = sse.index(b"\ndata: ") + 7
        data = sse[start : sse.index(b"\n", start)]
        return _aws_frame("chunk", b'{"bytes":"' + base64.b64encode(data) + b'"}')

    def encoded_delta(self, text: str) -> bytes:
        return self._wrap(self._sse.encoded_delta(text))

    def tail(self, text: str, deltas: int) -> bytes:
        return self._wrap(self._sse.tail(text, deltas))


class _Converse:
    """Bedrock ConverseStream: AWS event-stream messages."""

    media_type = "application/vnd.amazon.eventstream"

    def head(self) -> bytes:
        return _aws_event("messageStart", {"role": "assistant"})

    def delta(self, text: str) -> bytes:
        # An AWS event-stream message carries a CRC of its bytes: framed each time (_aws_frame), the
        # server's own stamps put in the JSON as they are.
        if not _stamp(text):
            return self.encoded_delta(text)
        return _aws_frame("contentBlockDelta", b'{"contentBlockIndex":0,"delta":{"text":"' + text.encode() + b'"}}')

    def encoded_delta(self, text: str) -> bytes:
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

    def encoded_delta(self, text: str) -> bytes:
        return self._chunk({"content": text})

    def delta(self, text: str) -> bytes:
        return _COMPLETIONS_DELTA.fill(text.encode()) if _stamp(text) else self.encoded_delta(text)

    def tail(self, text: str, deltas: int) -> bytes:
        usage = {"prompt_tokens": 25, "completion_tokens": deltas, "total_tokens": 25 + deltas}
        return self._chunk({}, "stop") + self._chunk({}, usage=usage) + b"data: [DONE]\n\n"


_COMPLETIONS_DELTA = _Template(_Completions._chunk({"content": "\0"}), TEXT_HOLE)  # pyright: ignore[reportPrivateUsage]


class _Responses:
    media_type = "text/event-stream"
    _ITEM = "msg_0load"

    def __init__(self) -> None:
        self._sequence = 0

    @staticmethod
    def _render(kind: str, sequence: int | str, **fields: Any) -> bytes:
        value = {"type": kind, "sequence_number": sequence, **fields}
        return f"event: {kind}\ndata: {_compact(value)}\n\n".encode()

    def _event(self, kind: str, **fields: Any) -> bytes:
        self._sequence += 1
        return self._render(kind, self._sequence - 1, **fields)

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

    def encoded_delta(self, text: str) -> bytes:
        return self._event("response.output_text.delta", **self._where(), delta=text, logprobs=[])

    def delta(self, text: str) -> bytes:
        if not _stamp(text):
            return self.encoded_delta(text)
        self._sequence += 1
        return _RESPONSES_DELTA.fill(str(self._sequence - 1).encode(), text.encode())

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


_RESPONSES_DELTA = _Template(
    _Responses._render(  # pyright: ignore[reportPrivateUsage]
        "response.output_text.delta",
        "\x01",
        item_id=_Responses._ITEM,  # pyright: ignore[reportPrivateUsage]
        output_index=0,
        content_index=0,
        delta="\0",
        logprobs=[],
    ),
    COUNT_HOLES[0],
    TEXT_HOLE,
)


class _Gemini:
    media_type = "text/event-stream"

    def __init__(self) -> None:
        self._step = 0

    @staticmethod
    def _render(text: str, step: int | str, total: int | str, *, finish: bool = False) -> bytes:
        candidate: dict[str, Any] = {"content": {"parts": [{"text": text}], "role": "model"}, "index": 0}
        if finish:
            candidate["finishReason"] = "STOP"
        usage = {"promptTokenCount": 25, "candidatesTokenCount": step, "totalTokenCount": total}
        # Every chunk names the model and the response, as the Gemini API's do (21 of the 22 recorded
        # streams in cassettes/library/google-generative-ai: all but a hand-edited one).
        data = {
            "candidates": [candidate],
            "usageMetadata": usage,
            "modelVersion": "gemini-load",
            "responseId": "loadResponse0000000000",
        }
        return f"data: {_compact(data)}\r\n\r\n".encode()

    def _chunk(self, text: str, *, finish: bool = False) -> bytes:
        self._step += 1
        return self._render(text, self._step, 25 + self._step, finish=finish)

    def head(self) -> bytes:
        return b""

    def encoded_delta(self, text: str) -> bytes:
        return self._chunk(text)

    def delta(self, text: str) -> bytes:
        if not _stamp(text):
            return self.encoded_delta(text)
        self._step += 1
        return _GEMINI_DELTA.fill(text.encode(), b"%d" % self._step, b"%d" % (25 + self._step))

    def tail(self, text: str, deltas: int) -> bytes:
        return self._chunk("", finish=True)


_GEMINI_DELTA = _Template(_Gemini._render("\0", "\x01", "\x02"), TEXT_HOLE, *COUNT_HOLES)  # pyright: ignore[reportPrivateUsage]


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

    def encoded_delta(self, text: str) -> bytes:
        return self._line(text, done=False)

    def delta(self, text: str) -> bytes:
        return _OLLAMA_DELTA.fill(text.encode()) if _stamp(text) else self.encoded_delta(text)

    def tail(self, text: str, deltas: int) -> bytes:
        return self._line("", done_reason="stop", done=True, prompt_eval_count=25, eval_count=deltas)


_OLLAMA_DELTA = _Template(_Ollama._line("\0", done=False), TEXT_HOLE)  # pyright: ignore[reportPrivateUsage]


class _Cohere:
    media_type = "text/event-stream"

    @staticmethod
    def encoded_delta(text: str) -> bytes:
        data = {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": text}}}}
        return _sse("content-delta", data)

    _DELTA = _Template(encoded_delta("\0"), TEXT_HOLE)

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
        return self._DELTA.fill(text.encode()) if _stamp(text) else self.encoded_delta(text)

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


def _parse_head(head: bytes) -> tuple[str, dict[str, str]]:
    """A request head's path and headers (names lowercased)."""
    lines = head.decode("latin-1").split("\r\n")
    _method, path, _version = [*lines[0].split(" ", 2), "", ""][:3]
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name:
            headers[name.strip().lower()] = value.strip()
    return path, headers


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data) if data else b""


class _Ticker:
    """The server's one clock for every stream's deltas: a heap of (due, order, connection), run by a
    single loop timer at the earliest due time (a timer per delta costs the server more than the
    delta's own write, on a machine it shares with the clients it measures)."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._due: list[tuple[float, int, _Connection]] = []
        self._order = 0
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0
        self._running = False

    def at(self, when: float, connection: _Connection) -> None:
        """Call ``connection.tick()`` at ``when`` (loop time), or as soon after as the loop gets to it."""
        self._order += 1
        heapq.heappush(self._due, (when, self._order, connection))
        if not self._running and (self._timer is None or when < self._timer_at):
            self._arm(when)  # (a run re-arms once at its end)

    def _arm(self, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self._loop.call_at(when, self._run)
        self._timer_at = when

    def _run(self) -> None:
        self._timer = None
        due = self._due
        # The loop's clock has millisecond steps: what falls due within the step goes now.
        now = self._loop.time() + 0.001
        self._running = True
        try:
            while due and due[0][0] <= now:
                heapq.heappop(due)[2].tick()
        finally:
            self._running = False
        if due:
            self._arm(due[0][0])


class _Connection(asyncio.Protocol):
    """One kept-alive connection: requests one after another, each answered in turn.

    A stream is driven by the server's :class:`_Ticker` (no task, no sleep, no drain coroutine per
    delta): the server shares the machine with the clients it measures, so each delta costs it a heap
    entry, the framing and one write. Its deltas keep their absolute schedule; while the client's
    socket is full (the transport paused writing) the due delta waits and goes out when it drains, as
    it would to a slow client.
    """

    def __init__(self, stats: _Stats, ticker: _Ticker) -> None:
        self._stats = stats
        self._ticker = ticker
        self._loop = asyncio.get_running_loop()
        self._transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self._streaming = False
        self._paused = False
        self._late = False
        self._framer: Framer | None = None
        self._events = 0
        self._rate = 20.0
        self._start = 0.0
        self._sent: list[str] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast("asyncio.Transport", transport)
        self._stats.open += 1

    def connection_lost(self, exc: Exception | None) -> None:
        self._stats.open -= 1
        self._transport = None  # a delta still due finds no transport and ends there

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        if self._late:
            self._late = False
            self.tick()

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        if not self._streaming:
            self._serve_buffered()

    def _serve_buffered(self) -> None:
        """Answer every whole request buffered, in order, until one starts a stream."""
        while self._transport is not None and not self._streaming:
            end = self._buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self._buffer) > _MAX_HEAD:
                    self._transport.close()
                return
            path, headers = _parse_head(bytes(self._buffer[:end]))
            length = int(headers.get("content-length", "0") or "0")
            if len(self._buffer) < end + 4 + length:
                return  # the body is still on its way
            del self._buffer[: end + 4 + length]
            self._answer(path, headers)

    def _answer(self, path: str, headers: dict[str, str]) -> None:
        transport = self._transport
        assert transport is not None
        if path == "/stats":
            stats = self._stats
            figures = {"open": stats.open, "started": stats.started, "finished": stats.finished}
            data = _compact({**figures, "cpu_s": time.process_time()}).encode()
            head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(data)
            transport.write(head + data)
            return
        framer = framer_for(path)
        if framer is None:
            transport.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
            return
        self._stats.started += 1
        self._streaming = True
        self._framer = framer
        self._events = int(headers.get("x-load-events", "10"))
        self._rate = float(headers.get("x-load-rate", "20"))
        self._sent = []
        head = f"HTTP/1.1 200 OK\r\ncontent-type: {framer.media_type}\r\ntransfer-encoding: chunked\r\n\r\n"
        transport.write(head.encode() + _chunk(framer.head()))
        self._start = self._loop.time()
        self._next()

    def _next(self) -> None:
        """Schedule the next delta (the k-th at start + k / rate), or end the stream after the last."""
        sent = len(self._sent)
        if sent < self._events:
            self._ticker.at(self._start + (sent + 1) / self._rate, self)
            return
        transport, framer = self._transport, self._framer
        if transport is None or framer is None:
            return  # the client went away
        transport.write(_chunk(framer.tail("".join(self._sent), self._events)) + b"0\r\n\r\n")
        self._stats.finished += 1
        self._streaming = False
        self._serve_buffered()

    def tick(self) -> None:
        """Send the delta due now (or, while the client's socket is full, once it drains)."""
        transport, framer = self._transport, self._framer
        if transport is None or framer is None:
            return
        if self._paused:
            self._late = True  # sent when the client has read what is already on its way
            return
        text = f"{stamp_ns()} "
        self._sent.append(text)
        transport.write(_chunk(framer.delta(text)))
        self._next()


def serve(port_pipe: Any, stop: Any, backlog: int = 100) -> None:
    """Serve on a loopback port (sent through ``port_pipe``) until the ``stop`` event is set, on
    uvloop when it can be imported; ``backlog``: connections the kernel queues before they are
    accepted (thousands of streams connect within a second)."""
    stats = _Stats()

    async def run() -> None:
        loop = asyncio.get_running_loop()
        ticker = _Ticker()
        server = await loop.create_server(lambda: _Connection(stats, ticker), "127.0.0.1", 0, backlog=backlog)
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
