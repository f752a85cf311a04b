"""What a running Ollama server has pulled: ``/api/tags``, with context sizes from ``/api/show``.

Used by ``streamfns models ollama``. Never raises for a server that is down or answers nonsense: the
answer is then None, and the caller says that any pulled model works."""

from __future__ import annotations

from typing import Any

import httpx

from normalize import Model, ModelCost
from streamfns.kit import array, obj
from streamfns.ollama.request import host_from_env

__all__ = ["pulled_models"]


def _show(client: httpx.Client, base: str, name: str) -> dict[str, Any]:
    try:
        response = client.post(f"{base}/api/show", json={"model": name})
        return obj(response.json()) if response.status_code == 200 else {}
    except (httpx.HTTPError, ValueError):
        return {}


def pulled_models(
    base_url: str | None = None, *, timeout: float = 2.0, transport: httpx.BaseTransport | None = None
) -> list[Model] | None:
    """The models the server at ``base_url`` (else ``OLLAMA_HOST``, else localhost) has pulled, as
    ``ollama`` models: the context window from ``/api/show``'s ``<arch>.context_length`` (0 when it says
    none), thinking when its ``capabilities`` name it, images when they name ``vision``. None when the
    server cannot be reached or does not answer ``/api/tags`` with a model list."""
    base = (base_url or host_from_env()).rstrip("/")
    try:
        with httpx.Client(timeout=timeout, transport=transport) as client:
            tags = client.get(f"{base}/api/tags")
            listed = obj(tags.json()) if tags.status_code == 200 else {}
            if listed.get("models").__class__ is not list:
                return None
            found: list[Model] = []
            for item in array(listed["models"]):
                name = obj(item).get("name")
                if not isinstance(name, str) or not name:
                    continue
                shown = _show(client, base, name)
                info: Any = shown.get("model_info")
                sizes = [v for k, v in info.items() if k.endswith(".context_length")] if isinstance(info, dict) else []  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
                window = next((v for v in sizes if isinstance(v, int) and v > 0), 0)  # pyright: ignore[reportUnknownVariableType]
                capabilities: Any = shown.get("capabilities")
                caps = {c for c in capabilities if isinstance(c, str)} if isinstance(capabilities, list) else set[str]()  # pyright: ignore[reportUnknownVariableType]
                found.append(
                    Model(
                        id=name,
                        name=name,
                        api="ollama-chat",
                        provider="ollama",
                        base_url=base_url or "",
                        reasoning="thinking" in caps or not caps,
                        input=["text", "image"] if "vision" in caps else ["text"],
                        cost=ModelCost(),
                        context_window=window,
                        max_tokens=8192,
                    )
                )
            return found
    except (httpx.HTTPError, ValueError):
        return None
