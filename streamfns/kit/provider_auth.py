"""Signers chosen by the model's provider: subscription logins (``openai-codex``, ``github-copilot``).

An api's key rule or signer belongs to the wire protocol; a subscription belongs to the provider. The
same Responses api serves OpenAI with a key and GitHub Copilot with a login, so a login cannot be the
api's: it is registered here, by provider name, and :attr:`streamfns.kit.WireApi.stream_fn` asks for
it on each stream. When the model's provider (its name lower-cased) has a provider signer and
``StreamOptions.api_key`` is not given, that signer authenticates every attempt and the api's key
rule is skipped; a key given in ``api_key`` always wins (the api's key rule sends it, as without a
login).

Two providers are built in, loaded on first use only — nothing here imports :mod:`streamfns.auth`
until a stream for one of them runs: ``openai-codex`` and ``github-copilot``, each
``streamfns.auth:signer_for(provider)``. :func:`register_provider_signer` adds one or replaces one (a
test points a provider at a fake signer; an app brings its own token source); ``None`` removes one.

A signer here is a kit :data:`~streamfns.kit.Signer`, and may have ``unauthorized`` and
``login_hint`` (see :mod:`streamfns.kit.signing`): after a 401 the kit asks it once to renew the
login, then retries.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import cast

from streamfns.kit.signing import Signer

__all__ = ["ProviderSignerError", "provider_signer", "provider_signers", "register_provider_signer"]

#: The built-in provider signers, as ``"module:attr"`` factories called with the provider's name.
_BUILTIN: dict[str, str] = {
    "openai-codex": "streamfns.auth:signer_for",
    "github-copilot": "streamfns.auth:signer_for",
}
#: Registered entries: a signer, or a ``"module:attr"`` factory not loaded yet.
_entries: dict[str, Signer | str] = dict(_BUILTIN)


class ProviderSignerError(Exception):
    """A registered ``"module:attr"`` factory could not be loaded or made no signer (a ``config``
    failure when a stream asks for it); the message names the provider and the factory."""


def _key(provider: str) -> str:
    if not isinstance(provider, str) or not provider.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"a provider signer needs a provider name, not {provider!r}")
    return provider.strip().lower()


def register_provider_signer(provider: str, signer: Signer | str | None) -> None:
    """Make ``signer`` authenticate every stream of ``provider`` (its name's case does not matter)
    that is given no ``api_key``, replacing what was registered (a built-in included).

    ``signer`` is a kit :data:`~streamfns.kit.Signer` (a function, or an object with ``__call__``
    and optionally ``unauthorized`` and ``login_hint``), or a ``"module:attr"`` factory: ``attr`` is
    called with the provider's name on the first stream that needs it, and what it returns is kept.
    ``None`` removes the provider's signer (streams then use the api's key rule). Raises ``ValueError``
    for an empty provider name or a string that is not ``module:attr``, ``TypeError`` for a signer
    that is not callable."""
    key = _key(provider)
    if signer is None:
        _entries.pop(key, None)
        return
    if isinstance(signer, str):
        module, colon, attr = signer.partition(":")
        if not colon or not module or not attr:
            raise ValueError(f"a provider signer factory is 'module:attr', not {signer!r}")
    elif not callable(signer):
        raise TypeError(f"a provider signer must be callable, not a {type(signer).__name__}")
    _entries[key] = signer


def provider_signer(provider: str) -> Signer | None:
    """The signer registered for ``provider`` (case-insensitive), loading a ``"module:attr"`` factory
    the first time; None when the provider has none. One dictionary lookup once loaded. Raises
    :class:`ProviderSignerError` when a factory cannot be imported, fails, or returns something that
    is not callable (the factory stays registered: a later call tries again)."""
    key = provider.lower() if isinstance(provider, str) else ""  # pyright: ignore[reportUnnecessaryIsInstance]
    entry = _entries.get(key)
    if entry is None or not isinstance(entry, str):
        return entry
    module_name, _, attr = entry.partition(":")
    try:
        factory = cast("Callable[[str], object]", getattr(importlib.import_module(module_name), attr))
        made = factory(key)
    except Exception as exc:  # an uninstalled or broken factory is configuration, said not raised as is
        raise ProviderSignerError(
            f"the sign-in for provider {key!r} ({entry}) could not be loaded: {type(exc).__name__}: {exc}"
        ) from None
    if not callable(made):
        made_kind = type(made).__name__
        raise ProviderSignerError(f"the sign-in for provider {key!r} ({entry}) made a {made_kind}, not a signer")
    signer = cast("Signer", made)
    # Only a registration still in place is replaced: a factory that registered a signer of its own
    # keeps it.
    if _entries.get(key) == entry:
        _entries[key] = signer
    return signer


def provider_signers() -> dict[str, Signer | str]:
    """What is registered, by provider: a loaded signer, or the ``"module:attr"`` factory that makes it."""
    return dict(_entries)
