"""The Google adapter as a conformance target (``python -m conformance run conformance.targets:google``)."""

from conformance import Capabilities, Target
from streamfns.google import WIRE, stream_google

__all__ = ["TARGET"]

TARGET = Target(
    stream_google,
    Capabilities(
        api=WIRE.api,
        tool_calls=True,
        parallel_tool_calls=True,
        thinking=True,
        usage_in_stream=True,
        images=True,
        retries=True,
    ),
    name="streamfns.google.stream_google",
)
