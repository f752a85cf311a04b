"""Google Cloud for adapters: where a Vertex AI call goes, and Application Default Credentials as a signer.

**Placement.** :func:`vertex_placement` is the one read of ``GOOGLE_CLOUD_PROJECT`` (or
``GCLOUD_PROJECT``) and ``GOOGLE_CLOUD_LOCATION``, for a model whose own flags name no project or
location; both are checked, so a hostile or mistyped value cannot move the request (and the token) to
another host or resource. :func:`vertex_root` is the versioned API root of a location
(``https://us-east5-aiplatform.googleapis.com/v1``; ``global`` is ``aiplatform.googleapis.com``, and
the ``us``/``eu`` multi-regions are ``aiplatform.{us,eu}.rep.googleapis.com``).

**Credentials.** :class:`GoogleAuth` is a kit :data:`~streamfns.kit.Signer`: ``GoogleAuth().sign``
finds Application Default Credentials through ``google-auth`` (``GOOGLE_APPLICATION_CREDENTIALS``,
``gcloud auth application-default login``, the metadata server of a Google Cloud machine) with the
``cloud-platform`` scope, refreshes the access token when it is missing or expired and sends it as
``Authorization: Bearer``; the token is listed in :attr:`~streamfns.kit.Signature.secrets`, so no
message and no recording carries it. Its promises:

- an explicit credential wins: when the request already carries ``authorization`` or
  ``x-goog-api-key`` (``StreamOptions.api_key``, ``GOOGLE_CLOUD_ACCESS_TOKEN``, a header of the
  model or the call), the signer adds nothing and never loads ``google-auth``;
- ``google-auth`` is imported only here, on the first call that needs it (``import streamfns`` never
  loads it); when it is not installed the call ends ``config``, saying ``pip install
  'streamfns[vertex]'``;
- finding and refreshing credentials block (files, the metadata server, the token endpoint): they run
  in a worker thread (:func:`asyncio.to_thread`), one refresh at a time per :class:`GoogleAuth`, so an
  abort or a total timeout still lands while they work and concurrent calls share one refresh;
- no credentials, or a token that cannot be refreshed, end the call ``auth`` before anything is sent;
  a token endpoint that cannot be reached is ``network`` (retried like any network failure).
"""

from __future__ import annotations

import asyncio
import os
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

from streamfns.kit.compat import CompatError
from streamfns.kit.failure import StreamFailure
from streamfns.kit.hosts import host_label
from streamfns.kit.signing import Signature, SigningRequest

__all__ = [
    "CLOUD_PLATFORM_SCOPE",
    "GOOGLE_ADC",
    "VERTEX_INSTALL_HINT",
    "GoogleAuth",
    "VertexPlacement",
    "vertex_placement",
    "vertex_root",
]

CLOUD_PLATFORM_SCOPE: Final = "https://www.googleapis.com/auth/cloud-platform"
#: What a caller runs to get the optional dependency (quoted in the ``config`` error).
VERTEX_INSTALL_HINT: Final = "pip install 'streamfns[vertex]'"

# A location becomes part of a host name (checked by streamfns.kit.hosts) and a project part of a URL
# path: both are checked.
_LOCATION_NAME: Final = "a location name such as us-central1"
_PROJECT = re.compile(r"(?:[a-z0-9.-]+:)?[a-z0-9][a-z0-9-]{0,62}")
#: Multi-region locations served by a regional endpoint of their own.
_MULTI_REGIONS: Final = frozenset({"us", "eu"})
#: Headers that mean the caller authenticated already: the signer then stays out of the way.
_EXPLICIT: Final = ("authorization", "x-goog-api-key")


@dataclass(frozen=True, slots=True)
class VertexPlacement:
    """Where a Vertex call goes: the Google Cloud project and location."""

    project: str
    location: str


