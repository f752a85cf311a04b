"""The Google adapter on every bundled Gemini / Vertex recording: grammar in three chunkings, agreement
with google-genai's own parse of every chunk, hand-written finals, fault mutations and error bodies."""

from __future__ import annotations

import base64
import dataclasses
import json
import re
from typing import TYPE_CHECKING, Any, cast

import pytest

from cassettes import Cassette, library
from cassettes.model import Chunk
from cassettes.mutations import corrupt_json, drop_terminal, rechunk, truncate
from conformance.plans import marker_offset
from normalize import (
    AssistantMessage,
    AssistantMessageEvent,
    TextContent,
    ThinkingContent,
    ToolCall,
    event_to_json,
    validate_events,
)
from tests.adapters import GOOGLE, response_of

if TYPE_CHECKING:
    from google.genai import types as genai_types

pytestmark = pytest.mark.parallel

STREAMS = GOOGLE.stream_names()
ERRORS = GOOGLE.error_names()

#: Recordings whose finish ends the normalized stream in an error, and its kind.
EXPECTED_ERRORS = {"sk__safety_block_gemini10_HANDEDITED": "content_filter"}


def _untimed(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _untimed(item) for key, item in value.items() if key != "timestamp"}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list):
        return [_untimed(item) for item in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def normalized_events(events: list[AssistantMessageEvent]) -> list[Any]:
    """The events as pi JSON without timestamps (generated tool-call ids are deterministic)."""
    return [_untimed(event_to_json(event)) for event in events]


def test_the_library_holds_the_gemini_recordings_this_suite_is_about() -> None:
    assert len(STREAMS) == 22
    assert len(ERRORS) == 6
    assert any(b"partialArgs" in response_of(name).body for name in STREAMS)
    assert all(b"\r\n\r\n" in response_of(name).body for name in STREAMS if not name.endswith("_HANDEDITED"))


# ------------------------------------------------------------------------------------ chunkings


@pytest.mark.parametrize("name", STREAMS)
async def test_every_recording_is_grammar_clean_and_identical_in_three_chunkings(name: str) -> None:
    cassette = library.load(name)
    recorded, result = await GOOGLE.replay(cassette)
    assert validate_events(recorded) == [], name
    expected = normalized_events(recorded)
    for variant in (
        rechunk(cassette, 1),
        rechunk(cassette, "split_crlf"),
        rechunk(cassette, "random", seed=7, max_size=9),
    ):
        events, again = await GOOGLE.replay(variant)
        assert validate_events(events) == []
        assert normalized_events(events) == expected, name
        assert again.to_json() | {"timestamp": 0} == result.to_json() | {"timestamp": 0}
    if name in EXPECTED_ERRORS:
        assert result.error_info is not None
        assert result.error_info.kind == EXPECTED_ERRORS[name]
    else:
        assert result.stop_reason in ("stop", "length", "toolUse"), result.error_message


# ----------------------------------------------------------------------- differential: google-genai


def sdk_chunks(body: bytes) -> list[genai_types.GenerateContentResponse]:
    """Every chunk as google-genai's stream parses it (its own converter and pydantic model)."""
    # Imported here: only this oracle needs the SDK, which is slow to import.
    from google.genai import models as genai_models
    from google.genai import types as genai_types

    parsed: list[genai_types.GenerateContentResponse] = []
    for block in re.split(rb"\r?\n\r?\n", body):
        line = block.strip()
        if not line.startswith(b"data:"):
            continue
        raw = json.loads(line[5:])
        converted = genai_models._GenerateContentResponse_from_mldev(raw)  # pyright: ignore[reportPrivateUsage]
        parsed.append(genai_types.GenerateContentResponse._from_response(response=converted, kwargs={}))  # pyright: ignore[reportPrivateUsage]
    return parsed


def _set(tree: dict[str, Any], path: str, value: Any, *, append: bool) -> None:
    """Set ``value`` at a ``$.a[0].b`` path in ``tree`` (strings appended when ``append``)."""
    steps: list[Any] = [name or int(index) for name, index in re.findall(r"\.(\w+)|\[(\d+)\]", path)]
    node: Any = tree
    for step, following in zip(steps, [*steps[1:], None], strict=True):
        if isinstance(node, list):
            while len(node) <= step:  # pyright: ignore[reportUnknownArgumentType]
                node.append(None if following is None else [] if isinstance(following, int) else {})  # pyright: ignore[reportUnknownMemberType]
            if node[step] is None and following is not None:
                node[step] = [] if isinstance(following, int) else {}
        elif following is not None and step not in node:
            node[step] = [] if isinstance(following, int) else {}
        if following is None:
            previous: Any = cast("list[Any]", node)[step] if isinstance(node, list) else node.get(step)
            node[step] = previous + value if append and isinstance(previous, str) else value
            return
        node = cast("Any", node[step])


def sdk_fold(chunks: list[genai_types.GenerateContentResponse]) -> dict[str, Any]:
    """An independent fold over the SDK's parsed chunks: blocks, calls (incl. partialArgs), the finish
    reason (the first error one stands, else the last), the last usage with counts, ids."""
    blocks: list[dict[str, Any]] = []
    kind: str | None = None
    streaming: dict[str, Any] | None = None
    finish: str | None = None
    usage: genai_types.GenerateContentResponseUsageMetadata | None = None
    response_id = model_version = None
    for chunk in chunks:
        response_id = response_id or chunk.response_id
        model_version = model_version or chunk.model_version
        meta = chunk.usage_metadata
        if meta is not None and (meta.prompt_token_count is not None or meta.candidates_token_count is not None):
            usage = meta
        candidate = next((c for c in chunk.candidates or [] if (c.index or 0) == 0), None)
        if candidate is None:
            continue
        for part in (candidate.content.parts if candidate.content else None) or []:
            signature = base64.b64encode(part.thought_signature).decode() if part.thought_signature else None
            if part.text is not None:
                this = "thinking" if part.thought else "text"
                if this != kind:
                    if not part.text and not signature:
                        continue
                    blocks.append({"type": this, "text": "", "signature": None})
                    kind = this
                blocks[-1]["text"] += part.text
                blocks[-1]["signature"] = signature or blocks[-1]["signature"]
                continue
            call = part.function_call
            if call is None:
                continue
            kind = None
            if streaming is None and (call.partial_args or call.will_continue):
                streaming = {"type": "tool", "name": call.name, "args": {}, "signature": signature}
                blocks.append(streaming)
            if streaming is not None:
                for arg in call.partial_args or []:
                    if arg.string_value is not None:
                        _set(streaming["args"], arg.json_path or "", arg.string_value, append=True)
                    elif arg.number_value is not None:
                        _set(streaming["args"], arg.json_path or "", arg.number_value, append=False)
                    elif arg.bool_value is not None:
                        _set(streaming["args"], arg.json_path or "", arg.bool_value, append=False)
                    elif arg.null_value is not None:
                        _set(streaming["args"], arg.json_path or "", None, append=False)
                if not call.will_continue:
                    streaming = None
            elif call.name:
                blocks.append({"type": "tool", "name": call.name, "args": call.args or {}, "signature": signature})
        reason = candidate.finish_reason.value if candidate.finish_reason else None
        if reason and reason != "FINISH_REASON_UNSPECIFIED" and finish not in {"SAFETY", "RECITATION"}:
            finish = reason
    return {"blocks": blocks, "finish": finish, "usage": usage, "id": response_id, "model": model_version}


def comparable(message: AssistantMessage) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            out.append({"type": "text", "text": block.text, "signature": block.text_signature})
        elif isinstance(block, ThinkingContent):
            out.append({"type": "thinking", "text": block.thinking, "signature": block.thinking_signature})
        else:
            out.append(
                {"type": "tool", "name": block.name, "args": block.arguments, "signature": block.thought_signature}
            )
    return out


@pytest.mark.parametrize("name", STREAMS)
async def test_every_recording_agrees_with_an_independent_fold_of_google_genai_parsed_chunks(name: str) -> None:
    body = response_of(name).body
    expected = sdk_fold(sdk_chunks(body))
    _, result = await GOOGLE.replay(library.load(name))
    assert comparable(result) == expected["blocks"]
    assert result.raw_stop_reason == expected["finish"]
    assert (result.response_id, result.response_model) == (expected["id"], expected["model"])
    meta = expected["usage"]
    if meta is None:
        assert result.usage.total_tokens == 0
        return
    prompt, cached = meta.prompt_token_count or 0, meta.cached_content_token_count or 0
    thoughts = meta.thoughts_token_count or 0
    assert result.usage.input == prompt - cached + (meta.tool_use_prompt_token_count or 0)
    assert result.usage.output == (meta.candidates_token_count or 0) + thoughts
    assert result.usage.cache_read == cached
    assert result.usage.reasoning == thoughts
    if result.stop_reason == "toolUse":
        assert expected["finish"] == "STOP"


# ---------------------------------------------------------------------------- hand-written finals


async def test_final_function_call_gemini20flash() -> None:
    _, result = await GOOGLE.replay(library.load("pai__function_call_gemini20flash"))
    assert result.stop_reason == "toolUse"
    (call,) = result.content
    assert isinstance(call, ToolCall)
    assert (call.name, call.arguments, call.thought_signature) == ("get_capital", {"country": "France"}, None)
    assert call.id.startswith("call_gen_")
    assert (result.usage.input, result.usage.output, result.usage.total_tokens) == (52, 5, 57)


async def test_final_max_tokens_gemini25flash() -> None:
    _, result = await GOOGLE.replay(library.load("mira__max_tokens_gemini25flash"))
    assert (result.stop_reason, result.raw_stop_reason) == ("length", "MAX_TOKENS")
    assert [b.text for b in result.content if isinstance(b, TextContent)] == ["Here are all 50 U.S."]
    assert (result.usage.input, result.usage.output, result.usage.reasoning) == (9, 48, 38)
    assert result.response_id == "Q5nyaIWZL_C1qtsPhY6D8A4"


async def test_final_streamed_arguments_gemini31pro() -> None:
    _, result = await GOOGLE.replay(library.load("vercel__streaming_function_call_args_gemini31pro"))
    assert result.stop_reason == "toolUse"
    first, second = result.content
    assert isinstance(first, ToolCall)
    assert isinstance(second, ToolCall)
    assert (first.name, first.arguments) == ("getWeather", {"location": "Boston"})
    assert (second.name, second.arguments) == ("getWeather", {"location": "San Francisco"})
    assert (first.thought_signature or "").startswith("CiMBjz1rX25KieIB")
    assert second.thought_signature is None
    assert first.id != second.id
    assert (result.usage.input, result.usage.output, result.usage.reasoning) == (26, 155, 132)
    assert (result.response_id, result.response_model) == ("dqHOab6xGLzWodAPkPuViA4", "gemini-3.1-pro-preview")


async def test_final_array_arguments_without_the_terminal_function_call() -> None:
    _, result = await GOOGLE.replay(library.load("vercel__array_args_missing_terminal_call"))
    assert result.stop_reason == "toolUse"
    (call,) = result.content
    assert isinstance(call, ToolCall)
    assert call.name == "writeItems"
    assert call.arguments == {
        "operations": [
            {"action": "add", "description": "Fresh red apple", "itemid": "apple_001", "price": 0.5},
            {"action": "add", "description": "Ripe yellow banana", "itemid": "banana_001", "price": 0.3},
        ]
    }


async def test_final_thought_then_whole_and_streamed_calls_gemini3flash() -> None:
    _, result = await GOOGLE.replay(library.load("vercel__no_args_calls_thought_gemini3flash"))
    assert result.stop_reason == "toolUse"
    thinking, *calls = result.content
    assert isinstance(thinking, ThinkingContent)
    assert thinking.thinking.startswith("**Processing User Requests**\n\nI've started by understanding")
    assert [(c.name, c.arguments) for c in calls if isinstance(c, ToolCall)] == [
        ("read_theme", {}),
        ("read_screen", {"id": "A"}),
        ("read_screen", {"id": "B"}),
        ("read_screen", {"id": "C"}),
    ]
    assert (result.usage.input, result.usage.output, result.usage.reasoning) == (249, 241, 183)


async def test_final_text_with_a_trailing_signature_gemini3pro() -> None:
    _, result = await GOOGLE.replay(library.load("vercel__text_thought_signature_gemini3pro"))
    (text,) = result.content
    assert isinstance(text, TextContent)
    assert text.text == 'There are **3** "r"s in strawberry.\n\nst**r**awbe**rr**y'
    assert (text.text_signature or "").startswith("EqsFCqgFAb4+")


async def test_final_safety_after_text_is_a_content_filter_error_keeping_the_text() -> None:
    events, result = await GOOGLE.replay(library.load("sk__safety_block_gemini10_HANDEDITED"))
    assert validate_events(events) == []
    assert result.error_info is not None
    assert (result.error_info.kind, result.error_info.code) == ("content_filter", "SAFETY")
    assert [b.text for b in result.content if isinstance(b, TextContent)] == ["lorem ipsumlorem ipsum lorem ipsum"]


# ---------------------------------------------------------------------------------------- faults


def _cut_points(cassette: Cassette) -> list[int]:
    stop = marker_offset(cassette, GOOGLE.api)
    step = max(1, stop // 40)
    return sorted({*range(1, stop, step), stop - 1, stop})


@pytest.mark.parametrize("name", STREAMS)
async def test_a_body_cut_anywhere_before_its_finish_reason_is_an_error_never_done(name: str) -> None:
    cassette = library.load(name)
    for cut in _cut_points(cassette):
        for end in ("eof", "reset"):
            events, result = await GOOGLE.replay(truncate(cassette, after_bytes=cut, end=end))  # pyright: ignore[reportArgumentType]
            assert validate_events(events) == [], (name, cut, end)
            assert result.stop_reason == "error", (name, cut, end)
            assert result.error_info is not None, (name, cut)
            assert result.error_info.retryable, (name, cut)


STREAMED_ARGS = [name for name in STREAMS if b"partialArgs" in response_of(name).body]


def _then_stop(cassette: Cassette, keep: int) -> Cassette:
    """The first ``keep`` chunks, then a chunk that says STOP with nothing else (the call left open)."""
    response = cassette.interactions[0].response
    stop = Chunk(b'data: {"candidates": [{"finishReason": "STOP"}]}\r\n\r\n', response.chunks[keep - 1].t_ms)
    changed = dataclasses.replace(response, chunks=(*response.chunks[:keep], stop))
    interaction = dataclasses.replace(cassette.interactions[0], response=changed)
    return dataclasses.replace(cassette, interactions=(interaction,))


@pytest.mark.parametrize("name", STREAMED_ARGS)
async def test_a_stream_cut_inside_streamed_arguments_never_offers_the_call(name: str) -> None:
    cassette = library.load(name)
    chunks = cassette.interactions[0].response.chunks
    inside = [i for i, c in enumerate(chunks) if b'"willContinue":true}}' in c.data.replace(b" ", b"")]
    assert inside, "the recording streams arguments"
    for keep in inside:
        for variant in (truncate(cassette, after_chunks=keep + 1, end="eof"), _then_stop(cassette, keep + 1)):
            events, result = await GOOGLE.replay(variant)
            assert validate_events(events) == []
            assert result.stop_reason == "error", (name, keep)
            assert result.error_info is not None
            assert result.error_info.kind == "truncated"
            assert not any(e.type in ("done", "toolcall_end") for e in events if _is_streamed_end(e, result))


def _is_streamed_end(event: Any, result: AssistantMessage) -> bool:
    # A toolcall_end for a call whose arguments were complete is fine; none may end the open call.
    if event.type != "toolcall_end":
        return event.type == "done"
    return event.content_index == len(result.content) - 1


@pytest.mark.parametrize("name", STREAMS)
async def test_a_missing_finish_reason_is_truncated_and_a_corrupt_chunk_a_protocol_error(name: str) -> None:
    cassette = library.load(name)
    events, result = await GOOGLE.replay(drop_terminal(cassette, api=GOOGLE.api))
    assert validate_events(events) == []
    assert result.error_info is not None
    assert (result.error_info.kind, result.error_info.retryable) == ("truncated", True)
    assert result.error_message == "Google stream ended before a finishReason"
    events, result = await GOOGLE.replay(corrupt_json(cassette, 0))
    assert validate_events(events) == []
    assert result.error_info is not None
    assert result.error_info.kind == "protocol"


# -------------------------------------------------------------------------------------- error bodies

#: The recorded error bodies and what they must become.
ERROR_KINDS = {
    "gemini_400_api_key_invalid": ("auth", False, "API key not valid"),
    "gemini_404_model_not_found": ("not_found", False, "is not found for API version v1beta"),
    "gemini_404_on_alt_sse_request_content_type_event_stream": ("not_found", False, "is not found for API version"),
    "gemini_503_model_overloaded": ("overloaded", True, "The model is overloaded"),
    "gemini_503_unavailable_high_demand": ("overloaded", True, "high demand"),
    "vertex_400_cannot_fetch_url": ("invalid_request", False, "Cannot fetch content from the provided URL"),
}


@pytest.mark.parametrize("name", ERRORS)
async def test_recorded_error_bodies_map_to_kinds_and_keep_the_vendor_message(name: str) -> None:
    cassette = library.load(name)
    response = cassette.interactions[0].response
    events, result = await GOOGLE.replay(cassette)
    assert validate_events(events) == []
    kind, retryable, phrase = ERROR_KINDS[name]
    info = result.error_info
    assert info is not None
    assert (info.kind, info.retryable, info.status) == (kind, retryable, response.status)
    assert phrase in (result.error_message or "")
    assert not result.content


def test_every_recorded_error_body_is_covered() -> None:
    assert set(ERRORS) <= set(ERROR_KINDS)
