"""The Gemini decoder on hand-written chunks, through the real adapter: parts → blocks, signatures,
function calls (whole and streamed), finish reasons, usage, Google-side parts, malformed input."""

from __future__ import annotations

from typing import Any

import pytest

from normalize import TextContent, ThinkingContent, ToolCall, validate_events
from streamfns.google.decode import CONTENT_FILTER_REASONS, FINISH_REASONS
from tests.adapters import GOOGLE, calls, first_text
from tests.google._google import chunk, run_chunks, sse, usage

pytestmark = pytest.mark.parallel

SIG_A = "c2lnbmF0dXJlLWE="
SIG_B = "c2lnbmF0dXJlLWI="


def kinds(message: Any) -> list[str]:
    return [block.type for block in message.content]


async def test_thought_parts_are_thinking_and_a_new_block_starts_when_the_kind_changes() -> None:
    events, result = await run_chunks(
        chunk({"text": "plan ", "thought": True}),
        chunk({"text": "more", "thought": True}, {"text": "Answer "}),
        chunk({"text": "text."}, {"text": "again?", "thought": True}, finish="STOP"),
    )
    assert validate_events(events) == []
    assert result.stop_reason == "stop"
    assert kinds(result) == ["thinking", "text", "thinking"]
    first, second, third = result.content
    assert isinstance(first, ThinkingContent)
    assert first.thinking == "plan more"
    assert isinstance(second, TextContent)
    assert second.text == "Answer text."
    assert isinstance(third, ThinkingContent)
    assert third.thinking == "again?"
    starts = [e.type for e in events if e.type.endswith("_start")]
    assert starts == ["thinking_start", "text_start", "thinking_start"]


async def test_a_signature_alone_never_makes_a_part_thinking_and_the_last_non_empty_one_is_kept() -> None:
    _, result = await run_chunks(
        chunk({"text": "Hello", "thoughtSignature": SIG_A}),
        chunk({"text": " world", "thoughtSignature": ""}),
        chunk({"text": "", "thoughtSignature": SIG_B}, finish="STOP"),
    )
    assert kinds(result) == ["text"]
    block = result.content[0]
    assert isinstance(block, TextContent)
    assert (block.text, block.text_signature) == ("Hello world", SIG_B)


async def test_a_signature_lands_on_the_block_it_arrived_with() -> None:
    # Thinking, then an empty (non-thought) part with a signature: a signed empty text block, as
    # Gemini 3 requires it echoed back; the thinking keeps its own signature.
    _, result = await run_chunks(
        chunk({"text": "think", "thought": True, "thoughtSignature": SIG_A}),
        chunk({"text": "", "thoughtSignature": SIG_B}, finish="STOP"),
    )
    thinking, text = result.content
    assert isinstance(thinking, ThinkingContent)
    assert thinking.thinking_signature == SIG_A
    assert isinstance(text, TextContent)
    assert (text.text, text.text_signature) == ("", SIG_B)


async def test_empty_parts_without_a_signature_open_nothing() -> None:
    events, result = await run_chunks(chunk({"text": "Hi"}), chunk({"text": "", "thought": True}, finish="STOP"))
    assert validate_events(events) == []
    assert kinds(result) == ["text"]


async def test_function_calls_keep_ids_generate_missing_and_duplicate_ones_and_default_args() -> None:
    events, result = await run_chunks(
        chunk({"text": "Calling."}),
        chunk(
            {"functionCall": {"id": "call_1", "name": "a", "args": {"x": 1}}, "thoughtSignature": SIG_A},
            {"functionCall": {"id": "call_1", "name": "b", "args": {"y": [1, 2]}}},
            {"functionCall": {"name": "c"}},
            finish="STOP",
            responseId="resp-1",
        ),
    )
    assert validate_events(events) == []
    assert result.stop_reason == "toolUse"
    calls = [block for block in result.content if isinstance(block, ToolCall)]
    assert [c.name for c in calls] == ["a", "b", "c"]
    assert calls[0].id == "call_1"
    assert calls[0].thought_signature == SIG_A
    assert len({c.id for c in calls}) == 3
    assert all(c.id for c in calls)
    assert [c.arguments for c in calls] == [{"x": 1}, {"y": [1, 2]}, {}]
    # Each whole call is one start, one delta with its JSON, one end.
    per_call = [e.type for e in events if e.type.startswith("toolcall")]
    assert per_call == ["toolcall_start", "toolcall_delta", "toolcall_end"] * 3
    deltas = [e.delta for e in events if e.type == "toolcall_delta"]  # pyright: ignore[reportAttributeAccessIssue]
    assert deltas == ['{"x":1}', '{"y":[1,2]}', "{}"]


