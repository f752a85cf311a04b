"""Request extensions by which an adapter tells the HTTP layer below it what it is sending.

The kit puts these on every ``httpx.Request`` it sends (``request.extensions``), so a transport that
wraps the real one — the cassette recorder — learns what the URL cannot tell it: the wire api that
made the request, and the credentials a signing step derived (a secret key, a session token) that
must never be written to disk. Plain strings and tuples, so the reader needs nothing of the kit.
"""

from __future__ import annotations

from typing import Final

__all__ = ["API_EXTENSION", "SECRETS_EXTENSION"]

#: ``str``: the wire api (``model.api``) whose adapter made the request.
API_EXTENSION: Final = "streamfns.api"
#: ``tuple[str, ...]``: credentials the request carries or was signed with, beyond its headers.
SECRETS_EXTENSION: Final = "streamfns.secrets"
