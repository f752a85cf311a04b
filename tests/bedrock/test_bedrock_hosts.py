"""Where a ConverseStream request goes (issue 35, items 4 and 5): a region or an endpoint read from the
environment, the shared config or ``Model.compat`` that is not a plain region name or URL, and a model
id that is a dot segment, end the stream ``config`` naming where the value came from — and nothing is
signed or sent. Over real loopback HTTP on each of the kit's transports: an escaped request would land
on a listener that counts connections (``x@127.0.0.1:<port>/`` makes the listener the host), or on a
server that records the path it was sent to."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.loopback import LoopbackServer, Scripted
from normalize import AssistantMessage, Model, StreamOptions
from streamfns.bedrock import stream_bedrock_converse
from streamfns.kit.aws import clear_aws_sessions
from tests.adapters import BEDROCK, CONTEXT
from tests.aws_env import isolate_aws
from tests.kit._counting import NothingSent, counting_listener

# Every behaviour here holds on each of the kit's transports (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("each_transport")

#: A Bedrock API key made up at run time (sent as a Bearer token: no AWS credentials needed).
KEY = "ABSK" + "hostsTestKey" * 3
#: What an attacker may put in a region, with ``{port}`` the counting listener's.
HOSTILE_REGIONS = [
    "x@127.0.0.1:{port}/",
    "us-east-1.x@127.0.0.1:{port}#",
    "us-east-1.attacker.invalid#",
    "us-east-1.attacker.invalid?",
    "us-east-1/",
    "US-EAST-1",
    "us-east-1.",
    "us\u3002east-1",
    "us-east%2e1",
]


@pytest.fixture(autouse=True)
def clean_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    yield isolate_aws(monkeypatch, tmp_path)
    clear_aws_sessions()


def _model(**fields: object) -> Model:
    """The region's own endpoint: no base_url, so the region decides the host."""
    return BEDROCK.model(base_url="", **fields)


async def _run(model: Model, options: StreamOptions | None = None) -> AssistantMessage:
    return await stream_bedrock_converse(model, CONTEXT, options or StreamOptions(api_key=KEY)).result()


def _refused(message: AssistantMessage, *named: str) -> None:
    assert message.error_info is not None, message
    assert message.error_info.kind == "config", message.error_message
    for name in named:
        assert name in (message.error_message or "")
    assert "nothing was sent" in (message.error_message or "")


@pytest.mark.parametrize("variable", ["AWS_REGION", "AWS_DEFAULT_REGION"])
@pytest.mark.parametrize("value", HOSTILE_REGIONS)
async def test_a_region_variable_that_is_not_a_region_sends_nothing(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    async with counting_listener() as listener:
        monkeypatch.setenv(variable, value.format(port=listener.port))
        message = await _run(_model())
        assert listener.connections == 0
    _refused(message, variable, "is not an AWS region name")


async def test_a_region_variable_never_reaches_a_transport(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_REGION", "us-east-1.attacker.invalid#")
    transport = NothingSent()
    message = await _run(_model(), StreamOptions(api_key=KEY, http_client=transport))
    assert transport.sent == []
    _refused(message, "AWS_REGION")


async def test_a_bad_region_is_refused_not_skipped_for_the_next_source(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_REGION", "us-east-1#")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-west-2")
    _refused(await _run(_model(), StreamOptions(api_key=KEY, http_client=NothingSent())), "AWS_REGION")


async def test_a_compat_region_that_is_not_a_region_sends_nothing() -> None:
    async with counting_listener() as listener:
        message = await _run(_model(compat={"region": f"x@127.0.0.1:{listener.port}/"}))
        assert listener.connections == 0
    _refused(message, "Model.compat['region']")


async def test_a_profile_region_that_is_not_a_region_sends_nothing(clean_aws: Path) -> None:
    async with counting_listener() as listener:
        clean_aws.write_text(f"[default]\nregion = x@127.0.0.1:{listener.port}/\n")  # noqa: ASYNC240 - a tiny file
        message = await _run(_model())
        assert listener.connections == 0
    _refused(message, "AWS profile 'default'")


@pytest.mark.parametrize("variable", ["AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "AWS_ENDPOINT_URL"])
@pytest.mark.parametrize(
    "value",
    [
        "http://bedrock-runtime.us-east-1.amazonaws.com@127.0.0.1:{port}",
        "http://127.0.0.1:{port}#@bedrock-runtime.us-east-1.amazonaws.com",
        "http://127.0.0.1:{port}/?",
        "http://127.0.0.1:{port}/proxy/..",
        "http://127.0.0.1:{port}/%2e%2e/x",
        "ftp://127.0.0.1:{port}",
    ],
)
async def test_an_endpoint_variable_that_could_move_the_request_sends_nothing(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    async with counting_listener() as listener:
        monkeypatch.setenv(variable, value.format(port=listener.port))
        message = await _run(_model())
        assert listener.connections == 0
    _refused(message, variable, "is not usable as an endpoint")
    assert "amazonaws.com@" not in (message.error_message or ""), "user info is never quoted"


async def test_a_plain_endpoint_variable_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    async with LoopbackServer(Scripted(status=404, headers=[("content-type", "application/json")])) as server:
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", server.base_url + "/proxy/")
        await _run(_model(id="amazon.nova-micro-v1:0"))
        assert [request.path for request in server.requests] == [
            "/proxy/model/amazon.nova-micro-v1%3A0/converse-stream"
        ]


@pytest.mark.parametrize("model_id", ["..", ".", " .. "])
async def test_a_model_id_that_is_a_dot_segment_sends_nothing(model_id: str) -> None:
    # Sent, /model/../converse-stream would be resolved to /converse-stream, signed for that path.
    async with LoopbackServer(Scripted(status=404, headers=[("content-type", "application/json")])) as server:
        message = await _run(BEDROCK.model(id=model_id, base_url=server.base_url))
        assert server.requests == []
    _refused(message, "is not a Bedrock model id")


@pytest.mark.parametrize(
    ("model_id", "path"),
    [
        ("%2e%2e", "/model/%252e%252e/converse-stream"),
        ("%2E", "/model/%252E/converse-stream"),
        ("../x", "/model/..%2Fx/converse-stream"),
        ("..a", "/model/..a/converse-stream"),
    ],
)
async def test_an_id_that_only_looks_like_a_dot_segment_stays_one_segment(model_id: str, path: str) -> None:
    async with LoopbackServer(Scripted(status=404, headers=[("content-type", "application/json")])) as server:
        await _run(BEDROCK.model(id=model_id, base_url=server.base_url))
        assert [request.path for request in server.requests] == [path]
