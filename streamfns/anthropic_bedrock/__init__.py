"""Claude on Amazon Bedrock (api ``anthropic-bedrock``, provider ``amazon-bedrock-anthropic``), declared for the kit.

``POST {endpoint}/model/{id}/invoke-with-response-stream`` (InvokeModelWithResponseStream): the
Anthropic Messages request in Bedrock's form (``request.py``), answered with an AWS event stream
(:data:`streamfns.kit.AWS_EVENTSTREAM`) whose ``chunk`` events each carry one Anthropic event in
base64 (``decode.py``), read by the Anthropic decoder unchanged. This is Anthropic's own api on
Bedrock — every Messages feature, beta flags included — beside the Converse api (provider
``amazon-bedrock``, :mod:`streamfns.bedrock`), which serves the same Claude ids in Bedrock's own shape.
Errors are Bedrock's (:mod:`streamfns.bedrock.errors`). Each attempt is signed by
:func:`streamfns.kit.aws_signer`: a Bedrock API key (``StreamOptions.api_key`` or
``AWS_BEARER_TOKEN_BEDROCK``) as a Bearer token, else SigV4 with botocore's credential chain (the
``streamfns[bedrock]`` extra).
"""

from __future__ import annotations

from normalize.wire import Base64Field
from streamfns.anthropic_bedrock.decode import BedrockAnthropicDecoder, unwrap_chunk
from streamfns.anthropic_bedrock.request import (
    BEDROCK_ANTHROPIC_VERSION,
    AnthropicBedrockCompat,
    build_request,
    request_url,
)
from streamfns.bedrock.errors import ERRORS, VENDOR, error_body, stream_error
from streamfns.kit import AWS_EVENTSTREAM, Adapter, Ending, WireApi, aws_signer

__all__ = [
    "ADAPTER",
    "BEDROCK_ANTHROPIC_VERSION",
    "WIRE",
    "AnthropicBedrockCompat",
    "BedrockAnthropicDecoder",
    "build_request",
    "request_url",
    "stream_anthropic_bedrock",
    "unwrap_chunk",
]


WIRE = WireApi(
    api="anthropic-bedrock",
    vendor=VENDOR,
    key=None,
    signer=aws_signer("bedrock"),
    build_request=build_request,
    framing=AWS_EVENTSTREAM,
    decoder=BedrockAnthropicDecoder,
    errors=ERRORS,
    ending=Ending.frames("message_stop"),
    # Also what the cassette recorder and `cassettes scan` open, to look inside every chunk for secrets.
    envelope=Base64Field(),
    error_body=error_body,
    stream_error=stream_error,
    recordings={
        "text": "fantasy__simple_streaming_claude-sonnet-4-5-20250929-v1-0",
        "tool": "fantasy__tool_streaming_i0_claude-haiku-4-5-20251001-v1-0",
        "parallel": (
            "otelcontrib__invoke_model_with_response_stream_with_content_tool_call_i0_claude-3-5-sonnet-20240620-v1-0"
        ),
        # No Bedrock recording shows thinking: real Claude thinking events (recorded on Vertex AI), re-framed
        # as Bedrock's chunk messages (labelled so in the cassette's source and in NOTICE).
        "thinking": "reqllm__reasoning_streaming_claude-haiku-4-5-20251001_REFRAMED",
    },
)
stream_anthropic_bedrock = WIRE.stream_fn
ADAPTER = Adapter.from_wire(WIRE, package=__name__)
