"""The Anthropic adapter as a conformance target (``python -m conformance run conformance.targets:anthropic``)."""

from conformance import Capabilities, Target
from streamfns.anthropic import WIRE, stream_anthropic

__all__ = ["TARGET"]

TARGET = Target(
    stream_anthropic,
    Capabilities(
        api=WIRE.api,
        tool_calls=True,
        parallel_tool_calls=True,
        thinking=True,
        usage_in_stream=True,
        images=True,
        retries=True,
    ),
    name="streamfns.anthropic.stream_anthropic",
)
