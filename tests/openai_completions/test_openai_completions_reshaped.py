"""Decode rules that no bundled recording exercises, checked on every real recording reshaped into
the form the servers that need them send: the final message must come out the same.

- ``data: null`` and non-object chunks between events (skipped);
- usage in the finishing chunk's choice instead of a usage-only chunk (Moonshot/Kimi);
- cache reads as a top-level ``usage.cached_tokens`` (Kimi);
- a tool call whose continuation chunks carry another id (the first is kept);
- ``finish_reason`` repeated on every content chunk (one-api/new-api gateways).
"""

# The reshapes edit parsed vendor JSON, which is untyped by nature.
# pyright: reportUnknownMemberType=false, reportUnknownVariableType=false, reportUnknownArgumentType=false

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest

from cassettes import Cassette, library
from cassettes.model import Chunk
from normalize import AssistantMessage, validate_events
from tests.adapters import OPENAI_COMPLETIONS as OC
from tests.sse_events import split_events

pytestmark = pytest.mark.parallel

Reshape = Callable[[list[Any]], list[Any]]
#: The recordings that end in a vendor error event, not a finish: their end cannot be reshaped.
ERRORING = {"pai__groq_midstream_error_after_text", "pai__groq_midstream_error_event_tool_use_failed"}
RECORDINGS = [name for name in OC.stream_names() if name not in ERRORING]


def _chunks(cassette: Cassette) -> list[Any]:
    """The body's ``data:`` values in order (JSON where it parses, else the raw text, e.g. [DONE])."""
    values: list[Any] = []
    for event in split_events(cassette.interactions[0].response.body):
        if event.data is None:
            continue
        try:
            values.append(json.loads(event.data))
        except ValueError:
            values.append(event.data)
    return values


def _with_chunks(cassette: Cassette, values: list[Any]) -> Cassette:
    body = b"".join(f"data: {value if isinstance(value, str) else json.dumps(value)}\n\n".encode() for value in values)
    response = dataclasses.replace(cassette.interactions[0].response, chunks=(Chunk(body, 0.0),))
    interaction = dataclasses.replace(cassette.interactions[0], response=response)
    return dataclasses.replace(cassette, interactions=(interaction,))


def _choice(value: Any) -> dict[str, Any] | None:
    if isinstance(value, dict):
        choices = value.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            return choices[0]
    return None


def _null_chunks(values: list[Any]) -> list[Any]:
    reshaped: list[Any] = []
    for value in values:
        reshaped += ["null", "[]", '"keep-alive"', value]
    return reshaped


def _usage_in_the_finishing_choice(values: list[Any]) -> list[Any]:
    usage_at = next((i for i, v in enumerate(values) if isinstance(v, dict) and v.get("usage")), None)
    finish_at = next((i for i, v in enumerate(values) if (_choice(v) or {}).get("finish_reason")), None)
    if usage_at is None or finish_at is None or usage_at < finish_at:
        return values
    reshaped = copy.deepcopy(values)
    usage = reshaped[usage_at].pop("usage")
    (_choice(reshaped[finish_at]) or {})["usage"] = usage
    if not _choice(reshaped[usage_at]) and usage_at != finish_at:
        del reshaped[usage_at]  # a usage-only chunk: now empty
    return reshaped


def _top_level_cached_tokens(values: list[Any]) -> list[Any]:
    reshaped = copy.deepcopy(values)
    for value in reshaped:
        usage = value.get("usage") if isinstance(value, dict) else None
        if not isinstance(usage, dict):
            continue
        details = usage.get("prompt_tokens_details")
        if isinstance(details, dict) and "cached_tokens" in details:
            usage["cached_tokens"] = details.pop("cached_tokens")
    return reshaped


def _changing_call_ids(values: list[Any]) -> list[Any]:
    reshaped = copy.deepcopy(values)
    seen: set[int] = set()
    for value in reshaped:
        delta = (_choice(value) or {}).get("delta")
        for call in delta.get("tool_calls") or [] if isinstance(delta, dict) else []:
            index = call.get("index")
            if index in seen:
                call["id"] = f"call_changed_{index}"
            seen.add(index)
    return reshaped


def _finish_on_every_chunk(values: list[Any]) -> list[Any]:
    finish = next(
        ((_choice(v) or {}).get("finish_reason") for v in values if (_choice(v) or {}).get("finish_reason")), None
    )
    ids = {value.get("id") for value in values if isinstance(value, dict)}
    if finish != "stop" or len(ids) > 1:
        # Per-chunk ids (Groq compound) make a later chunk another response: the gateways that
        # repeat the finish_reason keep one id.
        return values
    reshaped = copy.deepcopy(values)
    for value in reshaped:
        choice = _choice(value)
        if choice is not None and isinstance(choice.get("delta"), dict) and choice["delta"].get("content"):
            choice["finish_reason"] = "stop"
    return reshaped


RESHAPES: dict[str, Reshape] = {
    "null-chunks": _null_chunks,
    "kimi-choice-usage": _usage_in_the_finishing_choice,
    "kimi-cached-tokens": _top_level_cached_tokens,
    "changing-call-ids": _changing_call_ids,
    "finish-on-every-chunk": _finish_on_every_chunk,
}


def _same(a: AssistantMessage, b: AssistantMessage) -> dict[str, Any]:
    def view(message: AssistantMessage) -> dict[str, Any]:
        data = message.to_json()
        return {key: data.get(key) for key in ("content", "stopReason", "usage", "errorMessage")}

    return {"reshaped": view(b), "original": view(a)} if view(a) != view(b) else {}


def _cases() -> list[tuple[str, str]]:
    """Every (recording, reshape) pair where the reshape changes something."""
    cases: list[tuple[str, str]] = []
    for name in RECORDINGS:
        values = _chunks(library.load(name))
        cases += [(name, reshape) for reshape in sorted(RESHAPES) if RESHAPES[reshape](values) != values]
    return cases


CASES = _cases()


def test_every_reshape_applies_to_some_real_recording() -> None:
    assert {reshape for _, reshape in CASES} == set(RESHAPES)


@pytest.mark.parametrize(("name", "reshape"), CASES)
async def test_a_recording_reshaped_as_other_servers_send_it_decodes_the_same(name: str, reshape: str) -> None:
    cassette = library.load(name)
    values = _chunks(cassette)
    reshaped_values = RESHAPES[reshape](values)
    # The original, re-serialized the same way, is the reference: only the reshape differs.
    _, original = await OC.replay(_with_chunks(cassette, values))
    events, reshaped = await OC.replay(_with_chunks(cassette, reshaped_values))
    assert validate_events(events) == []
    assert not _same(original, reshaped), _same(original, reshaped)
