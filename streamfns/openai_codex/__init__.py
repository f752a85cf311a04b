"""The OpenAI Codex StreamFn (api ``openai-codex-responses``, provider ``openai-codex``): a ChatGPT plan
(Plus, Pro, Business …) used through the Codex backend, declared for the adapter kit.

The backend streams the Responses protocol at ``https://chatgpt.com/backend-api/codex/responses``;
``request.py`` shapes the request by its rules (``instructions``, ``store: false``, the fields it
refuses dropped, its headers), ``decode.py`` is the Responses decoder with Codex's terminal events
and errors, ``errors.py`` reads plan limits (``rate_limit`` with ``retry_after_s`` from the reset time)
and refused logins (``auth``).

There is no API key: the plan's login authenticates. After ``streamfns login openai-codex`` (or
:func:`streamfns.auth.login`), every stream of an ``openai-codex`` model is signed by the provider
signer :mod:`streamfns.kit.provider_auth` registers for it (``streamfns.auth.signer_for``, loaded on
first use): a fresh access token and the account id, refreshed when it nears expiry, renewed once
after a 401; an expired or revoked login ends ``auth`` naming ``streamfns login openai-codex``. A token
given as ``StreamOptions.api_key`` is sent as the bearer token as it is (no credential store is
read). The api's own signer, :data:`CODEX_SIGNER`, is the same login for a model of another provider
name served on this api.

Models are listed in ``models.json`` with the ``subscription`` cost basis: a plan is not billed per
token; where OpenAI meters the same model, its list prices are kept, so a usage says what it would
have cost.
"""

from __future__ import annotations

from streamfns.kit import (
    Adapter,
    Ending,
    Signature,
    Signer,
    SigningRequest,
    StreamFailure,
    WireApi,
    provider_signer,
)
from streamfns.kit.provider_auth import ProviderSignerError
from streamfns.openai_codex.decode import CODEX_TERMINALS, CodexDecoder
from streamfns.openai_codex.errors import ERRORS, error_body
from streamfns.openai_codex.request import build_request
from streamfns.openai_responses.errors import stream_error

__all__ = ["ADAPTER", "CODEX_SIGNER", "LOGIN_HINT", "PROVIDER", "WIRE", "CodexSigner", "stream_openai_codex"]

#: The provider a ChatGPT plan's login is registered under.
PROVIDER = "openai-codex"
#: How a user logs in again, when the login signer names nothing itself.
LOGIN_HINT = "run `streamfns login openai-codex`"


class CodexSigner:
    """The api's signer: the ``openai-codex`` provider signer, looked up on each call (so a login
    registered later, or a test's fake, is the one used) and loaded only then.

    ``unauthorized`` and ``login_hint`` are the provider signer's (see :mod:`streamfns.kit.signing`);
    ``login_hint`` falls back to :data:`LOGIN_HINT`. A provider signer that cannot be loaded ends the
    stream ``config``; when none is registered, ``auth`` naming the login command. Never quotes a
    token."""

    __slots__ = ()

    @staticmethod
    def _signer() -> Signer:
        try:
            found = provider_signer(PROVIDER)
        except ProviderSignerError as exc:
            raise StreamFailure.of("config", f"OpenAI Codex request not sent: {exc}") from None
        if found is None:
            raise StreamFailure.of(
                "auth", f"no sign-in is registered for provider {PROVIDER!r}: {LOGIN_HINT}, or pass the access token"
            )
        return found

    async def __call__(self, request: SigningRequest) -> Signature:
        signed = self._signer()(request)
        if isinstance(signed, Signature):
            return signed
        return await signed

    async def unauthorized(self, request: SigningRequest) -> bool:
        """Asks the provider signer to renew its login after a 401 (False when it cannot)."""
        renew = getattr(self._signer(), "unauthorized", None)
        if renew is None:
            return False
        again: object = renew(request)
        if not isinstance(again, bool):
            again = await again  # type: ignore[misc]
        return again is True

    @property
    def login_hint(self) -> str:
        """The provider signer's hint (loading it), else :data:`LOGIN_HINT`."""
        try:
            found = provider_signer(PROVIDER)
        except ProviderSignerError:
            return LOGIN_HINT
        hint = getattr(found, "login_hint", None)
        return hint if isinstance(hint, str) and hint.strip() else LOGIN_HINT


#: The api's signer (see :class:`CodexSigner`).
CODEX_SIGNER = CodexSigner()

WIRE = WireApi(
    api="openai-codex-responses",
    vendor="OpenAI Codex",
    key=None,
    signer=CODEX_SIGNER,
    build_request=build_request,
    decoder=CodexDecoder,
    errors=ERRORS,
    ending=Ending.frames("a terminal response event", *CODEX_TERMINALS),
    error_body=error_body,
    stream_error=stream_error,
    # The backend streams the Responses protocol event for event, so the features are shown by real
    # Responses bodies from the bundled library (what the soak and the harness replay by default); no
    # real Codex backend body is public, and no bundled body holds two calls in one response: that one
    # is the package's own synthetic cassette.
    recordings={
        "text": "pai__text_gpt4o",
        "tool": "pai__function_call_gpt4o",
        "parallel": "codex_parallel_function_calls_SYNTHETIC",
        "thinking": "mirahar__reasoning_summary_o4mini",
    },
)
stream_openai_codex = WIRE.stream_fn
ADAPTER = Adapter.from_wire(
    WIRE,
    package=__name__,
    # What the conformance harness replays: the library's Responses bodies named above, the package's
    # parallel-calls body, and its synthetic Codex bodies made with `cassettes import` from the shapes
    # the backend documents (each header says what is synthetic): text, a call, a reasoning summary.
    cassettes=(
        "pai__text_gpt4o",
        "pai__function_call_gpt4o",
        "codex_parallel_function_calls_SYNTHETIC.jsonl",
        "mirahar__reasoning_summary_o4mini",
        "codex_text_SYNTHETIC.jsonl",
        "codex_function_call_SYNTHETIC.jsonl",
        "codex_reasoning_summary_SYNTHETIC.jsonl",
    ),
)
