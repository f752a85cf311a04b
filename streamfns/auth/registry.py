"""The OAuth providers by name: the built-in ``openai-codex`` and ``github-copilot``, and any a caller
registers (a third party's, or a copy of a built-in pointed at a loopback server in tests)."""

from __future__ import annotations

import threading

from streamfns.auth.codex import CodexOAuth
from streamfns.auth.copilot import CopilotOAuth
from streamfns.auth.errors import LoginFailed
from streamfns.auth.providers import OAuthProvider

__all__ = ["oauth_provider", "oauth_providers", "register_oauth_provider", "reset_oauth_providers"]

_lock = threading.Lock()
_providers: dict[str, OAuthProvider] = {}


def _builtins() -> dict[str, OAuthProvider]:
    return {provider.name: provider for provider in (CodexOAuth(), CopilotOAuth())}


def _table() -> dict[str, OAuthProvider]:
    with _lock:
        if not _providers:
            _providers.update(_builtins())
        return _providers


def register_oauth_provider(provider: OAuthProvider) -> None:
    """Make ``provider`` the one for ``provider.name``, replacing any registered under that name."""
    if not provider.name or provider.name != provider.name.strip():
        raise ValueError("an OAuth provider needs a name without surrounding spaces")
    table = _table()
    with _lock:
        table[provider.name] = provider


def oauth_provider(name: str) -> OAuthProvider:
    """The provider registered as ``name``; :class:`~streamfns.auth.LoginFailed` naming the known
    ones when there is none."""
    table = _table()
    with _lock:
        found = table.get(name)
        known = ", ".join(sorted(table))
    if found is None:
        raise LoginFailed(f"no subscription login is called {name!r} (known: {known})", kind="config")
    return found


def oauth_providers() -> dict[str, OAuthProvider]:
    """Every registered provider, by name (a copy)."""
    table = _table()
    with _lock:
        return dict(table)


def reset_oauth_providers() -> None:
    """Forget every registration: only the built-ins, with their vendors' endpoints, remain (for tests)."""
    with _lock:
        _providers.clear()
        _providers.update(_builtins())
