"""Claude on Google Vertex AI (api ``anthropic-vertex``, provider ``google-vertex``), declared for the adapter kit.

``POST {root}/projects/{project}/locations/{location}/publishers/anthropic/models/{id}:streamRawPredict``:
the Anthropic Messages request without ``model`` and with ``anthropic_version: "vertex-2023-10-16"``
(``request.py``), answered with Anthropic's own server-sent events, which the Anthropic decoder
(:class:`streamfns.anthropic.decode.AnthropicDecoder`) reads unchanged (``decode.py`` types an
``event: error`` by Vertex's table first). Credentials: an access token
from ``StreamOptions.api_key`` or ``GOOGLE_CLOUD_ACCESS_TOKEN`` when given, else Application Default
Credentials (:data:`streamfns.kit.GOOGLE_ADC`, the ``streamfns[vertex]`` extra). Project and location
come from ``Model.compat`` or ``GOOGLE_CLOUD_PROJECT`` / ``GOOGLE_CLOUD_LOCATION``.
"""

import dataclasses

from streamfns.anthropic import WIRE as MESSAGES_WIRE
from streamfns.anthropic_vertex.decode import VertexClaudeDecoder
from streamfns.anthropic_vertex.errors import ERRORS, VENDOR, error_body, stream_error
from streamfns.anthropic_vertex.request import (
    VERTEX_ANTHROPIC_VERSION,
    AnthropicVertexCompat,
    build_request,
    request_url,
)
from streamfns.kit import GOOGLE_ADC, Adapter, ApiKey

__all__ = [
    "ADAPTER",
    "VERTEX_ANTHROPIC_VERSION",
    "WIRE",
    "AnthropicVertexCompat",
    "VertexClaudeDecoder",
    "build_request",
    "request_url",
    "stream_anthropic_vertex",
]

# The Messages api's wire (its events, ending, keep-alives, beta-header joining), with what Vertex changes.
WIRE = dataclasses.replace(
    MESSAGES_WIRE,
    api="anthropic-vertex",
    vendor=VENDOR,
    # Not required: without a token the signer asks Application Default Credentials for one.
    key=ApiKey(env=("GOOGLE_CLOUD_ACCESS_TOKEN",), required=False),
    signer=GOOGLE_ADC.sign,
    build_request=build_request,
    decoder=VertexClaudeDecoder,
    errors=ERRORS,
    error_body=error_body,
    stream_error=stream_error,
    recordings={
        "text": "fantasy__simple_streaming_claude-3-7-sonnet-20250219",
        "tool": "fantasy__tool_streaming_i0_claude-3-7-sonnet-20250219",
        # No Vertex recording shows parallel calls; Vertex streams the Messages API's own events, so the
        # Messages recording of two parallel calls is the same bytes this adapter reads.
        "parallel": "llma__parallel_tool_use_x2_haiku45",
        "thinking": "reqllm__reasoning_streaming_claude-haiku-4-5-20251001",
    },
)
stream_anthropic_vertex = WIRE.stream_fn
ADAPTER = Adapter.from_wire(WIRE, package=__name__)
