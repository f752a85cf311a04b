"""The Copilot cassettes: the one recorded Copilot body (a Responses stream, bundled in the library) and
the synthetic chat-completions and Messages ones beside their adapters, each replayed to ``done`` on
its catalog model.

The synthetic ones were made from the bodies in ``tests/github_copilot/bodies/`` with
:func:`cassettes.import_body` (what ``cassettes import`` runs), then marked ``"body": "synthetic"``::

    recording = cassettes.import_body(body, api=API, model=ID, url=URL, name=NAME, source=SOURCE)
    cassettes.save(dataclasses.replace(recording, extra={**recording.extra, "body": "synthetic"}), OUT)
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

import cassettes
import streamfns
from cassettes import Cassette, ReplayTransport, library, rechunk
from normalize import AssistantMessage, AssistantMessageEvent, Context, StreamOptions, UserMessage, validate_events
from streamfns.catalog import get_model, model_for_recording

pytestmark = pytest.mark.parallel

ROOT = Path(__file__).resolve().parents[2]
BODIES = Path(__file__).resolve().parent / "bodies"
CONTEXT = Context(messages=[UserMessage(content="Hello")])

#: name -> (file beside its adapter, body file, catalog model id, stop reason, tool calls)
SYNTHETIC = {
    "copilot__text_gpt41_SYNTHETIC": (
        "streamfns/openai_completions",
        "copilot_chat_text_gpt41.sse",
        "gpt-4.1",
        "stop",
        0,
    ),
    "copilot__tool_call_gemini3pro_SYNTHETIC": (
        "streamfns/openai_completions",
        "copilot_chat_tool_call_gemini3pro.sse",
        "gemini-3-pro-preview",
        "toolUse",
        1,
    ),
    "copilot__thinking_sonnet45_SYNTHETIC": (
        "streamfns/anthropic",
        "copilot_messages_thinking_sonnet45.sse",
        "claude-sonnet-4.5",
        "stop",
        0,
    ),
    "copilot__tool_use_haiku45_SYNTHETIC": (
        "streamfns/anthropic",
        "copilot_messages_tool_use_haiku45.sse",
        "claude-haiku-4.5",
        "toolUse",
        1,
    ),
}
RECORDED = "vercel__github_copilot_SANITIZED"


def synthetic(name: str) -> Cassette:
    folder = SYNTHETIC[name][0]
    return cassettes.load(ROOT / folder / f"{name}.jsonl")


async def replay(recording: Cassette, model_id: str) -> tuple[list[AssistantMessageEvent], AssistantMessage]:
    model = get_model("github-copilot", model_id)
    async with httpx.AsyncClient(transport=ReplayTransport(recording, match="any")) as client:
        options = StreamOptions(api_key="fake-copilot-token", http_client=client, max_retries=0)
        stream = streamfns.stream(model, CONTEXT, options)
        events = [event async for event in stream]
        return events, await stream.result()


@pytest.mark.parametrize("name", sorted(SYNTHETIC))
async def test_each_synthetic_cassette_replays_to_done_on_its_copilot_model(name: str) -> None:
    _, _, model_id, stop, calls = SYNTHETIC[name]
    recording = synthetic(name)
    for chunked in (recording, rechunk(recording, 1), rechunk(recording, "random", seed=3, max_size=41)):
        events, message = await replay(chunked, model_id)
        assert validate_events(events) == [], name
        assert events[-1].type == "done"
        assert message.stop_reason == stop, message.error_message
        assert (message.provider, message.api) == ("github-copilot", get_model("github-copilot", model_id).api)
        assert sum(1 for block in message.content if block.type == "toolCall") == calls
        assert message.usage.input > 0
        assert message.usage.output > 0
        assert message.usage.cost.basis == "subscription"


@pytest.mark.parametrize("name", sorted(SYNTHETIC))
def test_each_synthetic_cassette_says_so_and_holds_its_body_byte_for_byte(name: str) -> None:
    _, body_file, model_id, _, _ = SYNTHETIC[name]
    recording = synthetic(name)
    assert recording.name == name
    assert recording.synthetic == {"timing": "synthetic", "request": "synthetic", "body": "synthetic"}
    assert recording.source is not None
    assert str(recording.source["provenance"]).startswith("synthetic: ")
    assert recording.model == model_id
    (interaction,) = recording.interactions
    assert interaction.request.url.startswith("https://api.individual.githubcopilot.com/")
    assert interaction.response.body == (BODIES / body_file).read_bytes()
    assert name not in library.names(), "the library holds real bodies only"


async def test_the_recorded_copilot_body_replays_to_done_on_copilots_gpt53_codex() -> None:
    recording = library.load(RECORDED)
    assert recording.model == "gpt-5.3-codex"
    events, message = await replay(recording, "gpt-5.3-codex")
    assert validate_events(events) == []
    assert message.stop_reason == "stop"
    assert [block.type for block in message.content] == ["thinking", "text"]
    assert message.usage.cost.basis == "subscription"


def test_a_replay_of_a_copilot_recording_is_priced_as_the_plan() -> None:
    # `streamfns replay` finds the recording's model by api and host: Copilot's, paid by the plan.
    for name, (_, _, model_id, _, _) in SYNTHETIC.items():
        recording = synthetic(name)
        host = httpx.URL(recording.interactions[0].request.url).host
        model = model_for_recording(recording.api or "", model_id, host=host)
        assert (model.provider, model.cost.basis) == ("github-copilot", "subscription"), name
    recorded = library.load(RECORDED)
    model = model_for_recording("openai-responses", "gpt-5.3-codex", host="api.githubcopilot.com")
    assert (model.provider, model.cost.basis) == ("github-copilot", "subscription")
    assert recorded.api == "openai-responses"
