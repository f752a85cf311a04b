"""The conformance target the adapter's declaration gives: real library bodies, and one hand-edited for
parallel calls whose committed bytes are exactly its documented derivation."""

from __future__ import annotations

import pytest

from cassettes import library, load
from cassettes.format import dumps
from conformance import Capabilities, Target
from normalize import ToolCall, validate_events
from streamfns.openai_responses import ADAPTER, WIRE
from tests.adapters import OPENAI_RESPONSES as RESPONSES
from tests.openai_responses._parallel import NAME, PATH, SOURCE, derive

pytestmark = pytest.mark.parallel

TARGET = Target.from_adapter(ADAPTER)


def test_the_parallel_recording_is_exactly_its_derivation_from_a_real_one() -> None:
    assert f"{NAME}.jsonl" in ADAPTER.cassettes
    assert PATH.read_text(encoding="utf-8") == dumps(derive())
    cassette = load(PATH)
    assert cassette.name == NAME
    assert cassette.source is not None
    assert SOURCE in str(cassette.source["provenance"])


async def test_the_parallel_recording_yields_two_calls() -> None:
    events, message = await RESPONSES.replay(load(PATH))
    assert validate_events(events) == []
    assert message.stop_reason == "toolUse"
    calls = [b for b in message.content if isinstance(b, ToolCall)]
    assert [c.arguments for c in calls] == [{"country": "France"}, {"country": "Japan"}]
    assert len({c.id for c in calls}) == 2


def test_the_target_declares_every_capability_and_replays_the_declared_recordings_in_order() -> None:
    assert TARGET.capabilities == Capabilities.every_feature("openai-responses")
    assert TARGET.stream_fn is ADAPTER.stream_fn
    assert TARGET.name == "streamfns.openai_responses.stream_openai_responses"
    assert TARGET.profile is WIRE.profile
    expected = (
        library.path("pai__text_gpt4o"),  # the harness's text-only checks take the first
        library.path("pai__function_call_gpt4o"),
        PATH,
        library.path("mirahar__reasoning_summary_o4mini"),
        library.path("pai__openrouter_raw_cot_gptoss"),
        library.path("vercel__lmstudio_reasoning_function_call"),
        library.path("pai__phase_commentary_gpt55"),
    )
    assert TARGET.cassettes == expected
    assert all(path.is_file() for path in expected)
