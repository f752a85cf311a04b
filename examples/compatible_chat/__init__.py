"""An OpenAI-compatible chat adapter on the public kit (see ``adapter.py``), and its declaration."""

from examples.compatible_chat.adapter import WIRE, stream_compatible_chat
from streamfns.kit import Adapter

__all__ = ["ADAPTER", "stream_compatible_chat"]

#: What an installed package would name in its ``streamfns.adapters`` entry point: its api, StreamFn
#: (``WIRE.stream_fn``, exported as ``stream_compatible_chat``) and profile are the wire api's.
ADAPTER = Adapter.from_wire(WIRE, package=__name__, catalog=None)
