"""The Claude-on-Bedrock request: the Messages payload transformed for Bedrock, and where it goes."""

from __future__ import annotations

import pytest

from normalize import StreamOptions
from streamfns.anthropic.request import INTERLEAVED_THINKING_BETA
from streamfns.anthropic.request import build_request as build_messages_request
from streamfns.anthropic_bedrock import BEDROCK_ANTHROPIC_VERSION, build_request, stream_anthropic_bedrock
from streamfns.kit import CompatError
from tests.adapters import ANTHROPIC_BEDROCK, CONTEXT

pytestmark = pytest.mark.parallel  # pure: no I/O

ENDPOINT_ENV = ("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "AWS_ENDPOINT_URL", "AWS_REGION", "AWS_DEFAULT_REGION")


@pytest.fixture(autouse=True)
def no_endpoint_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENDPOINT_ENV:
        monkeypatch.delenv(name, raising=False)


def test_the_body_is_the_messages_body_without_model_or_stream_and_with_the_bedrock_version() -> None:
    options = StreamOptions(max_tokens=300, temperature=0.25)
    request = build_request(ANTHROPIC_BEDROCK.model(), CONTEXT, options)
    messages = build_messages_request(ANTHROPIC_BEDROCK.model(compat=None), CONTEXT, options)
    expected = {key: value for key, value in messages.payload.items() if key not in ("model", "stream")}
    assert BEDROCK_ANTHROPIC_VERSION == "bedrock-2023-05-31"
    assert request.payload == {"anthropic_version": "bedrock-2023-05-31", **expected}
    assert (request.payload["max_tokens"], request.payload["temperature"]) == (300, 0.25)
    assert request.headers == {"accept": "application/vnd.amazon.eventstream", "content-type": "application/json"}


def test_beta_flags_go_in_the_body_as_a_list_never_as_a_header() -> None:
    model = ANTHROPIC_BEDROCK.model(
        compat={"region": "eu-west-1", "interleaved_thinking": True, "betas": ["context-1m-2025-08-07"]},
        max_tokens=4096,
    )
    request = build_request(model, CONTEXT, StreamOptions(reasoning="low"))
    assert request.payload["anthropic_beta"] == [INTERLEAVED_THINKING_BETA, "context-1m-2025-08-07"]
    assert "anthropic-beta" not in request.headers
    assert request.payload["thinking"]["type"] == "enabled"
    assert "anthropic_beta" not in build_request(ANTHROPIC_BEDROCK.model(), CONTEXT).payload


@pytest.mark.parametrize(
    ("model_id", "region", "url"),
    [
        (
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            "us-east-1",
            (
                "https://bedrock-runtime.us-east-1.amazonaws.com/model/"
                "us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream"
            ),
        ),
        (
            "global.anthropic.claude-opus-4-6-v1",
            "eu-central-1",
            (
                "https://bedrock-runtime.eu-central-1.amazonaws.com/model/"
                "global.anthropic.claude-opus-4-6-v1/invoke-with-response-stream"
            ),
        ),
        (
            "arn:aws:bedrock:ap-northeast-1:123456789012:application-inference-profile/abc123",
            None,
            (
                "https://bedrock-runtime.ap-northeast-1.amazonaws.com/model/"
                "arn%3Aaws%3Abedrock%3Aap-northeast-1%3A123456789012%3Aapplication-inference-profile%2Fabc123"
                "/invoke-with-response-stream"
            ),
        ),
    ],
)
def test_the_url_is_the_regions_endpoint_with_the_id_as_one_segment(
    model_id: str, region: str | None, url: str
) -> None:
    compat = {"region": region} if region else None
    assert build_request(ANTHROPIC_BEDROCK.model(id=model_id, compat=compat), CONTEXT).url == url


def test_a_base_url_or_an_endpoint_variable_replaces_the_regions_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    model = ANTHROPIC_BEDROCK.model(id="anthropic.claude-v2", base_url="http://127.0.0.1:9/")
    assert (
        build_request(model, CONTEXT).url == "http://127.0.0.1:9/model/anthropic.claude-v2/invoke-with-response-stream"
    )
    monkeypatch.setenv(
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "https://vpce-1.bedrock-runtime.us-east-1.vpce.amazonaws.com"
    )
    assert build_request(ANTHROPIC_BEDROCK.model(id="anthropic.claude-v2"), CONTEXT).url == (
        "https://vpce-1.bedrock-runtime.us-east-1.vpce.amazonaws.com/model/anthropic.claude-v2/invoke-with-response-stream"
    )


@pytest.mark.parametrize("model_id", ["..", ".", " "])
def test_an_id_that_is_a_dot_segment_is_refused(model_id: str) -> None:
    with pytest.raises(ValueError, match="is not a Bedrock model id"):
        build_request(ANTHROPIC_BEDROCK.model(id=model_id), CONTEXT)


def test_an_unknown_flag_is_a_compat_error() -> None:
    with pytest.raises(CompatError, match="'regoin'"):
        build_request(ANTHROPIC_BEDROCK.model(compat={"regoin": "us-east-1"}), CONTEXT)


async def test_a_refused_id_ends_the_stream_before_anything_is_signed() -> None:
    stream = stream_anthropic_bedrock(ANTHROPIC_BEDROCK.model(id=".."), CONTEXT, StreamOptions(api_key="k" * 20))
    result = await stream.result()
    assert result.error_info is not None
    assert result.error_info.kind == "config"  # a model that cannot be addressed is configuration (issue 35)
    assert "is not a Bedrock model id" in (result.error_message or "")
