"""The kit's shortcut (``Decoder.shortcut``, ``SSEDecoder.lone``): a read that holds exactly one frame the
decoder's shape reads is applied without framing it or calling ``on_event``, and gives exactly what the
full path gives.

- ``lone`` promises that feeding the chunk would dispatch that one event and leave the decoder as it
  was: checked against ``feed`` on random streams of every form SSE allows (names, ids, retries,
  comments, CRLF, several data lines, a BOM), cut at event ends and at random;
- on every bundled recording of the decoders that keep a shortcut (Anthropic, Chat Completions,
  Responses, Cohere, Mistral, Gemini, whose lines end in CRLF and whose shortcut takes every hole,
  Ollama's JSON lines, and ConverseStream's and Claude on Bedrock's event-stream messages, the latter
  base64-wrapped), read one event (one line, one message) per read as real traffic comes, the events
  are those of the full path, and the shortcut did run;
- a read the shortcut must not take (a ping shaped like a delta, an ``id:`` line, CRLF, two events,
  the shape's bytes in another event's name) goes to the full path.
"""

from __future__ import annotations

import base64
import json
import random
from collections.abc import Callable
from dataclasses import replace
from typing import Any, ClassVar, cast

import pytest

from cassettes import library
from normalize import MessageBuilder, Model
from normalize.wire import ServerSentEvent, encode_message
from normalize.wire.sse import SSEDecoder, SSEEventTooLarge
from streamfns.kit import Decoder, EventShape, Shortcut
from tests.adapters import (
    ANTHROPIC,
    ANTHROPIC_BEDROCK,
    BEDROCK,
    GOOGLE,
    OLLAMA,
    OPENAI_COMPLETIONS,
    OPENAI_RESPONSES,
    AdapterUnderTest,
    first_text,
    reads_client,
    response_of,
)
from tests.cohere._cohere import COHERE
from tests.kit._fake import CONTEXT, WIRE, EchoDecoder, model, options, sse
from tests.kit.test_kit_shapes_decoders import normalized
from tests.mistral._mistral import MISTRAL

pytestmark = pytest.mark.parallel  # in-process transports only

ADAPTERS = [
    ANTHROPIC,
    OPENAI_COMPLETIONS,
    OPENAI_RESPONSES,
    COHERE,
    GOOGLE,
    MISTRAL,
    OLLAMA,
    BEDROCK,
    ANTHROPIC_BEDROCK,
]
CASES = [(adapter, name) for adapter in ADAPTERS for name in adapter.stream_names()]


# -- SSEDecoder.lone against feed ----------------------------------------------------------------------


def test_a_lone_event_gives_its_data() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"event: start\ndata: {}\n\n")[0].event == "start"  # past the stream's start
    assert decoder.lone(b'event: content_block_delta\ndata: {"a":1}\n\n', "content_block_delta") == b'{"a":1}'
    assert decoder.lone(b'data: {"a":1}\n\n', "message") == b'{"a":1}'
    assert decoder.lone(b"data: \n\n", "message") == b""
    # Gemini's framing: every line ends in CRLF.
    assert decoder.lone(b'data: {"a":1}\r\n\r\n', "message") == b'{"a":1}'
    assert decoder.lone(b"event: e\r\ndata: x y\r\n\r\n", "e") == b"x y"
    assert decoder.lone_parts(b'data: {"a":1}\r\n\r\n', b'{"a":1}') == (b"data: ", b"\r\n\r\n")
    assert decoder.lone_parts(b"event: e\ndata: x\n\n", b"x") == (b"event: e\ndata: ", b"\n\n")


