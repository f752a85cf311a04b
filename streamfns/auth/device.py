"""The device-code polling loop both logins share (RFC 8628 §3.4–3.5, and OpenAI's variant).

:func:`poll_device` calls ``poll`` every ``interval`` seconds until it answers with a value or a
final error, within the code's lifetime:

- ``authorization_pending``: wait and poll again;
- ``slow_down``: the interval grows by 5 seconds for this and every later poll (RFC 8628 §3.5), or
  to the interval the server names if that is longer;
- ``expired_token``: :class:`LoginFailed` saying the code expired and naming the login command to run
  again; ``access_denied``: :class:`LoginFailed` saying the login was denied; any other error:
  :class:`LoginFailed` quoting the server (redacted, cut short);
- the deadline (``expires_in_s`` after the start, by ``clock``) passing: :class:`LoginFailed` as for
  ``expired_token``;
- ``signal`` aborting, while waiting or while a poll is in flight: :class:`LoginFailed` at once.

Every wait goes through ``sleep`` (``asyncio.sleep`` by default) and every deadline through ``clock``
(``time.monotonic``), so a test drives the loop without waiting.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final, Generic, TypeVar

from normalize import AbortSignal
from streamfns.auth._http import abortable
from streamfns.auth.errors import LoginFailed

__all__ = [
    "ACCESS_DENIED",
    "AUTHORIZATION_PENDING",
    "EXPIRED_TOKEN",
    "SLOW_DOWN",
    "SLOW_DOWN_STEP_S",
    "DevicePoll",
    "displayable",
    "poll_device",
]

_T = TypeVar("_T")

AUTHORIZATION_PENDING: Final = "authorization_pending"
SLOW_DOWN: Final = "slow_down"
EXPIRED_TOKEN: Final = "expired_token"
ACCESS_DENIED: Final = "access_denied"
#: What each ``slow_down`` adds to the interval (RFC 8628 §3.5).
SLOW_DOWN_STEP_S: Final = 5.0
#: Bounds on a server-given interval: never hammer the server, never wait absurdly long.
MIN_INTERVAL_S: Final = 1.0
MAX_INTERVAL_S: Final = 120.0
#: Bounds on a code's lifetime (15 minutes when the server names none).
DEFAULT_EXPIRES_IN_S: Final = 900.0
MAX_EXPIRES_IN_S: Final = 3600.0


@dataclass(frozen=True, slots=True)
class DevicePoll(Generic[_T]):
    """One poll's answer: ``value`` when the login is approved, else the RFC 8628 ``error`` code, the
    server's ``description`` (already fit to quote) and the ``interval`` it asked for, if any."""

    value: _T | None = None
    error: str = AUTHORIZATION_PENDING
    description: str = ""
    interval: float | None = None


def displayable(value: object, limit: int = 512) -> str | None:
    """``value`` when it is fit to show a user as it is (a user code, a verification URL): a printable
    string of at most ``limit`` characters, so a hostile server cannot write terminal escapes or
    screens of text; else None."""
    if isinstance(value, str) and value and value.isprintable() and len(value) <= limit:
        return value
    return None


def clamp_interval(value: object, default: float = 5.0) -> float:
    """A server-given polling interval (a number or a numeric string) within sane bounds."""
    try:
        seconds = float(value) if isinstance(value, int | float | str) and not isinstance(value, bool) else default
    except ValueError:
        seconds = default
    if not math.isfinite(seconds):
        seconds = default
    return min(max(seconds, MIN_INTERVAL_S), MAX_INTERVAL_S)


def clamp_expires_in(value: object) -> float:
    """A server-given code lifetime within sane bounds (:data:`DEFAULT_EXPIRES_IN_S` when absent)."""
    try:
        seconds = float(value) if isinstance(value, int | float | str) and not isinstance(value, bool) else math.nan
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds <= 0:
        return DEFAULT_EXPIRES_IN_S
    return min(seconds, MAX_EXPIRES_IN_S)


async def poll_device(
    poll: Callable[[], Awaitable[DevicePoll[_T]]],
    *,
    interval_s: float,
    expires_in_s: float,
    login_command: str,
    signal: AbortSignal | None = None,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    clock: Callable[[], float] = time.monotonic,
    progress: Callable[[str], object] | None = None,
) -> _T:
    """Poll until approval; see the module docstring for every outcome."""
    interval = clamp_interval(interval_s)
    deadline = clock() + expires_in_s
    expired = f"the code expired before the login was approved: run `{login_command}` again"
    while True:
        left = deadline - clock()
        if left <= 0:
            raise LoginFailed(expired)
        # Wait first: RFC 8628 asks for `interval` seconds between polls, the first one included.
        await abortable(sleep(min(interval, left)), signal, "login")
        answer = await abortable(poll(), signal, "login")
        if answer.value is not None:
            return answer.value
        if answer.error == AUTHORIZATION_PENDING:
            continue
        if answer.error == SLOW_DOWN:
            asked = clamp_interval(answer.interval, 0.0) if answer.interval is not None else 0.0
            interval = min(max(interval + SLOW_DOWN_STEP_S, asked), MAX_INTERVAL_S)
            if progress is not None:
                progress(f"the server asked to poll more slowly: every {interval:g} s")
            continue
        if answer.error == EXPIRED_TOKEN:
            raise LoginFailed(expired)
        if answer.error == ACCESS_DENIED:
            raise LoginFailed(f"the login was denied: run `{login_command}` again to retry")
        detail = f": {answer.description}" if answer.description else ""
        raise LoginFailed(f"the login failed ({answer.error}{detail}); run `{login_command}` again", kind="auth")
