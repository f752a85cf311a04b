"""A stand-in for a plugin whose catalog repeats a model a built-in adapter lists (as a plugin for a
local server might list ``anthropic/claude-sonnet-4-5``), beside a model of its own."""

from streamfns.kit import Adapter
from tests.kit._fake import WIRE

ADAPTER = Adapter(api="echo-clash", stream_fn=WIRE.stream_fn, package=__name__)
