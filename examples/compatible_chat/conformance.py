"""The example adapter's conformance target, declared next to its code.

python -m conformance run examples.compatible_chat.conformance:TARGET
"""

from conformance import Capabilities, Target
from examples.compatible_chat.adapter import stream_compatible_chat

__all__ = ["TARGET"]

TARGET = Target(
    stream_compatible_chat,
    Capabilities(
        api="openai-completions",
        tool_calls=True,
        parallel_tool_calls=True,
        thinking=True,
        usage_in_stream=True,
        images=True,
        retries=True,
    ),
)
