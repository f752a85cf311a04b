"""``streamfns demo``: stream responses offline through the real pipeline and render them.

Part one replays real recorded vendor streams (bundled cassettes) through each adapter — the
recordings its ``Adapter.demo`` names, through the real adapter, decoder and builder, fed the
recorded bytes with their timing by a cassette transport; part two streams a scripted thinking →
text → tool call response from the faux provider. Nothing touches the network. ``make demo`` runs
this, then the agent loop example on its bundled multi-turn recordings (``python -m
examples.agent_loop --demo``, from a clone: examples are not part of the package).

The helpers here (:func:`load_cassette`, :func:`model_for_cassette`, :func:`replay_client`) are
what ``streamfns replay`` and the agent loop example's ``--replay`` use too.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from urllib.parse import urlsplit

import httpx

import streamfns
from cassettes import Cassette, CassetteError, ReplayTransport, Timing, library, load
from normalize import Context, Model, StreamOptions, Tool, UserMessage
from streamfns._adapters import all_adapters
from streamfns.catalog import model_for_recording
from streamfns.faux import FauxProvider, faux_message, faux_text, faux_thinking, faux_tool_call
from streamfns.render import format_summary, render_stream, use_color

__all__ = ["load_cassette", "main", "model_for_cassette", "replay_client"]


def load_cassette(name_or_path: str) -> Cassette:
    """A cassette file, or a bundled library recording by name; ``CassetteError`` naming the problem."""
    path = Path(name_or_path)
    if path.is_file():
        return load(path)
    if path.suffix or "/" in name_or_path or name_or_path not in library.names():
        raise CassetteError(f"{name_or_path}: file not found (nor a bundled recording name)")
    return library.load(name_or_path)


def model_for_cassette(cassette: Cassette) -> Model:
    """The catalog model a recording came from (so usage is priced and requests match), else a bare one
    whose price is unknown (:func:`streamfns.catalog.model_for_recording`: the cassette's api decides
    the catalog, and a catch-all entry never claims a model of another api). ``CassetteError`` when
    the cassette names no api, or an api no adapter serves.
    """
    api = cassette.api
    if not api:
        raise CassetteError("the cassette names no api, so no adapter can replay it")
    if api not in streamfns.registered_apis():
        raise CassetteError(f"no adapter serves api {api!r} (known: {', '.join(streamfns.registered_apis())})")
    host = urlsplit(cassette.interactions[0].request.url).hostname if cassette.interactions else None
    return model_for_recording(api, cassette.model or "recorded-model", host=host)


def replay_client(cassette: Cassette, *, match: str = "any", timing: Timing = "instant") -> httpx.AsyncClient:
    """An HTTP client that answers from ``cassette`` (pass it as ``StreamOptions.http_client``)."""
    transport = ReplayTransport(cassette, match="request" if match == "request" else "any", timing=timing)
    return httpx.AsyncClient(transport=transport)


async def _recorded_part(color: bool) -> None:
    for api, adapter in sorted(all_adapters().items()):
        for name, what, prompt in adapter.demo:
            cassette = library.load(name)
            source = cassette.source or {}
            print(f"== {api} recording {name}: {what}")
            print(
                f"   (recorded bytes from {source.get('repository', '?')}, {source.get('license', '?')}; "
                "replayed offline)"
            )
            async with replay_client(cassette, timing="recorded") as client:
                options = StreamOptions(api_key="offline-demo", http_client=client)
                context = Context(messages=[UserMessage(content=prompt)])
                model = model_for_cassette(cassette)
                summary = await render_stream(streamfns.stream(model, context, options), color=color)
            print(format_summary(summary))
            print()


async def _faux_part(color: bool) -> None:
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
        summary = await render_stream(streamfns.stream(faux.model(), context, StreamOptions()), color=color)
        print(format_summary(summary))
    finally:
        faux.unregister()


async def _main() -> None:
    color = use_color(sys.stdout)
    await _recorded_part(color)
    await _faux_part(color)


def main() -> None:
    """Run the demo."""
    asyncio.run(_main())
    sys.stdout.flush()


if __name__ == "__main__":
    main()
