"""The Mistral decoder alone (no HTTP): content strings and chunk lists, thinking and its signature, tool
calls whole and in pieces, ids missing or ``"null"``, finish reasons, usage with cached tokens, error
chunks, and the layouts it reads off the bytes (which must read exactly as a full parse does)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from normalize import TextContent, ThinkingContent, ToolCall, validate_events
from streamfns.mistral import generated_call_id, usage_fields
from streamfns.mistral.decode import unpadded
from tests.adapters import calls, texts, thinking
from tests.mistral._mistral import chunk, decode, sse_body

pytestmark = pytest.mark.parallel


def think(piece: str, **extra: Any) -> dict[str, Any]:
    return {"type": "thinking", "thinking": [{"type": "text", "text": piece}], **extra}


def entry(name: str | None = None, arguments: Any = None, **fields: Any) -> dict[str, Any]:
    function: dict[str, Any] = {}
    if name is not None:
        function["name"] = name
    if arguments is not None:
        function["arguments"] = arguments
    return {**fields, "function": function}


def usage(prompt: int = 10, completion: int = 5, **extra: Any) -> dict[str, Any]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion, **extra}


# -- text and thinking ------------------------------------------------------------------------------


def test_text_as_a_string_and_as_text_chunks() -> None:
    body = sse_body(
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": "Hel"}),
        chunk({"content": [{"type": "text", "text": "lo"}, {"type": "reference", "reference_ids": [1]}]}),
        chunk({"content": "!"}, finish="stop"),
    )
    decoded = decode(body)
    assert decoded.message.content == [TextContent(text="Hello!")]
    assert decoded.message.stop_reason == "stop"
    assert validate_events(decoded.events) == []


def test_thinking_chunks_switch_blocks_in_the_order_sent() -> None:
    body = sse_body(
        chunk({"content": [think("Let me")]}),
        chunk({"content": [think(" think.", closed=True), {"type": "text", "text": "Answer"}]}),
        chunk({"content": [think("Again.")]}),
        chunk({"content": " done"}, finish="stop"),
    )
    message = decode(body).message
    assert message.content == [
        ThinkingContent(thinking="Let me think."),
        TextContent(text="Answer"),
        ThinkingContent(thinking="Again."),
        TextContent(text=" done"),
    ]


def test_a_thinking_signature_is_kept_with_its_block() -> None:
    body = sse_body(chunk({"content": [think("Hmm.", signature="sig-1")]}), chunk({"content": "ok"}, finish="stop"))
    first = decode(body).message.content[0]
    assert first == ThinkingContent(thinking="Hmm.", thinking_signature="sig-1")


def test_thinking_given_as_a_string_and_references_inside_thinking() -> None:
    inner = [{"type": "text", "text": "a"}, {"type": "reference", "reference_ids": [2]}, {"type": "text", "text": "b"}]
    body = sse_body(
        chunk({"content": [{"type": "thinking", "thinking": "plain "}]}),
        chunk({"content": [{"type": "thinking", "thinking": inner}]}, finish="stop"),
    )
    assert thinking(decode(body).message) == "plain ab"


# -- tool calls -------------------------------------------------------------------------------------


def test_whole_calls_without_index_or_type_are_told_apart_by_id() -> None:
    body = sse_body(
        chunk({"tool_calls": [entry("a", '{"x": 1}', id="AAAAAAAAA"), entry("b", {"y": [2]}, id="BBBBBBBBB")]}),
        chunk({}, finish="tool_calls", usage=usage()),
    )
    message = decode(body).message
    assert message.content == [
        ToolCall(id="AAAAAAAAA", name="a", arguments={"x": 1}),
        ToolCall(id="BBBBBBBBB", name="b", arguments={"y": [2]}),  # arguments sent as an object
    ]
    assert message.stop_reason == "toolUse"


def test_a_call_in_pieces_by_index_and_without_index() -> None:
    body = sse_body(
        chunk({"content": "Let me look."}),
        chunk({"tool_calls": [entry("lookup", "", id="abcDEF123", index=0)]}),
        chunk({"tool_calls": [entry(arguments='{"q": ', index=0)]}),
        chunk({"tool_calls": [{"id": "null", "function": {"name": "", "arguments": '"pa'}, "index": 0}]}),
        chunk({"tool_calls": [entry(arguments='ris"}')]}),  # neither id nor index: the last call
        chunk({}, finish="tool_calls"),
    )
    decoded = decode(body)
    assert decoded.message.content == [
        TextContent(text="Let me look."),
        ToolCall(id="abcDEF123", name="lookup", arguments={"q": "paris"}),
    ]
    assert validate_events(decoded.events) == []


def test_a_server_numbering_every_call_zero_starts_a_new_call_with_each_new_id_and_name() -> None:
    body = sse_body(
        chunk({"tool_calls": [entry("a", "{}", id="111111111", index=0)]}),
        chunk({"tool_calls": [entry("b", '{"k"', id="222222222", index=0)]}),
        chunk({"tool_calls": [entry(arguments=": 1}", index=0)]}),
        chunk({}, finish="tool_calls"),
    )
    assert [(c.id, c.name, c.arguments) for c in calls(decode(body).message)] == [
        ("111111111", "a", {}),
        ("222222222", "b", {"k": 1}),
    ]


def test_calls_without_an_id_get_nine_alphanumerics_derived_from_the_response() -> None:
    body = sse_body(
        chunk({"tool_calls": [entry("a", "{}", id="null"), entry("b", "{}")]}, id="resp-1"),
        chunk({}, finish="tool_calls"),
    )
    ids = [c.id for c in calls(decode(body).message)]
    assert ids == [generated_call_id("resp-1", 0), generated_call_id("resp-1", 1)]
    assert all(len(i) == 9 and i.isalnum() for i in ids)
    assert ids[0] != ids[1]
    assert [c.id for c in calls(decode(body).message)] == ids  # the same bytes, the same ids
    other = sse_body(chunk({"tool_calls": [entry("a", "{}")]}, id="resp-2"), chunk({}, finish="tool_calls"))
    assert calls(decode(other).message)[0].id != ids[0]


def test_fragments_before_the_name_wait_for_it() -> None:
    body = sse_body(
        chunk({"tool_calls": [entry(arguments='{"a":', id="XXXXXXXXX", index=0)]}),
        chunk({"tool_calls": [entry("late", " 1}", index=0)]}),
        chunk({}, finish="tool_calls"),
    )
    assert calls(decode(body).message) == [ToolCall(id="XXXXXXXXX", name="late", arguments={"a": 1})]


def test_a_call_that_never_gets_a_name_is_a_protocol_error() -> None:
    body = sse_body(chunk({"tool_calls": [entry(arguments="{}", id="XXXXXXXXX")]}), chunk({}, finish="tool_calls"))
    decoded = decode(body)
    assert decoded.failure is not None
    assert decoded.failure.info.kind == "protocol"
    assert "never got a name" in decoded.failure.message


def test_cut_arguments_never_reach_a_tool_use() -> None:
    body = sse_body(chunk({"tool_calls": [entry("a", '{"x": ', id="XXXXXXXXX")]}), chunk({}, finish="tool_calls"))
    message = decode(body).message
    assert message.stop_reason == "error"
    assert message.error_info is not None
    assert message.error_info.kind == "truncated"


@pytest.mark.parametrize("bad", ["not a list", [1], [{"function": {"name": "a"}, "index": 0}, "x"]])
def test_tool_calls_that_are_not_entries_are_protocol_errors(bad: Any) -> None:
    decoded = decode(sse_body(chunk({"tool_calls": bad}), chunk({}, finish="stop")))
    assert decoded.failure is not None
    assert decoded.failure.info.kind == "protocol"


# -- how the stream ends ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "stop", "kind"),
    [
        ("stop", "stop", None),
        ("length", "length", None),
        ("model_length", "length", None),
        ("error", "error", "server"),
        ("content_filter", "error", "protocol"),
    ],
)
def test_finish_reasons(raw: str, stop: str, kind: str | None) -> None:
    message = decode(sse_body(chunk({"content": "hi"}, finish=raw))).message
    assert (message.stop_reason, message.raw_stop_reason) == (stop, raw)
    if kind is None:
        assert message.error_info is None
    else:
        assert message.error_info is not None
        assert (message.error_info.kind, message.error_info.code) == (kind, raw)
        assert raw in (message.error_message or "")


def test_tool_calls_finish_without_a_call_is_a_protocol_error() -> None:
    message = decode(sse_body(chunk({"content": "hi"}, finish="tool_calls"))).message
    assert message.error_info is not None
    assert message.error_info.kind == "protocol"


def test_the_first_failure_stands_whatever_follows() -> None:
    message = decode(sse_body(chunk({"content": "a"}, finish="error"), chunk({}, finish="stop"))).message
    assert (message.stop_reason, message.raw_stop_reason) == ("error", "error")


def test_done_without_a_finish_reason_is_truncated() -> None:
    decoded = decode(sse_body(chunk({"content": "partial"})))
    assert decoded.failure is not None
    assert decoded.failure.info.kind == "truncated"
    assert decoded.failure.info.retryable


def test_eof_after_the_finish_reason_completes_and_eof_before_it_concludes_nothing() -> None:
    finished = decode(sse_body(chunk({"content": "a"}, finish="stop", usage=usage()), done=False))
    assert finished.message.stop_reason == "stop"
    assert finished.message.usage.output == 5
    cut = decode(sse_body(chunk({"content": "a"}), done=False))
    assert not cut.finished  # the kit reports truncated


def test_usage_after_the_finish_reason_is_kept() -> None:
    body = sse_body(chunk({"content": "a"}, finish="stop"), {"id": "cmpl-test", "choices": [], "usage": usage(7, 3)})
    assert (decode(body).message.usage.input, decode(body).message.usage.output) == (7, 3)


# -- usage ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (usage(100, 20), (100, 0, 20)),
        (usage(100, 20, prompt_tokens_details={"cached_tokens": 60}), (40, 60, 20)),
        (usage(100, 20, num_cached_tokens=30), (70, 30, 20)),
        (usage(100, 20, num_cached_tokens=30, prompt_tokens_details={"cached_tokens": 50}), (50, 50, 20)),
        (usage(10, 20, num_cached_tokens=64), (0, 10, 20)),  # more cached than prompted: capped
    ],
)
def test_cached_tokens_are_cache_reads_outside_the_input(given: dict[str, Any], expected: tuple[int, int, int]) -> None:
    fields = usage_fields(given)
    assert (fields["input"], fields["cache_read"], fields["output"]) == expected
    message = decode(sse_body(chunk({"content": "a"}, finish="stop", usage=given))).message
    assert (message.usage.input, message.usage.cache_read, message.usage.output) == expected


# -- errors and malformed events ----------------------------------------------------------------------


def test_a_flat_error_chunk_mid_stream() -> None:
    error = {"object": "error", "message": "Rate limit exceeded", "type": "rate_limited", "param": None, "code": "1300"}
    decoded = decode(sse_body(chunk({"content": "partial"}), error))
    assert decoded.failure is not None
    assert (decoded.failure.info.kind, decoded.failure.info.code) == ("rate_limit", "1300")
    assert decoded.message.stop_reason == "error"
    assert texts(decoded.message) == "partial"
    assert decoded.failure.message == "Mistral stream error (rate_limited): Rate limit exceeded"


def test_an_event_error_with_text() -> None:
    decoded = decode(b"event: error\ndata: upstream went away\n\n")
    assert decoded.failure is not None
    assert decoded.failure.info.kind == "server"
    assert "upstream went away" in decoded.failure.message


@pytest.mark.parametrize("data", [b"[1, 2]", b"42", b'"text"'])
def test_an_event_that_is_not_an_object_carries_nothing(data: bytes) -> None:
    # The chat-completions rule, shared: a value that is not an object names no choice to place.
    decoded = decode(
        sse_body(chunk({"content": "a"}), b"data: " + data + b"\n\n", chunk({"content": "b"}, finish="stop"))
    )
    assert (texts(decoded.message), decoded.message.stop_reason) == ("ab", "stop")


def test_null_events_and_pings_carry_nothing() -> None:
    body = b"data: null\n\nevent: ping\ndata: {}\n\n" + sse_body(chunk({"content": "a"}, finish="stop"))
    assert decode(body).message.content == [TextContent(text="a")]


def test_a_delta_or_content_of_the_wrong_type_is_a_protocol_error() -> None:
    for bad in (chunk({"content": 5}), {"id": "x", "choices": [{"index": 0, "delta": "text"}]}):
        decoded = decode(sse_body(bad))
        assert decoded.failure is not None
        assert decoded.failure.info.kind == "protocol"


def test_the_response_id_and_model_come_from_the_first_chunk() -> None:
    message = decode(sse_body(chunk({"content": "a"}, id="first"), chunk({}, finish="stop", id="second"))).message
    assert (message.response_id, message.response_model) == ("first", "mistral-small-latest")


def test_choices_other_than_zero_are_ignored() -> None:
    other = {"index": 1, "delta": {"content": "other"}, "finish_reason": None}
    body = sse_body({**chunk({"content": "mine"}), "choices": [other, chunk({"content": "mine"})["choices"][0]]})
    assert texts(decode(body + sse_body(chunk({}, finish="stop"))).message) == "mine"


# -- layouts read off the bytes -----------------------------------------------------------------------


def _padded(delta: dict[str, Any], n: int) -> bytes:
    value = {**chunk(delta), "p": "abcdefghijklmnopqrstuvwxyz"[: 1 + n % 20]}
    return f"data: {json.dumps(value, separators=(',', ':'))}\n\n".encode()


def test_repeated_layouts_read_exactly_what_a_full_parse_reads() -> None:
    # Many chunks of one layout (learned once, then read off the bytes), with escapes, non-ASCII text and
    # a changing padding, switching between text, thinking and a call's fragments.
    words = ['a "quoted" ', "naïve \\ ", "日本 ", "tab\t", "\u2028x "]
    parts = [_padded({"content": words[i % len(words)]}, i) for i in range(30)]
    parts += [_padded({"content": [think(words[i % len(words)], closed=True)]}, i) for i in range(30)]
    parts += [_padded({"content": [{"type": "text", "text": words[i % len(words)]}]}, i) for i in range(30)]
    parts += [_padded({"tool_calls": [entry("f", "", id="AAAAAAAAA", index=0)]}, 0)]
    fragments = ['{"v": "', *('ab\\"c' for _ in range(30)), '"}']
    parts += [
        _padded({"tool_calls": [entry("f", fragment, id="AAAAAAAAA", index=0)]}, i)
        for i, fragment in enumerate(fragments)
    ]
    parts += [_padded({"tool_calls": [entry(arguments="", index=0)]}, 0)]
    body = b"".join(parts) + sse_body(chunk({}, finish="tool_calls"))
    message = decode(body).message
    joined = "".join(words[i % len(words)] for i in range(30))
    assert message.content == [
        TextContent(text=joined),
        ThinkingContent(thinking=joined),
        TextContent(text=joined),
        ToolCall(id="AAAAAAAAA", name="f", arguments={"v": 'ab"c' * 30}),
    ]


def test_a_chunk_like_the_learned_one_but_for_another_call_goes_to_that_call() -> None:
    # Fragments for call 0 repeat one layout (read off the bytes after the first); the same layout with
    # index 1 is another call's fragment, and must reach it.
    def fragment(piece: str, index: int) -> dict[str, Any]:
        return chunk({"tool_calls": [entry(arguments=piece, index=index)]})

    body = sse_body(
        chunk({"tool_calls": [entry("a", "", id="AAAAAAAAA", index=0), entry("b", "", id="BBBBBBBBB", index=1)]}),
        *(fragment(piece, 0) for piece in ('{"a"', ": ", "1", "}")),
        *(fragment(piece, 1) for piece in ('{"b"', ": ", "2", "}")),
        chunk({}, finish="tool_calls"),
    )
    assert [(c.name, c.arguments) for c in calls(decode(body).message)] == [("a", {"a": 1}), ("b", {"b": 2})]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b'{"a":1,"p":"abcdef"}', b'{"a":1}'),
        (b'{"a":1,"p":""}', b'{"a":1}'),
        (b'{"a":1}', b'{"a":1}'),
        (b'{"a":1,"p":"ab\\"c"}', b'{"a":1,"p":"ab\\"c"}'),  # an escape: not a plain padding
        (b'{"a":1,"p":"x","b":2}', b'{"a":1,"p":"x","b":2}'),  # a member after it: not the last
        (b'{"a":{"p":"x"}}', b'{"a":{"p":"x"}}'),  # not a member of the top-level object
        (b'{"a":1,"p":"x"} ', b'{"a":1,"p":"x"} '),
    ],
)
def test_unpadded_cuts_only_a_plain_last_padding(data: bytes, expected: bytes) -> None:
    assert unpadded(data) == expected


def test_what_follows_a_padding_is_read_even_after_a_learned_layout() -> None:
    # A layout learned without the padding must not hide members that follow a "p" that is not the last.
    parts = [_padded({"content": f"w{i} "}, i) for i in range(6)]
    smuggled = {**chunk({"content": "end"}), "p": "abc", "usage": usage(3, 2)}
    compact = f"data: {json.dumps(smuggled, separators=(',', ':'))}\n\n".encode()
    body = b"".join([*parts, compact]) + sse_body(chunk({}, finish="stop"))
    message = decode(body).message
    assert texts(message) == "w0 w1 w2 w3 w4 w5 end"
    assert (message.usage.input, message.usage.output) == (3, 2)


# -- what the chat-completions decoder guards, Mistral included -----------------------------------------


def test_a_non_streaming_message_is_a_protocol_error_not_an_empty_stop() -> None:
    # A server answering with the non-streaming shape: its content cannot be placed, and dropping it
    # would end an empty answer as a success.
    whole = {
        "id": "cmpl-test",
        "object": "chat.completion",
        "model": "mistral-small-latest",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello world"}, "finish_reason": "stop"}],
        "usage": usage(5, 2),
    }
    for body in (sse_body(whole), sse_body(whole, done=False)):
        decoded = decode(body)
        assert decoded.failure is not None
        assert decoded.failure.info.kind == "protocol"
        assert "choice.message" in decoded.failure.message
        assert decoded.message.stop_reason == "error"
        assert (decoded.message.usage.input, decoded.message.usage.output) == (5, 2)


@pytest.mark.parametrize(
    ("last", "kind"),
    [
        ({"object": "error", "message": "Internal", "type": "internal_server_error", "usage": usage(10, 3)}, "server"),
        ({"error": {"message": "upstream", "type": "server_error"}, "usage": usage(10, 3)}, "server"),
        (chunk({"content": 5}, finish="stop", usage=usage(10, 3)), "protocol"),
        (chunk({}, finish="stop", usage=usage(10, 3), choices=[7]), "protocol"),
    ],
    ids=["flat-error", "nested-error", "bad-delta", "bad-choice"],
)
def test_the_usage_of_the_chunk_that_ends_the_stream_in_an_error_is_kept(last: dict[str, Any], kind: str) -> None:
    decoded = decode(sse_body(chunk({"content": "partial"}), last))
    assert decoded.failure is not None
    assert decoded.failure.info.kind == kind
    assert texts(decoded.message) == "partial"
    assert (decoded.message.usage.input, decoded.message.usage.output) == (10, 3)


def test_content_of_another_response_after_the_finish_ends_the_message_there() -> None:
    body = sse_body(
        chunk({"content": "mine"}),
        chunk({}, finish="stop"),
        chunk({"content": " spliced"}, id="another-response"),
        chunk({}, finish="stop", id="another-response"),
    )
    decoded = decode(body)
    assert (texts(decoded.message), decoded.message.stop_reason) == ("mine", "stop")
    assert decoded.message.response_id == "cmpl-test"


@pytest.mark.parametrize("cut", ["length", "model_length"])
def test_a_length_is_not_hidden_by_a_later_stop(cut: str) -> None:
    message = decode(sse_body(chunk({"content": "a"}), chunk({}, finish=cut), chunk({}, finish="stop"))).message
    assert (message.stop_reason, message.raw_stop_reason) == ("length", cut)


@pytest.mark.parametrize(
    "bad",
    [
        chunk({"content": [{"type": "text", "text": "Hi "}, {"type": "text", "text": 5}]}),
        chunk({"content": [42, {"type": "text", "text": "ok"}]}),
        chunk({"content": [{"type": "thinking", "thinking": 5}]}),
        chunk({"content": [{"type": "thinking", "thinking": [{"text": 7}]}]}),
        chunk({"content": [{"type": "thinking", "thinking": ["loose"]}]}),
        chunk({"tool_calls": [{"id": "AAAAAAAAA", "index": 0, "function": [1, 2]}]}),
        chunk({"content": "b"}, choices=[5]),
        chunk({"content": "b"}, choices="zz"),
    ],
    ids=["text-int", "part-int", "thinking-int", "thinking-text-int", "thinking-item", "function", "choice", "choices"],
)
def test_content_that_cannot_be_placed_is_a_protocol_error_not_a_silent_drop(bad: dict[str, Any]) -> None:
    decoded = decode(sse_body(chunk({"content": "a"}), bad, chunk({"content": "z"}, finish="stop")))
    assert decoded.failure is not None
    assert decoded.failure.info.kind == "protocol"
    assert decoded.message.stop_reason == "error"
    assert "z" not in texts(decoded.message)  # nothing after the chunk was read