@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        ({"name": "f", "args": [1]}, "not a JSON object"),
        ({"args": {"x": 1}}, "without a name"),
        ({"name": 3}, "name is not a string"),
        ({"name": "f", "args": {"x": float("nan")}}, "cannot be written as JSON"),
    ],
)
async def test_function_calls_that_cannot_be_executed_are_protocol_errors(call: dict[str, Any], fragment: str) -> None:
    events, result = await GOOGLE.run_reads(
        [
            sse(chunk({"text": "ok"})),
            f'data: {{"candidates":[{{"content":{{"parts":[{{"functionCall":{_json(call)}}}]}}}}]}}\r\n\r\n'.encode(),
        ]
    )
    assert validate_events(events) == []
    assert result.error_info is not None
    assert result.error_info.kind == "protocol"
    assert fragment in (result.error_message or "")
    assert not any(isinstance(b, ToolCall) for b in result.content)


def _json(value: object) -> str:
    import json

    return json.dumps(value, allow_nan=True)


async def test_a_repeated_empty_function_call_end_marker_is_ignored() -> None:
    events, result = await run_chunks(
        chunk({"functionCall": {"name": "f", "args": {}}}), chunk({"functionCall": {}}, finish="STOP")
    )
    assert validate_events(events) == []
    assert result.stop_reason == "toolUse"
    assert len(result.content) == 1


def streamed(*partials: dict[str, Any], more: bool = True, **call: Any) -> dict[str, Any]:
    body: dict[str, Any] = dict(call)
    if partials:
        body["partialArgs"] = list(partials)
    if more:
        body["willContinue"] = True
    return {"functionCall": body}


async def test_streamed_arguments_arrive_as_deltas_and_end_strictly_parsed() -> None:
    events, result = await run_chunks(
        chunk(streamed(name="edit", id="fc1") | {"thoughtSignature": SIG_A}),
        chunk(streamed({"jsonPath": "$.path", "stringValue": "a.py"})),
        chunk(streamed({"jsonPath": "$.text", "stringValue": 'x = "1"\n\t', "willContinue": True})),
        chunk(streamed({"jsonPath": "$.text", "stringValue": "y", "willContinue": True})),
        chunk(streamed({"jsonPath": "$.text", "stringValue": ""})),
        chunk(streamed({"jsonPath": "$.ops[0].n", "numberValue": 1.5}, {"jsonPath": "$.ops[0].ok", "boolValue": True})),
        chunk(streamed({"jsonPath": "$.ops[1].n", "nullValue": "NULL_VALUE"})),
        chunk(streamed({"jsonPath": "$['odd key'].deep[0]", "numberValue": 7})),
        chunk({"functionCall": {}}, finish="STOP"),
    )
    assert validate_events(events) == []
    assert result.stop_reason == "toolUse"
    (call,) = result.content
    assert isinstance(call, ToolCall)
    assert (call.id, call.name, call.thought_signature) == ("fc1", "edit", SIG_A)
    assert call.arguments == {
        "path": "a.py",
        "text": 'x = "1"\n\ty',
        "ops": [{"n": 1.5, "ok": True}, {"n": None}],
        "odd key": {"deep": [7]},
    }
    deltas = [e.delta for e in events if e.type == "toolcall_delta"]  # pyright: ignore[reportAttributeAccessIssue]
    assert len(deltas) >= 9, "one delta per partial argument, as they arrive"
    assert deltas[0] == "{"