@pytest.mark.parametrize(
    ("held", "chunk", "event"),
    [
        (b"", b"data: x\n\n", "message"),  # the stream's start: a BOM may still come
        (b"data: a\n\ndata: b", b"data: x\n\n", "message"),  # a line held
        (b"data: a\n\nevent: e\n", b"data: x\n\n", "message"),  # a field of a pending event
        (b"data: a\n\ndata: b\r", b"\ndata: x\n\n", "message"),  # a CR that may begin a CRLF
        (b"data: a\n\n", b"event: ping\ndata: x\n\n", "content_block_delta"),  # another name
        (b"data: a\n\n", b"event: e\ndata: x\n\n", "message"),  # named, not message
        (b"data: a\n\n", b"data: x\n\n", "e"),
        (b"data: a\n\n", b"id: 7\ndata: x\n\n", "message"),
        (b"data: a\n\n", b"retry: 9\ndata: x\n\n", "message"),
        (b"data: a\n\n", b": keep-alive\ndata: x\n\n", "message"),
        (b"data: a\n\n", b"data: x\r\n\n", "message"),  # line ends of two kinds
        (b"data: a\n\n", b"data: x\n\r\n", "message"),
        (b"data: a\n\n", b"event: e\ndata: x\r\n\r\n", "e"),
        (b"data: a\n\n", b"event: e\r\ndata: x\n\n", "e"),
        (b"data: a\n\n", b"data: x\r\r\n\r\n", "message"),  # a lone CR: a line break of its own
        (b"data: a\n\n", b"data: x\ry\r\n\r\n", "message"),
        (b"data: a\n\n", b"data: x\r\ndata: y\r\n\r\n", "message"),
        (b"data: a\n\n", b"data: x\r\n\r\n\r\n", "message"),
        (b"data: a\n\n", b"id: 1\r\ndata: x\r\n\r\n", "message"),
        (b"data: a\n\n", b"data: x\r\n\r\n", "e"),
        (b"data: a\n\ndata: b\r", b"\ndata: x\r\n\r\n", "message"),  # a CR that may begin a CRLF
        # A name no event line can give: its line break ends the line (feed names the event "a").
        (b"data: a\n\n", b"event: a\rb\r\ndata: x\r\n\r\n", "a\rb"),
        (b"data: a\n\n", b"event: a\nb\ndata: x\n\n", "a\nb"),
        (b"data: a\n\n", b"event: \ndata: x\n\n", ""),
        (b"data: a\n\n", b"data: x\ndata: y\n\n", "message"),
        (b"data: a\n\n", b"data: x\n\ndata: y\n\n", "message"),
        (b"data: a\n\n", b"data: x\n\n\n", "message"),
        (b"data: a\n\n", b"data: x\n", "message"),
        (b"data: a\n\n", b"data:x\n\n", "message"),
        (b"data: a\n\n", b"event:e\ndata: x\n\n", "e"),
        (b"data: a\n\n", b"data: x\rx\n\n", "message"),
    ],
)
def test_anything_but_a_lone_event_at_a_boundary_is_fed(held: bytes, chunk: bytes, event: str) -> None:
    decoder = SSEDecoder()
    decoder.feed(held)
    assert decoder.lone(chunk, event) is None


def test_an_event_over_the_size_limit_is_fed() -> None:
    for size in range(4, 20):
        chunk = b"data: " + b"x" * size + b"\n\n"
        quick, full = SSEDecoder(max_event_bytes=16), SSEDecoder(max_event_bytes=16)
        quick.feed(b"data: a\n\n")
        full.feed(b"data: a\n\n")
        data = quick.lone(chunk, "message")
        try:
            fed = full.feed(chunk)
        except SSEEventTooLarge:
            assert data is None  # feed refuses it: so does lone
            continue
        if data is not None:
            assert fed == [ServerSentEvent("message", data, None, None)]
    past_start = SSEDecoder(max_event_bytes=16)
    past_start.feed(b"data: a\n\n")
    assert past_start.lone(b"data: " + b"x" * 20 + b"\n\n", "message") is None


_NAMES = ["message", "content_block_delta", "ping", "e\u00e9", "error"]


