"""``streamfns.kit.aws``: where a Bedrock request goes and how it is signed.

SigV4 is checked against botocore itself (the same request at the same instant signs the same), and
against a golden value so a drift in either is seen. Every failure path (no extra, no credentials,
expired credentials) says one clear thing and happens before anything could be sent. Credentials are
made up at run time; no test reads the machine's AWS configuration.
"""

from __future__ import annotations

import datetime as dt
import inspect
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from botocore.auth import SigV4Auth  # pyright: ignore[reportMissingTypeStubs]
from botocore.awsrequest import AWSRequest  # pyright: ignore[reportMissingTypeStubs]
from botocore.credentials import (  # pyright: ignore[reportMissingTypeStubs]
    CredentialProvider,
    Credentials,
    RefreshableCredentials,
)
from botocore.session import Session  # pyright: ignore[reportMissingTypeStubs]

from normalize import Model, StreamOptions
from streamfns.kit import StreamFailure
from streamfns.kit import aws as aws_module
from streamfns.kit.aws import (
    aws_signer,
    bedrock_model_path,
    bedrock_region,
    bedrock_runtime_url,
    region_from_arn,
    region_from_host,
)
from streamfns.kit.signing import Signature, Signer, SigningRequest

pytestmark = pytest.mark.parallel  # clock-blind: no sockets, sleeps or timeouts

ACCESS = "AKIA" + "TEST" * 4
SECRET = "fake" + "Secret" * 6
TOKEN = "fake" + "SessionToken" * 4
WHEN = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
ROOT = Path(__file__).resolve().parents[2]
URL = "https://bedrock-runtime.eu-west-1.amazonaws.com/model/eu.amazon.nova-micro-v1%3A0/converse-stream"
BODY = b'{"messages":[{"role":"user","content":[{"text":"Hello"}]}]}'
# Computed once by botocore 1.44 for this request, credentials and instant (see the first test).
GOLDEN = "c82edda9ee4a7d12e0b8863d03f8011b81ca1ef3335fb0e625effed9c7c3b4d5"
HEADERS = {"content-type": "application/json", "accept": "application/vnd.amazon.eventstream"}


def model(model_id: str = "eu.amazon.nova-micro-v1:0", **fields: Any) -> Model:
    return Model(id=model_id, api="bedrock-converse-stream", provider="amazon-bedrock", **fields)


def request(url: str = URL, api_key: str | None = None, **fields: Any) -> SigningRequest:
    return SigningRequest(
        method="POST",
        url=url,
        headers=HEADERS,
        body=BODY,
        model=model(**fields),
        options=StreamOptions(api_key=api_key),
    )


class _Fixed(CredentialProvider):  # pyright: ignore[reportUntypedBaseClass]
    METHOD = "test-fixed"

    def __init__(self, credentials: object) -> None:
        self._credentials = credentials

    def load(self) -> Any:
        return self._credentials


def session_with(credentials: object | None) -> Any:
    session: Any = Session()
    resolver = session.get_component("credential_provider")
    resolver.providers = [_Fixed(credentials)] if credentials is not None else []
    return session


@pytest.fixture(autouse=True)
def _no_bearer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK", raising=False)


def botocore_reference(credentials: Credentials, region: str) -> dict[str, str]:
    """What botocore's own SigV4Auth.add_auth adds to the same request at the same instant."""
    aws = AWSRequest(method="POST", url=URL, data=BODY, headers=dict(HEADERS))
    auth = SigV4Auth(credentials, "bedrock", region)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("botocore.auth.get_current_datetime", lambda: WHEN.replace(tzinfo=None))
        auth.add_auth(aws)  # pyright: ignore[reportUnknownMemberType]
    return {k.lower(): v for k, v in aws.headers.items()}  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]


async def sign(signer: Signer, req: SigningRequest) -> Signature:
    result = signer(req)
    if inspect.isawaitable(result):
        result = await result
    assert isinstance(result, Signature)
    return result


async def test_sigv4_equals_botocore_and_the_golden_value() -> None:
    credentials = Credentials(ACCESS, SECRET, token=TOKEN)
    signed = await sign(aws_signer(session=session_with(credentials), clock=lambda: WHEN), request())
    reference = botocore_reference(credentials, "eu-west-1")
    assert signed.headers == {
        "authorization": reference["authorization"],
        "x-amz-date": "20260102T030405Z",
        "x-amz-security-token": TOKEN,
    }
    assert signed.headers["authorization"] == (
        f"AWS4-HMAC-SHA256 Credential={ACCESS}/20260102/eu-west-1/bedrock/aws4_request, "
        "SignedHeaders=accept;content-type;host;x-amz-date;x-amz-security-token, "
        "Signature=" + GOLDEN
    )
    assert SECRET in signed.secrets
    assert TOKEN in signed.secrets
    assert GOLDEN in signed.secrets


async def test_a_changed_body_changes_the_signature() -> None:
    credentials = Credentials(ACCESS, SECRET)
    signer = aws_signer(session=session_with(credentials), clock=lambda: WHEN)
    one = await sign(signer, request())
    other = await sign(signer, SigningRequest("POST", URL, HEADERS, BODY + b" ", model(), StreamOptions()))
    assert one.headers["authorization"] != other.headers["authorization"]
    assert "x-amz-security-token" not in one.headers  # no session token, no header


