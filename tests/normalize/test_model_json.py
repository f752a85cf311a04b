"""The data model loads pi-shaped JSON and dumps it back unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from normalize import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    SystemMessage,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    calculate_cost,
    effective_system,
    event_from_json,
    messages_from_json,
    normalize_context,
)
from normalize.model import ModelCost

FIXTURE = Path(__file__).parent / "fixtures" / "pi_transcript.json"


def test_pi_transcript_round_trips_unchanged() -> None:
    raw: list[dict[str, Any]] = json.loads(FIXTURE.read_text())
    messages = messages_from_json(raw)
    assert [type(m) for m in messages] == [
        SystemMessage,
        UserMessage,
        AssistantMessage,
        ToolResultMessage,
        AssistantMessage,
    ]
    assert [m.to_json() for m in messages] == raw


def test_loaded_transcript_has_typed_fields() -> None:
    messages = messages_from_json(FIXTURE.read_bytes())
    user = messages[1]
    assert isinstance(user, UserMessage)
    assert isinstance(user.content, list)
    assert isinstance(user.content[1], ImageContent)
    assert user.content[1].mime_type == "image/png"
    reply = messages[2]
    assert isinstance(reply, AssistantMessage)
    thinking, _, call = reply.content
    assert isinstance(thinking, ThinkingContent)
    assert thinking.thinking_signature == "EqQBCkgIBxABGAIqQFyWcKqpx1YzVGNlu6"
    assert isinstance(call, ToolCall)
    assert call.arguments == {"city": "Paris"}
    assert reply.usage.cache_write == 1200
    failed = messages[4]
    assert isinstance(failed, AssistantMessage)
    assert failed.error_info is not None
    assert failed.error_info.kind == "truncated"
    assert failed.error_info.retryable


def test_unknown_fields_are_ignored_not_fatal() -> None:
    message = AssistantMessage.from_json(
        {"role": "assistant", "content": [{"type": "text", "text": "hi", "futureField": 1}], "newTopLevel": True}
    )
    assert message.to_json()["content"] == [{"type": "text", "text": "hi"}]


def test_redacted_flag_is_dumped_only_when_true() -> None:
    assert "redacted" not in ThinkingContent(thinking="x").to_json()
    assert ThinkingContent(thinking="x", redacted=True).to_json()["redacted"] is True


def test_normalize_context_moves_legacy_fields_into_a_leading_system_message() -> None:
    tool = Tool(name="f")
    context = Context(system_prompt="Be brief.", tools=[tool], messages=[UserMessage(content="hi")])
    normalized = normalize_context(context)
    first = normalized.messages[0]
    assert isinstance(first, SystemMessage)
    assert first.content == "Be brief."
    assert first.tools_added == [tool]
    assert normalized.system_prompt is None
    assert len(context.messages) == 1, "the input context is not modified"
    assert normalize_context(Context(system_prompt="", tools=[])).messages == []


def test_effective_system_replays_additions_removals_and_sections() -> None:
    messages = messages_from_json(
        [
            {"role": "system", "content": "Base.", "toolsAdded": [{"name": "a"}, {"name": "b"}]},
            {"role": "user", "content": "hi"},
            {"role": "system", "content": "More.", "sections": {"style": "Terse."}, "toolsRemoved": [{"name": "a"}]},
            {"role": "system", "sections": {"style": "Verbose."}, "toolsAdded": [{"name": "c"}]},
        ]
    )
    system = effective_system(messages)
    assert system.prompt == "Base.\n\nMore.\n\nVerbose."
    assert [tool.name for tool in system.tools] == ["b", "c"]


def test_calculate_cost_prices_each_component_and_1h_cache_writes_at_twice_input() -> None:
    model = Model(
        id="m", api="x", provider="p", cost=ModelCost(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    )
    usage = Usage(input=1_000_000, output=100_000, cache_read=2_000_000, cache_write=400_000, cache_write_1h=100_000)
    cost = calculate_cost(model, usage)
    assert cost.input == 3.0
    assert cost.output == 1.5
    assert cost.cache_read == 0.6
    assert cost.cache_write == (3.75 * 300_000 + 6.0 * 100_000) / 1_000_000
    assert cost.total == cost.input + cost.output + cost.cache_read + cost.cache_write
    assert usage.cost is cost


@pytest.mark.parametrize(
    "data",
    [{"type": "text_delta"}, {"type": "done"}, {"type": "bogus"}, {"type": "toolcall_end", "contentIndex": 0}, 7],
)
def test_event_from_json_raises_value_error_for_what_is_not_an_event(data: object) -> None:
    with pytest.raises(ValueError):
        event_from_json(data)  # pyright: ignore[reportArgumentType]