def _random_event(rng: random.Random) -> bytes:
    lines: list[bytes] = []
    kind = rng.random()
    name = rng.choice(_NAMES)
    if kind < 0.6:  # the usual shapes
        if name != "message" or rng.random() < 0.3:
            lines.append(f"event: {name}".encode())
        lines.append(b"data: " + rng.choice([b'{"t":"a b"}', b"[DONE]", b"", b" lead", b"x:y"]))
    else:  # everything else SSE allows
        lines.extend(
            rng.choice(
                [
                    b": comment",
                    b"id: " + str(rng.randint(0, 9)).encode(),
                    b"retry: 100",
                    b"data: " + rng.choice([b"1", b"2 2", b""]),
                    b"data:tight",
                    f"event: {name}".encode(),
                    b"event:" + name.encode(),
                    b"unknown: field",
                ]
            )
            for _ in range(rng.randint(1, 4))
        )
    end = rng.choice([b"\n", b"\n", b"\n", b"\r\n", b"\r"])
    return b"".join(line + end for line in lines) + end


@pytest.mark.parametrize("seed", range(40))
def test_lone_never_says_other_than_feed(seed: int) -> None:
    rng = random.Random(seed)
    events = [_random_event(rng) for _ in range(60)]
    body = (b"\xef\xbb\xbf" if rng.random() < 0.3 else b"") + b"".join(events)
    # Half the runs one event per read (where lone applies), half cut anywhere.
    per_read = rng.random() < 0.5
    chunks: list[bytes] = []
    if per_read:
        chunks = [body[: len(body) - sum(len(e) for e in events[1:])], *events[1:]]
    else:
        at = 0
        while at < len(body):
            step = rng.randint(1, 80)
            chunks.append(body[at : at + step])
            at += step
    full, quick = SSEDecoder(), SSEDecoder()
    expected: list[ServerSentEvent] = []
    got: list[ServerSentEvent] = []
    took = 0
    for chunk in chunks:
        expected += full.feed(chunk)
        for name in _NAMES:
            data = quick.lone(chunk, name)
            if data is not None:
                got.append(ServerSentEvent(name, data, quick.last_event_id, None))
                took += 1
                break
        else:
            got += quick.feed(chunk)
    expected += full.flush()
    got += quick.flush()
    assert got == expected
    assert quick.last_event_id == full.last_event_id
    assert quick.reconnection_time == full.reconnection_time
    if per_read:
        assert took > 0  # the comparison covered reads lone took, not only reads it passed on


# -- the kit: one event per read, with and without the shortcut -------------------------------------------


def per_event(body: bytes) -> list[bytes]:
    """``body`` cut after every blank line (LF or CRLF framed): one event per read."""
    reads: list[bytes] = []
    start = 0
    at = 0
    while True:
        lf = body.find(b"\n\n", at)
        crlf = body.find(b"\r\n\r\n", at)
        ends = [end + size for end, size in ((lf, 2), (crlf, 4)) if end >= 0]
        if not ends:
            break
        at = min(ends)
        reads.append(body[start:at])
        start = at
    if start < len(body):
        reads.append(body[start:])
    return reads


def per_line(body: bytes) -> list[bytes]:
    """A JSON-lines ``body`` cut after every LF: one line per read."""
    return [line + b"\n" for line in body.split(b"\n")[:-1]] + (
        [body.rsplit(b"\n", 1)[-1]] if body[-1:] != b"\n" else []
    )


def per_message(body: bytes) -> list[bytes]:
    """An AWS event-stream ``body`` cut after every message (by its prelude's length): one per read."""
    reads: list[bytes] = []
    at = 0
    while at + 4 <= len(body):
        total = int.from_bytes(body[at : at + 4], "big")
        reads.append(body[at : at + total])
        at += total
    return reads + ([body[at:]] if at < len(body) else [])


_AWS = (BEDROCK, ANTHROPIC_BEDROCK)


def one_frame_per_read(adapter: AdapterUnderTest, body: bytes) -> list[bytes]:
    if adapter is OLLAMA:
        return per_line(body)
    return per_message(body) if adapter in _AWS else per_event(body)


def content_type_of(adapter: AdapterUnderTest) -> str:
    if adapter is OLLAMA:
        return "application/x-ndjson"
    return "application/vnd.amazon.eventstream" if adapter in _AWS else "text/event-stream"


