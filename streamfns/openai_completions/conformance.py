"""The Chat Completions adapter as a conformance target
(``python -m conformance run conformance.targets:openai_completions``)."""

from conformance import Capabilities, Target
from streamfns.openai_completions import WIRE, stream_openai_completions

__all__ = ["TARGET"]

TARGET = Target(
    stream_openai_completions,
    Capabilities.every_feature(WIRE.api),
    name="streamfns.openai_completions.stream_openai_completions",
)
