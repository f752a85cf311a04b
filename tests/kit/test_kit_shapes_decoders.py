"""The decoders that read repeated events off their bytes (kit.shapes) give exactly the events they give
when every event is parsed whole: on every bundled recording of their apis, in the recorded reads and
in random ones, and on bodies written to hit the states a learned layout must not outlive."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cassettes import library
from cassettes.mutations import rechunk
from normalize import AssistantMessageEvent, event_to_json
from streamfns.kit import EventShape
from tests.adapters import ANTHROPIC, ANTHROPIC_BEDROCK, ANTHROPIC_VERTEX, GOOGLE, OPENAI_COMPLETIONS, AdapterUnderTest

pytestmark = pytest.mark.parallel

ADAPTERS = [ANTHROPIC, ANTHROPIC_BEDROCK, ANTHROPIC_VERTEX, GOOGLE, OPENAI_COMPLETIONS]
CASES = [(adapter, name) for adapter in ADAPTERS for name in adapter.stream_names()]


def normalized(events: list[AssistantMessageEvent]) -> list[dict[str, Any]]:
    out = [event_to_json(event) for event in events]
    out[-1]["message" if "message" in out[-1] else "error"].pop("timestamp")
    return out


class Matches:
    """Counts the events a shape read (so a test knows the fast path ran)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        match = EventShape.match

        def counted(shape: EventShape, data: bytes) -> list[Any] | None:
            pieces = match(shape, data)
            self.count += pieces is not None
            return pieces

        monkeypatch.setattr(EventShape, "match", counted)


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


def test_the_recordings_do_reach_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    matches = Matches(monkeypatch)
    for adapter in (ANTHROPIC, GOOGLE, OPENAI_COMPLETIONS):
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
