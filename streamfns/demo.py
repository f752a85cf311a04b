"""``make demo``: stream responses offline through the real pipeline and render them.

Part one replays real recorded Anthropic streams (bundled cassettes) through ``stream_anthropic``
with their recorded timing; part two streams a scripted thinking → text → tool call response from the
faux provider. Nothing touches the network.
"""

from __future__ import annotations

import asyncio
import sys

import streamfns
from normalize import Context, StreamOptions, Tool, UserMessage
from streamfns._render import format_summary, render_stream
from streamfns.faux import FauxProvider, faux_message, faux_text, faux_thinking, faux_tool_call

__all__ = ["main"]


async def _faux_part() -> None:
    faux = FauxProvider(tokens_per_second=400).register()
    try:
        faux.set_responses(
            [
                faux_message(
                    [
                        faux_thinking("The user wants the weather in Paris; I should call the weather tool.", "sig"),
                        faux_text("Let me look up the current weather in Paris for you."),
                        faux_tool_call("get_weather", {"city": "Paris", "unit": "celsius"}),
                    ],
                    stop_reason="toolUse",
                )
            ]
        )
        context = Context(
            system_prompt="You are a helpful assistant.",
            tools=[Tool(name="get_weather", description="Current weather for a city")],
            messages=[UserMessage(content="What's the weather in Paris?")],
        )
        print("== faux provider: scripted thinking → text → tool call")
        summary = await render_stream(
            streamfns.stream(faux.model(), context, StreamOptions()), color=sys.stdout.isatty()
        )
        print(format_summary(summary))
    finally:
        faux.unregister()


async def _main() -> None:
    await _faux_part()


def main() -> None:
    """Run the demo."""
    asyncio.run(_main())
    sys.stdout.flush()


if __name__ == "__main__":
    main()
