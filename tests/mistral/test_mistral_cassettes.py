"""Every bundled Mistral recording replays through the adapter: each stream to exactly what its bytes say
(read independently of the adapter, :func:`tests.mistral._mistral.expected_from`), each error body to the
kind its status and type say. Two Mistral bodies bundled with the chat-completions recordings (Magistral
content chunks; a tool call without ``index`` or ``type``) replay through the native adapter too."""

from __future__ import annotations

import pytest

from cassettes import library
from normalize import TextContent, ThinkingContent, ToolCall, validate_events
from tests.adapters import calls, response_of, texts, thinking
from tests.mistral._mistral import MISTRAL, expected_from

pytestmark = pytest.mark.parallel  # clock-blind: replays through an in-process transport

STREAMS = MISTRAL.stream_names()
ERRORS = MISTRAL.error_names()


def test_the_library_bundles_every_collected_mistral_body() -> None:
    assert (len(STREAMS), len(ERRORS)) == (17, 6)


@pytest.mark.parametrize("name", STREAMS)
async def test_every_stream_replays_to_what_its_bytes_say(name: str) -> None:
    expected = expected_from(response_of(name).body)
    events, message = await MISTRAL.replay(library.load(name))
    assert validate_events(events) == []
    assert (texts(message), thinking(message)) == (expected.text, expected.thinking)
    assert [(c.id, c.name, c.arguments) for c in calls(message)] == expected.calls
    assert message.raw_stop_reason == expected.finish
    assert message.stop_reason == ("toolUse" if expected.calls else "stop"), message.error_message
    assert message.response_id == expected.response_id
    usage, cached = expected.usage, expected.cached
    assert (message.usage.input, message.usage.cache_read) == (usage["prompt_tokens"] - cached, cached)
    assert message.usage.output == usage["completion_tokens"]
    assert message.usage.total_tokens == usage["total_tokens"]


async def test_text_with_the_p_padding_on_every_chunk() -> None:
    _, message = await MISTRAL.replay(library.load("prism__stream_basic_text_1_1_mistral-small-latest"))
    assert message.content == [TextContent(text=texts(message))]
    assert texts(message).startswith("I'm")
    assert message.response_model == "mistral-small-latest"


async def test_thinking_chunks_then_text_in_the_order_sent() -> None:
    name = "rubyllm__chat_mistral_hybrid_reasoning_streams_thinking_separately_from_content_mistral-small-latest"
    _, message = await MISTRAL.replay(library.load(name))
    # The last thinking chunk shares a delta with the first text chunk: the blocks still come out in order.
    assert [type(block) for block in message.content] == [ThinkingContent, TextContent]
    assert thinking(message).startswith("The user is asking for the product")
    assert thinking(message).endswith("So, the answer is 144.")
    assert texts(message) == "144"


async def test_two_whole_calls_in_one_chunk_keep_their_ids_and_order() -> None:
    _, message = await MISTRAL.replay(library.load("prism__stream_with_tools_1_1_mistral-large-latest"))
    assert message.content == [
        ToolCall(id="yBvJuId6u", name="search", arguments={"query": "Detroit Tigers game time today"}),
        ToolCall(id="ihQrVBDfy", name="weather", arguments={"city": "Detroit"}),
    ]
    assert (message.stop_reason, message.raw_stop_reason) == ("toolUse", "tool_calls")


async def test_num_cached_tokens_are_cache_reads_within_the_prompt() -> None:
    # This body reports 64 cached tokens for a 10-token prompt: the reads are capped at the prompt.
    _, message = await MISTRAL.replay(library.load("prism__stream_reasoning_model_1_1_magistral-small-latest"))
    assert (message.usage.input, message.usage.cache_read, message.usage.output) == (0, 10, 142)


async def test_an_empty_answer_is_a_finished_stop() -> None:
    name = (
        "rubyllm__chat_function_calling_mistral_mistral_small_can_use_tools_with_multi_turn_streaming_conver"
        "_mistral-small"
    )
    _, message = await MISTRAL.replay(library.load(name))
    assert (message.content, message.stop_reason) == ([], "stop")


@pytest.mark.parametrize(
    ("status", "kind", "code", "retryable", "said"),
    [
        ("error400_chat_basic", "invalid_request", "3230", False, "Unexpected role 'system' after role 'assistant'"),
        ("error400_chat_vision", "invalid_request", "invalid_request_error", False, "does not have the 'vision'"),
        ("error401", "auth", None, False, "Unauthorized"),
        (
            "error422",
            "invalid_request",
            None,
            False,
            "body.messages.0.user.content.str: Input should be a valid string",
        ),
        ("error429", "rate_limit", "1300", True, "Rate limit exceeded"),
        ("error500", "server", "1000", True, "Service unavailable."),
    ],
)
async def test_error_bodies_end_with_their_kind(
    status: str, kind: str, code: str | None, retryable: bool, said: str
) -> None:
    (name,) = [n for n in ERRORS if f"__{status}" in n]
    events, message = await MISTRAL.replay(library.load(name))
    assert validate_events(events) == []
    assert message.stop_reason == "error"
    info = message.error_info
    assert info is not None
    assert (info.kind, info.status, info.code, info.retryable) == (kind, int(status[5:8]), code, retryable)
    assert (message.error_message or "").startswith(f"Mistral API error {status[5:8]}")
    assert said in (message.error_message or "")


async def test_magistral_chunks_bundled_with_the_chat_recordings_read_natively() -> None:
    cassette = library.load("pai__mistral_magistral_thinking_chunks")
    expected = expected_from(cassette.interactions[0].response.body)
    _, message = await MISTRAL.replay(cassette, MISTRAL.model(id="magistral-medium-latest"))
    assert [block.type for block in message.content] == ["thinking", "text"]
    assert (thinking(message), texts(message)) == (expected.thinking, expected.text)


async def test_a_call_without_index_or_type_is_placed_by_its_id() -> None:
    _, message = await MISTRAL.replay(library.load("vercel__mistral_tool_call"), MISTRAL.model())
    assert message.content == [ToolCall(id="gSIMJiOkT", name="weather", arguments={"location": "San Francisco"})]
    assert (message.stop_reason, message.usage.input, message.usage.output) == ("toolUse", 124, 22)
