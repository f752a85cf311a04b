"""The bench's minimal decoders (what no decoder on the kit can undercut) and how a comparison shows them.

A minimal decoder is a fair lower bound only if it does all the output work the adapter does: on the
bench's own bodies it must give the same events (types, indexes, deltas) and the same content in the
final message. Otherwise a budget could look out of reach because the bound did less, not because
the kit costs that much.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from bench import anthropic_bedrock_bench, bedrock_bench, google_bench, ollama_bench
from bench._util import MIN_ROUNDS
from bench._wire import BENCH_CONTEXT, Rounds, compare, served
from normalize import AssistantMessage, StreamOptions, ToolCall

pytestmark = pytest.mark.parallel


async def _run(stream_fn: Any, module: ModuleType, body: bytes, media_type: str) -> tuple[list[Any], AssistantMessage]:
    async with served(body, media_type) as client:
        stream = stream_fn(module._MODEL, BENCH_CONTEXT, StreamOptions(api_key="bench", http_client=client))
        events = [
            (event.type, getattr(event, "content_index", None), getattr(event, "delta", None)) async for event in stream
        ]
        return events, await stream.result()


def _content(message: AssistantMessage) -> list[Any]:
    """The message's blocks without what a decoder derives on its own (call ids)."""
    return [(block.name, block.arguments) if isinstance(block, ToolCall) else block for block in message.content]


CASES = [
    (ollama_bench, ollama_bench.stream_ollama_chat, "application/x-ndjson", ollama_bench.text_body),
    (ollama_bench, ollama_bench.stream_ollama_chat, "application/x-ndjson", ollama_bench.tool_body),
    (
        bedrock_bench,
        bedrock_bench.stream_bedrock_converse,
        "application/vnd.amazon.eventstream",
        bedrock_bench.text_body,
    ),
    (
        bedrock_bench,
        bedrock_bench.stream_bedrock_converse,
        "application/vnd.amazon.eventstream",
        bedrock_bench.tool_body,
    ),
]


@pytest.mark.parametrize(("module", "adapter", "media_type", "make_body"), CASES)
def test_the_minimal_decoder_gives_the_adapters_events_and_content(
    module: ModuleType, adapter: Any, media_type: str, make_body: Callable[[int], bytes]
) -> None:
    body = make_body(300)
    ours, ours_message = asyncio.run(_run(adapter, module, body, media_type))
    minimal, minimal_message = asyncio.run(_run(module._MINIMAL, module, body, media_type))
    assert len(ours) >= 300
    assert minimal == ours
    assert minimal_message.stop_reason == ours_message.stop_reason
    assert ours_message.stop_reason in ("stop", "toolUse")
    assert _content(minimal_message) == _content(ours_message)


def test_a_comparison_shows_the_minimal_decoder_beside_ours_and_its_variants_without_a_budget() -> None:
    async def bare(body: bytes) -> int:
        return sum(range(2000))

    async def ours(body: bytes) -> int:
        return sum(range(1000))

    async def minimal(body: bytes) -> int:
        return sum(range(500))

    async def sdk(body: bytes) -> int:
        return sum(range(20000))

    comparison = compare(
        "text body",
        b"x",
        1,
        {"bare": bare, "ours": ours, "ours, a variant": ours},
        ("sdk", sdk),
        floor_a=None,
        floor_c=None,
        minimal=("minimal", minimal),
    )
    assert [tag for tag, _, _ in comparison.stacks] == ["(a) ", "(b) ", "(b') ", "(m) ", "(c) "]
    assert [name for name, _ in comparison.ratios] == ["b/a", "m/a", "b/c", "m/c"]
    assert all(judgement.budget is None for name, judgement in comparison.ratios if name.startswith("m/"))
    roles = [stack["role"] for stack in comparison.as_dict()["stacks"]]
    assert roles == ["bare", "ours", "variant", "minimal", "sdk"]
    lines = comparison.lines()
    assert any(line.startswith("  (m) minimal") for line in lines)
    assert any(line.startswith("  m/c = ") for line in lines)


async def _bare(body: bytes) -> int:
    return sum(range(2000))


async def _ours(body: bytes) -> int:
    return sum(range(1000))


async def _minimal(body: bytes) -> int:
    return sum(range(500))


def test_a_floor_against_the_minimal_decoder_adds_the_judged_b_m_line() -> None:
    comparison = compare(
        "text body",
        b"x",
        1,
        {"bare": _bare, "ours": _ours},
        None,
        floor_a=None,
        floor_c=None,
        minimal=("minimal", _minimal),
        floor_m=0.9,
    )
    assert [name for name, _ in comparison.ratios] == ["b/a", "m/a", "b/m"]
    judged = dict(comparison.ratios)["b/m"]
    assert judged.budget == 0.9
    assert not judged.at_most
    assert judged.decision in ("within", "over", "undecided")  # the rule's verdict, whatever the machine
    assert comparison.as_dict()["ratios"]["b/m"]["budget"] == 0.9
    line = next(line for line in comparison.lines() if line.startswith("  b/m = "))
    assert "budget ≥ 0.9: " in line
    assert line.endswith(("within budget", "OVER BUDGET", "undecided (median misses; interval + 5% drift reaches it)"))


def test_without_a_floor_against_the_minimal_decoder_there_is_no_b_m_line() -> None:
    comparison = compare(
        "text body", b"x", 1, {"bare": _bare, "ours": _ours}, None, floor_a=None, floor_c=None, minimal=("m", _minimal)
    )
    assert [name for name, _ in comparison.ratios] == ["b/a", "m/a"]


