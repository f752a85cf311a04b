"""What a running Ollama server has pulled: ``/api/tags``, with context sizes from ``/api/show``.

Used by ``streamfns models ollama``. Never raises for a server that is down or answers nonsense: the
answer is then None, and the caller says that any pulled model works.

``timeout`` bounds the whole call — connecting, ``/api/tags`` and every ``/api/show`` — not each read:
a server that sends one byte a second cannot hold the listing past it. Within it the ``/api/show``
calls run a few at a time; a model whose details did not come in time is listed without them (no
context size), so a listing that came is never lost to a slow detail.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any, Final
from urllib.parse import urlsplit

import httpx

from normalize import CostBasis, Model, ModelCost
from streamfns.kit import CompatError, array, obj
from streamfns.ollama import is_cloud_host
from streamfns.ollama.request import host_from_env

__all__ = ["pulled_models", "pulled_models_async"]

#: How many ``/api/show`` calls are in flight at once.
_SHOWN_AT_ONCE: Final = 4


async def _show(client: httpx.AsyncClient, base: str, name: str, gate: asyncio.Semaphore) -> dict[str, Any]:
    async with gate:
        try:
            response = await client.post(f"{base}/api/show", json={"model": name})
            return obj(response.json()) if response.status_code == 200 else {}
        except (httpx.HTTPError, ValueError):
            return {}


def _basis(base: str) -> CostBasis:
    """``free`` on the user's own server (nothing is charged per token); Ollama Cloud
    (:func:`streamfns.ollama.is_cloud_host`, the rule the key and the catalog use too) is paid by a plan."""
    return "subscription" if is_cloud_host(urlsplit(base).hostname) else "free"


def _model(name: str, shown: dict[str, Any], base_url: str | None, basis: CostBasis) -> Model:
    info: Any = shown.get("model_info")
    sizes = [v for k, v in info.items() if k.endswith(".context_length")] if isinstance(info, dict) else []  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    window = next((v for v in sizes if isinstance(v, int) and v > 0), 0)  # pyright: ignore[reportUnknownVariableType]
    capabilities: Any = shown.get("capabilities")
    caps = {c for c in capabilities if isinstance(c, str)} if isinstance(capabilities, list) else set[str]()  # pyright: ignore[reportUnknownVariableType]
    return Model(
        id=name,
        name=name,
        api="ollama-chat",
        provider="ollama",
        base_url=base_url or "",
        reasoning="thinking" in caps or not caps,
        input=["text", "image"] if "vision" in caps else ["text"],
        cost=ModelCost(basis=basis),
        context_window=window,
        max_tokens=8192,
    )


async def pulled_models_async(
    base_url: str | None = None, *, timeout: float = 2.0, transport: httpx.AsyncBaseTransport | None = None
) -> list[Model] | None:
    """:func:`pulled_models` for a caller on an event loop (see it); cancellation propagates."""
    try:
        base = (base_url or host_from_env()).rstrip("/")
    except CompatError:  # an OLLAMA_HOST that could send the request elsewhere: nothing is asked of anyone
        return None
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    try:
        async with httpx.AsyncClient(timeout=timeout, transport=transport) as client:
            async with asyncio.timeout_at(deadline):
                tags = await client.get(f"{base}/api/tags")
                listed = obj(tags.json()) if tags.status_code == 200 else {}
            if listed.get("models").__class__ is not list:
                return None
            names = [
                name for item in array(listed["models"]) if isinstance(name := obj(item).get("name"), str) and name
            ]
            gate = asyncio.Semaphore(_SHOWN_AT_ONCE)
            shows = [asyncio.ensure_future(_show(client, base, name, gate)) for name in names]
            if shows:
                # What is left of the deadline; the shows still out then are cancelled (and listed bare).
                await asyncio.wait(shows, timeout=max(0.0, deadline - loop.time()))
            for show in shows:
                show.cancel()
            found = [
                _model(name, show.result() if show.done() and not show.cancelled() else {}, base_url, _basis(base))
                for name, show in zip(names, shows, strict=True)
            ]
            if shows:
                await asyncio.gather(*shows, return_exceptions=True)  # the cancelled ones have ended
            return found
    except (httpx.HTTPError, ValueError, TimeoutError):
        return None


def pulled_models(
    base_url: str | None = None, *, timeout: float = 2.0, transport: httpx.AsyncBaseTransport | None = None
) -> list[Model] | None:
    """The models the server at ``base_url`` (else ``OLLAMA_HOST``, else localhost) has pulled, as
    ``ollama`` models: the context window from ``/api/show``'s ``<arch>.context_length`` (0 when it says
    none, or when it did not say in time), thinking when its ``capabilities`` name it, images when they
    name ``vision``. None when the server cannot be reached, does not answer ``/api/tags`` with a model
    list within ``timeout`` seconds, or ``OLLAMA_HOST`` is not a usable address (nothing is sent then).

    ``timeout`` bounds the whole call (see the module docstring). Blocking; on a thread that runs an
    event loop it runs on a loop of its own in a worker thread (use :func:`pulled_models_async` there)."""
    listing = pulled_models_async(base_url, timeout=timeout, transport=transport)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(listing)
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="streamfns-ollama-listing") as pool:
        return pool.submit(asyncio.run, listing).result()