async def test_the_partial_message_shows_streamed_arguments_as_they_arrive() -> None:
    seen: list[Any] = []
    chunks = [
        chunk(streamed(name="write")),
        chunk(streamed({"jsonPath": "$.path", "stringValue": "a.py"})),
        chunk(streamed({"jsonPath": "$.body", "stringValue": "x" * 10, "willContinue": True})),
        chunk(streamed({"jsonPath": "$.body", "stringValue": "y" * 10, "willContinue": True})),
        chunk(streamed({"jsonPath": "$.body", "stringValue": ""}, more=False), finish="STOP"),
    ]
    from normalize import StreamOptions
    from streamfns.google import stream_google
    from tests.adapters import CONTEXT, reads_client

    async with reads_client([sse(c) for c in chunks]) as client:
        stream = stream_google(GOOGLE.model(), CONTEXT, StreamOptions(api_key="test-key", http_client=client))
        async for event in stream:
            if event.type == "toolcall_delta":
                block = event.partial.content[0]
                assert isinstance(block, ToolCall)
                seen.append(dict(block.arguments))
        result = await stream.result()
    assert {"path": "a.py"} in seen
    assert any(args.get("body", "").startswith("x") for args in seen)
    assert calls(result)[0].arguments == {"path": "a.py", "body": "x" * 10 + "y" * 10}


@pytest.mark.parametrize(
    ("partials", "fragment"),
    [
        ([{"jsonPath": "$.a", "numberValue": 1}, {"jsonPath": "$.a", "numberValue": 2}], "already written"),
        (
            [
                {"jsonPath": "$.a.x", "numberValue": 1},
                {"jsonPath": "$.b", "numberValue": 2},
                {"jsonPath": "$.a.y", "numberValue": 3},
            ],
            "already written",
        ),
        ([{"jsonPath": "$.a[1]", "numberValue": 1}], "next element"),
        ([{"jsonPath": "$.a[0]", "numberValue": 1}, {"jsonPath": "$.a.b", "numberValue": 2}], "member of an array"),
        ([{"jsonPath": "$.a.b", "numberValue": 1}, {"jsonPath": "$.a[1]", "numberValue": 2}], "indexes an object"),
        ([{"jsonPath": "$.a[*]", "numberValue": 1}], "unsupported JSON path"),
        ([{"jsonPath": "a", "numberValue": 1}], "root"),
        ([{"jsonPath": "$", "numberValue": 1}], "whole arguments"),
        ([{"jsonPath": "$.a", "numberValue": "Infinity"}], "finite number"),
        ([{"jsonPath": "$.a", "stringValue": "x", "numberValue": 1}], "several values"),
        ([{"jsonPath": "$.a", "boolValue": "yes"}], "not a boolean"),
        ([{"numberValue": 1}], "no jsonPath"),
        (["not an object"], "not an object"),
    ],
)
async def test_streamed_arguments_that_cannot_be_placed_are_protocol_errors(partials: list[Any], fragment: str) -> None:
    events, result = await run_chunks(
        chunk(streamed(name="f")), *(chunk(streamed(p)) for p in partials), chunk({"functionCall": {}}, finish="STOP")
    )
    assert validate_events(events) == []
    assert result.stop_reason == "error"
    assert result.error_info is not None
    assert result.error_info.kind == "protocol"
    assert fragment in (result.error_message or ""), result.error_message


async def test_a_new_function_while_one_still_streams_is_a_protocol_error() -> None:
    _, result = await run_chunks(
        chunk(streamed(name="f")),
        chunk(streamed({"jsonPath": "$.a", "numberValue": 1})),
        chunk({"functionCall": {"name": "g", "args": {}}}, finish="STOP"),
    )
    assert result.error_info is not None
    assert result.error_info.kind == "protocol"
    assert "still streaming" in (result.error_message or "")


async def test_a_stream_cut_inside_streamed_arguments_never_runs_the_call() -> None:
    cut = [chunk(streamed(name="f")), chunk(streamed({"jsonPath": "$.a", "stringValue": "par", "willContinue": True}))]
    # The body ends: truncated.
    events, result = await run_chunks(*cut)
    assert validate_events(events) == []
    assert result.error_info is not None
    assert result.error_info.kind == "truncated"
    # A STOP while the call is still open: its arguments are incomplete, so an error, never toolUse.
    events, result = await run_chunks(*cut, chunk(finish="STOP"))
    assert validate_events(events) == []
    assert result.stop_reason == "error"
    assert result.error_info is not None
    assert result.error_info.kind == "truncated"
    # MAX_TOKENS: length with the preview, and no complete call, so never toolUse.
    events, result = await run_chunks(*cut, chunk(finish="MAX_TOKENS"))
    assert validate_events(events) == []
    assert result.stop_reason == "length"
    (call,) = result.content
    assert isinstance(call, ToolCall)
    assert call.arguments == {"a": "par"}


