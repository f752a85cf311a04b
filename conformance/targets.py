"""The adapters this project ships, as conformance targets with their declared capabilities.

``python -m conformance run conformance.targets:faux`` (or ``:anthropic``) checks one with no flags;
``faux_target`` is the bare zero-argument factory (then pass the capabilities yourself, e.g.
``run(faux_target, capabilities=FAUX_CAPABILITIES)``). :data:`BUILTIN_TARGETS` maps each built-in wire
api (and ``faux``) to its target; a new built-in adapter must add itself here. Importing this module
registers the faux provider's api and imports the built-in adapters.
"""

from __future__ import annotations

from conformance.capabilities import Capabilities
from conformance.declared import Target
from normalize import AssistantMessage, AssistantMessageEventStream, Context, Model, StreamOptions
from streamfns import StreamFn, register_api
from streamfns.anthropic import stream_anthropic
from streamfns.faux import FauxProvider, faux_message, faux_text, faux_thinking, faux_tool_call

__all__ = [
    "ANTHROPIC_CAPABILITIES",
    "BUILTIN_TARGETS",
    "FAUX_API",
    "FAUX_CAPABILITIES",
    "anthropic",
    "faux",
    "faux_script",
    "faux_target",
]

#: The api the conformance faux provider registers under (not ``faux``, which tests own).
FAUX_API = "faux-conformance"

#: What the scripted faux provider can show: everything but HTTP (so HTTP checks are unsupported).
FAUX_CAPABILITIES = Capabilities(
    api=None,
    http=False,
    tool_calls=True,
    parallel_tool_calls=True,
    thinking=True,
    usage_in_stream=True,
    images=True,
)


def faux_script() -> AssistantMessage:
    """The one response every call streams: thinking, text and two tool calls, ending ``toolUse``."""
    return faux_message(
        [
            faux_thinking("The user wants a greeting and the weather in two cities.", signature="faux-signature"),
            faux_text("Hello! Let me look up the weather in Paris and in Tokyo for you."),
            faux_tool_call("get_weather", {"city": "Paris", "unit": "celsius"}, id="call_paris"),
            faux_tool_call("get_weather", {"city": "Tokyo", "unit": "celsius"}, id="call_tokyo"),
        ],
        stop_reason="toolUse",
    )


def faux_target() -> StreamFn:
    """A faux provider scripted for a run, registered under :data:`FAUX_API`, returned as a StreamFn.

    Every call streams :func:`faux_script` (the script is refilled before each call, so it never runs
    out — also not after a call aborted before it started), paced at 400 tokens/s with two tokens per
    chunk so an abort or a cancellation lands mid-stream, and with fixed chunk sizes so two calls
    give identical events.
    """
    provider = FauxProvider(api=FAUX_API, provider="faux", tokens_per_second=400.0, token_size=(2, 2))

    def stream_faux(
        model: Model, context: Context, options: StreamOptions | None = None, /
    ) -> AssistantMessageEventStream:
        provider.set_responses([faux_script()])
        return provider(model, context, options)

    register_api(FAUX_API, stream_faux)
    return stream_faux


#: What ``streamfns.anthropic.stream_anthropic`` declares: every feature, and its own retries.
ANTHROPIC_CAPABILITIES = Capabilities(
    api="anthropic-messages",
    tool_calls=True,
    parallel_tool_calls=True,
    thinking=True,
    usage_in_stream=True,
    images=True,
    retries=True,
)

#: The scripted faux provider (no HTTP).
faux = Target(faux_target, FAUX_CAPABILITIES, name="streamfns.faux.FauxProvider (conformance.targets.faux_target)")
#: The built-in Anthropic Messages adapter.
anthropic = Target(stream_anthropic, ANTHROPIC_CAPABILITIES)

#: Every adapter this project ships: ``faux`` and one entry per built-in wire api.
BUILTIN_TARGETS: dict[str, Target] = {"faux": faux, "anthropic-messages": anthropic}
