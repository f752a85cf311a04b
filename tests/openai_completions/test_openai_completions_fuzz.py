"""Hypothesis fuzz of the decoder: arbitrary chunk dicts and arbitrary bytes never raise anything but
``StreamFailure``, and the stream the kit would make of them has exactly one terminal and obeys the
grammar. A modest example count keeps it in ``make test``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from normalize import ErrorInfo, MessageBuilder, validate_events
from normalize.wire.sse import SSEDecoder
from streamfns.kit import ServerSentEvent, StreamFailure
from streamfns.openai_completions.decode import CompletionsDecoder
from tests.adapters import OPENAI_COMPLETIONS as OC

pytestmark = pytest.mark.parallel

SETTINGS = settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])

Strategy = st.SearchStrategy[Any]

_scalars: Strategy = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.text(max_size=8), st.floats())
_json: Strategy = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
_maybe_text: Strategy = st.one_of(st.none(), st.text(max_size=12), st.text(max_size=12), _json)
_count: Strategy = st.one_of(st.integers(-10, 2**60), st.integers(0, 500), _scalars)
_arguments: Strategy = st.one_of(
    st.none(),
    st.sampled_from(['{"a":', " 1}", "{}", '{"x": "y"}', "[", "}", '"', "\\u12", "\x00"]),
    st.text(max_size=10),
    _json,
)
_function: Strategy = st.fixed_dictionaries(
    {}, optional={"name": st.one_of(st.sampled_from(["f", "g", ""]), _maybe_text), "arguments": _arguments}
)
_tool_call: Strategy = st.one_of(
    st.fixed_dictionaries(
        {"index": st.sampled_from([0, 0, 1, 2, 3, -1, None, "1"]), "function": _function},
        optional={"id": st.sampled_from(["call_a", "call_b", "", "call_a"]), "type": st.just("function")},
    ),
    st.fixed_dictionaries(
        {},
        optional={
            "index": _json,
            "id": _maybe_text,
            "type": st.sampled_from(["function", "custom", None]),
            "function": st.one_of(_function, _json),
            "custom": _json,
        },
    ),
)
_part: Strategy = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "thinking", "x"])}, optional={"text": _maybe_text, "thinking": _json}
)
_detail: Strategy = st.fixed_dictionaries(
    {"type": st.sampled_from(["reasoning.text", "reasoning.encrypted", "reasoning.summary", "other"])},
    optional={
        "id": st.sampled_from(["call_a", "call_b", "rs_1"]),
        "data": _maybe_text,
        "text": _maybe_text,
        "summary": _maybe_text,
    },
)
_mixed_delta: Strategy = st.fixed_dictionaries(
    {},
    optional={
        "role": st.just("assistant"),
        "content": st.one_of(_maybe_text, st.lists(_part, max_size=2)),
        "reasoning_content": _maybe_text,
        "reasoning": _maybe_text,
        "refusal": _maybe_text,
        "tool_calls": st.one_of(st.none(), st.lists(_tool_call, max_size=3), _json),
        "function_call": st.one_of(st.none(), _function),
        "reasoning_details": st.one_of(st.none(), st.lists(_detail, max_size=2)),
    },
)
_delta: Strategy = st.one_of(
    st.fixed_dictionaries({"content": st.text(max_size=6)}),
    st.fixed_dictionaries({"reasoning": st.text(max_size=6)}),
    st.fixed_dictionaries({"reasoning_content": st.text(max_size=6)}),
    st.fixed_dictionaries({"tool_calls": st.lists(_tool_call, min_size=1, max_size=3)}),
    st.fixed_dictionaries({"tool_calls": st.lists(_tool_call, min_size=1, max_size=3)}),
    st.fixed_dictionaries({"reasoning_details": st.lists(_detail, min_size=1, max_size=2)}),
    st.fixed_dictionaries({"content": st.lists(_part, min_size=1, max_size=2)}),
    _mixed_delta,
    _mixed_delta,
)
_usage: Strategy = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {},
        optional={
            "prompt_tokens": _count,
            "completion_tokens": _count,
            "prompt_tokens_details": st.one_of(
                _json, st.fixed_dictionaries({}, optional={"cached_tokens": _count, "cache_write_tokens": _count})
            ),
            "completion_tokens_details": st.one_of(_json, st.fixed_dictionaries({"reasoning_tokens": _count})),
            "prompt_cache_hit_tokens": _count,
            "cached_tokens": _count,
        },
    ),
)
_finish: Strategy = st.one_of(
    st.none(),
    st.none(),
    st.sampled_from(["stop", "length", "tool_calls", "function_call", "content_filter", "error", "weird", ""]),
    _json,
)
_choice: Strategy = st.fixed_dictionaries(
    {"index": st.sampled_from([0, 0, 0, None, 1, "0"]), "delta": st.one_of(_delta, _delta, _delta, _json)},
    optional={"finish_reason": _finish, "usage": _usage},
)
_chunk: Strategy = st.fixed_dictionaries(
    {"choices": st.one_of(st.lists(_choice, min_size=1, max_size=2), st.lists(_choice, min_size=1, max_size=2), _json)},
    optional={
        "id": st.one_of(st.just("chatcmpl-1"), _maybe_text),
        "object": st.just("chat.completion.chunk"),
        "usage": _usage,
        "x_groq": st.one_of(_json, st.fixed_dictionaries({"usage": _usage})),
    },
)
#: Chunks that end the stream at once (errors), kept rare so that streams get deep.
_error_chunk: Strategy = st.one_of(
    st.fixed_dictionaries({"error": st.one_of(st.just({"message": "boom", "code": 502}), st.just("plain"), _json)}),
    st.fixed_dictionaries({"object": st.just("error"), "message": _maybe_text, "code": _json}),
)


def _message(value: object) -> ServerSentEvent:
    return ServerSentEvent("message", json.dumps(value).encode())


#: Event kinds and their weights: mostly well-formed chunks, so that streams get deep.
_EVENTS: list[Strategy] = [
    *([_chunk.map(_message)] * 12),
    _error_chunk.map(_message),
    _json.map(_message),
    st.just(ServerSentEvent("message", b"[DONE]")),
    st.binary(max_size=40).map(lambda data: ServerSentEvent("message", data)),
    st.binary(max_size=20).map(lambda data: ServerSentEvent("error", data)),
]
_event: Strategy = st.integers(0, len(_EVENTS) - 1).flatmap(lambda i: _EVENTS[i])


def _run(events: list[ServerSentEvent], compat: dict[str, Any] | None = None) -> list[Any]:
    """Drive the decoder the way the kit does; only StreamFailure may escape it."""
    target = OC.model(compat=compat)
    builder = MessageBuilder(target)
    builder.start()
    decoder = CompletionsDecoder(builder, target)
    try:
        for sse in events:
            decoder.on_event(sse)
            if builder.finished:
                break
        if not builder.finished:
            decoder.on_eof()
    except StreamFailure as failure:
        builder.fail(failure.info, failure.message)
    if not builder.finished:
        builder.fail(ErrorInfo.of("truncated"), "ended before a finish_reason")  # what the kit does at EOF
    return builder.drain()


def _check(events: list[Any]) -> None:
    assert validate_events(events) == []
    assert sum(event.type in ("done", "error") for event in events) == 1
    assert events[-1].type in ("done", "error")


@SETTINGS
@given(st.lists(_event, max_size=10), st.booleans())
def test_arbitrary_events_never_raise_and_end_in_one_terminal(events: list[ServerSentEvent], reliable: bool) -> None:
    _check(_run(events, {"finish_reason_reliable": reliable}))


@SETTINGS
@given(st.lists(_chunk, max_size=6), st.sampled_from(["stop", "tool_calls", "length", "weird"]))
def test_arbitrary_chunks_then_a_finish_are_grammar_clean(chunks: list[dict[str, Any]], finish: str) -> None:
    events = [_message(chunk) for chunk in chunks]
    last: dict[str, Any] = {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
    events += [_message(last), ServerSentEvent("message", b"[DONE]")]
    _check(_run(events))


@SETTINGS
@given(st.binary(max_size=400))
def test_arbitrary_bytes_through_the_framer_never_raise(body: bytes) -> None:
    framer = SSEDecoder()
    events = [*framer.feed(b"data: " + body), *framer.flush()]
    _check(_run(events))
