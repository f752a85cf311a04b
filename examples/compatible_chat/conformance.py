"""The example adapter's conformance target, for what its declaration cannot say by itself.

An adapter whose declaration says everything runs as is (``python -m conformance run
examples.ndjson_chat:ADAPTER``). This one serves an api of its own name (``compatible-chat``) that
speaks the chat-completions bytes, so its run borrows the ``openai-completions`` wire profile and
bundled recordings by declaring that api here:

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
