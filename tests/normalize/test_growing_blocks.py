"""Text and thinking blocks while they stream (``normalize._growing``): their text is kept as pieces and
joined when read, so each delta costs the same however long the reply. Whoever reads a streaming block —
its field, ``to_json``, equality, copies, pickles, validation — sees exactly the string the eager
append would have built; once a block ends (or the stream fails) it is a plain instance of its class.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
import sys
import threading
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from normalize import AssistantMessage, ErrorInfo, MessageBuilder, TextContent, ThinkingContent

pytestmark = pytest.mark.parallel

DELTAS = ["Hello", ", ", "wörld", " 😀", "", "\n", "end."]


def _streaming(kind: str) -> tuple[MessageBuilder, Any]:
    builder = MessageBuilder()
    builder.start()
    if kind == "text":
        builder.text_start("b")
    else:
        builder.thinking_start("b", signature="sig")
    block = builder.message.content[0]
    return builder, block


def _delta(builder: MessageBuilder, kind: str, delta: str) -> None:
    if kind == "text":
        builder.text_delta("b", delta)
    else:
        builder.thinking_delta("b", delta)


def _field(kind: str) -> str:
    return "text" if kind == "text" else "thinking"


def _plain(kind: str, value: str) -> Any:
    return TextContent(text=value) if kind == "text" else ThinkingContent(thinking=value, thinking_signature="sig")


@pytest.mark.parametrize("kind", ["text", "thinking"])
def test_a_streaming_block_reads_as_the_eager_string_after_every_delta(kind: str) -> None:
    builder, block = _streaming(kind)
    expected = ""
    for delta in DELTAS:
        _delta(builder, kind, delta)
        builder.drain()
        expected += delta
        assert getattr(block, _field(kind)) == expected
        assert isinstance(getattr(block, _field(kind)), str)
        assert block == _plain(kind, expected)  # the growing block's own __eq__
        assert _plain(kind, expected) == block  # the base class's declines; the reflected one decides
        assert block != _plain(kind, expected + "x")
        assert block.to_json() == _plain(kind, expected).to_json()
        assert dataclasses.asdict(block) == dataclasses.asdict(_plain(kind, expected))
        assert repr(block) == repr(_plain(kind, expected))
    assert isinstance(block, TextContent if kind == "text" else ThinkingContent)


@pytest.mark.parametrize("kind", ["text", "thinking"])
def test_copies_and_pickles_of_a_streaming_block_are_snapshots_of_its_class(kind: str) -> None:
    builder, block = _streaming(kind)
    _delta(builder, kind, "one ")
    snapshots = [copy.copy(block), copy.deepcopy(block), pickle.loads(pickle.dumps(block))]
    _delta(builder, kind, "two")
    base = TextContent if kind == "text" else ThinkingContent
    for snapshot in snapshots:
        assert type(snapshot) is base
        assert snapshot == _plain(kind, "one ")
    assert getattr(block, _field(kind)) == "one two"


@pytest.mark.parametrize("kind", ["text", "thinking"])
def test_a_value_written_into_a_streaming_block_is_kept_and_later_deltas_follow_it(kind: str) -> None:
    builder, block = _streaming(kind)
    _delta(builder, kind, "a")
    setattr(block, _field(kind), getattr(block, _field(kind)) + "[edited]")
    _delta(builder, kind, "b")
    assert getattr(block, _field(kind)) == "a[edited]b"


@pytest.mark.parametrize("kind", ["text", "thinking"])
@pytest.mark.parametrize("ending", ["block_end", "finish", "fail", "final_text"])
def test_an_ended_block_is_a_plain_instance_of_its_class(kind: str, ending: str) -> None:
    builder, block = _streaming(kind)
    for delta in DELTAS:
        _delta(builder, kind, delta)
    expected = "".join(DELTAS)
    if ending == "block_end":
        builder.block_end("b")
    elif ending == "final_text":
        expected = "authoritative"
        builder.block_end("b", final_text=expected)
    elif ending == "finish":
        builder.stop("end_turn", "stop")
        builder.finish()
    else:
        builder.fail(ErrorInfo.of("network"), "cut")
    base = TextContent if kind == "text" else ThinkingContent
    assert type(block) is base
    assert getattr(block, _field(kind)) == expected
    assert block == _plain(kind, expected)
    assert type(getattr(block, _field(kind))) is str


def test_a_message_with_a_streaming_block_round_trips_and_validates() -> None:
    builder, block = _streaming("text")
    builder.text_delta("b", "partial ")
    builder.text_delta("b", "text")
    message = builder.message
    again = AssistantMessage.from_json(message.to_json())
    assert again.content == [TextContent(text="partial text")]
    assert type(again.content[0]) is TextContent
    # Validating the live message object itself (a caller replaying a partial message) keeps the text.
    validated = AssistantMessage.from_json(message.to_json() | {"content": [dataclasses.asdict(block)]})
    assert validated.content[0] == TextContent(text="partial text")


def test_every_delta_event_still_names_the_live_message() -> None:
    builder, block = _streaming("text")
    seen: list[str] = []
    for delta in ["x", "y", "z"]:
        builder.text_delta("b", delta)
        for event in builder.drain():
            assert event.partial is builder.message
            if event.type == "text_delta":
                content = event.partial.content[0]
                assert isinstance(content, TextContent)
                seen.append(content.text)
    assert seen == ["x", "xy", "xyz"]
    assert block.text == "xyz"


async def test_a_stream_closed_while_a_block_streams_ends_with_a_plain_block() -> None:
    from normalize import AssistantMessageEvent, AssistantMessageEventStream

    builder, _ = _streaming("text")
    builder.text_delta("b", "cut ")

    async def batches() -> AsyncIterator[Sequence[AssistantMessageEvent]]:
        yield builder.drain()
        builder.text_delta("b", "off")
        yield builder.drain()

    stream = AssistantMessageEventStream.from_batches(batches())
    async for event in stream:
        if event.type == "text_delta":
            break
    await stream.aclose()
    result = await stream.result()
    assert result.stop_reason == "aborted"
    assert [type(block) for block in result.content] == [TextContent]
    assert result.content[0] == TextContent(text="cut ")


def test_a_reader_on_another_thread_loses_no_delta_of_the_builders() -> None:
    # The builder appends on one thread while another reads the text; every read joins what has come
    # so far. Switching threads as often as the interpreter allows makes a lost delta likely if reads
    # and appends could interleave badly: the final text must hold every delta, in order.
    builder, block = _streaming("text")
    deltas = [f"{i:06d}" for i in range(300_000)]
    stop = threading.Event()
    reads: list[int] = []

    def reader() -> None:
        while not stop.is_set():
            reads.append(len(block.text))

    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for delta in deltas:
            builder.text_delta("b", delta)
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(previous)
    assert block.text == "".join(deltas)
    assert len(reads) > 10  # the reader did read meanwhile
    assert reads == sorted(reads)  # and never saw the text shrink
