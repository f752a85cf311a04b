"""What a subscription login is made of: :class:`OAuthProvider` (login, refresh, the headers a request
carries), :class:`ProviderAuth`, and :class:`LoginInteraction`, what a user interface supplies.

A provider owns three steps, as pi-ai's do: :meth:`~OAuthProvider.login` (an interactive flow ending
in a :class:`~streamfns.auth.Credential`), :meth:`~OAuthProvider.refresh` (a new access token from
the refresh credential, without the user) and :meth:`~OAuthProvider.to_auth` (what one request
carries). It never touches the store: :func:`streamfns.auth.login` and
:func:`streamfns.auth.fresh_credential` do, under the store's lock.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from normalize import AbortSignal
from normalize.secret_forms import masked_headers, masked_repr
from streamfns.auth.credential import Credential

__all__ = ["LoginInteraction", "OAuthProvider", "ProviderAuth"]


@dataclass(frozen=True, slots=True)
class ProviderAuth:
    """What one request carries: ``headers`` (``Authorization`` and the vendor's required headers,
    lower-case names) and ``origin`` (``scheme://host[:port]`` replacing the request URL's, for a
    per-account endpoint such as Copilot's; None keeps the URL). The ``repr`` masks every header
    value that is not public."""

    headers: Mapping[str, str] = field(default_factory=dict[str, str])
    origin: str | None = None

    def __repr__(self) -> str:
        return masked_repr(self, headers=masked_headers(self.headers))


class LoginInteraction(Protocol):
    """What a user interface supplies to a login: where to show the code, progress lines, and an
    optional abort ``signal`` (aborting ends the login with :class:`~streamfns.auth.LoginFailed`)."""

    @property
    def signal(self) -> AbortSignal | None:
        """Aborting it ends the login (None: the login runs until it succeeds, fails or expires).
        Read-only here, so a plain attribute of that type satisfies the protocol."""
        ...

    def show_code(self, verification_uri: str, user_code: str, expires_in_s: float) -> None:
        """Ask the user to open ``verification_uri`` and enter ``user_code`` within ``expires_in_s``."""
        ...

    def progress(self, message: str) -> None:
        """A line of progress ("waiting for approval …"); never carries a token."""
        ...


class OAuthProvider(ABC):
    """One subscription login. Subclasses set ``name`` (the provider name models use), ``title``
    (for people) and ``login_command`` (what a user runs to log in) and implement the three steps."""

    name: str
    title: str
    login_command: str

    @abstractmethod
    async def login(self, interaction: LoginInteraction) -> Credential:
        """Run the interactive flow; raises :class:`~streamfns.auth.LoginFailed` (denied, code
        expired, aborted through ``interaction.signal``, server error)."""

    @abstractmethod
    async def refresh(self, credential: Credential) -> Credential:
        """A new credential from ``credential.refresh``; raises :class:`~streamfns.auth.LoginExpired`
        when the provider refuses it (revoked, expired) and :class:`~streamfns.auth.LoginFailed` when
        it could not be asked (network, server error)."""

    @abstractmethod
    def to_auth(self, credential: Credential, request_body: bytes) -> ProviderAuth:
        """The headers (and origin) a request with ``request_body`` carries for ``credential``."""

    def credential_for_key(self, key: str) -> Credential:
        """A credential for an access token given directly (``StreamOptions.api_key``): no refresh,
        no expiry. A provider that can read extras from the token itself overrides this."""
        return Credential(provider=self.name, access=key, refresh="", expires=math.inf)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"
