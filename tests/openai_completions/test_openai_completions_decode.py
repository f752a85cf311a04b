"""The pure decoder on synthetic chunks: one test per rule of ``decode.py`` (the recordings show the
same rules on real bytes)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from normalize import StopReason, TextContent, ThinkingContent, ToolCall, validate_events
from tests.adapters import OPENAI_COMPLETIONS as OC
from tests.adapters import calls, texts, thinking
from tests.openai_completions._oc import chunk, decode, sse_body, usage_chunk

pytestmark = pytest.mark.parallel


def _clean(result: Any) -> None:
    assert validate_events(result.events) == [], validate_events(result.events)


# ------------------------------------------------------------------------------------ framing


def test_null_and_non_object_chunks_are_skipped() -> None:
    body = sse_body("null", "42", '"text"', "[1, 2]", chunk({"content": "Hi"}), chunk(finish="stop"))
    result = decode(body)
    _clean(result)
    assert result.events[-1].type == "done"
    assert texts(result.message) == "Hi"


@pytest.mark.parametrize("delta", ["lost text", ["lost"], 42, True])
def test_a_delta_that_is_not_an_object_is_a_protocol_error(delta: object) -> None:
    bad = {"id": "c1", "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    result = decode(sse_body(chunk({"content": "Hi"}), bad, chunk(finish="stop")))
    _clean(result)
    assert result.failure is not None, f"delta {delta!r} was skipped"
    assert result.failure.info.kind == "protocol"
    assert result.failure.info.output_started
    assert texts(result.message) == "Hi"


def test_a_non_streaming_choice_message_in_the_stream_is_a_protocol_error() -> None:
    message = {"role": "assistant", "content": "full answer"}
    for choice in (
        {"index": 0, "message": message, "finish_reason": "stop"},
        {"index": 0, "delta": {}, "message": message, "finish_reason": "stop"},
        {"index": 0, "delta": None, "message": message, "finish_reason": None},
    ):
        result = decode(sse_body({"id": "c1", "choices": [choice]}))
        _clean(result)
        assert result.failure is not None, f"{choice} ended {result.message.stop_reason}"
        assert result.failure.info.kind == "protocol"
        assert "choice.message" in result.failure.message
    # A null or empty delta (a finishing chunk) is fine.
    empties: tuple[dict[str, Any] | None, ...] = (None, {})
    for empty in empties:
        finishing: dict[str, Any] = {"id": "c1", "choices": [{"index": 0, "delta": empty, "finish_reason": "stop"}]}
        assert decode(sse_body(chunk({"content": "x"}), finishing)).events[-1].type == "done"


def test_sse_comments_and_unknown_event_names_are_ignored_or_read_as_chunks() -> None:
    body = (
        b": OPENROUTER PROCESSING\n\n"
        + sse_body(chunk({"content": "a"}), done=False)
        + b": keep-alive\n\nevent: ping\ndata: ping\n\nevent: message\n"
        + sse_body(chunk({"content": "b"}, finish="stop"))
    )
    result = decode(body)
    _clean(result)
    assert texts(result.message) == "ab"


def test_the_response_id_is_the_first_non_empty_chunk_id() -> None:
    body = sse_body({**chunk({}), "id": ""}, chunk({"content": "x"}, id="chatcmpl-1"), chunk(finish="stop", id="other"))
    assert decode(body).message.response_id == "chatcmpl-1"


def test_choice_0_only_wherever_it_sits_in_the_list() -> None:
    other = {"index": 1, "delta": {"content": "ignored"}, "finish_reason": None}
    first = {"index": 0, "delta": {"content": "kept"}, "finish_reason": None}
    body = sse_body(
        {"id": "c", "choices": [other, first]}, {"id": "c", "choices": [{**other, "finish_reason": "stop"}]}
    )
    result = decode(body, eof=False)
    assert result.failure is not None, "choice 1 finishing does not finish choice 0"
    assert result.failure.info.kind == "truncated"
    result = decode(sse_body({"id": "c", "choices": [other, first]}, chunk(finish="stop")))
    assert texts(result.message) == "kept"


# ------------------------------------------------------------------------------------ the end


def test_finish_reason_then_done_reads_the_usage_chunk_between_them() -> None:
    body = sse_body(chunk({"content": "x"}, finish="stop"), usage_chunk(prompt_tokens=10, completion_tokens=3))
    result = decode(body)
    assert result.events[-1].type == "done"
    assert (result.message.usage.input, result.message.usage.output) == (10, 3)


def test_finish_reason_then_eof_is_a_success_once_the_usage_asked_for_came() -> None:
    with_usage = sse_body(
        chunk({"content": "x"}, finish="stop"), usage_chunk(prompt_tokens=5, completion_tokens=1), done=False
    )
    result = decode(with_usage)
    _clean(result)
    assert result.events[-1].type == "done"
    assert result.message.usage.output == 1
    # Usage in the finishing chunk counts too (Moonshot puts it in the choice).
    in_choice = chunk({"content": "x"}, finish="stop")
    in_choice["choices"][0]["usage"] = {"prompt_tokens": 5, "completion_tokens": 1}
    assert decode(sse_body(in_choice, done=False)).events[-1].type == "done"
    # A profile that does not ask for usage in the stream: the finish_reason and EOF are enough.
    no_usage = OC.model(compat={"usage_in_stream": False})
    assert decode(sse_body(chunk({"content": "x"}, finish="stop"), done=False), no_usage).events[-1].type == "done"


def test_eof_after_the_finish_reason_but_before_the_usage_asked_for_is_truncated() -> None:
    result = decode(sse_body(chunk({"content": "x"}, finish="stop"), done=False))
    _clean(result)
    assert result.failure is not None
    assert (result.failure.info.kind, result.failure.info.retryable) == ("truncated", True)
    assert "before the usage" in result.failure.message
    assert texts(result.message) == "x"  # what arrived is kept
    assert result.message.stop_reason == "error"
    # A [DONE] ends it done: the server sent its whole answer and may simply omit usage.
    assert decode(sse_body(chunk({"content": "x"}, finish="stop"))).events[-1].type == "done"


def test_done_without_a_finish_reason_is_truncated_unless_the_profile_says_none_comes() -> None:
    body = sse_body(chunk({"content": "x"}))
    result = decode(body)
    assert result.failure is not None
    assert (result.failure.info.kind, result.failure.info.retryable) == ("truncated", True)
    assert result.failure.info.output_started
    lax = decode(body, OC.model(compat={"finish_reason_reliable": False}))
    assert lax.events[-1].type == "done"
    assert lax.message.raw_stop_reason is None


def test_eof_without_either_is_left_to_the_kit() -> None:
    result = decode(sse_body(chunk({"content": "x"}), done=False), OC.model(compat={"finish_reason_reliable": False}))
    assert result.failure is None
    assert not result.finished  # the kit reports truncated


@pytest.mark.parametrize("later_id", ["r1", "", None])
def test_content_after_a_finish_reason_of_the_same_response_continues_it(later_id: str | None) -> None:
    # Gateways (one-api/new-api Gemini channels, older LiteLLM) put finish_reason "stop" on every chunk.
    later = chunk({"content": " and the rest"}, finish="stop", id=later_id)
    if later_id is None:
        del later["id"]
    body = sse_body(chunk({"content": "Hello"}, finish="stop", id="r1"), later)
    result = decode(body)
    _clean(result)
    assert result.failure is None
    assert result.events[-1].type == "done"
    assert texts(result.message) == "Hello and the rest"


def test_a_finish_reason_that_content_follows_is_not_final() -> None:
    # Content after the only finish_reason, then [DONE]: no finish_reason ends the message.
    cut = decode(
        sse_body(chunk({"content": "Hello"}, id="r1"), chunk(finish="stop", id="r1"), chunk({"content": "!"}, id="r1"))
    )
    assert cut.failure is not None
    assert cut.failure.info.kind == "truncated"
    assert texts(cut.message) == "Hello!", "nothing that arrived is dropped"
    # A tool call after a "stop" is executable only once its own finish_reason arrives.
    call = {"tool_calls": [{"index": 0, "id": "c", "function": {"name": "rm", "arguments": "{}"}}]}
    for tail, expected in (([], "error"), ([chunk(finish="tool_calls", id="r1")], "toolUse")):
        body = sse_body(chunk({"content": "Hello"}, finish="stop", id="r1"), chunk(call, id="r1"), *tail)
        late = decode(body)
        _clean(late)
        assert late.message.stop_reason == expected


def test_content_after_the_finish_reason_is_another_response_and_ends_this_one() -> None:
    body = sse_body(
        chunk({"content": "first"}, finish="stop", id="r1"),
        chunk({"content": ""}, finish="stop", id="r1"),  # OpenRouter repeats the finish with empty content
        usage_chunk(prompt_tokens=4, completion_tokens=1),
        chunk({"content": "second"}, id="r2"),
        chunk(finish="stop", id="r2"),
    )
    result = decode(body)
    _clean(result)
    assert texts(result.message) == "first"
    assert result.message.usage.output == 1


FINISHES: list[tuple[str, StopReason, str | None]] = [
    ("stop", "stop", None),
    ("end", "stop", None),
    ("eos_token", "stop", None),
    ("length", "length", None),
    ("max_tokens", "length", None),
    ("content_filter", "error", "content_filter"),
    ("network_error", "error", "network"),
    ("error", "error", "server"),
    ("banana", "error", "protocol"),
]


@pytest.mark.parametrize(("raw", "stop", "kind"), FINISHES)
def test_finish_reasons_map_to_stop_reasons(raw: str, stop: StopReason, kind: str | None) -> None:
    result = decode(sse_body(chunk({"content": "x"}), chunk(finish=raw)))
    _clean(result)
    assert result.message.stop_reason == stop
    assert result.message.raw_stop_reason == raw
    if kind is None:
        assert result.events[-1].type == "done"
    else:
        assert result.message.error_info is not None
        assert result.message.error_info.kind == kind
        assert raw in (result.message.error_message or "")


def test_a_profile_maps_its_own_finish_reasons() -> None:
    result = decode(
        sse_body(chunk({"content": "x"}), chunk(finish="banana")),
        OC.model(compat={"finish_reasons": {"banana": "stop"}}),
    )
    assert result.message.stop_reason == "stop"


def test_the_mistral_profile_reads_model_length_as_length_where_the_generic_one_calls_it_an_error() -> None:
    body = sse_body(chunk({"content": "x"}), chunk(finish="model_length"))
    assert decode(body, OC.model(compat={"profile": "mistral"})).message.stop_reason == "length"
    assert decode(body).message.stop_reason == "error"


def test_tool_calls_finish_with_complete_calls_and_stop_with_calls_upgrades() -> None:
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    assert decode(sse_body(chunk({"tool_calls": [call]}), chunk(finish="tool_calls"))).message.stop_reason == "toolUse"
    assert decode(sse_body(chunk({"tool_calls": [call]}), chunk(finish="stop"))).message.stop_reason == "toolUse"
    # function_call (legacy) and tool_use (Anthropic's word through a proxy) mean the same.
    assert decode(sse_body(chunk({"tool_calls": [call]}), chunk(finish="tool_use"))).message.stop_reason == "toolUse"


def test_tool_calls_finish_without_a_call_is_a_protocol_error() -> None:
    result = decode(sse_body(chunk({"content": "x"}), chunk(finish="tool_calls")))
    assert result.message.error_info is not None
    assert result.message.error_info.kind == "protocol"


def test_cut_off_arguments_with_tool_calls_are_truncated_and_with_length_stay_length() -> None:
    call = {"index": 0, "id": "call_1", "function": {"name": "write", "arguments": '{"path": "a.t'}}
    result = decode(sse_body(chunk({"tool_calls": [call]}), chunk(finish="tool_calls")))
    _clean(result)
    assert result.message.error_info is not None
    assert result.message.error_info.kind == "truncated"
    result = decode(sse_body(chunk({"tool_calls": [call]}), chunk(finish="length")))
    _clean(result)
    assert result.message.stop_reason == "length"
    assert calls(result.message)[0].arguments == {"path": "a.t"}  # a preview, never toolUse


# ------------------------------------------------------------------------------------ content


def test_think_tags_inside_content_stay_text() -> None:
    result = decode(sse_body(chunk({"content": "<think>hmm</think>"}), chunk({"content": "Answer"}, finish="stop")))
    assert texts(result.message) == "<think>hmm</think>Answer"
    assert thinking(result.message) == ""


def test_only_the_first_non_empty_reasoning_field_is_read() -> None:
    both = {"reasoning_content": "once", "reasoning": "once", "reasoning_text": "once"}
    result = decode(sse_body(chunk(both), chunk({"reasoning": "", "reasoning_text": " more"}), chunk(finish="stop")))
    assert thinking(result.message) == "once more"
    block = result.message.content[0]
    assert isinstance(block, ThinkingContent)
    assert block.thinking_signature == "reasoning_content"


def test_the_profile_chooses_the_reasoning_fields() -> None:
    body = sse_body(chunk({"reasoning": "a", "reasoning_content": "b"}), chunk(finish="stop"))
    result = decode(body, OC.model(compat={"reasoning_fields": ["reasoning"]}))
    assert thinking(result.message) == "a"


def test_reasoning_details_text_is_read_when_no_reasoning_field_is_sent() -> None:
    details = [{"type": "reasoning.text", "text": "step", "index": 0}, {"type": "reasoning.summary", "summary": " one"}]
    result = decode(sse_body(chunk({"reasoning_details": details}), chunk(finish="stop")))
    assert thinking(result.message) == "step one"
    with_field = decode(sse_body(chunk({"reasoning": "step", "reasoning_details": details}), chunk(finish="stop")))
    assert thinking(with_field.message) == "step"  # never twice


def test_text_and_thinking_form_sequential_blocks() -> None:
    body = sse_body(
        chunk({"reasoning_content": "think 1"}),
        chunk({"content": "say 1"}),
        chunk({"reasoning_content": "think 2"}),
        chunk({"content": "say 2"}, finish="stop"),
    )
    result = decode(body)
    _clean(result)
    assert [
        (b.type, b.thinking if isinstance(b, ThinkingContent) else getattr(b, "text", ""))
        for b in result.message.content
    ] == [
        ("thinking", "think 1"),
        ("text", "say 1"),
        ("thinking", "think 2"),
        ("text", "say 2"),
    ]
    ends = [event.type for event in result.events if event.type.endswith("_end")]
    assert ends == ["thinking_end", "text_end", "thinking_end", "text_end"]


def test_parallel_calls_interleaved_with_text_and_reasoning_in_one_chunk() -> None:
    delta = {
        "reasoning_content": "Two lookups.",
        "content": "Checking both.",
        "tool_calls": [
            {"index": 0, "id": "call_a", "type": "function", "function": {"name": "weather", "arguments": '{"city":'}},
            {"index": 1, "id": "call_b", "type": "function", "function": {"name": "time", "arguments": '{"tz":'}},
            {"index": 0, "function": {"arguments": ' "Paris"}'}},
        ],
    }
    tail = {"tool_calls": [{"index": 1, "function": {"arguments": ' "CET"}'}}]}
    result = decode(sse_body(chunk(delta), chunk(tail, finish="tool_calls")))
    _clean(result)
    assert [block.type for block in result.message.content] == ["thinking", "text", "toolCall", "toolCall"]
    assert [(c.id, c.name, c.arguments) for c in calls(result.message)] == [
        ("call_a", "weather", {"city": "Paris"}),
        ("call_b", "time", {"tz": "CET"}),
    ]
    assert result.message.stop_reason == "toolUse"


def test_refusal_is_shown_and_ends_as_a_refusal_error() -> None:
    result = decode(sse_body(chunk({"refusal": "I can't "}), chunk({"refusal": "help."}, finish="stop")))
    _clean(result)
    assert texts(result.message) == "I can't help."
    info = result.message.error_info
    assert info is not None
    assert (info.kind, info.retryable) == ("refusal", False)
    assert result.message.error_message == "The model refused: I can't help."


def test_mistral_content_parts() -> None:
    parts = [
        {"type": "thinking", "thinking": [{"type": "text", "text": "hm"}]},
        {"type": "reference", "reference_ids": [1]},
        {"type": "text", "text": "ok"},
    ]
    result = decode(sse_body(chunk({"content": parts}), chunk(finish="stop")))
    _clean(result)
    assert [block.type for block in result.message.content] == ["thinking", "text"]
    assert (thinking(result.message), texts(result.message)) == ("hm", "ok")


@pytest.mark.parametrize("content", [{"text": "x"}, 42, True])
def test_content_that_is_neither_text_nor_parts_is_a_protocol_error(content: object) -> None:
    result = decode(sse_body(chunk({"content": content}), chunk(finish="stop")))
    assert result.failure is not None
    assert result.failure.info.kind == "protocol"


# ------------------------------------------------------------------------------------ tool calls


def _call(
    index: int | None = None, id: str | None = None, name: str | None = None, arguments: Any = None
) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "function", "function": {}}
    if index is not None:
        entry["index"] = index
    if id is not None:
        entry["id"] = id
    if name is not None:
        entry["function"]["name"] = name
    if arguments is not None:
        entry["function"]["arguments"] = arguments
    return entry


def _decode_calls(*deltas: list[dict[str, Any]], finish: str = "tool_calls") -> Any:
    chunks = [chunk({"tool_calls": entries}) for entries in deltas]
    return decode(sse_body(*chunks, chunk(finish=finish)))


def test_an_id_that_changes_mid_stream_keeps_the_first() -> None:
    result = _decode_calls(
        [_call(0, "call_first", "f", '{"a"')],
        [_call(0, "call_second", None, ": 1}")],
    )
    _clean(result)
    assert [(c.id, c.arguments) for c in calls(result.message)] == [("call_first", {"a": 1})]


def test_missing_ids_are_generated_and_unique() -> None:
    result = _decode_calls([_call(0, None, "f", "{}"), _call(1, None, "g", "{}")])
    _clean(result)
    ids = [c.id for c in calls(result.message)]
    assert len(set(ids)) == 2
    assert all(ids)
    again = _decode_calls([_call(0, None, "f", "{}"), _call(1, None, "g", "{}")])
    assert [c.id for c in calls(again.message)] == ids, "generated ids are deterministic"


def test_duplicate_vendor_ids_stay_unique() -> None:
    result = _decode_calls([_call(0, "dup", "f", "{}"), _call(1, "dup", "g", "{}")])
    ids = [c.id for c in calls(result.message)]
    assert len(set(ids)) == 2


def test_without_index_calls_are_found_by_id_and_continued_when_neither_is_given() -> None:
    result = _decode_calls(
        [_call(None, "a", "f", '{"x":'), _call(None, "b", "g", '{"y":')],
        [_call(None, "a", None, " 1}"), _call(None, "b", None, " 2")],
        [_call(None, None, None, "}")],
    )
    _clean(result)
    assert [(c.id, c.arguments) for c in calls(result.message)] == [("a", {"x": 1}), ("b", {"y": 2})]


def test_a_server_numbering_every_call_0_gets_separate_calls() -> None:
    result = _decode_calls([_call(0, "call_a", "f", '{"n": 1}')], [_call(0, "call_b", "g", '{"n": 2}')])
    _clean(result)
    assert [(c.id, c.name, c.arguments) for c in calls(result.message)] == [
        ("call_a", "f", {"n": 1}),
        ("call_b", "g", {"n": 2}),
    ]


def test_fragments_before_the_name_are_held_and_a_call_never_named_is_a_protocol_error() -> None:
    result = _decode_calls([_call(0, "call_a", None, '{"q": ')], [_call(0, None, "search", '"x"}')])
    _clean(result)
    assert [(c.name, c.arguments) for c in calls(result.message)] == [("search", {"q": "x"})]
    nameless = _decode_calls([_call(0, "call_a", None, "{}")])
    assert nameless.failure is not None
    assert nameless.failure.info.kind == "protocol"
    assert "never got a name" in nameless.failure.message


def test_arguments_sent_as_an_object_are_kept() -> None:
    result = _decode_calls([_call(0, "c", "f", {"city": "Oslo"})])
    assert calls(result.message)[0].arguments == {"city": "Oslo"}


@pytest.mark.parametrize("arguments", ["[1, 2]", "42", '"text"', "{nope"])
def test_arguments_that_are_not_a_json_object_never_reach_tool_use(arguments: str) -> None:
    result = _decode_calls([_call(0, "c", "f", arguments)])
    _clean(result)
    assert result.message.stop_reason == "error"


def test_the_legacy_function_call_is_one_call() -> None:
    body = sse_body(
        chunk({"function_call": {"name": "lookup", "arguments": '{"k":'}}),
        chunk({"function_call": {"arguments": ' "v"}'}}),
        chunk(finish="function_call"),
    )
    result = decode(body)
    _clean(result)
    assert [(c.name, c.arguments) for c in calls(result.message)] == [("lookup", {"k": "v"})]
    assert result.message.stop_reason == "toolUse"


@pytest.mark.parametrize("entries", [["not an object"], {"index": 0}, [{"type": "custom", "custom": {"name": "g"}}]])
def test_tool_call_deltas_that_cannot_be_placed_are_protocol_errors(entries: Any) -> None:
    result = decode(sse_body(chunk({"tool_calls": entries}), chunk(finish="tool_calls")))
    assert result.failure is not None
    assert result.failure.info.kind == "protocol"


def test_encrypted_reasoning_is_attached_to_its_call_also_when_it_arrives_first() -> None:
    early = {"type": "reasoning.encrypted", "id": "call_a", "data": "ENC-A", "format": "google-gemini-v1", "index": 0}
    late = {"type": "reasoning.encrypted", "id": "call_b", "data": "ENC-B", "index": 1}
    orphan = {"type": "reasoning.encrypted", "id": "rs_nothing", "data": "ENC-X"}
    body = sse_body(
        chunk({"reasoning_details": [early, orphan]}),
        chunk({"tool_calls": [_call(0, "call_a", "f", "{}"), _call(1, "call_b", "g", "{}")]}),
        chunk({"reasoning_details": [late]}),
        chunk(finish="tool_calls"),
    )
    result = decode(body)
    _clean(result)
    signatures = {c.id: c.thought_signature for c in calls(result.message)}
    assert json.loads(signatures["call_a"] or "") == early
    assert json.loads(signatures["call_b"] or "") == late
    assert "ENC-X" not in json.dumps(result.message.to_json())


# ------------------------------------------------------------------------------------ usage


@pytest.mark.parametrize(
    ("where", "usage", "expected"),
    [
        (
            "chunk",
            {"prompt_tokens": 100, "completion_tokens": 30, "prompt_tokens_details": {"cached_tokens": 40}},
            (60, 30, 40, 0),
        ),
        ("chunk", {"prompt_tokens": 100, "completion_tokens": 30, "prompt_cache_hit_tokens": 25}, (75, 30, 25, 0)),
        ("chunk", {"prompt_tokens": 100, "completion_tokens": 30, "cached_tokens": 10}, (90, 30, 10, 0)),
        (
            "chunk",
            {
                "prompt_tokens": 100,
                "completion_tokens": 30,
                "prompt_tokens_details": {"cached_tokens": 20, "cache_write_tokens": 50},
            },
            (30, 30, 20, 50),
        ),
        ("choice", {"prompt_tokens": 9, "completion_tokens": 12, "cached_tokens": 4}, (5, 12, 4, 0)),
        ("x_groq", {"prompt_tokens": 7, "completion_tokens": 2}, (7, 2, 0, 0)),
        # Hostile or broken counts: cache above the prompt, negative numbers, strings.
        (
            "chunk",
            {"prompt_tokens": 10, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 99}},
            (0, 1, 10, 0),
        ),
        ("chunk", {"prompt_tokens": -5, "completion_tokens": -1}, (0, 0, 0, 0)),
        ("chunk", {"prompt_tokens": "10", "completion_tokens": 2}, (0, 2, 0, 0)),
    ],
)
def test_usage_sources_and_the_contract(where: str, usage: dict[str, Any], expected: tuple[int, int, int, int]) -> None:
    last: dict[str, Any]
    if where == "chunk":
        last = usage_chunk(**usage)
    elif where == "choice":
        last = chunk({}, finish="stop")  # Moonshot puts it in the finishing choice
        last["choices"][0]["usage"] = usage
    else:
        last = {"id": "c", "choices": [], "x_groq": {"id": "req", "usage": usage}}
    result = decode(sse_body(chunk({"content": "x"}, finish="stop"), last))
    _clean(result)
    got = result.message.usage
    assert (got.input, got.output, got.cache_read, got.cache_write) == expected
    assert got.total_tokens == sum(expected)


def test_output_already_includes_reasoning_and_reasoning_never_exceeds_it() -> None:
    usage = {"prompt_tokens": 5, "completion_tokens": 10, "completion_tokens_details": {"reasoning_tokens": 11}}
    result = decode(sse_body(chunk({"content": "x"}, finish="length"), usage_chunk(**usage)))
    _clean(result)
    assert (result.message.usage.output, result.message.usage.reasoning) == (10, 10)


def test_a_later_lower_output_lowers_the_reasoning_breakdown_too() -> None:
    # Found by the fuzz: reasoning stated once, then an output below it without restating it.
    first = usage_chunk(prompt_tokens=3, completion_tokens=9, completion_tokens_details={"reasoning_tokens": 8})
    result = decode(sse_body(chunk({"content": "x"}, finish="stop"), first, usage_chunk(completion_tokens=2)))
    _clean(result)
    assert (result.message.usage.output, result.message.usage.reasoning) == (2, 2)


def test_the_last_usage_wins_and_null_usage_is_ignored() -> None:
    body = sse_body(
        chunk({"content": "x"}, usage={"prompt_tokens": 5, "completion_tokens": 1}),
        chunk({"content": "y"}, finish="stop", usage=None),
        usage_chunk(prompt_tokens=5, completion_tokens=2),
        chunk({}, usage=None),
    )
    result = decode(body)
    assert (result.message.usage.input, result.message.usage.output) == (5, 2)


def test_usage_is_priced_from_the_model() -> None:
    from normalize.model import ModelCost

    priced = OC.model(cost=ModelCost(input=2.0, output=8.0, cache_read=0.5))
    usage = {
        "prompt_tokens": 1_000_000,
        "completion_tokens": 1_000_000,
        "prompt_tokens_details": {"cached_tokens": 500_000},
    }
    result = decode(sse_body(chunk({"content": "x"}, finish="stop"), usage_chunk(**usage)), priced)
    assert result.message.usage.cost.total == pytest.approx(1.0 + 8.0 + 0.25)


# ------------------------------------------------------------------------------------ errors


def test_an_error_chunk_mid_stream_keeps_the_text_and_its_kind() -> None:
    error = {
        "error": {"message": "This model's maximum context length is 4096 tokens", "type": "invalid_request_error"}
    }
    result = decode(sse_body(chunk({"content": "partial"}), error))
    _clean(result)
    assert result.failure is not None
    assert (result.failure.info.kind, result.failure.info.output_started) == ("context_overflow", True)
    assert texts(result.message) == "partial"


def test_an_error_event_with_a_plain_text_body() -> None:
    result = decode(b"event: error\ndata: upstream went away\n\n")
    assert result.failure is not None
    assert result.failure.info.kind == "server"
    assert "upstream went away" in result.failure.message


def test_a_null_error_field_is_not_an_error() -> None:
    result = decode(sse_body(chunk({"content": "x"}, error=None), chunk(finish="stop")))
    assert result.events[-1].type == "done"


def test_blocks_are_text_thinking_and_calls_only() -> None:
    result = decode(
        sse_body(
            chunk({"reasoning": "r", "content": "t", "tool_calls": [_call(0, "c", "f", "{}")]}),
            chunk(finish="tool_calls"),
        )
    )
    assert [type(block) for block in result.message.content] == [ThinkingContent, TextContent, ToolCall]


def test_an_error_chunk_keeps_the_usage_it_carries() -> None:
    # OpenRouter ends a failed stream with a chunk holding both the error and the usage so far.
    failing = chunk(
        error={"code": 400, "message": "Token limit reached"}, usage={"prompt_tokens": 43, "completion_tokens": 10}
    )
    result = decode(sse_body(chunk({"content": "Hi"}), failing))
    _clean(result)
    assert result.failure is not None
    assert result.message.stop_reason == "error"
    assert (result.message.usage.input, result.message.usage.output) == (43, 10)
    assert texts(result.message) == "Hi"


# ------------------------------------------------------------ what the shared chat-chunk decoder refuses


@pytest.mark.parametrize(
    "content",
    [
        [{"type": "text", "text": 5}],
        [42],
        [{"type": "thinking", "thinking": 5}],
        [{"type": "thinking", "thinking": [{"type": "text", "text": 7}]}],
    ],
)
def test_content_parts_that_cannot_be_placed_are_protocol_errors_not_silent_drops(content: object) -> None:
    result = decode(sse_body(chunk({"content": "Hi"}), chunk({"content": content}), chunk(finish="stop")))
    assert result.failure is not None
    assert result.failure.info.kind == "protocol"


@pytest.mark.parametrize("choices", [[5], "zz"])
def test_choices_that_are_not_choice_objects_are_protocol_errors(choices: object) -> None:
    bad = {"id": "chatcmpl-test", "object": "chat.completion.chunk", "choices": choices}
    result = decode(sse_body(chunk({"content": "Hi"}), bad, chunk(finish="stop")))
    assert result.failure is not None
    assert result.failure.info.kind == "protocol"


def test_a_non_streaming_message_is_a_protocol_error_and_its_usage_is_kept() -> None:
    whole = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13},
    }
    result = decode(sse_body(whole))
    assert result.failure is not None
    assert result.failure.info.kind == "protocol"
    assert (result.message.usage.input, result.message.usage.output) == (10, 3)


def test_a_length_is_not_hidden_by_a_later_stop() -> None:
    result = decode(sse_body(chunk({"content": "Hi"}), chunk(finish="length"), chunk(finish="stop")))
    assert result.message.stop_reason == "length"
