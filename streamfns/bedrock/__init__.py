"""Amazon Bedrock's ConverseStream StreamFn (api ``bedrock-converse-stream``, provider ``amazon-bedrock``),
declared for the adapter kit.

``POST https://bedrock-runtime.{region}.amazonaws.com/model/{model id}/converse-stream``; the body is an
AWS event stream (:data:`streamfns.kit.AWS_EVENTSTREAM`). One api for every model family Bedrock
serves (Claude, Nova, Llama, Mistral, gpt-oss, Cohere …). ``request.py`` renders the payload and picks
the endpoint, ``decode.py`` folds the messages, ``errors.py`` types HTTP errors and exception messages;
:mod:`streamfns.kit.aws` signs each attempt — a Bedrock API key (``AWS_BEARER_TOKEN_BEDROCK`` or
``StreamOptions.api_key``) as a Bearer token, else SigV4 with botocore's credential chain (the optional
extra ``pip install 'streamfns[bedrock]'``, imported only when a request is signed).
"""

from __future__ import annotations

from streamfns.bedrock.compat import BedrockCompat
from streamfns.bedrock.decode import REDACTED_PLACEHOLDER, STOPS, ConverseDecoder
from streamfns.bedrock.errors import ERRORS, VENDOR, error_body, stream_error
from streamfns.bedrock.request import bedrock_tool_call_id, build_request, is_claude
from streamfns.kit import AWS_EVENTSTREAM, Adapter, Ending, WireApi, aws_signer

__all__ = [
    "ADAPTER",
    "REDACTED_PLACEHOLDER",
    "STOPS",
    "WIRE",
    "BedrockCompat",
    "ConverseDecoder",
    "bedrock_tool_call_id",
    "build_request",
    "is_claude",
    "stream_bedrock_converse",
]

WIRE = WireApi(
    api="bedrock-converse-stream",
    vendor=VENDOR,
    key=None,
    signer=aws_signer("bedrock"),
    build_request=build_request,
    framing=AWS_EVENTSTREAM,
    decoder=ConverseDecoder,
    errors=ERRORS,
    # The usage (metadata) follows messageStop: the response is complete at the end of the body.
    ending=Ending.frames("messageStop", after="trailer"),
    error_body=error_body,
    stream_error=stream_error,
    recordings={
        "text": "pydanticai__bedrock_model_iter_stream_i1_nova-micro-v1-0",
        "tool": (
            "rubyllm__chat_function_calling_bedrock_anthropic_claude_3_5_haiku_20241022_v1_0_can_use_tools_with_"
            "_i3_claude-3-5-haiku-20241022-v1-0"
        ),
        "parallel": "otelcontrib__converse_stream_with_content_tool_call_i0_nova-micro-v1-0",
        "thinking": "reqllm__reasoning_streaming_claude-sonnet-4-5-20250929-v1-0",
    },
    recorded_headers=("x-amzn-requestid",),
)
stream_bedrock_converse = WIRE.stream_fn
ADAPTER = Adapter.from_wire(
    WIRE,
    package=__name__,
    demo=(
        (
            "reqllm__reasoning_streaming_claude-sonnet-4-5-20250929-v1-0",
            "reasoning (Bedrock, Claude Sonnet 4.5)",
            "Think it through, then answer.",
        ),
    ),
)
