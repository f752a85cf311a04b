"""The signing step is enough for AWS SigV4: botocore's own signer, driven from a kit ``Signer``,
signs the exact bytes sent, and botocore verifies the signature the server received.

(The credentials are static and made up here; the Bedrock adapter takes them from botocore's chain.)
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from botocore.auth import SigV4Auth  # pyright: ignore[reportMissingTypeStubs]
from botocore.awsrequest import AWSRequest  # pyright: ignore[reportMissingTypeStubs]
from botocore.credentials import Credentials  # pyright: ignore[reportMissingTypeStubs]

from cassettes import load
from conformance.loopback import LoopbackServer, ReceivedRequest, Scripted
from normalize import Context, Model, StreamOptions, UserMessage
from normalize.wire import AWS_EVENTSTREAM
from streamfns.kit import Signature, SigningRequest
from tests.conformance._framed import converse_wire

ROOT = Path(__file__).resolve().parents[2]
BODY = load(ROOT / "tests/conformance/recordings/converse_text.jsonl").interactions[0].response.body
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
TOKEN = "FQoGZXIvYXdzEBYaDExample+token"
CREDENTIALS = Credentials("AKIDEXAMPLE", SECRET_KEY, token=TOKEN)
SIGNED = ("authorization", "x-amz-date", "x-amz-security-token")


def sigv4(request: SigningRequest) -> Signature:
    """A kit signer over botocore's SigV4: the final method, URL, headers and body bytes."""
    aws = AWSRequest(method=request.method, url=request.url, data=request.body, headers=dict(request.headers))
    SigV4Auth(CREDENTIALS, "bedrock", "us-east-1").add_auth(aws)  # pyright: ignore[reportUnknownMemberType]
    headers = {name.lower(): value for name, value in aws.headers.items() if name.lower() in SIGNED}  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    return Signature(headers, (SECRET_KEY, TOKEN))


def verified(received: ReceivedRequest, base_url: str) -> bool:
    """Recompute the signature with botocore from what the server received."""
    authorization = received.headers["authorization"]
    fields = dict(part.strip().split("=", 1) for part in authorization.removeprefix("AWS4-HMAC-SHA256 ").split(","))
    signed = fields["SignedHeaders"].split(";")
    aws = AWSRequest(
        method=received.method,
        url=base_url + received.path,
        data=received.body,
        headers={name: received.headers[name] for name in signed},
    )
    aws.context["timestamp"] = received.headers["x-amz-date"]  # pyright: ignore[reportUnknownMemberType]
    auth = SigV4Auth(CREDENTIALS, "bedrock", "us-east-1")
    canonical = auth.canonical_request(aws)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    expected = auth.signature(auth.string_to_sign(aws, canonical), aws)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    return fields["Signature"] == expected and "content-type" in signed and "host" in signed


async def test_a_sigv4_signer_signs_the_bytes_that_are_sent() -> None:
    plan = Scripted(
        headers=[("content-type", "application/vnd.amazon.eventstream")],
        chunks=[(0.0, span.raw) for span in AWS_EVENTSTREAM.spans(BODY)],
    )
    wire = converse_wire()
    async with LoopbackServer(plan) as server:
        model = Model(id="us.amazon.nova-micro-v1:0", api=wire.api, provider="test", base_url=server.base_url)
        stream = replace(wire, signer=sigv4).stream_fn(
            model, Context(messages=[UserMessage(content="Hello")]), StreamOptions()
        )
        message = await stream.result()
        assert message.stop_reason == "stop", message.error_message
        received = server.requests[0]
        assert received.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
        assert received.headers["x-amz-security-token"] == TOKEN
        assert verified(received, server.base_url)
        tampered = ReceivedRequest(received.method, received.path, received.headers, received.body + b" ")
        assert not verified(tampered, server.base_url), "the verification can fail"
