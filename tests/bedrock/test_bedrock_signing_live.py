"""The adapter signs what it sends, over real loopback HTTP: a Bedrock API key as a Bearer token, or
SigV4 with credentials from the environment (botocore's chain) that botocore verifies from what the
server received; missing credentials send nothing; a SigV4-signed recording keeps no credential (no
``authorization``, no ``x-amz-security-token``) and replays with other credentials entirely.

Not ``parallel``: these tests open sockets (no timeout here decides an outcome, though)."""

from __future__ import annotations

from pathlib import Path

import pytest
from botocore.auth import SigV4Auth  # pyright: ignore[reportMissingTypeStubs]
from botocore.awsrequest import AWSRequest  # pyright: ignore[reportMissingTypeStubs]
from botocore.credentials import Credentials  # pyright: ignore[reportMissingTypeStubs]

from cassettes import use_cassette
from conformance.loopback import LoopbackServer, ReceivedRequest, Scripted
from normalize import Context, StreamOptions, UserMessage
from streamfns.bedrock import stream_bedrock_converse
from streamfns.kit.aws import clear_aws_sessions
from tests.adapters import BEDROCK, texts
from tests.aws_env import isolate_aws

NAME = "vercel__text_model-unstated"
ACCESS = "AKIA" + "LOOP" * 4
SECRET = "loop" + "Secret" * 6
TOKEN = "loop" + "SessionToken" * 4
CONTEXT = Context(messages=[UserMessage(content="Hello")])


def plan() -> Scripted:
    """The recording, served as Bedrock serves it (its own media type, one message per write)."""
    chunks = BEDROCK.recorded_chunks(NAME)
    return Scripted(headers=[("content-type", "application/vnd.amazon.eventstream")], chunks=[(0.0, c) for c in chunks])


@pytest.fixture(autouse=True)
def _clean_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No real AWS configuration reaches a test: empty config files, no metadata service, a region."""
    isolate_aws(monkeypatch, tmp_path, region="eu-west-1")


def verified(received: ReceivedRequest, base_url: str) -> bool:
    """botocore recomputes the signature from what the server received."""
    fields = dict(
        part.strip().split("=", 1)
        for part in received.headers["authorization"].removeprefix("AWS4-HMAC-SHA256 ").split(",")
    )
    signed = fields["SignedHeaders"].split(";")
    aws = AWSRequest(
        method=received.method,
        url=base_url + received.path,
        data=received.body,
        headers={name: received.headers[name] for name in signed},
    )
    aws.context["timestamp"] = received.headers["x-amz-date"]  # pyright: ignore[reportUnknownMemberType]
    auth = SigV4Auth(Credentials(ACCESS, SECRET, token=TOKEN), "bedrock", "eu-west-1")
    canonical = auth.canonical_request(aws)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    expected = auth.signature(auth.string_to_sign(aws, canonical), aws)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    return fields["Signature"] == expected


async def test_sigv4_from_the_environment_is_verified_by_botocore(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_SESSION_TOKEN", TOKEN)
    async with LoopbackServer(plan()) as server:
        model = BEDROCK.model(id="eu.amazon.nova-micro-v1:0", base_url=server.base_url)
        message = await stream_bedrock_converse(model, CONTEXT, StreamOptions(max_retries=0)).result()
        assert message.stop_reason == "stop", message.error_message
        (received,) = server.requests
        assert verified(received, server.base_url)
    assert received.path == "/model/eu.amazon.nova-micro-v1%3A0/converse-stream"
    assert received.headers["authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={ACCESS}/")
    assert "/eu-west-1/bedrock/aws4_request" in received.headers["authorization"]
    assert received.headers["x-amz-security-token"] == TOKEN
    assert texts(message).endswith('r\'s in "strawberry."')


async def test_a_bedrock_api_key_is_sent_as_a_bearer_token(monkeypatch: pytest.MonkeyPatch) -> None:
    key = "ABSK" + "loopKey" * 6
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", key)
    async with LoopbackServer(plan()) as server:
        model = BEDROCK.model(base_url=server.base_url)
        message = await stream_bedrock_converse(model, CONTEXT, StreamOptions(max_retries=0)).result()
        (received,) = server.requests
    assert message.stop_reason == "stop", message.error_message
    assert received.headers["authorization"] == f"Bearer {key}"
    assert "x-amz-date" not in received.headers


async def test_no_credentials_is_one_auth_error_and_nothing_is_sent() -> None:
    async with LoopbackServer(plan()) as server:
        model = BEDROCK.model(base_url=server.base_url)
        stream = stream_bedrock_converse(model, CONTEXT, StreamOptions(max_retries=2))
        events = [event async for event in stream]
        message = await stream.result()
        assert server.requests == []
    assert [event.type for event in events] == ["start", "error"]
    assert message.error_info is not None
    assert message.error_info.kind == "auth"
    assert message.error_message is not None
    assert "no AWS credentials found" in message.error_message


async def test_a_recording_keeps_no_credential_and_replays(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_SESSION_TOKEN", TOKEN)
    path = tmp_path / "signed.jsonl"
    async with LoopbackServer(plan()) as server:
        model = BEDROCK.model(id="eu.amazon.nova-micro-v1:0", base_url=server.base_url)
        async with use_cassette(path, mode="all") as client:
            options = StreamOptions(http_client=client, max_retries=0)
            recorded = await stream_bedrock_converse(model, CONTEXT, options).result()
        signature = server.requests[0].headers["authorization"].rpartition("Signature=")[2]
    stored = path.read_text("utf-8")
    for secret in (SECRET, TOKEN, signature, ACCESS):
        assert secret not in stored
    assert '"authorization"' not in stored.lower()
    assert "x-amz-security-token" not in stored.lower()
    clear_aws_sessions()
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "ABSK" + "replayKey" * 4)  # other credentials entirely
    async with use_cassette(path, mode="none") as client:
        replayed = await stream_bedrock_converse(model, CONTEXT, StreamOptions(http_client=client)).result()
    assert recorded.stop_reason == replayed.stop_reason == "stop"
    assert texts(replayed) == texts(recorded)
