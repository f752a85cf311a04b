"""Mistral's native chat api (api ``mistral-conversations``, provider ``mistral``), declared for the adapter kit.

``POST {base_url}/chat/completions`` (``https://api.mistral.ai/v1`` when the model names none) with
``stream: true``; the body is server-sent events of ``chat.completion.chunk`` objects ending with
``data: [DONE]``. The key is ``MISTRAL_API_KEY`` (a model of another provider on this api — a gateway
serving Mistral's own api — tries ``<PROVIDER>_API_KEY`` first), sent as ``Authorization: Bearer``.
``request.py`` renders the payload (thinking replayed as Mistral's thinking chunks, tool-call ids as
nine letters and digits, failed tool results marked in their text, ``prefix`` on a trailing assistant
turn), ``decode.py`` reads the chunks — with the chat-completions decoder, Mistral's padding, ids and
cached tokens as its hooks — ``errors.py`` Mistral's error objects, ``rules.py`` what Mistral requires
of a transcript (shared with the chat-completions ``mistral`` profile); :mod:`streamfns.kit` does the
rest. The api's name is pi-ai's, so transcripts move between the two unchanged.

A gateway that speaks Mistral's dialect of OpenAI chat completions (not Mistral's own api) is served by
``openai-completions`` with ``Model.compat={"profile": "mistral"}``.
"""

from __future__ import annotations

from normalize import Model
from streamfns.kit import Adapter, ApiKey, WireApi, provider_key_env
from streamfns.mistral.compat import TOOL_CHOICES, MistralCompat
from streamfns.mistral.decode import STOPS, MistralDecoder, generated_call_id, usage_fields
from streamfns.mistral.errors import ERRORS, VENDOR, error_body, stream_error
from streamfns.mistral.request import DEFAULT_BASE_URL, build_request
from streamfns.mistral.rules import mistral_tool_call_id
from streamfns.openai_completions.ending import ENDING

__all__ = [
    "ADAPTER",
    "DEFAULT_BASE_URL",
    "ERRORS",
    "STOPS",
    "TOOL_CHOICES",
    "WIRE",
    "MistralCompat",
    "MistralDecoder",
    "api_key_for",
    "build_request",
    "generated_call_id",
    "mistral_tool_call_id",
    "stream_mistral",
    "usage_fields",
]

_MISTRAL_KEY = ApiKey(env=("MISTRAL_API_KEY",))
#: The recording of thinking chunks followed by text (Mistral Small's hybrid reasoning).
_THINKING_RECORDING = (
    "rubyllm__chat_mistral_hybrid_reasoning_streams_thinking_separately_from_content_mistral-small-latest"
)


def api_key_for(model: Model) -> ApiKey:
    """``MISTRAL_API_KEY``; for another provider on this api, ``<PROVIDER>_API_KEY`` first."""
    if model.provider == "mistral":
        return _MISTRAL_KEY
    return ApiKey(env=tuple(dict.fromkeys((*provider_key_env(model.provider), "MISTRAL_API_KEY"))))


WIRE = WireApi(
    api="mistral-conversations",
    vendor=VENDOR,
    key=api_key_for,
    build_request=build_request,
    decoder=MistralDecoder,
    errors=ERRORS,
    # The chat-completions ending: a finish_reason, then [DONE] (or the end of the body).
    ending=ENDING,
    error_body=error_body,
    stream_error=stream_error,
    recordings={
        "text": "prism__stream_basic_text_1_1_mistral-small-latest",
        "tool": (
            "rubyllm__chat_function_calling_mistral_ministral_3b_latest_can_use_tools_with_multi_turn_streaming"
            "__i0_ministral-3b-latest"
        ),
        "parallel": "prism__stream_with_tools_1_1_mistral-large-latest",
        "thinking": _THINKING_RECORDING,
    },
)
stream_mistral = WIRE.stream_fn
ADAPTER = Adapter.from_wire(
    WIRE,
    package=__name__,
    demo=(
        ("prism__stream_basic_text_1_1_mistral-small-latest", "text (Mistral Small)", "Who are you?"),
        (
            _THINKING_RECORDING,
            "thinking, then the answer (Mistral Small)",
            "What is 12 times 12?",
        ),
    ),
)
