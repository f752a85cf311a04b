"""Which Google endpoint a model is served by, how it authenticates, and its typed compat flags.

One api (``google-generative-ai``), two endpoints:

- **Gemini API** (any provider but ``google-vertex``): ``{base_url}/models/{id}:streamGenerateContent``
  with the key in the ``x-goog-api-key`` header (``GEMINI_API_KEY`` / ``GOOGLE_API_KEY``). The key never
  goes in the query string, so it cannot end up in access logs, proxies' URLs or cassettes.
- **Vertex AI** (provider ``google-vertex``, or ``compat.vertex = true``):
  ``https://{location}-aiplatform.googleapis.com/v1/projects/{project}/locations/{location}/publishers/
  google/models/{id}:streamGenerateContent`` (``global`` has no location prefix on the host) with an
  OAuth access token as ``Authorization: Bearer``: ``StreamOptions.api_key`` or
  ``GOOGLE_CLOUD_ACCESS_TOKEN`` (e.g. from ``gcloud auth print-access-token``) when given, else one
  from Application Default Credentials (:mod:`streamfns.google.adc`; the ``streamfns[vertex]``
  extra). Project and location come from the model's compat flags, else from
  ``GOOGLE_CLOUD_PROJECT`` (or ``GCLOUD_PROJECT``) and ``GOOGLE_CLOUD_LOCATION``:
  :func:`vertex_placement` (through :func:`streamfns.kit.vertex_placement`) is the one place that
  reads them. In **express
  mode** (``compat.express = true``) Vertex takes an API key instead (``x-goog-api-key``,
  ``GOOGLE_CLOUD_API_KEY``) and no project or location.

Everything here is pure except :func:`vertex_placement`, which reads the environment and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from normalize import Model
from streamfns.kit import ApiKey, VertexPlacement, parse_compat
from streamfns.kit import vertex_placement as kit_vertex_placement

__all__ = [
    "GEMINI_API_BASE_URL",
    "VERTEX_PROVIDER",
    "GoogleCompat",
    "VertexPlacement",
    "google_key",
    "is_vertex",
    "vertex_placement",
]

GEMINI_API_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
VERTEX_PROVIDER = "google-vertex"

GEMINI_KEY = ApiKey(env=("GEMINI_API_KEY", "GOOGLE_API_KEY"), header="x-goog-api-key", scheme=None)
# Not required: without one, the signer (streamfns.google.adc) finds Application Default Credentials.
VERTEX_TOKEN = ApiKey(env=("GOOGLE_CLOUD_ACCESS_TOKEN",), header="authorization", scheme="Bearer", required=False)
VERTEX_EXPRESS_KEY = ApiKey(env=("GOOGLE_CLOUD_API_KEY",), header="x-goog-api-key", scheme=None)


@dataclass(frozen=True, slots=True, kw_only=True)
class GoogleCompat:
    """Per-model flags (``Model.compat``) for Gemini and Vertex models.

    - ``vertex``: the model is served by Vertex AI (None: decided by ``provider == "google-vertex"``).
    - ``project`` / ``location``: the Vertex project and location (None: from the environment).
    - ``express``: Vertex AI express mode, authenticated by an API key instead of a token.
    - ``thinking``: how the model takes a thinking setting — ``"level"`` (``thinkingLevel``, Gemini 3)
      or ``"budget"`` (``thinkingBudget``, Gemini 2.5); None decides by the model id.
    - ``call_ids``: send tool-call ids back in ``functionCall``/``functionResponse`` (None: for the
      models that need them — Gemini 3 and later, Claude and gpt-oss served through Vertex).
    - ``stream_function_call_arguments``: ask Vertex to stream function-call arguments as they are
      generated (``partialArgs``); the decoder assembles them either way.
    - ``thought_signature_sentinel``: give the first function call of a model turn that has no signed
      call Google's documented ``skip_thought_signature_validator`` signature, so that another
      model's calls (whose signatures never cross models) are accepted mid tool loop (None: on the
      Gemini API — provider ``google`` — for Gemini 3 and later, which reject unsigned calls; never
      by default on Vertex, which rejects the sentinel).
    """

    vertex: bool | None = None
    project: str | None = None
    location: str | None = None
    express: bool = False
    thinking: Literal["level", "budget"] | None = None
    call_ids: bool | None = None
    stream_function_call_arguments: bool = False
    thought_signature_sentinel: bool | None = None


def is_vertex(model: Model, compat: GoogleCompat) -> bool:
    """Whether ``model`` is served by Vertex AI."""
    return compat.vertex if compat.vertex is not None else model.provider == VERTEX_PROVIDER


def google_key(model: Model) -> ApiKey:
    """The key rule for ``model`` (the kit asks after the request was built: ``compat`` is checked).

    Gemini API and Vertex express mode: an API key in ``x-goog-api-key``; Vertex: a bearer token.
    """
    compat = parse_compat(GoogleCompat, model.compat)
    if not is_vertex(model, compat):
        return GEMINI_KEY
    return VERTEX_EXPRESS_KEY if compat.express else VERTEX_TOKEN


def vertex_placement(compat: GoogleCompat) -> VertexPlacement:
    """The Vertex project and location: the compat flags first, then the environment
    (``GOOGLE_CLOUD_PROJECT`` or ``GCLOUD_PROJECT``, ``GOOGLE_CLOUD_LOCATION``).

    The request builder's one read of the environment (:func:`streamfns.kit.vertex_placement`). Raises
    :class:`CompatError` (a ``config`` error, nothing sent) naming what is missing or malformed.
    """
    return kit_vertex_placement(compat.project, compat.location)