async def test_max_tokens_with_a_complete_call_is_length_not_tool_use() -> None:
    _, result = await run_chunks(chunk({"functionCall": {"name": "f", "args": {"a": 1}}}, finish="MAX_TOKENS"))
    assert result.stop_reason == "length"


@pytest.mark.parametrize(
    ("reason", "stop", "kind"),
    [
        ("STOP", "stop", None),
        ("MAX_TOKENS", "length", None),
        *((reason, "error", "content_filter") for reason in sorted(CONTENT_FILTER_REASONS)),
        ("MALFORMED_FUNCTION_CALL", "error", "protocol"),
        ("UNEXPECTED_TOOL_CALL", "error", "protocol"),
        ("OTHER", "error", "protocol"),
        ("LANGUAGE", "error", "invalid_request"),
        ("SOMETHING_NEW", "error", "protocol"),
        ("MODEL_ARMOR", "error", "content_filter"),
        ("IMAGE_SOMETHING_NEW", "error", "content_filter"),
        ("NO_IMAGE", "error", "protocol"),
    ],
)
async def test_finish_reasons_map_to_stops_and_error_kinds(reason: str, stop: str, kind: str | None) -> None:
    events, result = await run_chunks(chunk({"text": "partial"}, finish=reason))
    assert validate_events(events) == []
    assert result.stop_reason == stop
    assert result.raw_stop_reason == reason
    if kind is None:
        assert result.error_info is None
    else:
        assert result.error_info is not None
        assert (result.error_info.kind, result.error_info.code) == (kind, reason)
        assert reason in (result.error_message or "")
        assert first_text(result) == "partial"


async def test_a_malformed_function_call_quotes_the_finish_message() -> None:
    _, result = await run_chunks(
        {"candidates": [{"finishReason": "MALFORMED_FUNCTION_CALL", "finishMessage": "Malformed function call: f(x=)"}]}
    )
    assert result.error_info is not None
    assert result.error_info.kind == "protocol"
    assert "Malformed function call: f(x=)" in (result.error_message or "")
    assert FINISH_REASONS.map("SAFETY").error is not None


async def test_an_error_finish_is_never_overridden_by_a_later_stop() -> None:
    _, result = await run_chunks(chunk({"text": "a"}, finish="SAFETY"), chunk({"text": "b"}, finish="STOP"))
    assert result.error_info is not None
    assert result.error_info.kind == "content_filter"


async def test_an_unspecified_finish_reason_is_no_finish_reason() -> None:
    _, result = await run_chunks(chunk({"text": "a"}, finish="FINISH_REASON_UNSPECIFIED"))
    assert result.error_info is not None
    assert result.error_info.kind == "truncated"


async def test_a_blocked_prompt_is_a_content_filter_error() -> None:
    events, result = await run_chunks(
        {
            "promptFeedback": {"blockReason": "PROHIBITED_CONTENT", "blockReasonMessage": "nope"},
            "usageMetadata": {"promptTokenCount": 7, "totalTokenCount": 7},
        }
    )
    assert validate_events(events) == []
    assert result.error_info is not None
    assert (result.error_info.kind, result.error_info.code) == ("content_filter", "PROHIBITED_CONTENT")
    assert "nope" in (result.error_message or "")
    assert result.usage.input == 7


async def test_usage_is_cumulative_the_last_counts_win_and_may_follow_the_finish_reason() -> None:
    # The finish chunk carries no counts (only trafficType): the message waits for the end of the
    # body, and the usage chunk after it counts.
    events, result = await run_chunks(
        chunk({"text": "a"}, usageMetadata={"trafficType": "ON_DEMAND"}),
        chunk({"text": "b"}, usageMetadata=usage(100, 5, thoughts=20, cached=40)),
        chunk({"text": "c"}, finish="STOP", usageMetadata={"trafficType": "ON_DEMAND"}),
        {"usageMetadata": usage(100, 12, thoughts=30, cached=40) | {"toolUsePromptTokenCount": 3}},
    )
    assert validate_events(events) == []
    u = result.usage
    assert (u.input, u.output, u.cache_read, u.cache_write, u.reasoning) == (60 + 3, 42, 40, 0, 30)
    assert u.total_tokens == 63 + 42 + 40
    assert result.stop_reason == "stop"