def test_a_floor_against_the_minimal_decoder_needs_one() -> None:
    with pytest.raises(ValueError, match="minimal decoder"):
        compare("text", b"x", 1, {"bare": _bare, "ours": _ours}, None, floor_a=None, floor_c=None, floor_m=0.9)


def test_b_m_is_the_minimal_decoders_time_over_ours_judged_by_the_rule() -> None:
    """b/m is time(m)/time(b), so ours at 0.9 of the minimal decoder's speed or better is within: with
    made-up rounds (no timing), ours twice as slow is over, as fast is within."""
    slow, even = Rounds.__new__(Rounds), Rounds.__new__(Rounds)
    slow.times = [[2.0] * MIN_ROUNDS, [2.0] * MIN_ROUNDS, [1.0] * MIN_ROUNDS]  # (a), (b), (m)
    even.times = [[2.0] * MIN_ROUNDS, [1.0] * MIN_ROUNDS, [1.0] * MIN_ROUNDS]
    assert slow.settle(2, 1, ollama_bench.TEXT_FLOOR_M).decision == "over"
    assert even.settle(2, 1, ollama_bench.TEXT_FLOOR_M).decision == "within"


def test_the_ollama_suite_judges_the_restated_budgets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 34: text b/a ≥ 1.25, b/c ≥ 3 and b/m ≥ 0.9; tool lines b/a ≥ 0.45 and b/c ≥ 1 (no b/m);
    tool/text per event ≤ 1.5. What ``run`` passes to the comparisons is read off a stand-in."""
    assert (ollama_bench.TEXT_FLOOR_A, ollama_bench.TEXT_FLOOR_C, ollama_bench.TEXT_FLOOR_M) == (1.25, 3.0, 0.9)
    assert (ollama_bench.TOOL_FLOOR_A, ollama_bench.TOOL_FLOOR_C) == (0.45, 1.0)
    assert ollama_bench.TOOL_TEXT_COST == 1.5
    calls: dict[str, dict[str, Any]] = {}

    class _Lines:
        def lines(self) -> list[str]:
            return []

    def fake_compare(label: str, *args: Any, **kwargs: Any) -> _Lines:
        calls[label] = kwargs
        return _Lines()

    def fake_judge_cost(label: str, *args: Any, **kwargs: Any) -> str:
        calls[label] = {"budget": args[-1], **kwargs}
        return label

    monkeypatch.setattr(ollama_bench, "compare", fake_compare)
    monkeypatch.setattr(ollama_bench, "judge_cost", fake_judge_cost)
    ollama_bench.run()
    text, tool = calls["text 40k lines"], calls["tool calls 16k lines"]
    assert (text["floor_a"], text["floor_c"], text["floor_m"]) == (1.25, 3.0, 0.9)
    assert text["minimal"] is not None
    assert (tool["floor_a"], tool["floor_c"], tool.get("floor_m")) == (0.45, 1.0, None)
    cost = calls["stream_ollama_chat tool/text cost per event at 16k lines"]
    assert cost == {"budget": 1.5, "per_event": True}


def test_the_conversestream_and_gemini_suites_state_the_restated_budgets() -> None:
    assert (bedrock_bench.CONVERSE_FLOOR_A, bedrock_bench.CONVERSE_FLOOR_C, bedrock_bench.TOOL_TEXT_COST) == (
        1.5,
        5.0,
        1.5,
    )
    assert (google_bench.TEXT_FLOOR_A, google_bench.SDK_FLOOR_C) == (2.0, 10.0)
    assert (google_bench.PARTIAL_ARGS_FLOOR_A, google_bench.PARTIAL_ARGS_TEXT_COST) == (1.5, 1.75)
    # Claude on Bedrock keeps its own floor: it does not read ConverseStream's constant
    source = inspect.getsource(anthropic_bedrock_bench)
    assert "CONVERSE_FLOOR" not in source
    assert "floor_c=10.0" in source


def test_a_tiny_ollama_text_comparison_prints_the_judged_b_m_line() -> None:
    """A smoke run of the Ollama text comparison on a tiny body: every judged line the suite prints."""
    body = ollama_bench.text_body(20)
    comparison = compare(
        "text",
        body,
        body.count(b"\n"),
        {"bare": ollama_bench._naive, "ours": ollama_bench._ours},  # pyright: ignore[reportPrivateUsage]
        ("client", ollama_bench._client),  # pyright: ignore[reportPrivateUsage]
        floor_a=ollama_bench.TEXT_FLOOR_A,
        floor_c=ollama_bench.TEXT_FLOOR_C,
        minimal=("minimal", ollama_bench._minimal),  # pyright: ignore[reportPrivateUsage]
        floor_m=ollama_bench.TEXT_FLOOR_M,
    )
    judged = dict(comparison.ratios)
    assert list(judged) == ["b/a", "m/a", "b/m", "b/c", "m/c"]
    assert {name: judged[name].budget for name in judged} == {
        "b/a": 1.25,
        "m/a": None,
        "b/m": 0.9,
        "b/c": 3.0,
        "m/c": None,
    }
    assert all(judged[name].decision is not None for name in ("b/a", "b/m", "b/c"))


def test_a_comparison_needs_a_bare_stack_and_ours() -> None:
    async def one(body: bytes) -> int:
        return 0

    with pytest.raises(ValueError, match="need"):
        compare("text", b"x", 1, {"a": one}, None, floor_a=None, floor_c=None)
