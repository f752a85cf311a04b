"""The child process of the refresh race (run with the ``spawn`` start method: a fresh interpreter, as
a second program sharing the store would be)."""

from __future__ import annotations

import asyncio
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier

from streamfns.auth import CodexOAuth, CredentialStore, fresh_credential, register_oauth_provider


def refresh_once(issuer: str, store_path: str, barrier: Barrier, results: Queue[tuple[str, str]]) -> None:
    """Wait for the other racer, then ask for a fresh credential; put ``("ok", access)`` or
    ``("error", "<type>: <message>")`` on ``results``."""
    register_oauth_provider(CodexOAuth(issuer))
    barrier.wait(timeout=60)
    try:
        credential = asyncio.run(fresh_credential("openai-codex", store=CredentialStore(store_path)))
    except Exception as exc:
        results.put(("error", f"{type(exc).__name__}: {exc}"))
    else:
        results.put(("ok", credential.access))
