"""The decoders that read repeated events off their bytes (kit.shapes) give exactly the events they give
when every event is parsed whole: on every bundled recording of their apis, in the recorded reads and
in random ones, and on bodies written to hit the states a learned layout must not outlive."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench.google_bench import partial_args_body
from cassettes import library
from cassettes.mutations import rechunk
from normalize import AssistantMessage, AssistantMessageEvent, event_to_json
from normalize.wire.sse import SSEDecoder
from streamfns.google import decode as google_decode
from streamfns.kit import SHAPE_LEARNS, EventShape
from streamfns.kit.shapes import ShortcutReads
from tests.adapters import (
    ANTHROPIC,
    ANTHROPIC_BEDROCK,
    ANTHROPIC_VERTEX,
    BEDROCK,
    GOOGLE,
    OPENAI_COMPLETIONS,
    OPENAI_RESPONSES,
    AdapterUnderTest,
)

pytestmark = pytest.mark.parallel

ADAPTERS = [ANTHROPIC, ANTHROPIC_BEDROCK, ANTHROPIC_VERTEX, BEDROCK, GOOGLE, OPENAI_COMPLETIONS, OPENAI_RESPONSES]
CASES = [(adapter, name) for adapter in ADAPTERS for name in adapter.stream_names()]


def normalized(events: list[AssistantMessageEvent]) -> list[dict[str, Any]]:
    out = [event_to_json(event) for event in events]
    out[-1]["message" if "message" in out[-1] else "error"].pop("timestamp")
    return out


class Matches:
    """Counts the events shapes read (so a test knows the fast path ran): their hits, as they are forgotten
    or at the end; a learned shape's, the framed shapes the kit makes of it (which read whole reads) and
    the filled ones a decoder makes of it (a hole made fixed bytes)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.shapes: list[EventShape] = []
        learn = EventShape.learn.__func__  # pyright: ignore[reportFunctionMemberAccess]
        framed = EventShape.framed
        filled = EventShape.filled

        def kept(cls: type[EventShape], *args: Any) -> EventShape | None:
            shape = learn(cls, *args)
            if shape is not None:
                self.shapes.append(shape)
            return shape

        def kept_framed(shape: EventShape, before: bytes, after: bytes) -> EventShape:
            made = framed(shape, before, after)
            self.shapes.append(made)
            return made

        def kept_filled(shape: EventShape, slot: int, literal: bytes) -> EventShape | None:
            made = filled(shape, slot, literal)
            if made is not None:
                self.shapes.append(made)
            return made

        monkeypatch.setattr(EventShape, "learn", classmethod(kept))
        monkeypatch.setattr(EventShape, "framed", kept_framed)
        monkeypatch.setattr(EventShape, "filled", kept_filled)

    @property
    def count(self) -> int:
        return sum(shape.hits for shape in self.shapes)


def without_shapes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(EventShape, "learn", classmethod(lambda cls, *args, **kwargs: None))  # pyright: ignore