def vertex_placement(project: str | None, location: str | None) -> VertexPlacement:
    """The Vertex project and location: the model's own values first, then the environment
    (``GOOGLE_CLOUD_PROJECT`` or ``GCLOUD_PROJECT``, ``GOOGLE_CLOUD_LOCATION``).

    Raises :class:`~streamfns.kit.CompatError` (a ``config`` error, nothing sent) naming what is
    missing or malformed.
    """
    location_source = "Model.compat['location']" if location else "GOOGLE_CLOUD_LOCATION"
    project = project or os.environ.get("GOOGLE_CLOUD_PROJECT") or os.environ.get("GCLOUD_PROJECT") or ""
    location = location or os.environ.get("GOOGLE_CLOUD_LOCATION") or ""
    project, location = project.strip(), location.strip()
    missing = [
        what
        for what, value in (
            ("a project (Model.compat['project'] or GOOGLE_CLOUD_PROJECT)", project),
            ("a location (Model.compat['location'] or GOOGLE_CLOUD_LOCATION, e.g. us-central1 or global)", location),
        )
        if not value
    ]
    if missing:
        raise CompatError(f"Vertex AI needs {' and '.join(missing)}")
    # The location becomes part of the host: the one host-part rule (streamfns.kit.hosts) checks it.
    location = host_label(location, source=f"the Vertex AI location ({location_source})", what=_LOCATION_NAME)
    if not _PROJECT.fullmatch(project):
        raise CompatError(f"the Vertex AI project {project!r} is not a Google Cloud project id")
    return VertexPlacement(project=project, location=location)


def vertex_root(location: str) -> str:
    """The versioned Vertex AI API root serving ``location`` (a name :func:`vertex_placement` checked)."""
    if location == "global":
        return "https://aiplatform.googleapis.com/v1"
    if location in _MULTI_REGIONS:
        return f"https://aiplatform.{location}.rep.googleapis.com/v1"
    return f"https://{location}-aiplatform.googleapis.com/v1"


def _missing_extra() -> StreamFailure:
    return StreamFailure.of(
        "config",
        f"Vertex AI credentials need google-auth: {VERTEX_INSTALL_HINT} (or give an access token as "
        "StreamOptions.api_key or GOOGLE_CLOUD_ACCESS_TOKEN)",
    )


def _default_transport() -> object:
    """google-auth's own HTTP transport for the token endpoint (``requests``)."""
    try:
        from google.auth.transport.requests import Request  # noqa: PLC0415 - the optional extra, on first use
    except ImportError:  # google-auth without requests: the extra installs both
        raise _missing_extra() from None
    return Request()


