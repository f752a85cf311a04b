"""The Google Gemini StreamFn (api ``google-generative-ai``) for the Gemini API and Vertex AI.

``request.py`` renders the payload and URL, ``decode.py`` maps chunks to the builder, ``errors.py``
reads ``google.rpc.Status`` bodies, ``compat.py`` tells the endpoints apart (provider ``google``: the
Gemini API with an ``x-goog-api-key`` key from ``GEMINI_API_KEY``/``GOOGLE_API_KEY``; provider
``google-vertex``: Vertex AI with a bearer token from ``StreamOptions.api_key`` or
``GOOGLE_CLOUD_ACCESS_TOKEN``, else from Application Default Credentials (``adc.py``, the
``streamfns[vertex]`` extra), or an API key in express mode); :mod:`streamfns.kit` does the
rest. Gemini has no terminal event: the finish reason is the marker, and a body that ends without
one is ``truncated``.
"""

from streamfns.google.adc import sign
from streamfns.google.compat import GoogleCompat, google_key
from streamfns.google.decode import GoogleDecoder
from streamfns.google.ending import ENDING
from streamfns.google.errors import ERRORS, VENDOR, error_body, stream_error
from streamfns.google.request import build_request
from streamfns.kit import Adapter, WireApi

__all__ = ["ADAPTER", "WIRE", "GoogleCompat", "GoogleDecoder", "build_request", "stream_google"]

WIRE = WireApi(
    api="google-generative-ai",
    vendor=VENDOR,
    key=google_key,
    signer=sign,
    build_request=build_request,
    decoder=GoogleDecoder,
    errors=ERRORS,
    ending=ENDING,
    error_body=error_body,
    stream_error=stream_error,
    recordings={
        "text": "pai__text_gemini20flashexp",
        "tool": "pai__function_call_gemini20flash",
        "parallel": "vercel__no_args_calls_thought_gemini3flash",
        "thinking": "mirahar__thought_parts_gemini25flash",
    },
)
stream_google = WIRE.stream_fn
ADAPTER = Adapter.from_wire(
    WIRE,
    package=__name__,
    demo=(
        ("mirahar__thought_parts_gemini25flash", "thought parts then text (includeThoughts)", "What is 2 + 2?"),
        (
            "vercel__streaming_function_call_args_gemini31pro",
            "two function calls whose arguments stream as partialArgs",
            "What is the weather in Boston and in San Francisco?",
        ),
    ),
)
