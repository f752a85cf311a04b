"""``Credential``: one stored login, and the clock rules its expiry is computed by.

**Tokens stay out of sight.** The ``repr`` of a :class:`Credential` masks ``access``, ``refresh`` and
every value of ``data`` whose key is not on :data:`PUBLIC_DATA_KEYS`; :meth:`Credential.secrets`
lists them all, for the kit to redact every message of and for the cassette recorder to refuse.

**Expiry is local.** ``expires`` is epoch seconds on *this* machine's clock. It is computed when a
token arrives (:func:`expiry`) from what the server said, preferring a relative lifetime
(``expires_in``, Copilot's ``refresh_in``) over an absolute time, because an absolute time is on the
server's clock and the two clocks may disagree. An absolute time is measured against the server's own
``Date`` when it sent one; otherwise against the local clock, and then a time already in the past
or absurdly far ahead is not trusted: the lifetime is clamped into
[:data:`MIN_LIFETIME_S`, :data:`MAX_LIFETIME_S`]. A token that really is dead sooner is found out by
its first 401, after which the kit forces a refresh (:func:`streamfns.auth.fresh_credential`).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, cast

from normalize.secret_forms import MASK, masked_repr

__all__ = [
    "MAX_LIFETIME_S",
    "MIN_LIFETIME_S",
    "PUBLIC_DATA_KEYS",
    "Credential",
    "expiry",
    "jwt_claims",
]

#: Keys of :attr:`Credential.data` whose values are not secret (shown by ``repr``; not redacted).
PUBLIC_DATA_KEYS: Final = frozenset({"account_id", "base_url", "enterprise_domain", "plan", "sku"})
#: The shortest lifetime a freshly issued token is credited with when the server's absolute expiry
#: disagrees with the local clock (already past): long enough not to refresh before every request.
MIN_LIFETIME_S: Final = 600.0
#: The longest lifetime any token is credited with (30 days), whatever the server's clock says.
MAX_LIFETIME_S: Final = 30 * 24 * 3600.0


@dataclass(frozen=True, slots=True)
class Credential:
    """One login: ``access`` is the bearer token requests carry, ``refresh`` what renews it (Codex: the
    refresh token; Copilot: the GitHub OAuth token), ``expires`` the local epoch second ``access``
    stops working, ``account`` who is logged in (never a token), ``data`` provider extras
    (``account_id``, ``base_url``, ``enterprise_domain`` …)."""

    provider: str
    access: str
    refresh: str
    expires: float
    account: str = ""
    data: Mapping[str, str] = field(default_factory=dict[str, str])

    def __repr__(self) -> str:
        # Logged freely: every credential shows masked, the public extras as they are.
        shown = {key: value if key in PUBLIC_DATA_KEYS else MASK for key, value in self.data.items()}
        return masked_repr(self, access=MASK if self.access else "", refresh=MASK if self.refresh else "", data=shown)

    def secrets(self) -> tuple[str, ...]:
        """``access``, ``refresh`` and every ``data`` value not on :data:`PUBLIC_DATA_KEYS` (non-empty ones)."""
        extra = (value for key, value in self.data.items() if key not in PUBLIC_DATA_KEYS)
        return tuple(secret for secret in (self.access, self.refresh, *extra) if secret)

    def remaining(self, now: float) -> float:
        """Seconds of validity left at ``now`` (negative once expired)."""
        return self.expires - now

    def to_json(self) -> dict[str, Any]:
        """The stored form (see :class:`streamfns.auth.CredentialStore`)."""
        return {
            "access": self.access,
            "refresh": self.refresh,
            "expires": self.expires,
            "account": self.account,
            "data": dict(self.data),
        }


def _finite(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def expiry(
    now: float,
    *,
    relative: object = None,
    absolute: object = None,
    server_now: float | None = None,
    fallback_absolute: object = None,
    default_s: float = 3600.0,
) -> float:
    """The local epoch second a token received at ``now`` stops working.

    In order: ``relative`` seconds (``expires_in``, ``refresh_in``) when it is a positive number; else
    ``absolute`` (server epoch seconds, ``expires_at``) measured against ``server_now`` (the answer's
    ``Date``) when given, else against ``now``; else ``fallback_absolute`` (a JWT ``exp``) the same
    way; else ``default_s``. A relative lifetime is capped at :data:`MAX_LIFETIME_S`; one derived
    from an absolute time is clamped into [:data:`MIN_LIFETIME_S`, :data:`MAX_LIFETIME_S`].
    """
    seconds = _finite(relative)
    if seconds is not None and seconds > 0:
        return now + min(seconds, MAX_LIFETIME_S)
    for candidate in (absolute, fallback_absolute):
        at = _finite(candidate)
        if at is None or at <= 0:
            continue
        reference = server_now if server_now is not None and math.isfinite(server_now) else now
        return now + min(max(at - reference, MIN_LIFETIME_S), MAX_LIFETIME_S)
    return now + default_s


def jwt_claims(token: str) -> dict[str, Any]:
    """The payload claims of ``token`` when it is a JWT (unverified: only read, never trusted for
    access decisions), else ``{}``."""
    parts = token.split(".")
    if len(parts) != 3:
        return {}
    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload.encode("ascii")))
    except (ValueError, UnicodeError, binascii.Error):
        return {}
    return cast("dict[str, Any]", claims) if isinstance(claims, dict) else {}
