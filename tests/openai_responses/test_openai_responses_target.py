"""The conformance target's recordings: real library bodies, and one hand-edited for parallel calls
whose committed bytes are exactly its documented derivation."""

from __future__ import annotations

from cassettes import load
from cassettes.format import dumps
from normalize import ToolCall, validate_events
from streamfns.openai_responses.conformance import PARALLEL_RECORDING, RECORDINGS, TARGET
from tests.adapters import OPENAI_RESPONSES as RESPONSES
from tests.openai_responses._parallel import NAME, PATH, SOURCE, derive


def test_the_parallel_recording_is_exactly_its_derivation_from_a_real_one() -> None:
    assert PATH == PARALLEL_RECORDING
    assert PATH.read_text(encoding="utf-8") == dumps(derive())
    cassette = load(PATH)
    assert cassette.name == NAME
    assert cassette.source is not None
    assert SOURCE in str(cassette.source["provenance"])


async def test_the_parallel_recording_yields_two_calls() -> None:
    events, message = await RESPONSES.replay(load(PARALLEL_RECORDING))
    assert validate_events(events) == []
    assert message.stop_reason == "toolUse"
    calls = [b for b in message.content if isinstance(b, ToolCall)]
    assert [c.arguments for c in calls] == [{"country": "France"}, {"country": "Japan"}]
    assert len({c.id for c in calls}) == 2


def test_the_target_declares_every_capability_and_replays_its_own_recordings() -> None:
    capabilities = TARGET.capabilities
    assert capabilities.api == "openai-responses"
    assert all(
        (
            capabilities.tool_calls,
            capabilities.parallel_tool_calls,
            capabilities.thinking,
            capabilities.usage_in_stream,
            capabilities.images,
            capabilities.retries,
        )
    )
    assert TARGET.cassettes == RECORDINGS
    assert all(path.is_file() for path in RECORDINGS)
    assert RECORDINGS[0].stem == "pai__text_gpt4o"  # the harness's text-only checks take the first
