"""The Ollama native chat StreamFn (api ``ollama-chat``, provider ``ollama``), declared for the adapter kit.

``POST {base_url}/api/chat`` with ``stream: true``; the body is JSON lines (:data:`streamfns.kit.NDJSON`).
The native api reaches what Ollama's OpenAI-compatible ``/v1`` endpoint (provider ``ollama-openai``
on the ``openai-completions`` adapter) ignores: ``num_ctx`` and the other runtime options, ``think``,
``keep_alive``, structured ``format``. A local server needs no key; Ollama Cloud
(``https://ollama.com``) takes ``OLLAMA_API_KEY`` as a Bearer token, and requires it. ``request.py``
renders the payload, ``decode.py`` folds the lines, ``errors.py`` reads ``{"error": "..."}``;
:mod:`streamfns.kit` does the rest.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from normalize import Model
from streamfns.kit import NDJSON, Adapter, ApiKey, Ending, FrameView, WireApi
from streamfns.kit import Drop as _Drop
from streamfns.ollama.compat import OllamaCompat
from streamfns.ollama.decode import STOPS, OllamaDecoder, tool_call_id
from streamfns.ollama.errors import ERRORS, VENDOR, error_body, stream_error
from streamfns.ollama.request import DEFAULT_HOST, build_request, host_from_env

__all__ = [
    "ADAPTER",
    "DEFAULT_HOST",
    "STOPS",
    "WIRE",
    "OllamaCompat",
    "api_key_for",
    "build_request",
    "host_from_env",
    "is_cloud_host",
    "stream_ollama_chat",
    "tool_call_id",
]

_LOCAL_KEY = ApiKey(env=("OLLAMA_API_KEY",), required=False)
_CLOUD_KEY = ApiKey(env=("OLLAMA_API_KEY",), required=True)


#: Ollama Cloud's host name: it and its subdomains are the hosted service.
_CLOUD_HOST = "ollama.com"


def is_cloud_host(host: str | None) -> bool:
    """Whether ``host`` (a URL's host name) is Ollama Cloud: ``ollama.com`` or a subdomain of it, in
    any letter case. Every other host is a server of the user's own. The one rule for what differs
    there: the key is required (:func:`api_key_for`), and use is paid by a plan, so a model priced
    ``free`` is ``subscription`` there (the listing of :mod:`streamfns.ollama.server`, and
    :func:`streamfns.catalog.get_model` / ``model_for_recording`` for a model sent or recorded there)."""
    name = (host or "").lower().removesuffix(".")
    return name == _CLOUD_HOST or name.endswith("." + _CLOUD_HOST)


def api_key_for(model: Model) -> ApiKey:
    """Ollama Cloud (:func:`is_cloud_host`) needs ``OLLAMA_API_KEY``; any other server takes it when set."""
    return _CLOUD_KEY if is_cloud_host(urlsplit(model.base_url or host_from_env()).hostname) else _LOCAL_KEY


def strip_done(frame: FrameView) -> _Drop | bytes | None:
    """The final line with ``done`` false: a body that never says it is done (for the harness and the
    cassette tools)."""
    line = frame.fields()
    return FrameView.encode({**line, "done": False}) if line.get("done") is True else None


WIRE = WireApi(
    api="ollama-chat",
    vendor=VENDOR,
    key=api_key_for,
    build_request=build_request,
    framing=NDJSON,
    decoder=OllamaDecoder,
    errors=ERRORS,
    ending=Ending('"done": true', strip_done),
    error_body=error_body,
    stream_error=stream_error,
    recordings={
        "text": "langchaingo__TestClient_GenerateChatStream_gemma3-1b",
        "tool": (
            "rubyllm__chat_function_calling_llama3_1_8b_can_use_tools_with_multi_turn_streaming_conversations"
            "_i0_llama3.1-8b"
        ),
        "parallel": "prism__stream_with_tools_1_mistral",
        "thinking": "prism__stream_without_thinking_1_gpt-oss",
    },
)
stream_ollama_chat = WIRE.stream_fn
ADAPTER = Adapter.from_wire(
    WIRE,
    package=__name__,
    demo=(
        ("langchaingo__TestClient_GenerateChatStream_gemma3-1b", "text (Ollama, gemma3:1b)", "Say hello."),
        ("prism__stream_with_tools_1_mistral", "parallel tool calls (Ollama, mistral)", "Weather and time?"),
    ),
)
