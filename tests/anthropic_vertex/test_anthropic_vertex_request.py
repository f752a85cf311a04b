"""The Claude-on-Vertex request: the Messages payload transformed for Vertex, and where it goes."""

from __future__ import annotations

import dataclasses

import pytest

from normalize import Context, StreamOptions, UserMessage, validate_events
from streamfns.anthropic.request import INTERLEAVED_THINKING_BETA
from streamfns.anthropic.request import build_request as build_messages_request
from streamfns.anthropic_vertex import VERTEX_ANTHROPIC_VERSION, build_request, stream_anthropic_vertex
from streamfns.catalog import get_model
from streamfns.kit import CompatError
from tests.adapters import ANTHROPIC_VERTEX, CONTEXT

pytestmark = pytest.mark.parallel  # pure: no I/O

PLACEMENT_ENV = ("GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION")


@pytest.fixture(autouse=True)
def no_placement_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PLACEMENT_ENV:
        monkeypatch.delenv(name, raising=False)


def test_the_body_is_the_messages_body_without_model_and_with_the_vertex_version() -> None:
    options = StreamOptions(max_tokens=300, temperature=0.5)
    request = build_request(ANTHROPIC_VERTEX.model(), CONTEXT, options)
    messages = build_messages_request(ANTHROPIC_VERTEX.model(compat=None), CONTEXT, options)
    expected = {key: value for key, value in messages.payload.items() if key != "model"}
    assert request.payload == {"anthropic_version": "vertex-2023-10-16", **expected}
    assert VERTEX_ANTHROPIC_VERSION == "vertex-2023-10-16"
    assert "model" not in request.payload
    assert (request.payload["stream"], request.payload["max_tokens"], request.payload["temperature"]) == (
        True,
        300,
        0.5,
    )
    assert "anthropic-version" not in request.headers
    assert request.headers["accept"] == "text/event-stream"


def test_beta_flags_stay_in_the_anthropic_beta_header() -> None:
    model = ANTHROPIC_VERTEX.model(
        compat={"project": "p-1", "location": "global", "interleaved_thinking": True}, max_tokens=4096
    )
    request = build_request(model, CONTEXT, StreamOptions(reasoning="low"))
    assert request.headers["anthropic-beta"] == INTERLEAVED_THINKING_BETA
    assert "anthropic_beta" not in request.payload
    assert request.payload["thinking"]["type"] == "enabled"


@pytest.mark.parametrize(
    ("location", "root"),
    [
        ("us-east5", "https://us-east5-aiplatform.googleapis.com/v1"),
        ("europe-west1", "https://europe-west1-aiplatform.googleapis.com/v1"),
        ("global", "https://aiplatform.googleapis.com/v1"),
        ("us", "https://aiplatform.us.rep.googleapis.com/v1"),
        ("eu", "https://aiplatform.eu.rep.googleapis.com/v1"),
    ],
)
def test_the_url_names_project_location_and_model(location: str, root: str) -> None:
    model = ANTHROPIC_VERTEX.model(compat={"project": "my-proj", "location": location})
    assert build_request(model, CONTEXT).url == (
        f"{root}/projects/my-proj/locations/{location}/publishers/anthropic/models/"
        "claude-sonnet-4-5@20250929:streamRawPredict"
    )


def test_project_and_location_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "env-proj")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "global")
    url = build_request(ANTHROPIC_VERTEX.model(compat=None), CONTEXT).url
    assert url.startswith("https://aiplatform.googleapis.com/v1/projects/env-proj/locations/global/publishers/")


def test_a_model_id_is_one_path_segment() -> None:
    model = ANTHROPIC_VERTEX.model(id="../../other/x?y#z")
    url = build_request(model, CONTEXT).url
    assert url.endswith("/publishers/anthropic/models/..%2F..%2Fother%2Fx%3Fy%23z:streamRawPredict")


