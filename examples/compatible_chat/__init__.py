"""An OpenAI-compatible chat adapter on the public kit (see ``adapter.py``), and its declaration."""

from examples.compatible_chat.adapter import stream_compatible_chat
from streamfns.kit import Adapter

__all__ = ["ADAPTER", "stream_compatible_chat"]

#: What an installed package would name in its ``streamfns.adapters`` entry point.
ADAPTER = Adapter(api="compatible-chat", stream_fn=stream_compatible_chat, package=__name__, catalog=None)