@pytest.mark.parametrize(("adapter", "name"), CASES, ids=[f"{a.api}:{n}" for a, n in CASES])
async def test_every_recording_gives_the_same_events_with_and_without_shapes(
    adapter: AdapterUnderTest, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    cassette = library.load(name)
    with monkeypatch.context() as patch:
        without_shapes(patch)
        expected = normalized((await adapter.replay(cassette))[0])
        chunked = normalized((await adapter.replay(rechunk(cassette, "random", seed=3)))[0])
    assert chunked == expected
    assert normalized((await adapter.replay(cassette))[0]) == expected
    assert normalized((await adapter.replay(rechunk(cassette, "random", seed=3)))[0]) == expected


class RunCount:
    """Counts the events the kit applied from reads of several events without framing them
    (ShortcutReads.run), so a test knows that path ran."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.events = 0
        run = ShortcutReads.run

        def counted(reads: ShortcutReads, chunk: bytes, shortcut: Any, start: int) -> tuple[list[Any], int]:
            found, rest = run(reads, chunk, shortcut, start)
            self.events += len(found)
            return found, rest

        monkeypatch.setattr(ShortcutReads, "run", counted)


# Reads of several events each: whole 2 KiB and 16 KiB cuts (most reads start inside an event and end
# inside another), and the whole body in one read.
SEVERAL_EVENT_READS: list[tuple[str, int]] = [("random", 2048), ("random", 16384), ("whole", 0)]
#: Long recordings whose reads of several events the kit reads without framing them (Anthropic's
#: recordings pad their events with spaces, each event its own layout: the synthetic body below).
RUN_HEAVY = {"pai__groq_reasoning_field_deepseek_r1", "pai__groq_think_tags_in_content"}


@pytest.mark.parametrize(("adapter", "name"), CASES, ids=[f"{a.api}:{n}" for a, n in CASES])
async def test_reads_of_several_events_give_the_same_events_as_framing_them(
    adapter: AdapterUnderTest, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    cassette = library.load(name)
    body = cassette.interactions[0].response.body
    cuts = [
        rechunk(cassette, "random", seed=seed, max_size=size)
        if strategy == "random"
        else rechunk(cassette, len(body) or 1)
        for strategy, size in SEVERAL_EVENT_READS
        for seed in ((5, 17) if strategy == "random" else (0,))
    ]
    with monkeypatch.context() as patch:
        without_shapes(patch)
        expected = normalized((await adapter.replay(cassette))[0])
    runs = RunCount(monkeypatch)
    for cut in cuts:
        assert normalized((await adapter.replay(cut))[0]) == expected
    if name in RUN_HEAVY:
        assert runs.events > 100, runs.events  # the path under test ran


def sse(name: str, data: dict[str, Any]) -> bytes:
    """One server-sent event of ``name`` with ``data`` as compact JSON."""
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def delta(text: str) -> bytes:
    """An Anthropic text delta of block 0."""
    return sse(
        "content_block_delta",
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
    )


async def test_a_read_of_deltas_around_other_events_keeps_their_order(monkeypatch: pytest.MonkeyPatch) -> None:
    start = sse(
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "m",
                "type": "message",
                "role": "assistant",
                "model": "c",
                "content": [],
                "usage": {"input_tokens": 1, "output_tokens": 1},
            },
        },
    )
    block = sse(
        "content_block_start",
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    )
    ping = sse("ping", {"type": "ping"})
    end = (
        sse("content_block_stop", {"type": "content_block_stop", "index": 0})
        + sse(
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}},
        )
        + sse("message_stop", {"type": "message_stop"})
    )
    words = [f"w{i} " for i in range(40)]
    middle = b"".join(delta(w) for w in words[:15]) + ping + b"".join(delta(w) for w in words[15:30])
    middle += delta('"q" \\ é') + b"".join(delta(w) for w in words[30:])
    body = start + block + middle + end
    half = len(start + block) + 7  # a read that starts inside an event
    two = len(start + block + delta(words[0]) + delta(words[1]))  # the decoder has learned the deltas' layout
    reads_list = [
        [body],
        [start + block, middle, end],
        [body[:half], body[half:-5], body[-5:]],
        [start + block + middle[:-1], middle[-1:] + end],
        [body[:two], body[two:]],  # the second read starts at an event's start, the ping inside it
        [body[:two], body[two : two + 9], body[two + 9 : -40], body[-40:]],  # reads starting inside events
        [body[:two], *(body[at : at + 300] for at in range(two, len(body), 300))],
    ]
    with monkeypatch.context() as patch:
        without_shapes(patch)
        events, message = await ANTHROPIC.run_reads(reads_list[0])
        expected = normalized(events)
    assert message.stop_reason == "stop"
    assert "".join(getattr(block, "text", "") for block in message.content) == "".join(
        words[:30]
    ) + '"q" \\ é' + "".join(words[30:])
    runs = RunCount(monkeypatch)
    for reads in reads_list:
        assert normalized((await ANTHROPIC.run_reads(reads))[0]) == expected
    assert runs.events > 0

    # A read that ends inside an event (a data line and no blank line yet): the next read's first
    # event, whole as it looks, continues that one, as the framer reads it.
    held = [body[:two] + b'data: {"held":1}\n', body[two:]]
    runs.events = 0
    events, message = await ANTHROPIC.run_reads(held)
    with monkeypatch.context() as patch:
        without_shapes(patch)
        assert normalized(events) == normalized((await ANTHROPIC.run_reads(held))[0])
    assert message.stop_reason == "error"  # the two data lines are one event, which is not JSON
    assert runs.events == 0  # the framer held part of an event: nothing was read past it


def test_the_recordings_do_reach_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    matches = Matches(monkeypatch)
    for adapter in (ANTHROPIC, GOOGLE, OPENAI_COMPLETIONS, OPENAI_RESPONSES, BEDROCK):
        before = matches.count
        for name in adapter.stream_names():
            asyncio.run(adapter.replay(library.load(name)))
        assert matches.count > before, adapter.api


def chat_chunk(
    content: str | None = None, *, finish: str | None = None, pad: str = "pad", chunk_id: str = "c1"
) -> bytes:
    delta: dict[str, Any] = {} if content is None else {"content": content}
    chunk = {
        "id": chunk_id,
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        "obfuscation": pad,
    }
    return b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n"


CHAT_BODIES = {
    # Text after a finish_reason in the same layout: the finish was not final, the text is read.
    "content after a finish": [
        chat_chunk("a"),
        chat_chunk("b", pad="padding"),
        chat_chunk("c", pad="p"),
        chat_chunk(None, finish="stop"),
        chat_chunk("d", pad="q"),
        chat_chunk("e", pad="qq"),
        chat_chunk(None, finish="stop"),
        b"data: [DONE]\n\n",
    ],
    # A chunk of the learned layout under another id after the finish: another response, which ends this one.
    "a spliced response": [
        chat_chunk("a"),
        chat_chunk("b"),
        chat_chunk(None, finish="stop"),
        chat_chunk("x", chunk_id="c2"),
        chat_chunk("y", chunk_id="c2"),
        b"data: [DONE]\n\n",
    ],
    # Escapes, empty pieces and a varying padding in the learned layout.
    "escapes and empty pieces": [
        chat_chunk("a"),
        chat_chunk('"quoted" \\ \n é 😀'),
        chat_chunk(""),
        chat_chunk("z", pad="a much longer padding"),
        chat_chunk('}],"usage":{"prompt_tokens":1}'),
        chat_chunk(None, finish="length"),
        b"data: [DONE]\n\n",
    ],
}


@pytest.mark.parametrize("reads", [1, 7, 4096], ids=["1-byte reads", "7-byte reads", "whole"])
@pytest.mark.parametrize("body", list(CHAT_BODIES), ids=list(CHAT_BODIES))
async def test_chat_states_a_layout_must_not_outlive(body: str, reads: int, monkeypatch: pytest.MonkeyPatch) -> None:
    data = b"".join(CHAT_BODIES[body])
    pieces = [data[i : i + reads] for i in range(0, len(data), reads)]
    with monkeypatch.context() as patch:
        without_shapes(patch)
        expected = normalized((await OPENAI_COMPLETIONS.run_reads(pieces))[0])
    matches = Matches(monkeypatch)
    assert normalized((await OPENAI_COMPLETIONS.run_reads(pieces))[0]) == expected
    assert matches.count > 0


async def test_a_malformed_event_in_a_learned_layout_is_still_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    body = b"".join([chat_chunk("a"), chat_chunk("b"), chat_chunk("c").replace(b'"c"', b'"c\\x"'), chat_chunk("d")])
    with monkeypatch.context() as patch:
        without_shapes(patch)
        expected_events, expected = await OPENAI_COMPLETIONS.run_reads([body])
    events, result = await OPENAI_COMPLETIONS.run_reads([body])
    assert normalized(events) == normalized(expected_events)
    assert result.stop_reason == expected.stop_reason


class Learns:
    """Counts the layouts decoders learn (install after :class:`Matches`, which it wraps)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        learn = EventShape.learn.__func__  # pyright: ignore[reportFunctionMemberAccess]

        def counted(cls: type[EventShape], *args: Any) -> EventShape | None:
            self.count += 1
            return learn(cls, *args)

        monkeypatch.setattr(EventShape, "learn", classmethod(counted))


def anthropic_body(blocks: int, deltas: int) -> bytes:
    def event(name: str, data: dict[str, Any]) -> bytes:
        return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()

    out = [event("message_start", {"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 1}}})]
    for index in range(blocks):
        out.append(
            event(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
            )
        )
        for n in range(deltas):
            delta = {"type": "text_delta", "text": f"{index}.{n} "}
            out.append(event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
        out.append(event("content_block_stop", {"type": "content_block_stop", "index": index}))
    out.append(
        event(
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 5}},
        )
    )
    out.append(event("message_stop", {"type": "message_stop"}))
    return b"".join(out)


async def test_a_stream_that_changes_layout_often_keeps_its_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # 60 blocks: every block start is read whole and forgets the layout; a learn that paid is given back.
    matches = Matches(monkeypatch)
    learns = Learns(monkeypatch)
    _, result = await ANTHROPIC.run_reads([anthropic_body(60, 6)])
    assert result.stop_reason == "stop"
    assert learns.count == 60
    assert matches.count == 60 * 5
    assert "".join(block.text for block in result.content if block.type == "text") == "".join(  # pyright: ignore
        f"{index}.{n} " for index in range(60) for n in range(6)
    )


async def test_a_stream_whose_layout_never_repeats_pays_for_a_bounded_number_of_learns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every chunk changes a member no hole covers: each mismatches, and only SHAPE_LEARNS learns are made.
    body = b"".join(chat_chunk("x").replace(b'"model":"m"', f'"model":"m{n}"'.encode()) for n in range(200))
    matches = Matches(monkeypatch)
    learns = Learns(monkeypatch)
    events, _ = await OPENAI_COMPLETIONS.run_reads([body + b"data: [DONE]\n\n"])
    assert matches.count == 0
    assert learns.count == SHAPE_LEARNS
    assert sum(event.type == "text_delta" for event in events) == 200


def gemini_chunk(parts: list[dict[str, Any]], step: int, *, finish: bool = False) -> bytes:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish:
        candidate["finishReason"] = "STOP"
    usage = {"promptTokenCount": 5, "candidatesTokenCount": step, "totalTokenCount": 5 + step}
    chunk = {"candidates": [candidate], "usageMetadata": usage, "modelVersion": "gemini-x", "responseId": "r1"}
    return b"data: " + json.dumps(chunk, separators=(",", ": "), ensure_ascii=False).encode() + b"\r\n\r\n"


def streamed_argument(path: str, value: str, *, more: bool = True) -> dict[str, Any]:
    partial: dict[str, Any] = {"jsonPath": path, "stringValue": value}
    if more:
        partial["willContinue"] = True
    return {"functionCall": {"partialArgs": [partial], "willContinue": True}}


def gemini_partial_args_body() -> bytes:
    """One call whose string arguments stream in pieces: escapes, non-ASCII, empty pieces, a number
    between two strings, the same path named another way, a piece after the string ended."""
    pieces = ["def f(", '"q"\\', "\n\t日本 😀", "", "x" * 40, "}]", '","willContinue": false']
    chunks = [gemini_chunk([{"functionCall": {"name": "edit", "willContinue": True}}], 1)]
    chunks += [gemini_chunk([streamed_argument("$.code", piece)], 2 + n) for n, piece in enumerate(pieces)]
    chunks.append(gemini_chunk([streamed_argument("$['code']", " same")], 20))  # another spelling: full path
    chunks.append(gemini_chunk([streamed_argument("$.code", "!")], 21))
    # The same layout naming another string: the open one ends there (read whole, then read off its bytes).
    chunks += [gemini_chunk([streamed_argument("$.next", piece)], 22) for piece in ("a", "b", "c")]
    chunks.append(gemini_chunk([streamed_argument("$.next", "", more=False)], 22))
    number = {"functionCall": {"partialArgs": [{"jsonPath": "$.n", "numberValue": 3}], "willContinue": True}}
    chunks.append(gemini_chunk([number], 23))
    chunks += [gemini_chunk([streamed_argument("$.note", piece)], 24 + n) for n, piece in enumerate(pieces[:4])]
    chunks.append(gemini_chunk([streamed_argument("$.note", "end", more=False)], 30))
    chunks.append(gemini_chunk([{"functionCall": {}}], 31, finish=True))
    return b"".join(chunks)


async def google_both_ways(
    data: bytes, reads: int | list[bytes], monkeypatch: pytest.MonkeyPatch, *, stop: str = "toolUse"
) -> tuple[AssistantMessage, int]:
    """``data`` through the Gemini adapter in reads of ``reads`` bytes (or in exactly the reads given),
    without shapes and with them: the same events, the ``stop`` reason and the same usage. The message
    read with shapes, and how many events shapes read."""
    pieces = reads if isinstance(reads, list) else [data[i : i + reads] for i in range(0, len(data), reads)]
    with monkeypatch.context() as patch:
        without_shapes(patch)
        expected_events, expected = await GOOGLE.run_reads(pieces)
    matches = Matches(monkeypatch)
    events, result = await GOOGLE.run_reads(pieces)
    assert normalized(events) == normalized(expected_events)
    assert result.stop_reason == expected.stop_reason == stop
    assert (result.usage.input, result.usage.output) == (expected.usage.input, expected.usage.output)
    return result, matches.count


@pytest.mark.parametrize("reads", [1, 7, 1 << 20], ids=["1-byte reads", "7-byte reads", "whole"])
async def test_gemini_streamed_argument_pieces_read_off_their_bytes(
    reads: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, matched = await google_both_ways(gemini_partial_args_body(), reads, monkeypatch)
    call = result.content[-1]
    assert call.type == "toolCall"
    code = "def f(" + '"q"\\' + "\n\t日本 😀" + "x" * 40 + "}]" + '","willContinue": false' + " same!"
    note = "def f(" + '"q"\\' + "\n\t日本 😀" + "end"
    assert call.arguments == {"code": code, "next": "abc", "n": 3, "note": note}  # pyright: ignore
    assert (result.usage.input, result.usage.output) == (5, 31)
    assert matched >= 9


@pytest.mark.parametrize("reads", [7, 1 << 20], ids=["7-byte reads", "whole"])
async def test_gemini_streamed_arguments_in_vertex_chunks_read_off_their_bytes(
    reads: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Vertex AI's chunks (the only API that streams arguments) carry no running counts until the last:
    a layout of the piece, with the path of the string it continues as fixed bytes. Same events as the
    full path, and read so."""
    result, matched = await google_both_ways(partial_args_body(300), reads, monkeypatch)
    assert (result.usage.input, result.usage.output) == (26, 155)
    call = result.content[-1]
    assert call.type == "toolCall"
    edits: list[dict[str, Any]] = call.arguments["edits"]
    assert [edit["path"] for edit in edits] == [f"src/module_{n}.py" for n in range(5)]
    assert matched >= 250


@pytest.mark.parametrize("ascii_only", [False, True], ids=["UTF-8 paths", "escaped paths"])
async def test_streamed_argument_paths_are_fixed_bytes_however_the_server_spells_them(
    ascii_only: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The path of the string a layout continues becomes fixed bytes of it, spelled as the chunk spells
    it: non-ASCII paths written raw or as ``\\u`` escapes both read off the bytes, string after string
    (each new path is a layout the process knows, filled in), with the same events as the full path."""
    envelope = {"usageMetadata": {"trafficType": "ON_DEMAND"}, "responseId": "r1", "modelVersion": "gemini-x"}

    def chunk(parts: list[dict[str, Any]], *, finish: bool = False) -> bytes:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}}
        data: dict[str, Any] = {"candidates": [candidate], **envelope}
        if finish:
            candidate["finishReason"] = "STOP"
            data["usageMetadata"] = {"promptTokenCount": 4, "candidatesTokenCount": 40, "totalTokenCount": 44}
        return b"data: " + json.dumps(data, separators=(",", ":"), ensure_ascii=ascii_only).encode() + b"\r\n\r\n"

    chunks = [chunk([{"functionCall": {"name": "note", "willContinue": True}}])]
    for n in range(3):
        path = f"$.größe[{n}].日本"
        chunks += [chunk([streamed_argument(path, f"piece {i} ü")]) for i in range(12)]
        chunks.append(chunk([streamed_argument(path, "", more=False)]))
    chunks.append(chunk([{"functionCall": {}}], finish=True))
    filled: list[EventShape] = []
    path_filled = google_decode._path_filled  # pyright: ignore[reportPrivateUsage]

    def spied(*args: Any) -> EventShape | None:
        shape = path_filled(*args)
        if shape is not None:
            filled.append(shape)
        return shape

    monkeypatch.setattr(google_decode, "_path_filled", spied)
    result, matched = await google_both_ways(b"".join(chunks), 1 << 20, monkeypatch)
    call = result.content[-1]
    assert call.type == "toolCall"
    assert call.arguments == {"größe": [{"日本": "".join(f"piece {i} ü" for i in range(12))}] * 3}  # pyright: ignore
    # One layout a path, each of one string hole left, and they did the reading.
    assert len(filled) == 3
    assert all(shape.one_string for shape in filled)
    assert sum(shape.hits for shape in filled) == matched >= 3 * 10


async def test_a_read_of_deltas_among_many_other_events_asks_the_framer_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk of one read stops at every event the shortcut does not read (here a ping after each
    delta); where an event may end in that read is the framer's answer for the whole read, asked once
    (asked at every stop, the walk would scan the read once per ping: quadratic in the read)."""

    usage = {"input_tokens": 1, "output_tokens": 1}
    head = sse(
        "message_start",
        {"type": "message_start", "message": {"id": "m", "role": "assistant", "content": [], "usage": usage}},
    ) + sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}})
    learned = delta("a ") + delta("b ")  # the decoder learns the deltas' layout
    ping = sse("ping", {"type": "ping"})
    middle = b"".join(delta(f"w{i} ") + ping for i in range(60))
    tail = sse("content_block_stop", {"type": "content_block_stop", "index": 0}) + sse(
        "message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": usage}
    )
    reads = [head + learned, middle, tail + sse("message_stop", {"type": "message_stop"})]
    with monkeypatch.context() as patch:
        without_shapes(patch)
        expected = normalized((await ANTHROPIC.run_reads(reads))[0])

    asked: list[int] = []
    run_parts = SSEDecoder.run_parts

    def counted(framer: SSEDecoder, chunk: bytes, event: str) -> tuple[bytes, bytes] | None:
        asked.append(len(chunk))
        return run_parts(framer, chunk, event)

    monkeypatch.setattr(SSEDecoder, "run_parts", counted)
    runs = RunCount(monkeypatch)
    events, message = await ANTHROPIC.run_reads(reads)
    assert normalized(events) == expected
    assert "".join(getattr(block, "text", "") for block in message.content) == "a b " + "".join(
        f"w{i} " for i in range(60)
    )
    assert runs.events == 60  # every delta of the middle read was read without framing it
    assert asked.count(len(middle)) == 1, asked


@pytest.mark.parametrize("size", [1500, 4096, 1 << 20], ids=["1500-byte reads", "4 KiB reads", "the rest whole"])
async def test_gemini_text_chunks_in_reads_of_several_are_read_in_runs(
    size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Gemini's text chunks carry running counts beside the text (a shape of three holes): in a read of
    several, the decoder asks the kit to read them off their bytes (Shortcut.in_run), the usage left
    to the read's end. The same events as parsing every chunk whole (every partial message's usage
    too: each read's batch ends with the usage of its last chunk), a chunk of another layout among
    them (a thought, an extra field) applied in its place."""
    chunks = [gemini_chunk([{"text": f"w{n} "}], n) for n in range(1, 80)]
    chunks.insert(40, gemini_chunk([{"text": "aside", "thought": True}], 40))
    chunks.insert(50, gemini_chunk([{"text": 'é \\ "q"'}], 50))
    chunks.insert(60, gemini_chunk([{"text": "v2 "}], 60).replace(b"gemini-x", b"gemini-y"))
    chunks.append(gemini_chunk([{"text": "done."}], 99, finish=True))
    data = b"".join(chunks)
    first = len(b"".join(chunks[:3]))  # the layout is learned in the first read: the next are read in runs
    reads = [data[:first], *(data[at : at + size] for at in range(first, len(data), size))]
    runs = RunCount(monkeypatch)  # the run without shapes holds no shortcut: it reads no run
    message, _ = await google_both_ways(data, reads, monkeypatch, stop="stop")
    assert (message.usage.input, message.usage.output) == (5, 99)
    assert "w79 done." in "".join(getattr(block, "text", "") for block in message.content)
    assert runs.events >= 30, runs.events  # the path under test ran (up to the thought, at least)
