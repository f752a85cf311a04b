"""The bodies ``python -m bench cohere`` measures are what they say: every stack reads them to the end, and
ours to the message they describe (a bench that timed an error path would judge nothing)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bench import cohere_bench
from bench._util import argument_fragments
from tests.adapters import calls, texts, thinking
from tests.cohere._cohere import COHERE

pytestmark = pytest.mark.parallel  # clock-blind: in-process transports only


async def test_the_text_body() -> None:
    _, message = await COHERE.run_reads([cohere_bench.text_body(16)])
    assert message.stop_reason == "stop", message.error_message
    assert texts(message) == "The stream of tokens arrives quickly, naïve 日本 " * 2
    assert (message.usage.input, message.usage.cache_read) == (4, 208)


async def test_the_tool_body() -> None:
    _, message = await COHERE.run_reads([cohere_bench.tool_body(48)])
    assert message.stop_reason == "toolUse", message.error_message
    assert thinking(message) == "The stream of tokens arrives quickly, naïve 日本 "
    [call] = calls(message)
    assert call.name == "apply_edits"
    assert call.arguments["edits"][0]["text"] == 'x = "a\\tb"\n'
    assert len(argument_fragments(48)) == 48


async def test_the_thinking_body() -> None:
    _, message = await COHERE.run_reads([cohere_bench.thinking_body(8)], target=COHERE.model(reasoning=True))
    assert (thinking(message), texts(message)) == ("Let me think about the stream; naïve 日本 ", "Done.")


@pytest.mark.parametrize("make", [cohere_bench.text_body, cohere_bench.tool_body, cohere_bench.thinking_body])
async def test_every_stack_reads_each_body(make: Callable[[int], bytes]) -> None:
    body = make(24)
    events = body.count(b"\n\n")
    assert await cohere_bench._naive(body) == events  # pyright: ignore[reportPrivateUsage]
    assert await cohere_bench._ours(body) > 24  # its own check: the message ended stop or toolUse  # pyright: ignore[reportPrivateUsage]
    assert await cohere_bench._sdk(body) == 0  # pyright: ignore[reportPrivateUsage]
