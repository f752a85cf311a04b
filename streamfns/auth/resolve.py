"""``fresh_credential``: a credential with time left on it, refreshed at most once across processes.

The promises (pi-ai's ``auth/resolve.ts`` design):

- a stored credential with at least :data:`REFRESH_MARGIN_S` seconds of validity left is returned as
  it is, without the lock;
- otherwise the store's cross-process lock is taken and the store **read again** (double-checked):
  when another process refreshed meanwhile, its credential is returned and no request is made; only
  the process that still finds it stale refreshes, saves the new credential and releases the lock.
  Coroutines of one event loop queue on an in-process gate first, so they never each hold a thread
  or poll the lock file;
- ``force=True`` (after a 401) first re-reads the store and **adopts** a credential whose token
  differs from ``seen`` (another process saved it) and has not expired; only when there is none does
  it refresh, under the lock, read again, as above;
- no stored credential: :class:`LoginRequired`; a refused refresh: :class:`LoginExpired` (the stored
  credential is kept, so ``auth status`` still shows who was logged in); a refused store file:
  :class:`StoreError`. No message carries a token.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Callable
from typing import Final

from streamfns.auth.credential import Credential
from streamfns.auth.errors import LoginRequired
from streamfns.auth.providers import OAuthProvider
from streamfns.auth.registry import oauth_provider
from streamfns.auth.store import CredentialStore

__all__ = ["LOCK_TIMEOUT_S", "REFRESH_MARGIN_S", "fresh_credential"]

#: Refresh when less than this many seconds of validity remain.
REFRESH_MARGIN_S: Final = 300.0
#: How long a refresh waits for another process's refresh (which runs one request of at most ~20 s).
LOCK_TIMEOUT_S: Final = 60.0

_gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str], asyncio.Lock]] = (
    weakref.WeakKeyDictionary()
)


def _gate(store: CredentialStore, name: str) -> asyncio.Lock:
    loop = asyncio.get_running_loop()
    gates = _gates.setdefault(loop, {})
    return gates.setdefault((str(store.path), name), asyncio.Lock())


def _required(provider: OAuthProvider, store: CredentialStore) -> LoginRequired:
    return LoginRequired(
        f"not logged in to {provider.title} (no credential in {store.path}): run `{provider.login_command}`",
        login_command=provider.login_command,
    )


def _adoptable(current: Credential, seen: Credential | None, at: float) -> bool:
    return seen is not None and current.access != seen.access and current.expires > at


async def fresh_credential(
    name: str,
    *,
    store: CredentialStore | None = None,
    force: bool = False,
    seen: Credential | None = None,
    now: Callable[[], float] = time.time,
) -> Credential:
    """The credential of provider ``name`` with time left on it (see the module docstring).

    ``store`` defaults to :class:`CredentialStore` at its default path; ``now`` is the local epoch
    clock validity is measured on.
    """
    provider = oauth_provider(name)
    store = store or CredentialStore()
    current = _stored(provider, store)
    if _usable(current, force=force, seen=seen, at=now()):
        return current
    work = asyncio.ensure_future(_renew(provider, store, force=force, seen=seen, now=now))
    _running.add(work)
    work.add_done_callback(_settled)
    # Shielded: a caller cancelled meanwhile (an abort, a deadline, a consumer that left) stops
    # waiting, not the renewal. A refresh token rotates when it is used: once the server has issued
    # the new one it must be saved, or the login is lost. The renewal is bounded on its own (each
    # request by streamfns.auth._http.REQUEST_TOTAL_S, the lock by LOCK_TIMEOUT_S).
    return await asyncio.shield(work)


#: Renewals running, kept referenced until they end (a task only the loop references may be lost).
_running: set[asyncio.Future[Credential]] = set()


def _settled(work: asyncio.Future[Credential]) -> None:
    _running.discard(work)
    if not work.cancelled():
        work.exception()  # retrieved: a renewal nobody waits for any more fails quietly


async def _renew(
    provider: OAuthProvider,
    store: CredentialStore,
    *,
    force: bool,
    seen: Credential | None,
    now: Callable[[], float],
) -> Credential:
    async with _gate(store, provider.name), store.alock(LOCK_TIMEOUT_S):
        # Read again under the lock: another process may have refreshed while we waited for it.
        current = _stored(provider, store)
        if _usable(current, force=force, seen=seen, at=now()):
            return current
        return await _refresh(provider, store, current)


def _stored(provider: OAuthProvider, store: CredentialStore) -> Credential:
    current = store.load(provider.name)
    if current is None:
        raise _required(provider, store)
    return current


def _usable(current: Credential, *, force: bool, seen: Credential | None, at: float) -> bool:
    """Whether ``current`` serves as it is: after a 401 (``force``), only a token other than the one
    refused (``seen``) that has not expired; otherwise one with the margin left."""
    if force:
        return _adoptable(current, seen, at)
    return current.remaining(at) >= REFRESH_MARGIN_S


async def _refresh(provider: OAuthProvider, store: CredentialStore, current: Credential) -> Credential:
    refreshed = await provider.refresh(current)
    store.save_locked(refreshed)
    return refreshed
