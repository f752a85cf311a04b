"""``CodexOAuth``: logging in with a ChatGPT plan (Plus, Pro, Team …) for the ``openai-codex`` provider.

**Login** is OpenAI's device-code flow (the one the Codex CLI uses; not RFC 8628's endpoints): a user
code from ``<issuer>/api/accounts/deviceauth/usercode``, shown with ``<issuer>/codex/device``; polls
of ``…/deviceauth/token`` (HTTP 403/404 while the user has not approved yet) until it answers with an
authorization code and the PKCE verifier the server generated; then the code is exchanged at
``<issuer>/oauth/token`` for an access token, a refresh token and an id token.

**Refresh** posts the refresh token to ``<issuer>/oauth/token``; refresh tokens rotate, so the new one
is kept (the old one when none comes back). A 400 or 401 answer (``invalid_grant``,
``refresh_token_expired`` / ``_reused`` / ``_invalidated``) is :class:`LoginExpired`.

**Requests** carry ``Authorization: Bearer <access>`` and ``chatgpt-account-id`` (the claim
``https://api.openai.com/auth`` → ``chatgpt_account_id`` of the token); the rest of the Codex
headers are the api's (``streamfns.openai_codex``). Expiry comes from ``expires_in``, the token's
JWT ``exp`` being only a fallback (:func:`streamfns.auth.credential.expiry`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final

import httpx

from streamfns.auth._http import OAuthAnswer, client, json_object, request
from streamfns.auth.credential import Credential, expiry, jwt_claims
from streamfns.auth.device import AUTHORIZATION_PENDING, DevicePoll, clamp_interval, displayable, poll_device
from streamfns.auth.errors import LoginExpired, LoginFailed
from streamfns.auth.providers import LoginInteraction, OAuthProvider, ProviderAuth

__all__ = ["CODEX_CLIENT_ID", "CODEX_ISSUER", "CodexOAuth", "chatgpt_account_id"]

CODEX_ISSUER: Final = "https://auth.openai.com"
#: The public OAuth client id of OpenAI's Codex CLI (not a secret: it identifies the app).
CODEX_CLIENT_ID: Final = "app_EMoamEEZ73f0CkXaXp7hrann"
#: The Codex CLI states 15 minutes; the server names no lifetime.
CODE_LIFETIME_S: Final = 15 * 60.0
_AUTH_CLAIM: Final = "https://api.openai.com/auth"
_PROFILE_CLAIM: Final = "https://api.openai.com/profile"
_EXPIRED_CODES: Final = frozenset(
    {"invalid_grant", "refresh_token_expired", "refresh_token_reused", "refresh_token_invalidated"}
)


def chatgpt_account_id(*tokens: str) -> str:
    """The ChatGPT account id the first JWT of ``tokens`` that names one carries, or ``""``."""
    for token in tokens:
        value = json_object(jwt_claims(token).get(_AUTH_CLAIM)).get("chatgpt_account_id")
        if isinstance(value, str) and value:
            return value
    return ""


def _email(*tokens: str) -> str:
    for token in tokens:
        claims = jwt_claims(token)
        for value in (claims.get("email"), json_object(claims.get(_PROFILE_CLAIM)).get("email")):
            if isinstance(value, str) and value:
                return value
    return ""


def _error_code(body: dict[str, Any]) -> str:
    error = body.get("error")
    if isinstance(error, str):
        return error
    nested = json_object(error)
    code = nested.get("code") or nested.get("type") or body.get("code")
    return code if isinstance(code, str) else ""


class CodexOAuth(OAuthProvider):
    """The ``openai-codex`` login (see the module docstring). ``issuer`` and ``client_id`` default to
    OpenAI's; tests point ``issuer`` at a loopback server. ``sleep`` and ``clock`` drive the polling
    loop (:func:`~streamfns.auth.device.poll_device`); ``now`` is the local epoch clock expiries are
    computed on."""

    def __init__(
        self,
        issuer: str = CODEX_ISSUER,
        client_id: str = CODEX_CLIENT_ID,
        *,
        name: str = "openai-codex",
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.name = name
        self.title = "ChatGPT Plus/Pro (Codex)"
        self.login_command = f"streamfns login {name}"
        self.issuer = issuer.rstrip("/")
        self.client_id = client_id
        self._sleep = sleep
        self._clock = clock
        self._now = now

    # -- login ----------------------------------------------------------------------------------

    async def login(self, interaction: LoginInteraction) -> Credential:
        # One client for the whole flow: its polls reuse the connection.
        async with client() as http:
            return await self._login(interaction, http)

    async def _login(self, interaction: LoginInteraction, http: httpx.AsyncClient) -> Credential:
        signal = interaction.signal
        answer = await request(
            "POST",
            f"{self.issuer}/api/accounts/deviceauth/usercode",
            headers={"accept": "application/json"},
            json_body={"client_id": self.client_id},
            what="ChatGPT device code request",
            signal=signal,
            via=http,
        )
        if answer.status == 404:
            raise LoginFailed(f"{self.issuer} has device-code login turned off for this client")
        body = answer.json()
        device_auth_id = body.get("device_auth_id")
        user_code = displayable(body.get("user_code") or body.get("usercode"), 64)
        if answer.status != 200 or not isinstance(device_auth_id, str) or user_code is None:
            raise LoginFailed(f"ChatGPT device code request failed ({answer.quote([])})", kind=answer.failure_kind())
        secrets = [device_auth_id]
        interaction.show_code(f"{self.issuer}/codex/device", user_code, CODE_LIFETIME_S)
        interaction.progress("waiting for the code to be entered …")

        async def poll() -> DevicePoll[dict[str, Any]]:
            polled = await request(
                "POST",
                f"{self.issuer}/api/accounts/deviceauth/token",
                headers={"accept": "application/json"},
                json_body={"device_auth_id": device_auth_id, "user_code": user_code},
                what="ChatGPT device authorization",
                signal=signal,
                via=http,
            )
            if polled.status in (403, 404):
                return DevicePoll(error=AUTHORIZATION_PENDING)
            data = polled.json()
            if polled.status == 200 and all(
                isinstance(data.get(key), str) and data.get(key) for key in ("authorization_code", "code_verifier")
            ):
                return DevicePoll(value=data)
            raise LoginFailed(
                f"ChatGPT device authorization failed ({polled.quote(secrets)}); run `{self.login_command}` again",
                kind=polled.failure_kind(),
            )

        grant = await poll_device(
            poll,
            interval_s=clamp_interval(body.get("interval")),
            expires_in_s=CODE_LIFETIME_S,
            login_command=self.login_command,
            signal=signal,
            sleep=self._sleep,
            clock=self._clock,
            progress=interaction.progress,
        )
        code, verifier = str(grant["authorization_code"]), str(grant["code_verifier"])
        secrets += [code, verifier]
        interaction.progress("approved; fetching tokens …")
        exchanged = await request(
            "POST",
            f"{self.issuer}/oauth/token",
            headers={"accept": "application/json"},
            form={
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": f"{self.issuer}/deviceauth/callback",
                "client_id": self.client_id,
                "code_verifier": verifier,
            },
            what="ChatGPT token exchange",
            signal=signal,
            via=http,
        )
        return self._credential(exchanged, secrets, previous=None)

    # -- refresh --------------------------------------------------------------------------------

    async def refresh(self, credential: Credential) -> Credential:
        if not credential.refresh:
            raise LoginExpired(
                f"the {self.title} login cannot be renewed (no refresh token): run `{self.login_command}`",
                login_command=self.login_command,
            )
        answer = await request(
            "POST",
            f"{self.issuer}/oauth/token",
            headers={"accept": "application/json"},
            json_body={
                "client_id": self.client_id,
                "grant_type": "refresh_token",
                "refresh_token": credential.refresh,
                "scope": "openid profile email",
            },
            what="ChatGPT token refresh",
        )
        if answer.status in (400, 401, 403) or _error_code(answer.json()) in _EXPIRED_CODES:
            raise LoginExpired(
                f"ChatGPT refused to renew the {self.title} login ({answer.quote(credential.secrets())}); "
                f"log in again: `{self.login_command}`",
                login_command=self.login_command,
            )
        return self._credential(answer, list(credential.secrets()), previous=credential)

    def _credential(self, answer: OAuthAnswer, secrets: list[str], previous: Credential | None) -> Credential:
        body = answer.json()
        access = body.get("access_token")
        refresh = body.get("refresh_token") or (previous.refresh if previous else None)
        id_token = body.get("id_token")
        id_token = id_token if isinstance(id_token, str) else ""
        if answer.status != 200 or not isinstance(access, str) or not access or not isinstance(refresh, str):
            what = "token refresh" if previous else "token exchange"
            raise LoginFailed(f"ChatGPT {what} failed ({answer.quote(secrets)})", kind=answer.failure_kind())
        account_id = chatgpt_account_id(id_token, access) or (previous.data.get("account_id", "") if previous else "")
        if not account_id:
            raise LoginFailed(
                "the ChatGPT token names no ChatGPT account (is this account on a ChatGPT plan?); "
                f"run `{self.login_command}` with a plan account"
            )
        now = self._now()
        return Credential(
            provider=self.name,
            access=access,
            refresh=refresh,
            expires=expiry(
                now,
                relative=body.get("expires_in"),
                fallback_absolute=jwt_claims(access).get("exp"),
                server_now=answer.server_now,
            ),
            account=_email(id_token, access) or (previous.account if previous else ""),
            data={"account_id": account_id},
        )

    # -- requests -------------------------------------------------------------------------------

    def to_auth(self, credential: Credential, request_body: bytes) -> ProviderAuth:
        headers = {"authorization": f"Bearer {credential.access}"}
        account_id = credential.data.get("account_id") or chatgpt_account_id(credential.access)
        if account_id:
            headers["chatgpt-account-id"] = account_id
        return ProviderAuth(headers=headers)

    def credential_for_key(self, key: str) -> Credential:
        account_id = chatgpt_account_id(key)
        return Credential(
            provider=self.name,
            access=key,
            refresh="",
            expires=float("inf"),
            data={"account_id": account_id} if account_id else {},
        )
