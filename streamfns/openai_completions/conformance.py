"""The Chat Completions adapter as a conformance target
(``python -m conformance run conformance.targets:openai_completions``)."""

from conformance import Capabilities, Target
from streamfns.openai_completions import WIRE, stream_openai_completions

__all__ = ["TARGET"]

TARGET = Target(
    stream_openai_completions,
    Capabilities(
        api=WIRE.api,
        tool_calls=True,
        parallel_tool_calls=True,
        thinking=True,
        usage_in_stream=True,
        images=True,
        retries=True,
    ),
    name="streamfns.openai_completions.stream_openai_completions",
)
