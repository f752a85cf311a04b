"""A stand-in for a plugin that serves an api a built-in adapter already serves."""

from streamfns.kit import Adapter
from tests.kit._fake import WIRE

ADAPTER = Adapter(api="anthropic-messages", stream_fn=WIRE.stream_fn, package="tests.kit.plugin_clash")
