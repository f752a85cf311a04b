"""The NDJSON example's conformance target: its own recordings (real Ollama ``/api/chat`` bodies) and
its wire profile, since no installed adapter declares the api.

python -m conformance run examples.ndjson_chat.conformance:TARGET
"""

from pathlib import Path

from conformance import Capabilities, Target
from examples.ndjson_chat.adapter import WIRE, stream_ndjson_chat

__all__ = ["TARGET"]

TARGET = Target(
    stream_ndjson_chat,
    Capabilities.every_feature(WIRE.api),
    cassettes=Path(__file__).with_name("cassettes"),
    profile=WIRE.profile,
)
