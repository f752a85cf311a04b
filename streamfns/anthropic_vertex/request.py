"""Context → Claude on Vertex AI ``streamRawPredict`` request. Pure but for reading where the call goes.

Project and location come from ``Model.compat`` or the environment (``GOOGLE_CLOUD_PROJECT`` /
``GOOGLE_CLOUD_LOCATION``, read by :func:`streamfns.kit.vertex_placement`): the one read of the
environment.

The body is the Anthropic Messages request :func:`streamfns.anthropic.request.build_request` renders
(transcript, system, tools, cache markers, thinking, temperature: all decided there), transformed the
way Vertex takes it: no ``model`` (the URL names it), ``anthropic_version: "vertex-2023-10-16"`` in the
body instead of the ``anthropic-version`` header; beta flags stay in the ``anthropic-beta`` header.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Final
from urllib.parse import quote

from normalize import Context, Model, StreamOptions
from streamfns.anthropic.request import AnthropicCompat
from streamfns.anthropic.request import build_request as build_messages_request
from streamfns.kit import VertexPlacement, WireRequest, parse_compat, vertex_placement, vertex_root

__all__ = ["VERTEX_ANTHROPIC_VERSION", "AnthropicVertexCompat", "build_request", "request_url"]

#: The Messages version Vertex AI takes, in the body.
VERTEX_ANTHROPIC_VERSION: Final = "vertex-2023-10-16"
#: The compat flags that are Vertex's, not the Messages request's.
_VERTEX_FLAGS: Final = ("project", "location", "regional_price_multiplier")
#: Where :func:`streamfns.kit.vertex_placement` looks when the flags name no project or location.
_PLACEMENT_ENV: Final = ("GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AnthropicVertexCompat(AnthropicCompat):
    """Per-model flags (``Model.compat``): the Anthropic ones (:class:`~streamfns.anthropic.request.AnthropicCompat`)
    and the Vertex ``project`` / ``location`` (None: ``GOOGLE_CLOUD_PROJECT`` / ``GOOGLE_CLOUD_LOCATION``).

    ``regional_price_multiplier``: what a location other than ``global`` costs relative to the
    catalog's (global) rates. Anthropic bills regional and multi-region endpoints of Claude Sonnet 4.5,
    Haiku 4.5, Opus 4.5 and later models 10% above global ones (the catalog says 1.1 for them); a
    request to such a location is priced at the rates times this
    (:attr:`streamfns.kit.WireRequest.price_multiplier`). A model reached through its ``base_url``
    alone, with no location anywhere, is priced at the catalog's rates."""

    project: str | None = None
    location: str | None = None
    regional_price_multiplier: float | None = None


def request_url(model: Model, compat: AnthropicVertexCompat) -> str:
    """``{root}/projects/{project}/locations/{location}/publishers/anthropic/models/{id}:streamRawPredict``.

    ``root`` is ``model.base_url`` (with its version, ``https://us-east5-aiplatform.googleapis.com/v1``)
    or the location's own (:func:`streamfns.kit.vertex_root`: ``global`` is ``aiplatform.googleapis.com``).
    The id is one path segment (``/`` and other reserved characters escaped; ``@`` of a version kept).
    A model with a ``base_url`` (a gateway that routes by its own path, a test server) and no project
    or location anywhere goes to ``{base_url}/publishers/anthropic/models/{id}:streamRawPredict``.
    Raises :class:`~streamfns.kit.CompatError` for a missing or malformed project or location.
    """
    return _url(model, _placement(model, compat))


def _placement(model: Model, compat: AnthropicVertexCompat) -> VertexPlacement | None:
    """Where the call goes; None for a model reached through its ``base_url`` alone."""
    if not model.id.strip():
        raise ValueError("the model id is empty")
    if model.base_url.strip() and not (compat.project or compat.location or _placement_in_environment()):
        return None
    return vertex_placement(compat.project, compat.location)


def _url(model: Model, place: VertexPlacement | None) -> str:
    tail = f"/publishers/anthropic/models/{quote(model.id, safe='@')}:streamRawPredict"
    base = model.base_url.rstrip("/")
    if place is None:
        return base + tail
    root = base or vertex_root(place.location)
    return f"{root}/projects/{quote(place.project, safe=':')}/locations/{place.location}{tail}"


def _placement_in_environment() -> bool:
    return any(os.environ.get(name, "").strip() for name in _PLACEMENT_ENV)


def build_request(model: Model, context: Context, options: StreamOptions | None = None) -> WireRequest:
    """Render ``context`` as a streaming Claude request on Vertex AI (see the module docstring).

    ``Model.compat`` is read as :class:`AnthropicVertexCompat` (an unknown flag, or no project or
    location, raises :class:`~streamfns.kit.CompatError`).
    """
    compat = parse_compat(AnthropicVertexCompat, model.compat)
    place = _placement(model, compat)
    url = _url(model, place)
    messages_flags = {key: value for key, value in (model.compat or {}).items() if key not in _VERTEX_FLAGS}
    inner = build_messages_request(dataclasses.replace(model, compat=messages_flags or None), context, options)
    payload: dict[str, Any] = {"anthropic_version": VERTEX_ANTHROPIC_VERSION}
    payload.update((key, value) for key, value in inner.payload.items() if key != "model")
    headers = {name: value for name, value in inner.headers.items() if name != "anthropic-version"}
    regional = place is not None and place.location != "global"
    multiplier = compat.regional_price_multiplier if regional and compat.regional_price_multiplier else 1.0
    return WireRequest(url=url, payload=payload, headers=headers, price_multiplier=multiplier)