async def test_the_finish_chunk_with_usage_ends_the_message_with_that_usage_applied() -> None:
    # Every recorded stream ends so: the last chunk carries finishReason and the final counts.
    events, result = await run_chunks(
        chunk({"text": "a"}, usageMetadata=usage(10, 1)),
        chunk({"text": "b"}, finish="STOP", usageMetadata=usage(10, 2, thoughts=5)),
    )
    assert validate_events(events) == []
    assert events[-1].type == "done"
    assert (result.usage.input, result.usage.output, result.usage.reasoning) == (10, 7, 5)
    assert (result.stop_reason, first_text(result)) == ("stop", "ab")


async def test_a_streamed_call_still_open_at_the_finish_chunk_is_not_finished_there() -> None:
    # STOP and usage arrive while the streamed call is open: the message must not finish (that would
    # settle the call as truncated); the part that closes it still counts.
    events, result = await run_chunks(
        chunk(streamed(name="f", id="fc1")),
        chunk(streamed({"jsonPath": "$.a", "stringValue": "par", "willContinue": True})),
        chunk(streamed({"jsonPath": "$.a", "stringValue": "is"}), finish="STOP", usageMetadata=usage(5, 3)),
        chunk({"functionCall": {}}, usageMetadata=usage(5, 4)),
    )
    assert validate_events(events) == []
    assert result.stop_reason == "toolUse"
    (call,) = calls(result)
    assert call.arguments == {"a": "paris"}
    assert result.usage.output == 4


async def test_with_several_candidates_the_message_waits_for_the_end_of_the_body() -> None:
    # Candidate 0 finishing says nothing about the others, whose tokens the usage also counts.
    events, result = await run_chunks(
        {
            "candidates": [
                {"index": 0, "content": {"parts": [{"text": "mine"}]}, "finishReason": "STOP"},
                {"index": 1, "content": {"parts": [{"text": "other"}]}},
            ],
            "usageMetadata": usage(5, 3),
        },
        {
            "candidates": [{"index": 1, "content": {"parts": [{"text": " more"}]}, "finishReason": "STOP"}],
            "usageMetadata": usage(5, 6),
        },
    )
    assert validate_events(events) == []
    assert (result.stop_reason, first_text(result)) == ("stop", "mine")
    assert result.usage.output == 6


async def test_usage_seen_before_an_error_survives_it() -> None:
    _, result = await run_chunks(
        chunk({"text": "a"}, usageMetadata=usage(10, 2)),
        {"error": {"code": 500, "message": "Internal error", "status": "INTERNAL"}},
    )
    assert result.error_info is not None
    assert result.error_info.kind == "server"
    assert (result.usage.input, result.usage.output) == (10, 2)
    assert first_text(result) == "a"


async def test_hostile_usage_counts_keep_the_usage_contract() -> None:
    events, result = await run_chunks(
        chunk(
            {"text": "a"},
            finish="STOP",
            usageMetadata={
                "promptTokenCount": 5,
                "cachedContentTokenCount": 50,
                "candidatesTokenCount": -7,
                "thoughtsTokenCount": True,
            },
        )
    )
    assert validate_events(events) == []
    assert (result.usage.input, result.usage.cache_read, result.usage.output) == (0, 5, 0)  # cached ≤ prompt


