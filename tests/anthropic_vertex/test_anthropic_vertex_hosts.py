"""Where a Claude-on-Vertex request goes (issue 35, items 4 and 5): the location becomes part of the
host, so one that is not a plain location name — from ``GOOGLE_CLOUD_LOCATION`` or ``Model.compat`` —
ends the stream ``config`` naming its source, and nothing is sent; a model id stays one path segment
(``..`` is followed by the method, so it is never a dot segment). Over real loopback HTTP."""

from __future__ import annotations

import pytest

from conformance.loopback import LoopbackServer, Scripted
from normalize import AssistantMessage, Model, StreamOptions
from streamfns.anthropic_vertex import stream_anthropic_vertex
from tests.adapters import ANTHROPIC_VERTEX, CONTEXT
from tests.kit._counting import NothingSent

# Every behaviour here holds on each of the kit's transports (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("each_transport")

TOKEN = "ya29." + "vertexHostsToken" * 3
HOSTILE = ["us-east5.attacker.invalid#", "x@127.0.0.1:9/", "us-east5-", "US-EAST5", "us-east5.", "us\u3002east5"]


async def _run(model: Model, options: StreamOptions) -> AssistantMessage:
    return await stream_anthropic_vertex(model, CONTEXT, options).result()


@pytest.mark.parametrize("value", HOSTILE)
async def test_a_location_variable_that_is_not_a_location_names_it_and_sends_nothing(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", value)
    transport = NothingSent()
    model = ANTHROPIC_VERTEX.model(compat={"project": "test-project"})
    message = await _run(model, StreamOptions(api_key=TOKEN, http_client=transport))
    assert transport.sent == []
    assert message.error_info is not None
    assert message.error_info.kind == "config"
    assert "the Vertex AI location (GOOGLE_CLOUD_LOCATION)" in (message.error_message or "")
    assert "is not a location name such as us-central1" in (message.error_message or "")


async def test_a_compat_location_is_named_as_such() -> None:
    transport = NothingSent()
    model = ANTHROPIC_VERTEX.model(compat={"project": "test-project", "location": "us-east5-"})
    message = await _run(model, StreamOptions(api_key=TOKEN, http_client=transport))
    assert transport.sent == []
    assert "the Vertex AI location (Model.compat['location'])" in (message.error_message or "")


@pytest.mark.parametrize(
    ("model_id", "tail"),
    [
        ("..", "/models/..:streamRawPredict"),
        ("../x", "/models/..%2Fx:streamRawPredict"),
        ("%2e%2e", "/models/%252e%252e:streamRawPredict"),
    ],
)
async def test_an_id_stays_one_segment(model_id: str, tail: str) -> None:
    async with LoopbackServer(Scripted(status=404, headers=[("content-type", "application/json")])) as server:
        model = ANTHROPIC_VERTEX.model(id=model_id, base_url=server.base_url + "/v1")
        await _run(model, StreamOptions(api_key=TOKEN, max_retries=0))
        assert [request.path for request in server.requests] == [
            "/v1/projects/test-project/locations/us-east5/publishers/anthropic" + tail
        ]
