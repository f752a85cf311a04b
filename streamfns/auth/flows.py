"""``login``, ``logout`` and ``status``: the subscription logins as a Python API, for apps that show
their own login UI (``streamfns login`` / ``logout`` / ``auth status`` are built on them)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from streamfns.auth.credential import Credential
from streamfns.auth.providers import LoginInteraction
from streamfns.auth.registry import oauth_provider, oauth_providers
from streamfns.auth.store import CredentialStore

__all__ = ["LoginStatus", "login", "logout", "status"]


@dataclass(frozen=True, slots=True)
class LoginStatus:
    """Who is logged in to ``provider`` (``title`` for people; ``account`` an email or a GitHub
    login, possibly empty) and until when: ``expires`` (local epoch seconds) of the current access
    token, ``expired`` whether that moment has passed, ``refreshable`` whether a refresh credential is
    stored (so an expired access token renews itself on the next request). Never carries a token."""

    provider: str
    title: str
    account: str
    expires: float
    expired: bool
    refreshable: bool


async def login(name: str, interaction: LoginInteraction, *, store: CredentialStore | None = None) -> Credential:
    """Run the login of provider ``name`` through ``interaction`` and store the credential it ends
    with (replacing any previous one). Raises :class:`~streamfns.auth.LoginFailed` (unknown provider,
    denied, expired code, aborted, server error) or :class:`~streamfns.auth.StoreError`; nothing is
    stored then."""
    provider = oauth_provider(name)
    store = store or CredentialStore()
    # Refuse an unusable store before the user types a code, not after.
    store.credentials()
    credential = await provider.login(interaction)
    # Waiting for a refresh another process is running must not block the event loop.
    async with store.alock():
        store.save_locked(credential)
    return credential


def logout(name: str, *, store: CredentialStore | None = None) -> bool:
    """Forget the credential of ``name`` (the tokens stay valid at the vendor until it expires them or
    they are revoked there); True when one was stored."""
    return (store or CredentialStore()).delete(name)


def status(*, store: CredentialStore | None = None, now: float | None = None) -> list[LoginStatus]:
    """One :class:`LoginStatus` per stored credential, sorted by provider name."""
    at = time.time() if now is None else now
    providers = oauth_providers()
    found = (store or CredentialStore()).credentials()
    rows: list[LoginStatus] = []
    for name in sorted(found):
        credential = found[name]
        provider = providers.get(name)
        rows.append(
            LoginStatus(
                provider=name,
                title=provider.title if provider is not None else name,
                account=credential.account,
                expires=credential.expires,
                expired=not math.isinf(credential.expires) and credential.expires <= at,
                refreshable=bool(credential.refresh),
            )
        )
    return rows