@pytest.mark.parametrize("layout_break", [False, True])
async def test_every_text_chunk_shows_its_own_usage_when_only_the_candidates_count_moves(
    layout_break: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The usual text stream: a learned layout whose one moving count is candidatesTokenCount (the
    # decoder's short way, see GoogleDecoder._usage). Each text delta's partial message carries that
    # chunk's usage: counts that repeat, drop back to the learned ones, or follow a chunk of another
    # layout (read the long way) included.
    from normalize import StreamOptions, Usage, calculate_cost
    from streamfns.google import decode, stream_google
    from tests.adapters import CONTEXT, reads_client

    long_way: list[Any] = []
    in_range = decode._in_range  # pyright: ignore[reportPrivateUsage]

    def counted(counts: tuple[Any, ...]) -> tuple[int, int, int, int, int]:
        long_way.append(counts)
        return in_range(counts)

    monkeypatch.setattr(decode, "_in_range", counted)
    counts = [1, 2, 3, 3, 5, 1, 1, 8, 2, 40, 41, 42, 8, 50, *range(51, 67)]
    named = {"modelVersion": "gemini-x", "responseId": "r1"}  # a layout is learned once the response is named
    chunks = [
        chunk({"text": f"t{n} "}, usageMetadata=usage(100, c, thoughts=7, cached=40), **named)
        for n, c in enumerate(counts)
    ]
    if layout_break:
        # Chunks the learned layout does not read: the first with the counts it learned; the second with
        # those the long way read last (before the short way moved them), which must count again.
        for n in (6, 12):
            chunks[n] = chunk(
                {"text": f"t{n} "}, usageMetadata=usage(100, counts[n], thoughts=7, cached=40), **named, extra=1
            )
    model = GOOGLE.model()
    seen: list[tuple[Any, ...]] = []
    async with reads_client([sse(c) for c in [*chunks, chunk(finish="STOP")]]) as client:
        stream = stream_google(model, CONTEXT, StreamOptions(api_key="test-key", http_client=client))
        async for event in stream:
            if event.type == "text_delta":
                u = event.partial.usage
                seen.append((event.delta, u.input, u.output, u.cache_read, u.reasoning, u.total_tokens, u.cost.total))
        result = await stream.result()
    expected: list[tuple[Any, ...]] = []
    for n, c in enumerate(counts):
        want = Usage(input=60, output=c + 7, cache_read=40, reasoning=7, total_tokens=60 + c + 7 + 40)
        calculate_cost(model, want)
        expected.append((f"t{n} ", 60, c + 7, 40, 7, want.total_tokens, want.cost.total))
    assert seen == expected
    assert result.usage.output == counts[-1] + 7
    assert len(long_way) < len(counts) // 2, "the learned layout's chunks took the short way"


async def test_google_side_parts_are_left_out_and_the_text_around_them_stays_one_block() -> None:
    events, result = await run_chunks(
        chunk({"text": "Computing: "}),
        chunk({"executableCode": {"language": "PYTHON", "code": "print(1)"}, "thoughtSignature": SIG_A}),
        chunk({"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1\n"}}),
        chunk({"inlineData": {"mimeType": "image/png", "data": "AAAA"}}),
        chunk({"text": "the answer is 1."}, finish="STOP", groundingMetadata={"webSearchQueries": ["x"]}),
    )
    assert validate_events(events) == []
    assert kinds(result) == ["text"]
    assert first_text(result) == "Computing: the answer is 1."


async def test_only_candidate_zero_is_read() -> None:
    _, result = await run_chunks(
        {
            "candidates": [
                {"index": 1, "content": {"parts": [{"text": "other"}]}},
                {"index": 0, "content": {"parts": [{"text": "mine"}]}},
            ]
        },
        {"candidates": [{"index": 1, "content": {"parts": [{"text": "other"}]}, "finishReason": "SAFETY"}]},
        chunk({"text": "!"}, finish="STOP"),
    )
    assert result.stop_reason == "stop"
    assert first_text(result) == "mine!"


async def test_response_id_and_model_version_are_kept() -> None:
    _, result = await run_chunks(
        chunk({"text": "a"}, responseId="r-1", modelVersion="gemini-2.5-flash-001"),
        chunk({"text": "b"}, finish="STOP", responseId="r-2", modelVersion="other"),
    )
    assert (result.response_id, result.response_model) == ("r-1", "gemini-2.5-flash-001")
    assert result.model == "gemini-2.5-flash"


async def test_a_stream_error_event_ends_the_stream_with_its_kind() -> None:
    _, result = await run_chunks(
        chunk({"text": "a"}),
        {"error": {"code": 429, "message": "Resource exhausted. Please retry in 3s.", "status": "RESOURCE_EXHAUSTED"}},
    )
    info = result.error_info
    assert info is not None
    assert (info.kind, info.retry_after_s, info.output_started) == ("rate_limit", 3.0, True)
    assert "Resource exhausted" in (result.error_message or "")


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ('{"candidates": {"0": {}}}', "not a list"),
        ('{"candidates": [{"content": []}]}', "content is not an object"),
        ('{"candidates": [{"content": {"parts": {}}}]}', "parts that are not a list"),
        ('{"candidates": [{"content": {"parts": ["x"]}}]}', "part that is not an object"),
        ('{"candidates": [{"content": {"parts": [{"text": 3}]}}]}', "text is not a string"),
        ('{"candidates": [{"content": {"parts": [{"text": "a", "thoughtSignature": 1}]}}]}', "thoughtSignature"),
        ('{"candidates": [{"content": {"parts": [{"text": "a", "functionCall": {"name": "f"}}]}}]}', "both text"),
        ('{"candidates": [{"finishReason": 3}]}', "finishReason"),
        ('{"candidates": [{"content": {"parts": [{"functionCall": "f"}]}}]}', "functionCall that is not an object"),
        (
            '{"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "partialArgs": {}}}]}}]}',
            "partialArgs",
        ),
        ("[1, 2]", "non-object"),
        ('{"candidates": [', "malformed JSON"),
    ],
)
async def test_malformed_chunks_end_in_protocol_errors_keeping_earlier_content(data: str, fragment: str) -> None:
    events, result = await GOOGLE.run_reads([sse(chunk({"text": "kept"})), f"data: {data}\r\n\r\n".encode()])
    assert validate_events(events) == []
    assert result.stop_reason == "error"
    assert result.error_info is not None
    assert result.error_info.kind == "protocol"
    assert fragment in (result.error_message or "")
    assert first_text(result) == "kept"


