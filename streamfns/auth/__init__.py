"""Subscription logins: ChatGPT plans (``openai-codex``) and GitHub Copilot (``github-copilot``) over
OAuth, with a credential store that refreshes safely across processes.

- :func:`login` runs a provider's device-code flow through a :class:`LoginInteraction` (the UI: show
  the code, progress lines, an abort signal) and stores the :class:`Credential` it ends with;
  :func:`logout` forgets it; :func:`status` says who is logged in and until when, never a token.
- :class:`CredentialStore` is one JSON file, 0600 in a 0700 directory, written atomically, locked
  across processes, refused (:class:`StoreError`) when corrupt, foreign-owned, readable by others or a
  symbolic link.
- :func:`fresh_credential` returns a credential with at least :data:`REFRESH_MARGIN_S` seconds left,
  refreshing it (double-checked under the store's lock, so two processes never refresh at once);
  after a 401, ``force=True`` first adopts a token another process saved.
- :class:`OAuthSigner` (:func:`signer_for`) is the kit signer the two providers' models use.
- Providers are :class:`OAuthProvider` subclasses (:class:`CodexOAuth`, :class:`CopilotOAuth`);
  :func:`register_oauth_provider` adds or replaces one by name (a third party's, or a built-in
  pointed at a loopback server).

Tokens never appear in a ``repr``, an exception message or a log line; an OAuth server's error text
is quoted only with every known token blanked and cut short.
"""

from __future__ import annotations

from streamfns.auth.codex import CodexOAuth
from streamfns.auth.copilot import CopilotOAuth, copilot_initiator, copilot_vision
from streamfns.auth.credential import Credential
from streamfns.auth.errors import LoginExpired, LoginFailed, LoginRequired, StoreError
from streamfns.auth.flows import LoginStatus, login, logout, status
from streamfns.auth.providers import LoginInteraction, OAuthProvider, ProviderAuth
from streamfns.auth.registry import oauth_provider, oauth_providers, register_oauth_provider, reset_oauth_providers
from streamfns.auth.resolve import REFRESH_MARGIN_S, fresh_credential
from streamfns.auth.signer import OAuthSigner, signer_for
from streamfns.auth.store import CredentialStore

__all__ = [
    "REFRESH_MARGIN_S",
    "CodexOAuth",
    "CopilotOAuth",
    "Credential",
    "CredentialStore",
    "LoginExpired",
    "LoginFailed",
    "LoginInteraction",
    "LoginRequired",
    "LoginStatus",
    "OAuthProvider",
    "OAuthSigner",
    "ProviderAuth",
    "StoreError",
    "copilot_initiator",
    "copilot_vision",
    "fresh_credential",
    "login",
    "logout",
    "oauth_provider",
    "oauth_providers",
    "register_oauth_provider",
    "reset_oauth_providers",
    "signer_for",
    "status",
]
