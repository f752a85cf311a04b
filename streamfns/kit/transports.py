"""Choosing a call's transport: the caller's client, the call's choice, or the process-wide one.

See :mod:`streamfns.kit.transport` for what every transport promises. :func:`transport_for` picks one
per call; :func:`set_default_transport` (or the ``STREAMFNS_TRANSPORT`` environment variable) chooses
for the whole process.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Final

from streamfns.kit.transport import Transport

__all__ = [
    "DEFAULT_TRANSPORT",
    "TRANSPORTS",
    "TRANSPORT_ENV",
    "TransportChoiceError",
    "default_transport",
    "set_default_transport",
    "transport_for",
]

#: The transport the kit uses when nothing says otherwise.
DEFAULT_TRANSPORT: Final = "httpx"
#: The environment variable naming the process-wide transport when :func:`set_default_transport` was not called.
TRANSPORT_ENV: Final = "STREAMFNS_TRANSPORT"


def _make_httpx() -> Transport:
    from streamfns.kit.transport_httpx import HttpxTransport  # noqa: PLC0415 - loaded on first use

    return HttpxTransport(None)


def _make_aiohttp() -> Transport:
    from streamfns.kit.transport_aiohttp import AiohttpTransport  # noqa: PLC0415 - an optional extra

    return AiohttpTransport(None)


def _make_native() -> Transport:
    from streamfns.kit.transport_native import SHARED  # noqa: PLC0415 - loaded on first use

    return SHARED


#: The transports the kit can make on its own, by name: each factory makes one for one call.
TRANSPORTS: Final[Mapping[str, Callable[[], Transport]]] = {
    "httpx": _make_httpx,
    "aiohttp": _make_aiohttp,
    "native": _make_native,
}

_default: str | None = None


def set_default_transport(name: str | None) -> None:
    """Choose the process-wide transport (``"httpx"``, ``"aiohttp"`` or ``"native"``; None: back to the environment
    variable :data:`TRANSPORT_ENV`, else httpx). Raises ``ValueError`` for a name the kit does not know,
    or when the aiohttp extra is not installed."""
    if name is not None:
        problem = _unusable(name)
        if problem is not None:
            raise ValueError(problem)
    global _default
    _default = name


def default_transport() -> str:
    """The process-wide transport's name (see :func:`set_default_transport`)."""
    return _default or os.environ.get(TRANSPORT_ENV, "").strip().lower() or DEFAULT_TRANSPORT


def _unusable(name: str) -> str | None:
    """Why transport ``name`` cannot be used here (None: it can)."""
    if name not in TRANSPORTS:
        return f"unknown transport {name!r} (the kit knows {', '.join(sorted(TRANSPORTS))})"
    if name == "aiohttp":
        try:
            import aiohttp  # noqa: F401, PLC0415 # pyright: ignore[reportUnusedImport]
        except ImportError:
            return "the aiohttp transport needs the aiohttp extra: pip install 'streamfns[aiohttp]'"
    return None


class TransportChoiceError(Exception):
    """The call names a transport or a client the kit cannot use (``config``)."""


def transport_for(client: object, name: str | None) -> tuple[Transport, bool]:
    """The transport of one call and whether the kit owns it (closes it when the call ends): the
    caller's ``client`` when given (see the module docstring), else a new one of transport ``name``
    (None: :func:`default_transport`). Raises :class:`TransportChoiceError`."""
    if client is not None:
        return _wrap(client), False
    chosen = name or default_transport()
    problem = _unusable(chosen)
    if problem is not None:
        where = "StreamOptions.transport" if name else f"the process-wide transport ({TRANSPORT_ENV} or the kit's)"
        raise TransportChoiceError(f"{where}: {problem}")
    return TRANSPORTS[chosen](), True


def _wrap(client: object) -> Transport:
    if isinstance(client, Transport):
        return client
    module = type(client).__module__.split(".", 1)[0]
    if module == "aiohttp":
        import aiohttp  # noqa: PLC0415 - only with the extra (a caller holding a session has it)

        from streamfns.kit.transport_aiohttp import AiohttpTransport  # noqa: PLC0415

        if isinstance(client, aiohttp.ClientSession):
            return AiohttpTransport(client)
    if callable(getattr(client, "build_request", None)) and callable(getattr(client, "send", None)):
        from streamfns.kit.transport_httpx import HttpxTransport  # noqa: PLC0415

        return HttpxTransport(client)
    raise TransportChoiceError(
        f"StreamOptions.http_client is a {type(client).__module__}.{type(client).__qualname__}: the kit takes an "
        "httpx.AsyncClient, an httpx2.AsyncClient, an aiohttp.ClientSession or a streamfns.kit.Transport"
    )
