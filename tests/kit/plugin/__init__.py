"""A stand-in for an installed third-party adapter package: its declaration and its catalog."""

from streamfns.kit import Adapter
from tests.kit._fake import WIRE

ADAPTER = Adapter(api="echo", stream_fn=WIRE.stream_fn, package=__name__)
