"""The Mistral bench measures real work: its bodies read, through the adapter, to exactly what they were
written to hold, and the SDK contender parses every chunk of them."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from bench import mistral_bench
from bench._util import argument_fragments
from normalize import TextContent, ThinkingContent, ToolCall
from tests.mistral._mistral import MISTRAL

pytestmark = pytest.mark.parallel  # clock-blind: in-process transports only

WORDS = ("The ", "stream ", "of ", "tokens ", "arrives ", "quickly, ", "naïve ", "日本 ")


async def test_the_text_body() -> None:
    _, message = await MISTRAL.run_reads([mistral_bench.text_body(100)])
    assert message.content == [TextContent(text="".join(WORDS[i % len(WORDS)] for i in range(100)))]
    assert (message.stop_reason, message.usage.output) == ("stop", 100)


async def test_the_tool_body() -> None:
    _, message = await MISTRAL.run_reads([mistral_bench.tool_body(200)])
    expected = json.loads("".join(argument_fragments(200)))
    assert message.content == [ToolCall(id="D681PevKs", name="apply_edits", arguments=expected)]
    assert message.stop_reason == "toolUse"


async def test_the_thinking_body() -> None:
    _, message = await MISTRAL.run_reads([mistral_bench.thinking_body(50)])
    assert [type(block) for block in message.content] == [ThinkingContent, TextContent]
    assert message.content[1] == TextContent(text="Done.")


@pytest.mark.parametrize("make", [mistral_bench.text_body, mistral_bench.tool_body, mistral_bench.thinking_body])
async def test_the_sdk_contender_reads_every_chunk(make: Callable[[int], bytes]) -> None:
    body = make(20)
    assert await mistral_bench._sdk(body) == body.count(b"\n\n") - 1  # pyright: ignore[reportPrivateUsage] - every chunk but [DONE]