async def test_the_region_comes_from_the_host_then_the_model() -> None:
    credentials = Credentials(ACCESS, SECRET)
    signer = aws_signer(session=session_with(credentials), clock=lambda: WHEN)
    proxied = await sign(signer, request("http://127.0.0.1:9/model/x/converse-stream", compat={"region": "ap-south-1"}))
    assert "/20260102/ap-south-1/bedrock/" in proxied.headers["authorization"]
    fips = await sign(
        signer, request("https://bedrock-runtime-fips.us-gov-west-1.amazonaws.com/model/x/converse-stream")
    )
    assert "/20260102/us-gov-west-1/bedrock/" in fips.headers["authorization"]


async def test_a_bedrock_api_key_is_a_bearer_token(monkeypatch: pytest.MonkeyPatch) -> None:
    key = "ABSK" + "fakeKey" * 5
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", key)
    signed = await sign(aws_signer(session=session_with(None)), request())
    assert signed.headers == {"authorization": f"Bearer {key}"}
    assert signed.secrets == (key,)
    explicit = "ABSK" + "explicit" * 5
    signed = await sign(aws_signer(session=session_with(None)), request(api_key=explicit))
    assert signed.headers == {"authorization": f"Bearer {explicit}"}  # the option wins over the variable


async def test_no_credentials_is_one_auth_error() -> None:
    with pytest.raises(StreamFailure) as caught:
        await sign(aws_signer(session=session_with(None)), request())
    assert caught.value.info.kind == "auth"
    assert caught.value.message.startswith("no AWS credentials found")
    assert "AWS_BEARER_TOKEN_BEDROCK" in caught.value.message


async def test_expired_credentials_that_cannot_refresh_are_one_auth_error() -> None:
    past = (dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)).isoformat()
    metadata = {"access_key": ACCESS, "secret_key": SECRET, "token": TOKEN, "expiry_time": past}
    expired = RefreshableCredentials.create_from_metadata(  # pyright: ignore[reportUnknownMemberType]
        metadata, refresh_using=lambda: metadata, method="test"
    )
    with pytest.raises(StreamFailure) as caught:
        await sign(aws_signer(session=session_with(expired)), request())
    assert caught.value.info.kind == "auth"
    assert caught.value.message.startswith("AWS credentials expired and could not be refreshed")
    assert SECRET not in caught.value.message
    assert TOKEN not in caught.value.message


async def test_a_missing_extra_is_a_config_error_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(aws_module, "_LOADED", [])
    monkeypatch.setitem(sys.modules, "botocore.session", None)
    with pytest.raises(StreamFailure) as caught:
        await sign(aws_signer(), request())
    assert caught.value.info.kind == "config"
    assert "pip install 'streamfns[bedrock]'" in caught.value.message


def test_import_streamfns_does_not_import_botocore() -> None:
    code = (
        "import sys, streamfns, streamfns.kit, streamfns.kit.aws, streamfns.bedrock\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('botocore', 'boto3')))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stderr


def test_regions_and_endpoints() -> None:
    assert region_from_host("https://bedrock-runtime.us-west-2.amazonaws.com") == "us-west-2"
    assert region_from_host("https://vpce-0abc-xyz.bedrock-runtime.eu-central-1.vpce.amazonaws.com") == "eu-central-1"
    assert region_from_host("http://localhost:8080") is None
    arn = "arn:aws:bedrock:eu-west-3:123456789012:inference-profile/eu.anthropic.claude-sonnet-4-5-20250929-v1:0"
    assert region_from_arn(arn) == "eu-west-3"
    assert region_from_arn("us.anthropic.claude-sonnet-4-5-20250929-v1:0") is None
    assert bedrock_model_path(arn) == (
        "arn%3Aaws%3Abedrock%3Aeu-west-3%3A123456789012%3Ainference-profile%2Feu.anthropic.claude-sonnet-4-5-20250929-v1%3A0"
    )
    env = {"AWS_REGION": "ca-central-1", "AWS_DEFAULT_REGION": "sa-east-1"}
    assert bedrock_region(model(), env) == "ca-central-1"
    assert bedrock_region(model(arn), env) == "eu-west-3"  # the ARN's own region wins
    assert bedrock_region(model(compat={"region": "us-east-2"}), env) == "us-east-2"
    assert bedrock_runtime_url(model(), env) == "https://bedrock-runtime.ca-central-1.amazonaws.com"
    assert (
        bedrock_runtime_url(model(), {"AWS_REGION": "cn-north-1"})
        == "https://bedrock-runtime.cn-north-1.amazonaws.com.cn"
    )
    vpc = "https://vpce-1.bedrock-runtime.ca-central-1.vpce.amazonaws.com/"
    assert bedrock_runtime_url(model(), {**env, "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": vpc}) == vpc.rstrip("/")
    assert bedrock_runtime_url(model(base_url="http://127.0.0.1:1/"), {"AWS_ENDPOINT_URL": vpc}) == "http://127.0.0.1:1"
