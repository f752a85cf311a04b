"""The adapters this project ships, as conformance targets with their declared capabilities.

``python -m conformance run conformance.targets:faux`` checks the scripted faux provider with no
flags. Every built-in adapter runs from its own declaration (``python -m conformance run
streamfns.anthropic:ADAPTER``; :meth:`~conformance.Target.from_adapter`), and is also reachable here by
its package name (``conformance.targets:anthropic``, ``:openai_completions`` …). ``faux_target`` is the
bare zero-argument factory (then pass the capabilities yourself, e.g.
``run(faux_target, capabilities=FAUX_CAPABILITIES)``). :func:`builtin_targets` maps each built-in wire
api (and ``faux``) to its target, derived from the adapter packages' declarations: a new built-in
adapter lists nothing here, and no adapter package imports the harness.

GitHub Copilot, a provider on three of those apis behind a subscription login, has a target per api
(:mod:`conformance.copilot_target`): ``github_copilot`` (Responses), ``github_copilot_completions``
and ``github_copilot_messages``.
"""

from __future__ import annotations

import importlib

from conformance.copilot_target import TARGETS as COPILOT_TARGETS
from conformance.copilot_target import copilot_target
from conformance.target import Capabilities, Target
from normalize import AssistantMessage, AssistantMessageEventStream, Context, Model, StreamOptions
from streamfns import StreamFn, register_api
from streamfns._adapters import builtin_adapters, builtin_packages
from streamfns.faux import FauxProvider, faux_message, faux_text, faux_thinking, faux_tool_call
from streamfns.kit import Adapter

__all__ = [
    "FAUX_API",
    "FAUX_CAPABILITIES",
    "builtin_targets",
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


#: The scripted faux provider (no HTTP).
faux = Target(faux_target, FAUX_CAPABILITIES, name="streamfns.faux.FauxProvider (conformance.targets.faux_target)")


def builtin_targets() -> dict[str, Target]:
    """``faux`` and every built-in adapter's target (:meth:`Target.from_adapter`), by wire api."""
    return {"faux": faux, **{api: Target.from_adapter(adapter) for api, adapter in builtin_adapters().items()}}


def __getattr__(name: str) -> Target:
    # ``conformance.targets:<package>`` names a built-in adapter package's target; the Copilot targets
    # are made on first use too (they read the catalog and the recordings).
    if name in COPILOT_TARGETS:
        return copilot_target(name)
    if name in builtin_packages():
        package = importlib.import_module(f"streamfns.{name}")
        adapter = getattr(package, "ADAPTER", None)
        if isinstance(adapter, Adapter):
            return Target.from_adapter(adapter)
    raise AttributeError(f"module 'conformance.targets' has no attribute {name!r}")
