"""The Google adapter as a conformance target (``python -m conformance run conformance.targets:google``)."""

from conformance import Capabilities, Target
from streamfns.google import WIRE, stream_google

__all__ = ["TARGET"]

TARGET = Target(
    stream_google,
    Capabilities.every_feature(WIRE.api),
    name="streamfns.google.stream_google",
)
