"""An NDJSON chat adapter on the public kit (see ``adapter.py``), its declaration and its recordings.

The declaration is all the conformance harness needs: ``python -m conformance run
examples.ndjson_chat:ADAPTER`` replays the real Ollama ``/api/chat`` bodies in ``cassettes/`` (no
bundled recording speaks this api) through the wire profile of ``WIRE``.
"""

from examples.ndjson_chat.adapter import WIRE, stream_ndjson_chat
from streamfns.kit import Adapter

__all__ = ["ADAPTER", "stream_ndjson_chat"]

#: What an installed package would name in its ``streamfns.adapters`` entry point.
ADAPTER = Adapter.from_wire(WIRE, package=__name__, catalog=None, cassettes=("cassettes",))
