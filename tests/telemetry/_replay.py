"""Every bundled recording of every adapter the registry knows, replayed with telemetry on.

The adapters and recordings are found at collection time (``cassettes/library/<api>/`` and
``streamfns``'s adapter registry), so an adapter that lands with recordings is covered without a line
here. An adapter ``tests/adapters.py`` declares is replayed with its declared model; any other with a
model of its api from the catalog (its provider, compat flags and base URL), answering the recorded id.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import httpx

import tests.adapters as declared
from cassettes import Cassette, ReplayTransport, library
from cassettes import load as load_file
from conformance.target import Target
from normalize import (
    AssistantMessage,
    AssistantMessageEvent,
    AssistantMessageEventStream,
    Context,
    Model,
    StreamOptions,
)
from streamfns._adapters import all_adapters
from streamfns.catalog import list_models, list_providers
from streamfns.kit import Adapter
from tests.adapters import CONTEXT, AdapterUnderTest

__all__ = ["CASES", "adapter_for", "declared_apis", "load", "replay", "stream_of"]


@functools.cache
def _declared() -> dict[str, AdapterUnderTest]:
    found = [value for value in vars(declared).values() if isinstance(value, AdapterUnderTest)]
    return {under.api: under for under in found}


def declared_apis() -> frozenset[str]:
    """The apis ``tests/adapters.py`` declares a model for."""
    return frozenset(_declared())


def adapter_for(api: str) -> Adapter | None:
    """The registered adapter serving ``api`` (None: none yet)."""
    return all_adapters().get(api)


def _declared_files(adapter: Adapter) -> list[str]:
    """The cassette files an adapter declares in its own package (``Adapter.cassettes``), as paths."""
    source = Target.from_adapter(adapter).cassettes
    found: list[str] = []
    for entry in source if isinstance(source, tuple | list) else ():
        if isinstance(entry, Path):
            found.extend(str(path) for path in sorted(entry.glob("*.jsonl")) if entry.is_dir())
            if entry.is_file():
                found.append(str(entry))
    return found


def _cases() -> list[tuple[str, str]]:
    cases = [(api, name) for api in library.apis() for name in library.names(api)]
    bundled = {name for _, name in cases}
    for api, adapter in sorted(all_adapters().items()):
        cases.extend((api, path) for path in _declared_files(adapter) if Path(path).stem not in bundled)
    return cases


#: ``(api, recording)`` for every bundled recording and every cassette file an adapter declares in its
#: own package (a recording is a bundled name or a file path).
CASES = _cases()


def load(recording: str) -> Cassette:
    """A recording of :data:`CASES`: a bundled name, or a cassette file."""
    return library.load(recording) if recording in library.names() else load_file(recording)


@functools.cache
def _catalog_model(api: str) -> Model | None:
    for provider in list_providers():
        for model in list_models(provider):
            if model.api == api:
                return model
    return None


def model_for(api: str, cassette: Cassette) -> Model:
    """The model a recording of ``api`` is replayed with."""
    under = _declared().get(api)
    if under is not None:
        return under.replay_model(cassette)
    listed = _catalog_model(api)
    fields: dict[str, Any] = {"id": cassette.model or "recorded-model", "api": api, "max_tokens": 1024}
    if listed is not None:
        fields |= {"provider": listed.provider, "compat": listed.compat, "reasoning": listed.reasoning}
        fields["base_url"] = listed.base_url if "<" not in listed.base_url else "https://replay.example"
    else:
        fields |= {"provider": "replay", "base_url": "https://replay.example"}
    return Model(**fields)


async def replay(
    adapter: Adapter, model: Model, cassette: Cassette, **overrides: Any
) -> tuple[list[AssistantMessageEvent], AssistantMessage]:
    """Every event and the final message of ``adapter`` answering ``cassette`` (no retries)."""
    async with httpx.AsyncClient(transport=ReplayTransport(cassette, match="any")) as client:
        settings: dict[str, Any] = {"api_key": "test-key", "max_retries": 0, **overrides}
        options = StreamOptions(http_client=client, **settings)
        made = adapter.stream_fn(model, CONTEXT, options)
        stream = made if isinstance(made, AssistantMessageEventStream) else await made
        events = [event async for event in stream]
        return events, await stream.result()


def stream_of(adapter: Adapter, model: Model, context: Context, options: StreamOptions) -> AssistantMessageEventStream:
    """The stream ``adapter`` returns (a kit adapter returns it at once, never an awaitable)."""
    made = adapter.stream_fn(model, context, options)
    assert isinstance(made, AssistantMessageEventStream)
    return made