class Taken:
    """Counts the reads the kit applied through a decoder's shortcut (the shortcut's sink, which only
    the kit calls: a decoder's own path calls its verb itself)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        of = Shortcut.of.__func__  # pyright: ignore[reportFunctionMemberAccess]

        def counted_of(
            cls: type[Shortcut],
            event: str,
            shape: EventShape | None,
            sink: Callable[..., None],
            *args: object,
            whole: bool = False,
            in_run: Callable[[Any], None] | None = None,
        ) -> Shortcut | None:
            def counted(*values: Any) -> None:
                self.count += 1
                sink(*values)

            return of(cls, event, shape, counted, *args, whole=whole, in_run=in_run)

        monkeypatch.setattr(Shortcut, "of", classmethod(counted_of))


def without_shortcuts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Shortcut, "of", classmethod(lambda cls, *args, **kwargs: None))  # pyright: ignore


async def _both_ways(
    adapter: AdapterUnderTest, reads: list[bytes], monkeypatch: pytest.MonkeyPatch, **fields: Any
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    target = adapter.model(**fields)
    content_type = content_type_of(adapter)
    with monkeypatch.context() as patch:
        without_shortcuts(patch)
        expected = normalized((await adapter.run_reads(reads, target=target, content_type=content_type))[0])
    with monkeypatch.context() as patch:
        taken = Taken(patch)
        got = normalized((await adapter.run_reads(reads, target=target, content_type=content_type))[0])
    # Both runs read the body as a stream (a body the framing refused would compare equal, and prove nothing).
    assert "stream: " not in json.dumps(expected[-1]), expected[-1]
    return got, expected, taken.count


@pytest.mark.parametrize(("adapter", "name"), CASES, ids=[f"{a.api}:{n}" for a, n in CASES])
async def test_every_recording_read_one_event_at_a_time_gives_the_full_paths_events(
    adapter: AdapterUnderTest, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    cassette = library.load(name)
    fields = adapter.replay_fields(cassette)
    reads = one_frame_per_read(adapter, b"".join(chunk.data for chunk in response_of(name).chunks))
    got, expected, _ = await _both_ways(adapter, reads, monkeypatch, **fields)
    assert got == expected


@pytest.mark.parametrize("adapter", ADAPTERS, ids=[a.api for a in ADAPTERS])
async def test_the_shortcut_runs_on_the_recordings(adapter: AdapterUnderTest, monkeypatch: pytest.MonkeyPatch) -> None:
    taken = 0
    for name in adapter.stream_names():
        fields = adapter.replay_fields(library.load(name))
        reads = one_frame_per_read(adapter, b"".join(chunk.data for chunk in response_of(name).chunks))
        taken += (await _both_ways(adapter, reads, monkeypatch, **fields))[2]
    assert taken > 0


def _anthropic_delta(text: str, index: int = 0) -> bytes:
    data = f'{{"type":"content_block_delta","index":{index},"delta":{{"type":"text_delta","text":"{text}"}}}}'
    return f"event: content_block_delta\ndata: {data}\n\n".encode()


_ANTHROPIC_HEAD = (
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message",'
    b'"role":"assistant","model":"claude-haiku-4-5","content":[],"stop_reason":null,"stop_sequence":null,'
    b'"usage":{"input_tokens":3,"output_tokens":1}}}\n\n'
    b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
    b'"content_block":{"type":"text","text":""}}\n\n'
)
_ANTHROPIC_TAIL = (
    b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
    b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn",'
    b'"stop_sequence":null},"usage":{"output_tokens":9}}\n\n'
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
)


@pytest.mark.parametrize(
    "odd",
    [
        _anthropic_delta("ping? ").replace(b"event: content_block_delta", b"event: ping"),  # ignored
        b"id: 4\n" + _anthropic_delta("with an id "),
        _anthropic_delta("crlf ").replace(b"\n", b"\r\n"),
        _anthropic_delta("one ") + _anthropic_delta("two "),
        _anthropic_delta("renamed ").replace(b"event: content_block_delta", b"event: content_block_deltb"),
        _anthropic_delta("other block ", index=1),  # a block that never started: a protocol error
        _anthropic_delta('quote \\" and \\\\ '),
        b": a comment\n" + _anthropic_delta("after a comment "),
        _anthropic_delta("unended ")[:-1],  # its blank line never comes: the next deltas join its event
        _anthropic_delta("raw\nnewline "),  # not JSON, and two lines
        _anthropic_delta("x" * 70_000),  # longer than a piece: the reader cuts it
    ],
)
async def test_reads_the_shortcut_must_not_take_give_the_full_paths_events(
    odd: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    deltas = [_anthropic_delta(f"{i} ") for i in range(4)]
    reads = [_ANTHROPIC_HEAD, *deltas, odd, *deltas, _ANTHROPIC_TAIL]
    got, expected, taken = await _both_ways(ANTHROPIC, reads, monkeypatch)
    assert got == expected
    assert taken > 0  # the deltas around it did take it


_CHUNK_HEADERS = {":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"}


def _chunk(payload: bytes, headers: dict[str, str] = _CHUNK_HEADERS) -> bytes:
    return encode_message(dict(headers), payload)


def _wrapped(event: bytes, extra: bytes = b"") -> bytes:
    """Claude on Bedrock's chunk message around one Anthropic event's data."""
    return _chunk(b'{"bytes":"' + base64.b64encode(event) + b'"' + extra + b"}")


def _claude_delta(text: str, index: int = 0) -> bytes:
    return f'{{"type":"content_block_delta","index":{index},"delta":{{"type":"text_delta","text":"{text}"}}}}'.encode()


_CLAUDE_HEAD = [
    (
        b'{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude",'
        b'"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}}'
    ),
    b'{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}',
]
_CLAUDE_TAIL = [
    b'{"type":"content_block_stop","index":0}',
    b'{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":9}}',
    b'{"type":"message_stop"}',
]


@pytest.mark.parametrize(
    "odd",
    [
        _wrapped(_claude_delta("padded "), b',"p":"abcdef"'),  # Bedrock's padding: read as the layout says
        _chunk(b'{"bytes":"' + base64.b64encode(_claude_delta("spaced ")) + b'"} '),  # whitespace after it
        _chunk(b'{"bytes":"eA==","bytes":"' + base64.b64encode(_claude_delta("twice ")) + b'"}'),  # the last wins
        _chunk(b'{"bytes":"' + base64.b64encode(_claude_delta("line "))[:8] + b"\n" + b'"}'),  # not strict base64
        _chunk(b'{"bytes":5}'),  # no bytes string: a protocol error
        _chunk(b'{"bytes":"' + base64.b64encode(_claude_delta("cut "))),  # not JSON: the full path decides
        _wrapped(_claude_delta("other block ", index=1)),  # a block that never started
        _wrapped(b'{"type":"ping"}'),
        _wrapped(_claude_delta('quote \\" and \\\\ ')),
        # JSON escapes inside the base64 (the parse reads "/" and "A"; no alphabet has a backslash).
        _chunk(b'{"bytes":"' + base64.b64encode(_claude_delta("s?>?>")).replace(b"/", b"\\/") + b'"}'),
        _chunk(b'{"bytes":"\\u0065' + base64.b64encode(b"{" + _claude_delta("u ")[1:])[1:] + b'"}'),
        _chunk(b'{"bytes": "' + base64.b64encode(_claude_delta("space ")) + b'"}'),  # JSON's space after the colon
        _chunk(b'{"bytes":""}'),  # no event at all
        _chunk(
            b'{"bytes":"' + base64.b64encode(_claude_delta("x")) + b'"}',
            {**_CHUNK_HEADERS, ":message-type": "exception"},
        ),
    ],
)
async def test_claude_on_bedrock_chunks_the_shortcut_must_not_take_give_the_full_paths_events(
    odd: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    deltas = [_wrapped(_claude_delta(f"{i} ")) for i in range(4)]
    reads = [*(_wrapped(event) for event in _CLAUDE_HEAD), *deltas, odd, *deltas, *(_wrapped(e) for e in _CLAUDE_TAIL)]
    got, expected, taken = await _both_ways(ANTHROPIC_BEDROCK, reads, monkeypatch)
    assert got == expected
    assert taken > 0  # the deltas around it did take it


# -- a third party's decoder, over a real socket on each transport -------------------------------------


class _Shortcutting(EchoDecoder):
    """Echo's decoder with a shape for its text events, kept as a shortcut, counting what the kit calls."""

    made: ClassVar[list[_Shortcutting]] = []

    def __init__(self, builder: MessageBuilder, the_model: Model) -> None:
        super().__init__(builder, the_model)
        self.shape: EventShape | None = None
        self.batch_ends = 0
        self.events = 0
        _Shortcutting.made.append(self)

    def on_event(self, event: ServerSentEvent) -> None:
        self.events += 1
        shape = self.shape
        if shape is not None:
            pieces = shape.match(event.data)
            if pieces is not None:
                self.builder.text_delta("text", pieces[0])
                return
            self.shape = self.shortcut = None
        super().on_event(event)
        if event.data.startswith(b'{"type": "text"'):
            self.shape = EventShape.learn(event.data, json.loads(event.data), (("text",),))
            self.shortcut = Shortcut.of(event.event, self.shape, self.builder.text_delta, "text")

    def on_batch_end(self) -> None:
        self.batch_ends += 1


