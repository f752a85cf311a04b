"""Request signing: an async step that sees the final request and may add headers to it.

Some vendors authenticate with more than a static key header: AWS SigV4 signs the method, URL,
headers and the exact body bytes with a timestamp and credentials from a refreshing chain; Google
Cloud wants a short-lived OAuth access token. A :data:`Signer` runs after ``on_payload`` and the
header merge, once per attempt (a retry is signed again, with fresh credentials and time), and
returns a :class:`Signature`: the headers to add, and the secrets they were made from, which every
error message is redacted of and which the cassette recorder refuses to write. The ``repr`` of a
:class:`Signature` and of a :class:`SigningRequest` shows every credential masked (``'**********'``,
as pydantic's ``SecretStr``): they are safe to log.

A signer that raises :class:`~streamfns.kit.StreamFailure` ends the stream with that failure; a
:class:`~streamfns.kit.CompatError` is ``config``; any other exception is ``auth`` (no credentials, an
expired token that could not be refreshed). Either way nothing is sent.

A :class:`Signature` may also move the attempt: ``origin`` (``https://api.example.com``, a port
allowed, no path) replaces the scheme, host and port of the request URL for that attempt, the path and
query kept — a subscription whose api host is per account learns it with its token. The origin is
checked as :func:`streamfns.kit.endpoint_url` checks an endpoint, and must have no path: one that fails
ends the stream ``config``, nothing sent.

A signer whose tokens can be renewed (an OAuth login) may also have:

- ``async def unauthorized(self, request: SigningRequest) -> bool``: called when the server answers
  **401** before any output, at most once per stream; it renews the credential (or adopts one another
  process renewed) and says whether a different one is now available. True: the request is signed
  afresh and sent again at once, not counted in ``max_retries``. False, a second 401, or no such
  method: the stream ends ``auth``.
- ``login_hint: str`` (``"run `streamfns login openai-codex`"``): how the user gets a new login; a
  stream that ends on a 401 ends its message with ``"; log in again: <login_hint>"``.

See :mod:`streamfns.kit.provider_auth` for signers chosen by the model's provider rather than the api.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from normalize import Model, StreamOptions
from normalize.secret_forms import MASK, masked_headers, masked_repr, masked_url

__all__ = ["Signature", "Signer", "SigningRequest"]


@dataclass(frozen=True, slots=True)
class SigningRequest:
    """The request as it will be sent: ``method``, ``url``, the merged ``headers`` (lower-case names)
    and the encoded ``body`` bytes, with the ``model`` and ``options`` of the call."""

    method: str
    url: str
    headers: Mapping[str, str]
    body: bytes
    model: Model
    options: StreamOptions

    def __repr__(self) -> str:
        # Logged by signers being debugged: the credential headers (and the model's and options' own)
        # show masked, as pydantic's SecretStr shows a secret; the fields are untouched.
        return masked_repr(self, url=masked_url(self.url), headers=masked_headers(self.headers))


@dataclass(frozen=True, slots=True)
class Signature:
    """What a signer adds: ``headers`` (set on the request, replacing any of the same name),
    ``secrets`` (credentials to keep out of every message and every recording) and ``origin``
    (``scheme://host[:port]`` that replaces the URL's for this attempt; None keeps it — see the module
    docstring)."""

    headers: Mapping[str, str] = field(default_factory=dict[str, str])
    secrets: tuple[str, ...] = ()
    origin: str | None = None

    def __repr__(self) -> str:
        # Every secret, and every header value that is not public, shows masked (how many there are
        # stays visible); the fields are untouched.
        return masked_repr(self, headers=masked_headers(self.headers), secrets=tuple(MASK for _ in self.secrets))


#: ``(request) → Signature``, sync or async.
Signer = Callable[[SigningRequest], "Signature | Awaitable[Signature]"]
