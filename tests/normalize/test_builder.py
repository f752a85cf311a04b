"""MessageBuilder: grammar by construction, exact reassembly, and the G6 rules for tool arguments."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from normalize import (
    DoneEvent,
    ErrorEvent,
    ErrorInfo,
    MessageBuilder,
    Model,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolCallDeltaEvent,
    validate_events,
)
from normalize.model import ModelCost
from normalize.partial_json import JsonRepairer

pytestmark = pytest.mark.parallel

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=8,
)
blocks = st.lists(
    st.one_of(
        st.tuples(st.just("text"), st.text(min_size=1, max_size=60)),
        st.tuples(st.just("thinking"), st.text(min_size=1, max_size=60)),
        st.tuples(st.just("tool"), st.dictionaries(st.text(max_size=8), json_values, max_size=4)),
    ),
    min_size=0,
    max_size=6,
)


def split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in itertools.pairwise(points) if b > a]


@settings(max_examples=150, deadline=None)
@given(blocks=blocks, cuts=st.lists(st.integers(0, 10_000), max_size=12), interleave=st.booleans())
def test_random_blocks_with_random_splits_validate_and_reassemble(
    blocks: list[tuple[str, Any]], cuts: list[int], interleave: bool
) -> None:
    builder = MessageBuilder(Model(id="m", api="faux", provider="faux"))
    builder.start()
    expected: list[Any] = []
    for key, (kind, payload) in enumerate(blocks):
        if kind == "text":
            for piece in split(payload, cuts):
                builder.text_delta(key, piece)
            expected.append(TextContent(text=payload))
        elif kind == "thinking":
            for piece in split(payload, cuts):
                builder.thinking_delta(key, piece)
            builder.block_signature(key, f"sig{key}")
            expected.append(ThinkingContent(thinking=payload, thinking_signature=f"sig{key}"))
        else:
            raw = json.dumps(payload)
            builder.tool_call_start(key, f"id{key}", f"tool{key}")
            for piece in split(raw, cuts):
                builder.tool_call_delta(key, piece)
            expected.append(ToolCall(id=f"id{key}", name=f"tool{key}", arguments=payload))
        if not interleave:
            builder.block_end(key)
    builder.usage(input=7, output=3, cache_read=2)
    builder.stop("end", "stop")
    builder.finish()
    events = builder.drain()
    assert validate_events(events) == []
    terminal = events[-1]
    assert isinstance(terminal, DoneEvent)
    assert terminal.message.content == expected
    has_tool = any(kind == "tool" for kind, _ in blocks)
    assert terminal.reason == ("toolUse" if has_tool else "stop")
    assert terminal.message.usage.total_tokens == 12


def test_incomplete_tool_arguments_end_as_truncated_error_never_tool_use() -> None:
    builder = MessageBuilder()
    builder.tool_call_start(0, "c", "write_file")
    builder.tool_call_delta(0, '{"path": "/tmp/x", "content": "hal')
    builder.block_end(0)
    builder.stop("tool_use", "toolUse")
    builder.finish()
    events = builder.drain()
    assert validate_events(events) == []
    terminal = events[-1]
    assert isinstance(terminal, ErrorEvent)
    info = terminal.error.error_info
    assert info is not None
    assert info.kind == "truncated"
    assert info.retryable
    assert info.output_started
    assert [e.type for e in events].count("toolcall_end") == 0, "no end is invented for an incomplete block"
    call = terminal.error.content[0]
    assert isinstance(call, ToolCall)
    assert call.arguments == {"path": "/tmp/x", "content": "hal"}, "the salvaged preview stays for inspection"


def test_incomplete_tool_arguments_with_length_stay_length() -> None:
    builder = MessageBuilder()
    builder.tool_call_start(0, "c", "f")
    builder.tool_call_delta(0, '{"a": [1, 2')
    builder.block_end(0)
    builder.stop("max_tokens", "length")
    builder.finish()
    events = builder.drain()
    assert validate_events(events) == []
    terminal = events[-1]
    assert isinstance(terminal, DoneEvent)
    assert terminal.reason == "length"


def test_length_after_complete_tool_calls_stays_length_and_is_not_tool_use() -> None:
    # One complete call, and (in the first case) a second cut by the token limit: the vendor said
    # "length", and that is never overwritten — the message keeps its calls but is not toolUse, so an
    # agent loop (which runs calls of toolUse messages) runs none of them.
    for fragments in (['{"a": 1}', '{"b": '], ['{"a": 1}']):
        builder = MessageBuilder()
        for index, fragment in enumerate(fragments):
            builder.tool_call_start(index, f"c{index}", "f")
            builder.tool_call_delta(index, fragment)
        builder.stop("length", "length")
        builder.finish()
        events = builder.drain()
        assert validate_events(events) == []
        terminal = events[-1]
        assert isinstance(terminal, DoneEvent)
        assert terminal.reason == "length"
        assert terminal.message.stop_reason == "length"
        first = terminal.message.content[0]
        assert isinstance(first, ToolCall)
        assert first.arguments == {"a": 1}


def test_initial_tool_input_is_kept_when_no_fragments_follow() -> None:
    builder = MessageBuilder()
    builder.tool_call_start(0, "c", "f", arguments={"q": "full input in the start event"})
    builder.block_end(0)
    builder.stop("tool_use", "toolUse")
    builder.finish()
    events = builder.drain()
    assert validate_events(events) == []
    deltas = [e for e in events if isinstance(e, ToolCallDeltaEvent)]
    assert json.loads(deltas[0].delta) == {"q": "full input in the start event"}
    call = builder.message.content[0]
    assert isinstance(call, ToolCall)
    assert call.arguments == {"q": "full input in the start event"}


def test_control_characters_in_arguments_are_repaired_not_salvaged() -> None:
    builder = MessageBuilder()
    builder.tool_call_start(0, "c", "f")
    builder.tool_call_delta(0, '{"path": "A\\H", "text": "col1\tcol2"}')
    builder.block_end(0)
    builder.stop("tool_use", "toolUse")
    builder.finish()
    call = builder.message.content[0]
    assert isinstance(call, ToolCall)
    assert call.arguments == {"path": "A\\H", "text": "col1\tcol2"}
    assert builder.message.stop_reason == "toolUse"


def test_non_object_arguments_are_a_protocol_error() -> None:
    builder = MessageBuilder()
    builder.tool_call_start(0, "c", "f")
    builder.tool_call_delta(0, "[1, 2]")
    builder.block_end(0)
    builder.stop("tool_use", "toolUse")
    builder.finish()
    assert builder.message.error_info is not None
    assert builder.message.error_info.kind == "protocol"


def test_fail_before_anything_emits_start_then_error() -> None:
    builder = MessageBuilder()
    builder.fail(ErrorInfo.of("auth", status=401), "bad key")
    events = builder.drain()
    assert [e.type for e in events] == ["start", "error"]
    assert validate_events(events) == []
    assert builder.message.error_info is not None
    assert not builder.message.error_info.output_started


def test_fail_keeps_partial_content_and_usage_and_ignores_later_calls() -> None:
    builder = MessageBuilder()
    builder.usage(input=12)
    builder.text_delta(0, "partial ans")
    builder.fail(ErrorInfo.of("network"), "connection reset")
    builder.text_delta(0, "wer")
    builder.stop("end_turn", "stop")
    builder.finish()
    events = builder.drain()
    assert events[-1].type == "error"
    assert builder.message.content == [TextContent(text="partial ans")]
    assert builder.message.usage.input == 12
    assert validate_events(events) == []


def test_missing_stop_reason_is_a_protocol_error() -> None:
    builder = MessageBuilder()
    builder.text_delta(0, "hi")
    builder.finish()
    assert builder.message.stop_reason == "error"
    assert builder.message.error_info is not None
    assert builder.message.error_info.kind == "protocol"


def test_tool_use_without_any_tool_call_is_an_error() -> None:
    builder = MessageBuilder()
    builder.text_delta(0, "hi")
    builder.stop("tool_use", "toolUse")
    builder.finish()
    assert builder.message.stop_reason == "error"


def test_block_started_twice_or_of_the_wrong_kind_is_a_protocol_error() -> None:
    twice = MessageBuilder()
    twice.text_start(0)
    twice.text_start(0)
    assert twice.message.error_info is not None
    assert twice.message.error_info.kind == "protocol"
    mixed = MessageBuilder()
    mixed.text_delta(0, "a")
    mixed.thinking_delta(0, "b")
    assert mixed.message.stop_reason == "error"


def test_missing_and_duplicate_tool_ids_are_made_unique() -> None:
    builder = MessageBuilder()
    builder.message.response_id = "msg_1"
    builder.tool_call_start(0, "", "a")
    builder.tool_call_start(1, "dup", "b")
    builder.tool_call_start(2, "dup", "c")
    ids = [block.id for block in builder.message.content if isinstance(block, ToolCall)]
    assert ids[0].startswith("call_gen_")
    assert ids[1:] == ["dup", "dup_2"]
    again = MessageBuilder()
    again.message.response_id = "msg_1"
    again.tool_call_start(0, "", "a")
    first = again.message.content[0]
    assert isinstance(first, ToolCall)
    assert first.id == ids[0], "generated ids are deterministic for the same response"


def test_usage_overwrites_only_given_fields_and_prices_them() -> None:
    model = Model(id="m", api="x", provider="p", cost=ModelCost(input=1.0, output=2.0))
    builder = MessageBuilder(model)
    builder.usage(input=1000, output=10)
    builder.usage(output=500)
    usage = builder.message.usage
    assert (usage.input, usage.output, usage.total_tokens) == (1000, 500, 1500)
    assert usage.cost.total == 1000 / 1e6 + 1000 / 1e6


#: Counts, a broken server's among them (past the cap, negative, not an int: the JSON a decoder is handed).
_COUNTS: list[Any] = [0, 1, 7, 2**53 - 1, 2**53, 2**64, -5, True, 3.7]


@pytest.mark.parametrize("basis", ["metered", "subscription", "free", "unknown"])
def test_usage_counts_is_usage_with_every_count_given(basis: str) -> None:
    # The short way a per-read decoder takes must leave exactly what usage() leaves: the same clamps
    # (hostile numbers included), the reasoning lowered to the output, the total and the cost.
    rates = ModelCost(input=1.25, output=10.0, cache_read=0.3125, cache_write=4.5, basis=basis)  # pyright: ignore[reportArgumentType]
    model = Model(id="m", api="x", provider="p", cost=rates)
    for first, then in itertools.product(
        itertools.product(_COUNTS[:4], repeat=2), itertools.product(_COUNTS, repeat=2)
    ):
        short, long = MessageBuilder(model), MessageBuilder(model)
        for (a, b), builder in itertools.product((first, then), (short, long)):
            counts: Any = (a, b, b, a, a if b != 1 else None)  # reasoning past the output, or none
            if builder is short:
                builder.usage_counts(*counts)
            else:
                builder.usage(input=a, output=b, cache_read=b, cache_write=a, reasoning=counts[4])
        assert short.message.usage.to_json() == long.message.usage.to_json(), (first, then)


def test_partial_tool_preview_is_not_reparsed_per_delta() -> None:
    builder = MessageBuilder()
    builder.tool_call_start(0, "c", "f")
    builder.tool_call_delta(0, '{"k": "')
    previews: list[dict[str, Any]] = []
    for _ in range(2000):
        builder.tool_call_delta(0, "abcd")
        call = builder.message.content[0]
        assert isinstance(call, ToolCall)
        previews.append(call.arguments)
    distinct = {id(p) for p in previews}
    assert len(distinct) < 60, f"the preview was rebuilt {len(distinct)} times for 2000 deltas"
    builder.tool_call_delta(0, '"}')
    builder.block_end(0)
    call = builder.message.content[0]
    assert isinstance(call, ToolCall)
    assert call.arguments == {"k": "abcd" * 2000}


# -- misuse the builder cannot absorb safely is a protocol error -------------------------------------


def test_a_stop_reason_mapped_outside_the_five_is_a_protocol_error() -> None:
    builder = MessageBuilder()
    builder.text_delta(0, "hi")
    builder.stop("weird", "bogus")  # pyright: ignore[reportArgumentType]
    builder.finish()
    assert builder.message.stop_reason == "error"
    assert builder.message.error_info is not None
    assert builder.message.error_info.kind == "protocol"
    assert "'bogus'" in (builder.message.error_message or "")
    assert validate_events(builder.drain()) == []


@pytest.mark.parametrize("initial", [[1, 2], "rm -rf /", 7, True])
def test_initial_tool_arguments_that_are_not_an_object_never_become_a_call(initial: object) -> None:
    builder = MessageBuilder()
    builder.tool_call_start(0, "call_1", "shell", arguments=initial)
    builder.stop("tool_use", "toolUse")
    builder.finish()
    assert builder.message.stop_reason == "error"
    assert builder.message.error_info is not None
    assert builder.message.error_info.kind == "protocol"
    assert builder.message.content == [], "no tool call with invented arguments"
    assert validate_events(builder.drain()) == []


def test_argument_fragments_for_a_call_never_started_are_a_protocol_error() -> None:
    builder = MessageBuilder()
    builder.text_delta("t", "hi")
    builder.tool_call_delta(3, '{"a": 1}')
    assert builder.finished
    assert builder.message.error_info is not None
    assert builder.message.error_info.kind == "protocol"
    events = builder.drain()
    assert [e.type for e in events] == ["start", "text_start", "text_delta", "error"]
    assert validate_events(events) == []


def test_generated_ids_are_deterministic_without_a_response_id() -> None:
    def ids() -> list[str]:
        builder = MessageBuilder()
        builder.tool_call_start(0, "", "a")
        builder.tool_call_start(1, "", "b")
        return [block.id for block in builder.message.content if isinstance(block, ToolCall)]

    first = ids()
    assert first == ids()
    assert len(set(first)) == 2


def test_hostile_token_counts_are_capped_and_cannot_overflow_the_cost() -> None:
    model = Model(id="m", api="x", provider="p", cost=ModelCost(input=3.0, output=15.0))
    builder = MessageBuilder(model)
    builder.usage(input=10**401, output=-5, reasoning=10**30)
    usage = builder.message.usage
    assert usage.input == 2**53 - 1
    assert usage.output == 0
    assert usage.total_tokens == usage.input
    assert usage.cost.total is not None
    assert usage.cost.total > 0


def test_tool_arguments_with_raw_control_characters_are_repaired_each_character_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Arguments full of raw TABs and stray backslashes: the repair never re-scans what it has seen,
    however many previews and the final parse there are (the quadratic version re-repaired the whole
    buffer at every preview)."""
    fed: list[int] = []
    original = JsonRepairer.feed

    def counting(self: JsonRepairer, text: str) -> str:
        fed.append(len(text))
        return original(self, text)

    monkeypatch.setattr(JsonRepairer, "feed", counting)
    value = "a\tb\\c" * 40
    fragment = '"' + value + '", "k": '
    builder = MessageBuilder()
    builder.tool_call_start(0, "c", "f")
    builder.tool_call_delta(0, '{"start": ')
    for _ in range(5_000):
        builder.tool_call_delta(0, fragment)
    builder.tool_call_delta(0, '"end"}')
    builder.block_end(0)
    call = builder.message.content[0]
    assert isinstance(call, ToolCall)
    assert call.arguments == {"start": value, "k": "end"}
    raw_length = len('{"start": ') + 5_000 * len(fragment) + len('"end"}')
    assert raw_length <= sum(fed) <= raw_length + 16, "each character repaired once"
    assert len(fed) < 80, f"{len(fed)} repair passes: one per preview, not one per fragment"


def test_an_empty_delta_opens_no_block_and_a_later_one_does() -> None:
    builder = MessageBuilder()
    builder.thinking_delta("thinking", "")
    builder.text_delta("text", "")
    assert builder.message.content == []
    assert builder.events == []
    builder.text_delta("text", "Hi")
    builder.text_delta("text", "")
    assert builder.message.content == [TextContent(text="Hi")]
    assert [event.type for event in builder.events] == ["start", "text_start", "text_delta"]
