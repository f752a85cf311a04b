"""Where a Gemini or Vertex request goes (issue 35, items 4 and 5): a Gemini API model name with an
empty or dot segment is a ``config`` error and nothing is sent (``models/..`` would move the request, and
its key, to another resource); anything else stays in its segments, percent-encoded; a Vertex location
that is not a location name is refused naming where it came from. Over real loopback HTTP."""

from __future__ import annotations

import pytest

from conformance.loopback import LoopbackServer, Scripted
from normalize import AssistantMessage, Model, StreamOptions
from streamfns.google import stream_google
from tests.adapters import CONTEXT, GOOGLE
from tests.kit._counting import NothingSent

# Every behaviour here holds on each of the kit's transports (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("each_transport")

KEY = "AIza" + "googleHostsKey" * 3


def _not_found() -> Scripted:
    return Scripted(status=404, headers=[("content-type", "application/json")])


async def _run(model: Model, options: StreamOptions | None = None) -> AssistantMessage:
    return await stream_google(model, CONTEXT, options or StreamOptions(api_key=KEY, max_retries=0)).result()


@pytest.mark.parametrize(
    "model_id", ["..", ".", "models/..", "models/.", "tunedModels/..", "../files", "models//x", "x/"]
)
async def test_a_model_name_with_a_dot_or_empty_segment_is_config_and_sends_nothing(model_id: str) -> None:
    async with LoopbackServer(_not_found()) as server:
        message = await _run(GOOGLE.model(id=model_id, base_url=server.base_url + "/v1beta"))
        assert server.requests == []
    assert message.error_info is not None
    assert message.error_info.kind == "config", message.error_message
    assert "is not a model name" in (message.error_message or "")


@pytest.mark.parametrize(
    ("model_id", "path"),
    [
        ("%2e%2e", "/v1beta/models/%252e%252e:streamGenerateContent"),
        ("tunedModels/%2E", "/v1beta/tunedModels/%252E:streamGenerateContent"),
        ("gemini-x#y", "/v1beta/models/gemini-x%23y:streamGenerateContent"),
    ],
)
async def test_anything_else_stays_in_its_segments(model_id: str, path: str) -> None:
    async with LoopbackServer(_not_found()) as server:
        await _run(GOOGLE.model(id=model_id, base_url=server.base_url + "/v1beta"))
        assert [request.path for request in server.requests] == [path + "?alt=sse"]


@pytest.mark.parametrize("location", ["us-central1.attacker.invalid#", "x@127.0.0.1:9/", "us-central1-", "Us-central1"])
async def test_a_vertex_location_variable_that_is_not_a_location_sends_nothing(
    monkeypatch: pytest.MonkeyPatch, location: str
) -> None:
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", location)
    transport = NothingSent()
    model = GOOGLE.model(provider="google-vertex", base_url="", compat={"project": "test-project"})
    message = await _run(model, StreamOptions(api_key="ya29." + "t" * 30, http_client=transport))
    assert transport.sent == []
    assert message.error_info is not None
    assert message.error_info.kind == "config"
    assert "GOOGLE_CLOUD_LOCATION" in (message.error_message or "")
