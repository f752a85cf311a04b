"""The Anthropic Messages StreamFn (api ``anthropic-messages``), declared for the adapter kit.

``request.py`` renders the payload, ``decode.py`` maps events to the builder, ``errors.py`` reads
error bodies; :mod:`streamfns.kit` does the rest. The key comes from ``StreamOptions.api_key`` or
``ANTHROPIC_API_KEY`` and is sent as ``x-api-key``. GitHub Copilot (provider ``github-copilot``)
serves its Claude models on this api behind a Copilot login (the provider's signer, see
:mod:`streamfns.kit.provider_auth`); a Copilot token given in ``api_key`` goes as
``Authorization: Bearer``, as Copilot takes it, and never falls back to ``ANTHROPIC_API_KEY``.
"""

from normalize import Model
from streamfns.anthropic.decode import AnthropicDecoder
from streamfns.anthropic.errors import ERRORS, error_body, stream_error
from streamfns.anthropic.request import build_request
from streamfns.kit import Adapter, ApiKey, Ending, WireApi

__all__ = ["ADAPTER", "ANTHROPIC_KEY", "COPILOT_KEY", "WIRE", "api_key_for", "stream_anthropic"]

ANTHROPIC_KEY = ApiKey(env=("ANTHROPIC_API_KEY",), header="x-api-key", scheme=None)
#: A Copilot token given as ``api_key``: a bearer token, and no variable (Anthropic's key must not
#: reach Copilot's host).
COPILOT_KEY = ApiKey()


def api_key_for(model: Model) -> ApiKey:
    """The key rule for ``model``'s provider: :data:`COPILOT_KEY` for ``github-copilot`` (any case),
    else Anthropic's :data:`ANTHROPIC_KEY`."""
    return COPILOT_KEY if model.provider.lower() == "github-copilot" else ANTHROPIC_KEY


WIRE = WireApi(
    api="anthropic-messages",
    vendor="Anthropic",
    key=api_key_for,
    build_request=build_request,
    decoder=AnthropicDecoder,
    errors=ERRORS,
    ending=Ending.frames("message_stop"),
    joined_headers=frozenset({"anthropic-beta"}),
    error_body=error_body,
    stream_error=stream_error,
    keepalive=frozenset({"ping"}),
    recordings={
        "text": "llma__text_haiku45",
        "tool": "vercel__text_then_tool_use_haiku45",
        "parallel": "llma__parallel_tool_use_x2_haiku45",
        "thinking": "llma__thinking_sonnet45",
    },
)
stream_anthropic = WIRE.stream_fn
ADAPTER = Adapter.from_wire(
    WIRE,
    package=__name__,
    demo=(
        ("llma__thinking_sonnet45", "thinking then text", "Two names for a pet pelican, be brief"),
        ("tl__text_and_2_tools_sonnet35", "text then two parallel tool calls", "Weather and time in San Francisco?"),
    ),
)
