"""Every bundled Cohere v2 chat recording replays through the adapter to a valid stream, and the ones that
show a feature replay to exactly what the recorded bytes say."""

from __future__ import annotations

import pytest

from cassettes import library
from normalize import (
    Context,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    validate_events,
)
from streamfns.cohere import TOOL_PLAN, build_request
from tests.adapters import calls, texts, thinking
from tests.cohere._cohere import COHERE, PARALLEL, REASONING, THINKING_CITATIONS, TOOL

pytestmark = pytest.mark.parallel  # clock-blind: replays through an in-process transport

NO_PARAMETERS = (
    "rubyllm__chat_function_calling_cohere_command_a_03_2025_can_use_tools_without_parameters_in_multi_t"
    "_i2_command-a-03-2025"
)


def test_the_library_bundles_the_v2_bodies_and_their_error_bodies() -> None:
    assert len(COHERE.stream_names()) == 17
    assert COHERE.error_names() == [
        (
            "rubyllm__error400_chat_real_error_scenarios_cohere_command_a_03_2025_handles_context_length_exceeded"
            "_errors_command-a-03-2025"
        ),
        (
            "rubyllm__error400_chat_real_error_scenarios_cohere_command_a_plus_05_2026_handles_context_length"
            "_exceeded_er_command-a-plus-05-2026"
        ),
        (
            "rubyllm__error401_chat_error_handling_with_cohere_command_a_03_2025_raises_appropriate_auth_error"
            "_command-a-03-2025"
        ),
    ]
    # The /v1/chat error body of the collection is another api: not bundled here.
    assert not [name for name in library.names("cohere-chat") if "error404" in name]


def test_the_converted_fixtures_say_they_were_reframed() -> None:
    for name in ("vercel__cohere_text_model-unstated", "vercel__cohere_citations_model-unstated"):
        cassette = library.load(name)
        assert cassette.source is not None
        assert "re-framed as Cohere's SSE" in str(cassette.source["provenance"])
        data = cassette.interactions[0].response.body
        assert data.startswith(b"event: message-start\ndata: {")
        assert b"\n\nevent: message-end\ndata: {" in data
        assert data.endswith(b"}\n\ndata: [DONE]\n\n")


@pytest.mark.parametrize("name", COHERE.stream_names())
async def test_every_recording_replays_to_a_valid_finished_stream(name: str) -> None:
    events, message = await COHERE.replay(library.load(name))
    assert validate_events(events) == []
    assert message.stop_reason in ("stop", "toolUse"), message.error_message
    assert message.response_id
    assert message.usage.input > 0
    assert message.usage.output > 0


async def test_text_with_cached_input_priced_from_the_token_counts() -> None:
    _, message = await COHERE.replay(library.load("openllmetry__stream_command-r-08-2024"))
    assert texts(message).startswith("Sure, here are two lines about colourful socks: \n\n")
    assert (message.stop_reason, message.raw_stop_reason) == ("stop", "COMPLETE")
    # tokens: 212 in, 208 of them cached, 64 out (billed_units said 12 and 64: not what is read).
    usage = message.usage
    assert (usage.input, usage.output, usage.cache_read, usage.total_tokens) == (4, 64, 208, 276)
    assert usage.cost.total == pytest.approx((4 * 2.5 + 64 * 10.0 + 208 * 2.5) / 1e6)


async def test_a_tool_plan_then_a_tool_call() -> None:
    _, message = await COHERE.replay(library.load(TOOL))
    assert message.content == [
        ThinkingContent(thinking=thinking(message), thinking_signature=TOOL_PLAN),
        ToolCall(id="weather_vvavrb8p34fk", name="weather", arguments={"latitude": "52.5200", "longitude": "13.4050"}),
    ]
    assert thinking(message).startswith("I will use the weather tool to find the weather in")
    assert (message.stop_reason, message.raw_stop_reason) == ("toolUse", "TOOL_CALL")


async def test_the_plan_goes_back_as_tool_plan_beside_its_call() -> None:
    _, reply = await COHERE.replay(library.load(TOOL))
    result = ToolResultMessage(
        tool_call_id="weather_vvavrb8p34fk", tool_name="weather", content=[TextContent(text="15°C")]
    )
    context = Context(messages=[UserMessage(content="Weather in Berlin?"), reply, result])
    model = COHERE.model(id=reply.model)  # the same model: its own plan replays as a plan
    assistant = build_request(model, context, StreamOptions()).payload["messages"][1]
    assert assistant == {
        "role": "assistant",
        "tool_plan": thinking(reply),
        "tool_calls": [
            {
                "id": "weather_vvavrb8p34fk",
                "type": "function",
                "function": {"name": "weather", "arguments": '{"latitude":"52.5200","longitude":"13.4050"}'},
            }
        ],
    }


async def test_parallel_calls_after_a_plan() -> None:
    _, message = await COHERE.replay(library.load(PARALLEL))
    assert [(c.id, c.name, c.arguments) for c in calls(message)] == [
        ("get_time_mp1131yrhbga", "get_time", {"location": "Tokyo"}),
        ("get_weather_yxz1xx2m07cn", "get_weather", {"location": "Tokyo"}),
    ]
    assert (
        thinking(message)
        == "I will search for the current time and weather in Tokyo and relay this information to the user."
    )


async def test_a_call_without_parameters_has_empty_arguments() -> None:
    _, message = await COHERE.replay(library.load(NO_PARAMETERS))
    assert message.content == [ToolCall(id="best_language_to_learn_wgdyg5frjc39", name="best_language_to_learn")]
    assert message.stop_reason == "toolUse"


async def test_thinking_then_cited_text_with_reasoning_tokens() -> None:
    _, message = await COHERE.replay(library.load(THINKING_CITATIONS))
    assert [type(block) for block in message.content] == [ThinkingContent, TextContent]
    assert message.content[0] == ThinkingContent(thinking=thinking(message))  # reasoning: no plan signature
    assert texts(message).startswith("According to the document, Ruby was created by **Yukihiro Matsumoto**")
    assert (message.usage.input, message.usage.output, message.usage.cache_read, message.usage.reasoning) == (
        364,
        86,
        144,
        28,
    )


async def test_a_long_reasoning_stream() -> None:
    _, message = await COHERE.replay(library.load(REASONING))
    assert thinking(message).startswith("Okay, let's try to figure this out.")
    assert (message.usage.output, message.usage.reasoning) == (2697, 2463)


async def test_the_converted_fixtures_replay() -> None:
    _, text = await COHERE.replay(library.load("vercel__cohere_text_model-unstated"))
    assert texts(text) == "The capital of France is Paris."
    _, cited = await COHERE.replay(library.load("vercel__cohere_citations_model-unstated"))
    assert texts(cited) == "The key benefits are automation of tasks."


async def test_error_bodies_end_with_their_kinds() -> None:
    over, auth = COHERE.error_names()[0], COHERE.error_names()[2]
    _, message = await COHERE.replay(library.load(over))
    assert message.error_info is not None
    assert (message.error_info.kind, message.error_info.status, message.error_info.code) == (
        "context_overflow",
        400,
        "TOO_MANY_TOKENS",
    )
    assert (message.error_message or "").startswith("Cohere API error 400 TOO_MANY_TOKENS: too many tokens: size limit")
    _, refused = await COHERE.replay(library.load(auth))
    assert refused.error_info is not None
    assert (refused.error_info.kind, refused.error_info.retryable) == ("auth", False)
