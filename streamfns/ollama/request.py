"""The ``/api/chat`` request: Ollama's native chat payload, and the server address.

Where the request goes: the model's ``base_url`` when it has one; otherwise (the catalog leaves it empty
for the local server) the ``OLLAMA_HOST`` variable read as the ``ollama`` command reads it, else
``http://localhost:11434``. Ollama Cloud is ``https://ollama.com`` with ``OLLAMA_API_KEY``.

What the payload holds: the system prompt as a leading ``system`` message; user text and images (base64
``images``); assistant text, ``thinking`` and ``tool_calls`` replayed (arguments as objects, as the
server sent them); tool results as ``role: "tool"`` with ``tool_name``; tools as function schemas;
``think`` only when ``options.reasoning`` is given (``off`` → false, a level → true, or the level for
models that take one); ``options`` with ``num_predict`` (``max_tokens``), ``temperature``, ``num_ctx``
and the compat ``options``; ``keep_alive`` and ``format`` from compat. Transcripts from other models
pass through :func:`normalize.transcript_for` first, like every adapter's.
"""

from __future__ import annotations

import ipaddress
import os
from typing import Any, Final

import normalize as nz
from streamfns.kit import WireRequest, effort_for, endpoint_url, parse_compat
from streamfns.ollama.compat import OllamaCompat

__all__ = ["DEFAULT_HOST", "build_request", "host_from_env"]

DEFAULT_HOST: Final = "http://localhost:11434"
_LEVELS: Final = frozenset({"low", "medium", "high"})


def host_from_env(value: str | None = None) -> str:
    """The server address ``OLLAMA_HOST`` names (``value`` instead when given), read as the ``ollama``
    command reads it: a bare ``host``, ``host:port`` or ``scheme://host:port/path``; no scheme means
    ``http``; no port means 11434 without a scheme, 80/443 with ``http``/``https``; ``ollama.com`` alone
    means ``https://ollama.com:443``. Unset, blank or a port number over 65535: :data:`DEFAULT_HOST`.

    The address is then checked as every host part read from the environment is
    (:func:`streamfns.kit.endpoint_url`): ``http`` or ``https``, a host name or an IP address, a path
    without dot segments; user info (``x@127.0.0.1``), a query, a fragment (``localhost#@evil``) or
    anything else that could send the request, and the ``OLLAMA_API_KEY`` it carries, somewhere the
    variable does not plainly say raises :class:`~streamfns.kit.CompatError` naming ``OLLAMA_HOST``
    (the stream ends ``config``, nothing sent)."""
    raw = (os.environ.get("OLLAMA_HOST", "") if value is None else value).strip()
    if not raw:
        return DEFAULT_HOST
    scheme, sep, rest = raw.partition("://")
    port = "11434"
    if not sep:
        scheme, rest = "http", raw
        if raw == "ollama.com":
            scheme, rest = "https", "ollama.com:443"
    elif scheme == "http":
        port = "80"
    elif scheme == "https":
        port = "443"
    hostport, slash, path = rest.partition("/")
    host = hostport
    if hostport.startswith("["):  # [::1]:11434
        inside, _, after = hostport[1:].partition("]")
        host, port = inside, after.removeprefix(":") or port
    elif hostport.count(":") == 1:
        host, port = hostport.split(":")
    host = host or "127.0.0.1"
    if port.isascii() and port.isdigit() and int(port) > 65535:
        return DEFAULT_HOST
    # Any other port that is not a number ("9#@evil.example") is left for the check below to refuse:
    # falling back would hide a value that tried to say something else.
    try:
        bracketed = f"[{host}]" if ipaddress.ip_address(host).version == 6 else host
    except ValueError:
        bracketed = host
    found = f"{scheme}://{bracketed}:{port}" + (f"/{path}".rstrip("/") if slash else "")
    return endpoint_url(found, source="OLLAMA_HOST")  # quoted as read, its user info blanked


def _text(blocks: list[Any]) -> str:
    return "".join(b if isinstance(b, str) else b.text for b in blocks if isinstance(b, str | nz.TextContent))


def _images(blocks: list[Any]) -> list[str]:
    return [b.data for b in blocks if isinstance(b, nz.ImageContent)]


def _message(message: nz.Message) -> dict[str, Any]:
    if isinstance(message, nz.SystemMessage):  # a mid-conversation update: Ollama takes system turns
        return {"role": "system", "content": nz.system_update_text(message)}
    if isinstance(message, nz.ToolResultMessage):
        blocks: list[Any] = list(message.content)
        out: dict[str, Any] = {"role": "tool", "tool_name": message.tool_name, "content": _text(blocks)}
        if images := _images(blocks):
            out["images"] = images
        return out
    if isinstance(message, nz.UserMessage):
        blocks = [message.content] if isinstance(message.content, str) else list(message.content)
        out = {"role": "user", "content": _text(blocks)}
        if images := _images(blocks):
            out["images"] = images
        return out
    out = {"role": "assistant", "content": _text(list(message.content))}
    thinking = "".join(b.thinking for b in message.content if isinstance(b, nz.ThinkingContent) and not b.redacted)
    if thinking:
        out["thinking"] = thinking
    calls = [b for b in message.content if isinstance(b, nz.ToolCall)]
    if calls:
        out["tool_calls"] = [{"function": {"name": c.name, "arguments": c.arguments}} for c in calls]
    return out


def _think(model: nz.Model, level: nz.ThinkingLevel, compat: OllamaCompat) -> bool | str:
    if level == "off":
        return False
    if compat.think_levels:
        effort = effort_for(level, model.thinking_level_map or {})
        return effort if effort in _LEVELS else "high"
    return True


def build_request(model: nz.Model, context: nz.Context, options: nz.StreamOptions) -> WireRequest:
    """The ``POST {base}/api/chat`` request with ``stream: true`` (see the module docstring)."""
    compat = parse_compat(OllamaCompat, model.compat)
    transcript = nz.transcript_for(model, context)
    system = [{"role": "system", "content": transcript.prompt}] if transcript.prompt else []
    payload: dict[str, Any] = {
        "model": model.id,
        "messages": [*system, *map(_message, transcript.turns)],
        "stream": True,
    }
    if transcript.tools:
        payload["tools"] = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
            }
            for t in transcript.tools
        ]
    if options.reasoning is not None:
        payload["think"] = _think(model, options.reasoning, compat)
    runtime: dict[str, Any] = dict(compat.options)
    if compat.num_ctx is not None:
        runtime["num_ctx"] = compat.num_ctx
    if options.max_tokens is not None:
        runtime["num_predict"] = options.max_tokens
    if options.temperature is not None:
        runtime["temperature"] = options.temperature
    if runtime:
        payload["options"] = runtime
    if compat.keep_alive is not None:
        payload["keep_alive"] = compat.keep_alive
    if compat.format is not None:
        payload["format"] = compat.format
    base = (model.base_url or host_from_env()).rstrip("/")
    return WireRequest(url=f"{base}/api/chat", payload=payload)
