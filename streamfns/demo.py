"""``make demo``: stream responses offline through the real pipeline and render them.

Part one replays real recorded vendor streams (bundled cassettes) through each built-in adapter —
the recordings its ``Adapter.demo`` names, through the real adapter, SSE decoder and builder, fed
the recorded bytes with their timing by a cassette transport; part two streams a scripted thinking →
text → tool call response from the faux provider. Nothing touches the network.
"""

from __future__ import annotations

import asyncio
import sys

import httpx

import streamfns
from cassettes import ReplayTransport, library
from normalize import Context, Model, StreamOptions, Tool, UserMessage
from streamfns._adapters import builtin_adapters
from streamfns._render import format_summary, render_stream
from streamfns.catalog import list_models
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


def _priced_model(model_id: str, api: str) -> Model:
    # The catalog knows most recorded models' prices, so the summary shows a real cost.
    for model in list_models():
        if model.id == model_id and model.api == api:
            return model
    return Model(id=model_id, api=api, provider="recorded", base_url="https://recorded.invalid")


async def _recorded_part() -> None:
    for api, adapter in sorted(builtin_adapters().items()):
        for name, what, prompt in adapter.demo:
            cassette = library.load(name)
            source = cassette.source or {}
            print(f"== {api} recording {name}: {what}")
            print(
                f"   (recorded bytes from {source.get('repository', '?')}, {source.get('license', '?')}; "
                "replayed offline)"
            )
            model = _priced_model(cassette.model or "recorded-model", api)
            transport = ReplayTransport(cassette, match="any", timing="recorded")
            async with httpx.AsyncClient(transport=transport) as client:
                options = StreamOptions(api_key="offline-demo", http_client=client)
                context = Context(messages=[UserMessage(content=prompt)])
                summary = await render_stream(streamfns.stream(model, context, options), color=sys.stdout.isatty())
            print(format_summary(summary))
            print()


async def _main() -> None:
    await _recorded_part()
    await _faux_part()


def main() -> None:
    """Run the demo."""
    asyncio.run(_main())
    sys.stdout.flush()


if __name__ == "__main__":
    main()
