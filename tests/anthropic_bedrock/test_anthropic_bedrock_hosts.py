"""Where a Claude-on-Bedrock request goes (issue 35, items 4 and 5): a region that is not a region name,
from the environment or ``Model.compat``, and an id that is a dot segment end the stream ``config``
naming the source, before anything is signed or sent (over real loopback HTTP, on each transport)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.loopback import LoopbackServer, Scripted
from normalize import AssistantMessage, Model, StreamOptions
from streamfns.anthropic_bedrock import stream_anthropic_bedrock
from streamfns.kit.aws import clear_aws_sessions
from tests.adapters import ANTHROPIC_BEDROCK, CONTEXT
from tests.aws_env import isolate_aws
from tests.kit._counting import NothingSent, counting_listener

# Every behaviour here holds on each of the kit's transports (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("each_transport")

KEY = "ABSK" + "claudeHostsKey" * 3


@pytest.fixture(autouse=True)
def clean_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    isolate_aws(monkeypatch, tmp_path)
    yield
    clear_aws_sessions()


async def _run(model: Model, options: StreamOptions | None = None) -> AssistantMessage:
    return await stream_anthropic_bedrock(model, CONTEXT, options or StreamOptions(api_key=KEY)).result()


def _config_naming(message: AssistantMessage, name: str) -> None:
    assert message.error_info is not None
    assert message.error_info.kind == "config", message.error_message
    assert name in (message.error_message or "")


@pytest.mark.parametrize("value", ["x@127.0.0.1:{port}/", "us-west-2.x@127.0.0.1:{port}#", "us-west-2?"])
async def test_an_aws_region_that_is_not_a_region_sends_nothing(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    async with counting_listener() as listener:
        monkeypatch.setenv("AWS_REGION", value.format(port=listener.port))
        message = await _run(ANTHROPIC_BEDROCK.model(compat=None))
        assert listener.connections == 0
    _config_naming(message, "AWS_REGION")


async def test_a_compat_region_that_is_not_a_region_never_reaches_a_transport() -> None:
    transport = NothingSent()
    model = ANTHROPIC_BEDROCK.model(compat={"region": "us-east-1.attacker.invalid#"})
    message = await _run(model, StreamOptions(api_key=KEY, http_client=transport))
    assert transport.sent == []
    _config_naming(message, "Model.compat['region']")


@pytest.mark.parametrize("model_id", ["..", "."])
async def test_an_id_that_is_a_dot_segment_is_config_and_sends_nothing(model_id: str) -> None:
    async with LoopbackServer(Scripted(status=404, headers=[("content-type", "application/json")])) as server:
        message = await _run(ANTHROPIC_BEDROCK.model(id=model_id, base_url=server.base_url))
        assert server.requests == []
    _config_naming(message, "is not a Bedrock model id")
