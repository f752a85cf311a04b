"""``OAuthSigner``: the kit signer of a subscription provider (see :mod:`streamfns.kit.signing`).

Before each request it asks :func:`~streamfns.auth.fresh_credential` for the provider's credential
and returns the provider's headers (and api origin) with the credential's secrets, so the kit redacts
every message of them and the recorder refuses them. After a 401 the kit calls
:meth:`OAuthSigner.unauthorized`: a forced refresh that first adopts a token another process saved;
True means a different token is ready and the request is worth one more try.

An explicit ``StreamOptions.api_key`` is used as the access token as it is: no store, no refresh.
Failures end the stream ``auth`` (a missing or refused login, an unusable store), the message naming
the login command; an OAuth server that could not be reached ends it ``network``/``timeout``/``server``.
"""

from __future__ import annotations

from collections import deque
from typing import Final

from streamfns.auth.credential import Credential
from streamfns.auth.errors import LoginFailed, StoreError
from streamfns.auth.providers import ProviderAuth
from streamfns.auth.registry import oauth_provider
from streamfns.auth.resolve import fresh_credential
from streamfns.auth.store import CredentialStore
from streamfns.kit import Signature, SigningRequest, StreamFailure

__all__ = ["OAuthSigner", "signer_for"]

#: How many recent calls a signer remembers the credential of, to know which one a 401 answered.
_RECENT: Final = 8


def _signature(auth: ProviderAuth, secrets: tuple[str, ...]) -> Signature:
    # `origin` moves the attempt to the account's api host (Copilot's per-account endpoint).
    return Signature(headers=dict(auth.headers), secrets=secrets, origin=auth.origin)


class OAuthSigner:
    """Signs requests of provider ``name`` with its stored login (see the module docstring).

    ``store`` defaults to :class:`~streamfns.auth.CredentialStore` at its default path, resolved at each
    call (so ``STREAMFNS_AUTH_FILE`` set later is honoured). ``login_hint`` is what the kit appends to
    an ``auth`` failure after a second 401."""

    def __init__(self, name: str, *, store: CredentialStore | None = None) -> None:
        self.name = name
        self._store = store
        self.login_hint: str = f"run `{oauth_provider(name).login_command}`"
        # The kit hands the same SigningRequest to the signer and to `unauthorized` within one call: the
        # credential a call was signed with is found by identity (a 401 answers that one, not whatever
        # another concurrent call used last).
        self._recent: deque[tuple[SigningRequest, Credential]] = deque(maxlen=_RECENT)
        self._last: Credential | None = None

    def __repr__(self) -> str:
        return f"OAuthSigner({self.name!r})"

    def _remember(self, request: SigningRequest, credential: Credential) -> None:
        self._last = credential
        for index, (known, _) in enumerate(self._recent):
            if known is request:
                del self._recent[index]
                break
        self._recent.append((request, credential))

    def _used_by(self, request: SigningRequest) -> Credential | None:
        for known, credential in reversed(self._recent):
            if known is request:
                return credential
        return self._last

    async def __call__(self, request: SigningRequest) -> Signature:
        """The headers (and origin) for ``request``; raises :class:`StreamFailure` (never quoting a token)."""
        provider = oauth_provider(self.name)
        key = (request.options.api_key or "").strip()
        if key:
            credential = provider.credential_for_key(key)
        else:
            try:
                credential = await fresh_credential(self.name, store=self._store)
            except StoreError as error:
                raise StreamFailure.of("auth", str(error)) from None
            except LoginFailed as error:
                raise StreamFailure.of(error.kind, error.message) from None
            self._remember(request, credential)
        return _signature(provider.to_auth(credential, request.body), credential.secrets())

    async def unauthorized(self, request: SigningRequest) -> bool:
        """After a 401: force a refresh that first adopts a token another process saved; True when a
        token other than the one the request carried is now stored (retry once), False otherwise,
        when the refresh was refused, or when ``StreamOptions.api_key`` was given."""
        if (request.options.api_key or "").strip():
            return False
        seen = self._used_by(request)
        try:
            fresh = await fresh_credential(self.name, store=self._store, force=True, seen=seen)
        except (LoginFailed, StoreError):
            return False
        self._remember(request, fresh)
        return seen is None or fresh.access != seen.access


def signer_for(name: str) -> OAuthSigner:
    """The signer of subscription provider ``name`` (what :mod:`streamfns.kit.provider_auth` loads)."""
    return OAuthSigner(name)
