"""The OpenAI Responses StreamFn (api ``openai-responses``): OpenAI, Azure OpenAI and
Responses-compatible servers, declared for the adapter kit.

``request.py`` renders the payload, ``decode.py`` maps events to the builder, ``errors.py`` reads
error bodies; :mod:`streamfns.kit` does the rest. The key comes from ``StreamOptions.api_key`` or the
provider's variable: ``OPENAI_API_KEY`` (``Authorization: Bearer``) for ``openai``,
``AZURE_OPENAI_API_KEY`` (``api-key`` header) for ``azure-openai-responses``, and
``<PROVIDER>_API_KEY`` for any other provider (never OpenAI's key: it must not reach another host).
"""

from normalize import Model
from streamfns.kit import Adapter, ApiKey, Ending, WireApi, provider_key_env
from streamfns.openai_responses.decode import OpenAIResponsesDecoder
from streamfns.openai_responses.errors import ERRORS, error_body, stream_error
from streamfns.openai_responses.request import build_request

__all__ = ["ADAPTER", "AZURE_KEY", "OPENAI_KEY", "WIRE", "api_key_for", "stream_openai_responses"]

OPENAI_KEY = ApiKey(env=("OPENAI_API_KEY",))
AZURE_KEY = ApiKey(env=("AZURE_OPENAI_API_KEY",), header="api-key", scheme=None)


def api_key_for(model: Model) -> ApiKey:
    """The key rule for ``model``'s provider (see the module docstring); the name's case does not matter."""
    provider = model.provider.lower()
    if provider == "openai":
        return OPENAI_KEY
    if provider.startswith("azure"):
        return AZURE_KEY
    return ApiKey(env=provider_key_env(provider))


WIRE = WireApi(
    api="openai-responses",
    vendor="OpenAI Responses",
    key=api_key_for,
    build_request=build_request,
    decoder=OpenAIResponsesDecoder,
    errors=ERRORS,
    ending=Ending.frames("a terminal response event", "response.completed", "response.incomplete", "response.failed"),
    error_body=error_body,
    stream_error=stream_error,
    recordings={
        "text": "pai__text_gpt4o",
        "tool": "pai__function_call_gpt4o",
        # No bundled Responses body holds two calls in one response (the codex recording is four
        # responses of one call each): the adapter's own hand-edited cassette shows it.
        "parallel": "pai__parallel_function_calls_gpt4o_HANDEDITED",
        "thinking": "mirahar__reasoning_summary_o4mini",
    },
)
stream_openai_responses = WIRE.stream_fn
ADAPTER = Adapter.from_wire(
    WIRE,
    package=__name__,
    demo=(
        (
            "mirahar__reasoning_summary_o4mini",
            "a reasoning summary, then the answer",
            "What is the capital of France? Think it through.",
        ),
        ("pai__phase_commentary_gpt55", "commentary text, then a function call", "What is the capital of PotatoLand?"),
    ),
    # What the conformance harness replays, beyond one recording per feature: real bodies (text first,
    # as the text-only checks take the first; a function call; a reasoning summary; raw reasoning with
    # items ending out of order and a trailing [DONE]; arguments only in `.done`; commentary before a
    # call) and, since no bundled Responses body holds two calls in one response, one hand-edited from
    # a real recording (its header and tests/openai_responses/_parallel.py say how).
    cassettes=(
        "pai__text_gpt4o",
        "pai__function_call_gpt4o",
        "pai__parallel_function_calls_gpt4o_HANDEDITED.jsonl",
        "mirahar__reasoning_summary_o4mini",
        "pai__openrouter_raw_cot_gptoss",
        "vercel__lmstudio_reasoning_function_call",
        "pai__phase_commentary_gpt55",
    ),
)
