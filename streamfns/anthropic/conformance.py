"""The Anthropic adapter as a conformance target (``python -m conformance run conformance.targets:anthropic``)."""

from conformance import Capabilities, Target
from streamfns.anthropic import WIRE, stream_anthropic

__all__ = ["TARGET"]

TARGET = Target(
    stream_anthropic,
    Capabilities.every_feature(WIRE.api),
    name="streamfns.anthropic.stream_anthropic",
)