def test_a_base_url_with_no_placement_is_a_gateway_root() -> None:
    model = ANTHROPIC_VERTEX.model(compat=None, base_url="http://127.0.0.1:9/v1/")
    assert build_request(model, CONTEXT).url == (
        "http://127.0.0.1:9/v1/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"
    )
    placed = ANTHROPIC_VERTEX.model(base_url="http://127.0.0.1:9/v1")
    assert build_request(placed, CONTEXT).url.startswith("http://127.0.0.1:9/v1/projects/test-project/locations/")


@pytest.mark.parametrize(
    ("compat", "words"),
    [
        (None, "Vertex AI needs a project"),
        ({"project": "p-1"}, "Vertex AI needs a location"),
        ({"project": "p-1", "location": "evil.com/x"}, "is not a location name"),
        ({"project": "p/../../x", "location": "global"}, "is not a Google Cloud project id"),
        ({"project": "p-1", "location": "global", "regoin": "x"}, "unknown Model.compat key 'regoin'"),
    ],
)
def test_a_bad_placement_raises_compat_error(compat: dict[str, str] | None, words: str) -> None:
    with pytest.raises(CompatError, match=words):
        build_request(ANTHROPIC_VERTEX.model(compat=compat), CONTEXT)


async def test_a_bad_placement_ends_the_stream_config_before_any_credential_is_looked_for() -> None:
    model = ANTHROPIC_VERTEX.model(compat={"project": "p-1", "location": "evil.com"})
    stream = stream_anthropic_vertex(model, Context(messages=[UserMessage(content="hi")]), StreamOptions())
    result = await stream.result()
    assert result.stop_reason == "error"
    assert result.error_info is not None
    assert result.error_info.kind == "config"
    assert "is not a location name" in (result.error_message or "")


@pytest.mark.parametrize(
    ("model_id", "location", "multiplier"),
    [
        ("claude-sonnet-4-5@20250929", "us-east5", 1.1),
        ("claude-opus-4-6", "eu", 1.1),
        ("claude-haiku-4-5@20251001", "europe-west1", 1.1),
        ("claude-sonnet-4-5@20250929", "global", 1.0),
        ("claude-sonnet-4@20250514", "us-east5", 1.0),  # older models cost the same everywhere
    ],
)
def test_a_regional_location_prices_newer_catalog_models_at_the_regional_rate(
    model_id: str, location: str, multiplier: float
) -> None:
    listed = get_model("google-vertex", model_id)
    placed = dataclasses.replace(listed, compat={**(listed.compat or {}), "project": "p-1", "location": location})
    assert build_request(placed, CONTEXT).price_multiplier == multiplier


def test_the_regional_rate_follows_the_location_from_the_environment_and_not_a_bare_base_url(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    listed = get_model("google-vertex", "claude-sonnet-4-5@20250929")
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "env-proj")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us-east5")
    assert build_request(listed, CONTEXT).price_multiplier == 1.1
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "global")
    assert build_request(listed, CONTEXT).price_multiplier == 1.0
    for name in PLACEMENT_ENV:
        monkeypatch.delenv(name, raising=False)
    gateway = dataclasses.replace(listed, base_url="http://127.0.0.1:9/v1")  # where it goes is the gateway's
    assert build_request(gateway, CONTEXT).price_multiplier == 1.0


async def test_a_regional_call_reports_the_regional_cost() -> None:
    listed = get_model("google-vertex", "claude-sonnet-4-5@20250929")
    for location, multiplier in (("us-east5", 1.1), ("global", 1.0)):
        placed = dataclasses.replace(listed, compat={**(listed.compat or {}), "project": "p-1", "location": location})
        chunks = ANTHROPIC_VERTEX.recorded_chunks("fantasy__simple_streaming_claude-3-7-sonnet-20250219")
        events, result = await ANTHROPIC_VERTEX.run_reads(chunks, target=placed)
        assert validate_events(events) == []
        assert result.stop_reason == "stop"
        usage = result.usage
        assert usage.input > 0
        assert usage.output > 0
        assert usage.cost.input == pytest.approx(usage.input * 3.0 / 1e6 * multiplier)
        assert usage.cost.output == pytest.approx(usage.output * 15.0 / 1e6 * multiplier)
