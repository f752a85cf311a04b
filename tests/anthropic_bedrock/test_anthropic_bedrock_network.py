"""Claude on Bedrock over real loopback HTTP: the request on the wire, signed with SigV4 (checked by
botocore over the bytes the server received) or carrying a Bedrock API key; no credentials send nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance import LoopbackServer
from conformance.loopback import ReceivedRequest, Scripted
from normalize import AssistantMessage, StreamOptions, validate_events
from streamfns.anthropic_bedrock import stream_anthropic_bedrock
from streamfns.kit.aws import clear_aws_sessions
from tests.adapters import ANTHROPIC_BEDROCK, CONTEXT, response_of, texts
from tests.anthropic_bedrock._frames import EVENT_STREAM, inner_events
from tests.aws_env import isolate_aws

ACCESS = "AKIA" + "TEST" * 4
SECRET = "test-secret-" + "k" * 28
NAME = "fantasy__simple_streaming_claude-sonnet-4-5-20250929-v1-0"
MODEL_ID = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
PATH = "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream"


# Every behaviour here holds on each of the kit's transports (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("each_transport")


@pytest.fixture(autouse=True)
def clean_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    isolate_aws(monkeypatch, tmp_path)  # no shared files, no instance metadata: only what a test sets
    yield
    clear_aws_sessions()


def recorded() -> Scripted:
    plan = ANTHROPIC_BEDROCK.scripted(NAME)
    plan.headers = [("content-type", EVENT_STREAM)]
    return plan


async def run(server: LoopbackServer, options: StreamOptions | None = None) -> AssistantMessage:
    model = ANTHROPIC_BEDROCK.model(id=MODEL_ID, base_url=server.base_url, compat={"region": "us-west-2"})
    stream = stream_anthropic_bedrock(model, CONTEXT, options or StreamOptions())
    events = [event async for event in stream]
    assert validate_events(events) == []
    return await stream.result()


def botocore_signature(request: ReceivedRequest, base_url: str) -> str:
    """The signature botocore computes for the request as the server received it."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    authorization = request.headers["authorization"]
    signed = authorization.split("SignedHeaders=")[1].split(",")[0].split(";")
    headers = {name: request.headers[name] for name in signed if name != "host"}
    aws: Any = AWSRequest(method=request.method, url=base_url + request.path, data=request.body, headers=headers)
    aws.context["timestamp"] = request.headers["x-amz-date"]
    auth: Any = SigV4Auth(Credentials(ACCESS, SECRET), "bedrock", "us-west-2")
    return auth.signature(auth.string_to_sign(aws, auth.canonical_request(aws)), aws)


async def test_the_request_on_the_wire_is_sigv4_signed_over_the_exact_body(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    async with LoopbackServer(recorded()) as server:
        result = await run(server, StreamOptions(max_tokens=200))
        said = "".join(e["delta"].get("text", "") for e in inner_events(response_of(NAME).body) if "delta" in e)
        assert (result.stop_reason, texts(result)) == ("stop", said)
        assert said
        request = server.requests[0]
        assert (request.method, request.path) == ("POST", PATH)
        authorization = request.headers["authorization"]
        assert authorization.startswith(f"AWS4-HMAC-SHA256 Credential={ACCESS}/")
        assert "/us-west-2/bedrock/aws4_request" in authorization
        assert authorization.rpartition("Signature=")[2] == botocore_signature(request, server.base_url)
        assert request.headers["accept"] == EVENT_STREAM
        body = json.loads(request.body)
        assert body == {
            "anthropic_version": "bedrock-2023-05-31",
            "max_tokens": 200,
            "messages": [
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "Say hello.", "cache_control": {"type": "ephemeral"}}],
                }
            ],
            "thinking": {"type": "disabled"},
        }
        assert "anthropic-beta" not in request.headers
        assert SECRET not in json.dumps(request.headers)


async def test_a_bedrock_api_key_is_sent_as_a_bearer_token_and_nothing_is_signed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key-for-tests")
    async with LoopbackServer(recorded()) as server:
        result = await run(server)
        assert result.stop_reason == "stop"
        request = server.requests[0]
        assert request.headers["authorization"] == "Bearer bedrock-api-key-for-tests"
        assert "x-amz-date" not in request.headers


async def test_no_credentials_is_one_auth_error_and_nothing_is_sent() -> None:
    async with LoopbackServer(recorded()) as server:
        result = await run(server)
        assert result.stop_reason == "error"
        assert result.error_info is not None
        assert result.error_info.kind == "auth"
        assert server.requests == []


async def test_an_http_error_keeps_its_x_amzn_error_type(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key-for-tests")
    header = ("x-amzn-errortype", "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/")
    plan = Scripted(
        status=429,
        headers=[("content-type", "application/json"), header],
        chunks=[(0.0, b'{"message":"Too many requests, please wait before trying again."}')],
    )
    async with LoopbackServer(plan) as server:
        result = await run(server, StreamOptions(max_retries=0))
        assert result.error_info is not None
        assert (result.error_info.kind, result.error_info.status) == ("rate_limit", 429)
        assert "ThrottlingException" in (result.error_message or "")
        assert "bedrock-api-key-for-tests" not in (result.error_message or "")