class GoogleAuth:
    """Application Default Credentials (or the ``credentials`` given) as a kit signer: see the module
    docstring. Pass :meth:`sign` as ``WireApi(signer=...)``.

    ``credentials``: a ``google.auth.credentials.Credentials`` to use instead of looking for ADC;
    ``scopes``: asked for when ADC is looked up; ``transport``: makes the ``google.auth.transport.Request``
    a refresh goes through (default: ``google.auth.transport.requests.Request()``).
    """

    def __init__(
        self,
        credentials: Any = None,
        *,
        scopes: Sequence[str] = (CLOUD_PLATFORM_SCOPE,),
        transport: Callable[[], object] | None = None,
    ) -> None:
        self._given: Any = credentials
        self._credentials: Any = credentials
        self._scopes = tuple(scopes)
        self._transport = transport or _default_transport
        # A threading lock, not an asyncio one: refreshes run in worker threads, and one signer serves
        # every event loop of the process.
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"GoogleAuth(scopes={self._scopes!r})"

    def forget(self) -> None:
        """Drop the credentials in hand (found by ADC): the next call looks them up again (after
        ``GOOGLE_APPLICATION_CREDENTIALS`` or the gcloud login changed). Never waits for a refresh in
        progress (one assignment: safe from any thread or event loop)."""
        self._credentials = self._given

    async def sign(self, request: SigningRequest) -> Signature:
        """The ``Authorization: Bearer`` header of a fresh access token (nothing when the request
        already carries a credential). Raises :class:`~streamfns.kit.StreamFailure` (``config``,
        ``auth`` or ``network``) when no token can be had."""
        if any(request.headers.get(name) for name in _EXPLICIT):
            return Signature()
        current = self._current()
        if current is None:
            # Blocking work (files, the metadata server, the token endpoint): in a thread.
            current = await asyncio.to_thread(self._refreshed)
        token, quota_project = current
        if not (token.isascii() and token.isprintable()):
            # Said without quoting the token: a hostile token endpoint must not inject headers.
            raise StreamFailure.of("auth", "the Google Cloud access token contains characters that cannot be sent")
        headers = {"authorization": f"Bearer {token}"}
        if quota_project:
            headers["x-goog-user-project"] = quota_project
        return Signature(headers, (token,))

    def _current(self) -> tuple[str, str | None] | None:
        """The token in hand, when there is one that has not expired (no I/O)."""
        credentials = self._credentials
        if credentials is None:
            return None
        return _usable(credentials)

    def _refreshed(self) -> tuple[str, str | None]:
        """Load the credentials if needed and refresh them, one caller at a time (blocking)."""
        with self._lock:
            if self._credentials is None:
                self._credentials = self._load()
            credentials = self._credentials
            ready = _usable(credentials)  # another caller may have refreshed while this one waited
            if ready is not None:
                return ready
            self._refresh(credentials)
            # A token just issued is used even when it expires within google-auth's safety margin (a
            # short-lived token): it is as fresh as the endpoint makes them.
            ready = _usable(credentials, fresh=True)
            if ready is None:
                raise StreamFailure.of("auth", "Google Cloud credentials gave no usable access token after a refresh")
            return ready

    def _load(self) -> Any:
        try:
            import google.auth  # noqa: PLC0415 - the optional extra, imported only when it is needed
            from google.auth.exceptions import DefaultCredentialsError  # noqa: PLC0415
        except ImportError:
            raise _missing_extra() from None
        try:
            found = cast("tuple[object, object]", google.auth.default(scopes=list(self._scopes)))  # pyright: ignore[reportUnknownMemberType]
        except DefaultCredentialsError as exc:
            raise StreamFailure.of(
                "auth",
                "no Google Cloud credentials for Vertex AI: run `gcloud auth application-default login`, set "
                "GOOGLE_APPLICATION_CREDENTIALS, or give an access token as StreamOptions.api_key or "
                f"GOOGLE_CLOUD_ACCESS_TOKEN ({exc})",
            ) from None
        return found[0]

    def _refresh(self, credentials: Any) -> None:
        try:
            from google.auth.exceptions import RefreshError, TransportError  # noqa: PLC0415
        except ImportError:
            raise _missing_extra() from None
        try:
            credentials.refresh(self._transport())
        except RefreshError as exc:
            raise StreamFailure.of("auth", f"cannot refresh the Google Cloud access token: {exc}") from None
        except TransportError as exc:
            raise StreamFailure.of("network", f"cannot reach the Google token endpoint: {exc}") from None


def _usable(credentials: Any, *, fresh: bool = False) -> tuple[str, str | None] | None:
    """(token, quota project) of credentials holding an unexpired (or ``fresh``) token, else None."""
    token: object = getattr(credentials, "token", None)
    if not isinstance(token, str) or not token:
        return None
    if not fresh and bool(getattr(credentials, "expired", False)):
        return None
    quota: object = getattr(credentials, "quota_project_id", None)
    return token, quota if isinstance(quota, str) and quota else None


#: The process's Application Default Credentials, shared by the Vertex adapters (``google-vertex`` models
#: of ``google-generative-ai`` and ``anthropic-vertex``): one lookup, one refresh at a time.
GOOGLE_ADC: Final = GoogleAuth()
