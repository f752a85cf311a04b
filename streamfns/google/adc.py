"""Vertex AI credentials for Gemini: an explicit token or key when given, else Application Default Credentials.

The key rule (:func:`streamfns.google.compat.google_key`) sends a token from ``StreamOptions.api_key``
or ``GOOGLE_CLOUD_ACCESS_TOKEN`` when there is one; :func:`sign` runs after it and, for a Vertex
model that carries no credential yet (no ``authorization`` or ``x-goog-api-key`` header), adds a
bearer token from :data:`streamfns.kit.GOOGLE_ADC` (a :class:`streamfns.kit.GoogleAuth`: ``google-auth`` imported on
first use, refreshed in a thread, a missing extra is ``config``, no credentials ``auth``, nothing sent).
The Gemini API and Vertex express mode take API keys: the signer adds nothing to them.
"""

from __future__ import annotations

from normalize import Model
from streamfns.google.compat import GoogleCompat, is_vertex
from streamfns.kit import GOOGLE_ADC, Signature, SigningRequest, parse_compat

__all__ = ["sign", "uses_adc"]


def uses_adc(model: Model) -> bool:
    """Whether ``model`` authenticates with a Google Cloud access token (Vertex AI, not express mode)."""
    compat = parse_compat(GoogleCompat, model.compat)
    return is_vertex(model, compat) and not compat.express


async def sign(request: SigningRequest) -> Signature:
    """A bearer token from :data:`~streamfns.kit.GOOGLE_ADC` for a Vertex model sent without a credential;
    nothing for any other request."""
    if not uses_adc(request.model):
        return Signature()
    return await GOOGLE_ADC.sign(request)