async def test_a_body_without_a_finish_reason_is_truncated_even_after_content() -> None:
    events, result = await run_chunks(chunk({"text": "a"}, usageMetadata=usage(3, 1)))
    assert validate_events(events) == []
    assert result.error_info is not None
    assert (result.error_info.kind, result.error_info.retryable) == ("truncated", True)
    assert result.error_message == "Google stream ended before a finishReason"
    assert result.usage.input == 3


async def test_thinking_models_get_a_thinking_block_from_recorded_shapes_with_signatures_on_calls() -> None:
    events, result = await run_chunks(
        chunk({"text": "**Plan**", "thought": True}),
        chunk({"functionCall": {"name": "read", "args": {}}, "thoughtSignature": SIG_A}),
        chunk({"text": ""}, finish="STOP"),
        target=GOOGLE.model(id="gemini-3-flash-preview", reasoning=True),
    )
    assert validate_events(events) == []
    assert kinds(result) == ["thinking", "toolCall"]
    assert calls(result)[0].thought_signature == SIG_A


@pytest.mark.parametrize("learning", [True, False])
async def test_counts_read_through_a_learned_layout_are_the_counts_the_json_says(
    learning: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Real chunks name the response and the model in each chunk, so the decoder learns their layout and
    # reads the counts that change (candidates, cached) from its holes, one chunk a read, the rest from
    # the chunk it learned. With learning off the same bytes are parsed whole: the counts must agree, and
    # the last read's are the message's (the finishing chunk has none).
    from streamfns.google import decode
    from streamfns.kit.shapes import EventShape

    learned: list[object] = []
    learn = EventShape.learn

    def spy(*args: Any, **kwargs: Any) -> EventShape | None:
        shape = learn(*args, **kwargs)
        learned.append(shape)
        return shape

    monkeypatch.setattr(EventShape, "learn", staticmethod(spy))
    if not learning:
        monkeypatch.setattr(decode, "SHAPE_LEARNS", 0)
    named = {"modelVersion": "gemini-2.5-flash", "responseId": "r1"}
    reads = [
        chunk({"text": f"w{step} "}, usageMetadata={**usage(25, step, thoughts=40, cached=step % 9), "x": 1}, **named)
        for step in range(1, 60)
    ]
    _events, message = await run_chunks(*reads, chunk({"text": ""}, finish="STOP", **named))
    assert (len(learned) > 0) is learning
    assert message.stop_reason == "stop"
    assert first_text(message) == "".join(f"w{step} " for step in range(1, 60))
    cached = 59 % 9
    got = message.usage
    assert (got.input, got.output, got.cache_read, got.reasoning) == (25 - cached, 59 + 40, cached, 40)
    assert got.total_tokens == 25 + 59 + 40