class _HookOnInstance(_Shortcutting):
    """The same, its on_batch_end set on the instance (the class's is Decoder's no-op again)."""

    on_batch_end = vars(Decoder)["on_batch_end"]

    def __init__(self, builder: MessageBuilder, the_model: Model) -> None:
        super().__init__(builder, the_model)
        self.on_batch_end = self._count_batch_end

    def _count_batch_end(self) -> None:
        self.batch_ends += 1


@pytest.mark.parametrize("decoder_class", [_Shortcutting, _HookOnInstance])
async def test_a_third_party_decoders_shortcut_reads_as_its_on_event_and_ends_each_batch(
    monkeypatch: pytest.MonkeyPatch, decoder_class: type[_Shortcutting]
) -> None:
    wire = replace(WIRE, decoder=decoder_class)
    words = [f"w{i} " for i in range(12)]
    texts = [sse({"type": "text", "text": word}) for word in words]
    reads = [*texts, sse({"type": "stop", "reason": "end"}), sse("[END]")]
    runs: list[tuple[str, int]] = []
    for shortcuts in (False, True):
        _Shortcutting.made = []
        with monkeypatch.context() as patch:
            if not shortcuts:
                without_shortcuts(patch)
            taken = Taken(patch)
            async with reads_client(reads) as client:
                result = await wire.stream_fn(model(), CONTEXT, options(http_client=client)).result()
        (decoder,) = _Shortcutting.made
        assert result.stop_reason == "stop"
        assert first_text(result) == "".join(words)
        runs.append((first_text(result), decoder.batch_ends))
        # Past the first text event (which taught the shape), each text read took the shortcut.
        assert taken.count == (len(texts) - 1 if shortcuts else 0)
        assert decoder.events + taken.count == len(reads)  # every event read one way or the other
    assert runs[1] == runs[0]  # the same text, and on_batch_end after each read whichever way it was read


class _BrokenShape:
    def match(self, data: bytes) -> list[Any] | None:
        raise ZeroDivisionError("a shape that breaks")


class _BrokenShortcut(_Shortcutting):
    """A decoder whose shortcut raises when the kit uses it."""

    def on_event(self, event: ServerSentEvent) -> None:
        super().on_event(event)
        if self.shortcut is not None:
            self.shortcut = Shortcut(event.event, cast("EventShape", _BrokenShape()), self.builder.text_delta, "text")


async def test_a_shortcut_that_raises_ends_the_stream_as_the_decoders_failure_with_what_it_built() -> None:
    wire = replace(WIRE, decoder=_BrokenShortcut)
    reads = [sse({"type": "text", "text": "kept "}), sse({"type": "text", "text": "lost"}), sse("[END]")]
    async with reads_client(reads) as client:
        result = await wire.stream_fn(model(), CONTEXT, options(http_client=client)).result()
    assert result.stop_reason == "error"
    assert result.error_info is not None
    assert result.error_info.kind == "protocol"
    assert "decoder failed: ZeroDivisionError: a shape that breaks" in (result.error_message or "")
    assert first_text(result) == "kept "
