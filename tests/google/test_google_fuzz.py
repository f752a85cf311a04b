"""Property tests: whatever chunks arrive — shaped like Gemini's or not, valid JSON or not — the decoder
raises nothing but :class:`StreamFailure`, and the stream ends in exactly one terminal, grammar-clean."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from normalize import (
    AssistantMessageEvent,
    DoneEvent,
    ErrorInfo,
    MessageBuilder,
    ToolCall,
    ToolCallDeltaEvent,
    validate_events,
)
from streamfns.google.decode import GoogleDecoder
from streamfns.kit import ServerSentEvent, StreamFailure
from tests.adapters import GOOGLE

pytestmark = pytest.mark.parallel

_TARGET = GOOGLE.model(id="gemini-3-flash-preview", reasoning=True)

_scalars: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
)
_any: st.SearchStrategy[Any] = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)),
    max_leaves=6,
)
_paths: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from(["$.a", "$.a.b", "$.a[0]", "$.a[1]", "$.b", "$['c d']", "$", "a", "$.a[*]", "$..a", "$.x[0].y"]),
    st.text(max_size=6),
)
_partial: st.SearchStrategy[Any] = st.fixed_dictionaries(
    {},
    optional={
        "jsonPath": _paths,
        "stringValue": st.one_of(st.text(max_size=6), _scalars),
        "numberValue": st.one_of(st.integers(), st.floats(allow_nan=True)),
        "boolValue": _scalars,
        "nullValue": st.sampled_from([None, "NULL_VALUE"]),
        "willContinue": _scalars,
    },
)
_function_call: st.SearchStrategy[Any] = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "name": st.one_of(st.sampled_from(["f", "g"]), _scalars),
            "id": st.one_of(st.sampled_from(["c1", "c2", ""]), _scalars),
            "args": st.one_of(st.dictionaries(st.text(max_size=3), _any, max_size=3), _any),
            "partialArgs": st.one_of(st.lists(st.one_of(_partial, _any), max_size=3), _any),
            "willContinue": st.one_of(st.booleans(), _scalars),
        },
    ),
    _any,
)
_part: st.SearchStrategy[Any] = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "text": st.one_of(st.text(max_size=8), _scalars),
            "thought": _scalars,
            "thoughtSignature": st.one_of(st.sampled_from(["c2ln", ""]), _scalars),
            "functionCall": _function_call,
            "executableCode": _any,
        },
    ),
    _any,
)
_candidate: st.SearchStrategy[Any] = st.fixed_dictionaries(
    {},
    optional={
        "content": st.one_of(st.fixed_dictionaries({"parts": st.one_of(st.lists(_part, max_size=3), _any)}), _any),
        "finishReason": st.one_of(
            st.sampled_from(["STOP", "MAX_TOKENS", "SAFETY", "MALFORMED_FUNCTION_CALL", "FINISH_REASON_UNSPECIFIED"]),
            _scalars,
        ),
        "finishMessage": _scalars,
        "index": st.one_of(st.sampled_from([0, 1]), _scalars),
    },
)
_counts: st.SearchStrategy[Any] = st.one_of(st.integers(min_value=-5, max_value=2**60), _scalars)
_chunk: st.SearchStrategy[Any] = st.fixed_dictionaries(
    {},
    optional={
        "candidates": st.one_of(st.lists(_candidate, max_size=2), _any),
        "usageMetadata": st.one_of(
            st.fixed_dictionaries(
                {},
                optional={
                    "promptTokenCount": _counts,
                    "candidatesTokenCount": _counts,
                    "thoughtsTokenCount": _counts,
                    "cachedContentTokenCount": _counts,
                    "toolUsePromptTokenCount": _counts,
                },
            ),
            _any,
        ),
        "promptFeedback": st.one_of(st.fixed_dictionaries({"blockReason": _scalars}), _any),
        "responseId": _scalars,
        "modelVersion": _scalars,
        "error": _any,
    },
)


def drive(datas: list[bytes], reads: list[int]) -> list[AssistantMessageEvent]:
    """Feed events as the kit does (``reads`` events per network read), turning a StreamFailure into the
    error terminal and EOF without a finish into ``truncated``; any other exception escapes."""
    builder = MessageBuilder(_TARGET)
    builder.start()
    decoder = GoogleDecoder(builder, _TARGET)
    position = 0
    try:
        for size in [*reads, len(datas)]:
            batch, position = datas[position : position + max(1, size)], position + max(1, size)
            try:
                for data in batch:
                    decoder.on_event(ServerSentEvent("message", data))
                    if builder.finished:
                        break
            finally:
                if not builder.finished:
                    decoder.on_batch_end()
            if builder.finished or position >= len(datas):
                break
        if not builder.finished:
            decoder.on_eof()
    except StreamFailure as failure:
        builder.fail(failure.info, failure.message)
    if not builder.finished:
        builder.fail(ErrorInfo.of("truncated"), "ended before a finishReason")
    return builder.drain()


def check(events: list[AssistantMessageEvent]) -> None:
    assert validate_events(events) == []
    assert sum(1 for e in events if e.type in ("done", "error")) == 1
    assert events[-1].type in ("done", "error")


@settings(max_examples=150, deadline=None, database=None, derandomize=True)
@given(chunks=st.lists(_chunk, max_size=6), reads=st.lists(st.integers(min_value=1, max_value=4), max_size=4))
def test_arbitrary_gemini_shaped_chunks_never_raise_and_end_in_one_clean_terminal(
    chunks: list[dict[str, Any]], reads: list[int]
) -> None:
    datas = [json.dumps(c, allow_nan=True).encode() for c in chunks]
    check(drive(datas, reads))


@settings(max_examples=100, deadline=None, database=None, derandomize=True)
@given(datas=st.lists(st.binary(max_size=40), max_size=5))
def test_arbitrary_bytes_never_raise_and_end_in_one_clean_terminal(datas: list[bytes]) -> None:
    check(drive(datas, []))


@settings(max_examples=100, deadline=None, database=None, derandomize=True)
@given(
    partials=st.lists(st.one_of(_partial, _any), max_size=8),
    finish=st.sampled_from(["STOP", "MAX_TOKENS", None]),
)
def test_streamed_arguments_of_any_shape_never_reach_done_unless_strictly_complete(
    partials: list[Any], finish: str | None
) -> None:
    chunks: list[dict[str, Any]] = [
        {"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "willContinue": True}}]}}]}
    ]
    chunks += [
        {"candidates": [{"content": {"parts": [{"functionCall": {"partialArgs": [p], "willContinue": True}}]}}]}
        for p in partials
    ]
    chunks.append(
        {"candidates": [{"content": {"parts": [{"functionCall": {}}]}, **({"finishReason": finish} if finish else {})}]}
    )
    events = drive([json.dumps(c, allow_nan=True).encode() for c in chunks], [])
    check(events)
    terminal = events[-1]
    if isinstance(terminal, DoneEvent) and terminal.message.stop_reason == "toolUse":
        joined = "".join(e.delta for e in events if isinstance(e, ToolCallDeltaEvent))
        (call,) = [b for b in terminal.message.content if isinstance(b, ToolCall)]
        assert json.loads(joined) == call.arguments
