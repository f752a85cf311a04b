"""``CopilotOAuth``: logging in with a GitHub Copilot plan for the ``github-copilot`` provider.

**Login** is GitHub's device flow (RFC 8628): a device code from ``https://<domain>/login/device/code``
(scope ``read:user``), polls of ``/login/oauth/access_token``, which GitHub answers with HTTP 200 and
an ``error`` (``authorization_pending``, ``slow_down`` with the new ``interval``, ``expired_token``,
``access_denied`` …) until it holds a GitHub OAuth token. That token is kept as the credential's
``refresh``; ``access`` is the short-lived Copilot token from ``GET https://api.<domain>/copilot_internal/v2/token``
and ``account`` the GitHub login (``GET /user``; left empty if that fails).

**Refresh** is a new token exchange with the GitHub token; a 401 (the GitHub token revoked) is
:class:`LoginExpired`, a 403 (no Copilot on this account) :class:`LoginFailed`.

**Expiry** is ``refresh_in`` seconds after receipt when given (relative, so immune to clock skew),
else ``expires_at`` measured against the answer's ``Date`` (or, without one, the local clock,
clamped): :func:`streamfns.auth.credential.expiry`.

**Requests** carry ``Authorization: Bearer <Copilot token>``, the editor headers Copilot requires and
``X-Initiator`` (:func:`copilot_initiator`), and go to the account's api origin: the exchange's
``endpoints.api`` when it is a Copilot host (``*.githubcopilot.com``, the enterprise's own domain, or
loopback), kept in ``data["base_url"]``.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final, Literal, cast
from urllib.parse import quote, urlsplit

import httpx

from streamfns.auth._http import client, json_object, request
from streamfns.auth.credential import Credential, expiry
from streamfns.auth.device import DevicePoll, clamp_expires_in, clamp_interval, displayable, poll_device
from streamfns.auth.errors import LoginExpired, LoginFailed, quote_vendor
from streamfns.auth.providers import LoginInteraction, OAuthProvider, ProviderAuth
from streamfns.kit import CompatError, endpoint_url

__all__ = ["COPILOT_CLIENT_ID", "COPILOT_HEADERS", "CopilotOAuth", "copilot_initiator", "copilot_vision"]

#: The public OAuth client id of GitHub's Copilot editor integrations (identifies the app; not a secret).
COPILOT_CLIENT_ID: Final = "Iv1.b507a08c87ecfe98"
#: The editor headers Copilot requires on the token exchange and on every request.
COPILOT_HEADERS: Final = {
    "user-agent": "GitHubCopilotChat/0.35.0",
    "editor-version": "vscode/1.107.0",
    "editor-plugin-version": "copilot-chat/0.35.0",
    "copilot-integration-id": "vscode-chat",
}
_GRANT_TYPE: Final = "urn:ietf:params:oauth:grant-type:device_code"
#: Where a Copilot account's requests go when the token exchange names no host (the catalog's).
_DEFAULT_API: Final = "https://api.individual.githubcopilot.com"
#: Policy requests in flight at once after a login (one per catalog model).
_POLICY_CONCURRENCY: Final = 4
_COPILOT_DOMAIN: Final = "githubcopilot.com"


def _last_item(document: dict[str, Any]) -> dict[str, object] | None:
    for key in ("input", "messages"):
        items = document.get(key)
        if isinstance(items, list) and items:
            last = json_object(cast("list[object]", items)[-1])
            return last or None
    return None


def copilot_initiator(body: bytes) -> Literal["user", "agent"]:
    """``X-Initiator`` for a request body: ``agent`` when its last input item (Responses ``input``,
    chat or Messages ``messages``) is a tool result or an assistant turn, ``user`` otherwise (a user
    turn, or a body that cannot be read). Copilot bills user-initiated requests against the plan's
    premium quota, so a tool-loop continuation must say ``agent``."""
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return "user"
    if not isinstance(document, dict):
        return "user"
    last = _last_item(cast("dict[str, Any]", document))
    if last is None:
        return "user"
    role = last.get("role")
    if role in ("assistant", "tool", "function"):
        return "agent"
    kind = last.get("type")
    if isinstance(kind, str) and kind != "message":
        # A Responses item without a role: function_call_output, function_call, reasoning …
        return "agent"
    content = last.get("content")
    if role == "user" and isinstance(content, list):
        blocks = cast("list[object]", content)
        if any(json_object(block).get("type") == "tool_result" for block in blocks):
            return "agent"
    return "user"


#: The content parts that carry an image: chat completions' ``image_url``, Responses' ``input_image``,
#: Messages' ``image``.
_IMAGE_PARTS: Final = frozenset({"image_url", "input_image", "image"})
#: How deep a conversation is searched (a tool result inside a message inside the input is three).
_IMAGE_DEPTH: Final = 8


def copilot_vision(body: bytes) -> bool:
    """Whether a request body carries an image anywhere in its conversation (a user turn, or a tool
    result's content): Copilot refuses such a request unless it says ``Copilot-Vision-Request: true``.
    Only the conversation is searched (``input``, ``messages`` and the ``content``/``output`` within),
    never the tool definitions; a body that cannot be read carries none."""
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return False
    if not isinstance(document, dict):
        return False
    items = cast("dict[str, object]", document)
    return any(_holds_image(items.get(key), 0) for key in ("input", "messages"))


def _holds_image(value: object, depth: int) -> bool:
    if depth > _IMAGE_DEPTH:
        return False
    if isinstance(value, list):
        return any(_holds_image(item, depth + 1) for item in cast("list[object]", value))
    part = json_object(value)
    if part.get("type") in _IMAGE_PARTS:
        return True
    return any(_holds_image(part.get(key), depth + 1) for key in ("content", "output"))


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class CopilotOAuth(OAuthProvider):
    """The ``github-copilot`` login (see the module docstring). ``domain`` is ``github.com`` or a GitHub
    Enterprise domain; ``github_url`` (``https://<domain>``) and ``api_url`` (``https://api.<domain>``)
    can be given instead, as tests do to point at a loopback server. ``sleep``, ``clock`` and ``now`` as
    for :class:`~streamfns.auth.CodexOAuth`."""

    def __init__(
        self,
        domain: str = "github.com",
        client_id: str = COPILOT_CLIENT_ID,
        *,
        github_url: str | None = None,
        api_url: str | None = None,
        name: str = "github-copilot",
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.name = name
        self.title = "GitHub Copilot"
        self.login_command = f"streamfns login {name}"
        self.domain = domain
        self.client_id = client_id
        self.github_url = (github_url or f"https://{domain}").rstrip("/")
        self.api_url = (api_url or f"https://api.{domain}").rstrip("/")
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
        headers = {"accept": "application/json", **COPILOT_HEADERS}
        answer = await request(
            "POST",
            f"{self.github_url}/login/device/code",
            headers=headers,
            form={"client_id": self.client_id, "scope": "read:user"},
            what="GitHub device code request",
            signal=signal,
            via=http,
        )
        body = answer.json()
        device_code = body.get("device_code")
        user_code, uri = displayable(body.get("user_code"), 64), displayable(body.get("verification_uri"))
        if uri is not None and not uri.lower().startswith(("https://", "http://")):
            uri = None
        if answer.status != 200 or not isinstance(device_code, str) or not device_code or not user_code or not uri:
            raise LoginFailed(f"GitHub device code request failed ({answer.quote([])})", kind=answer.failure_kind())
        lifetime = clamp_expires_in(body.get("expires_in"))
        interaction.show_code(uri, user_code, lifetime)
        interaction.progress("waiting for the code to be entered …")

        async def poll() -> DevicePoll[str]:
            polled = await request(
                "POST",
                f"{self.github_url}/login/oauth/access_token",
                headers=headers,
                form={"client_id": self.client_id, "device_code": device_code, "grant_type": _GRANT_TYPE},
                what="GitHub device authorization",
                signal=signal,
                via=http,
            )
            data = polled.json()
            token = data.get("access_token")
            if polled.status == 200 and isinstance(token, str) and token:
                return DevicePoll(value=token)
            error = data.get("error")
            if not isinstance(error, str) or not error:
                raise LoginFailed(
                    f"GitHub device authorization failed ({polled.quote([device_code])}); "
                    f"run `{self.login_command}` again",
                    kind=polled.failure_kind(),
                )
            description = data.get("error_description")
            interval = data.get("interval")
            return DevicePoll(
                error=quote_vendor(error, [device_code]),
                description=quote_vendor(description, [device_code]) if isinstance(description, str) else "",
                interval=clamp_interval(interval) if interval is not None else None,
            )

        github_token = await poll_device(
            poll,
            interval_s=clamp_interval(body.get("interval")),
            expires_in_s=lifetime,
            login_command=self.login_command,
            signal=signal,
            sleep=self._sleep,
            clock=self._clock,
            progress=interaction.progress,
        )
        interaction.progress("approved; fetching the Copilot token …")
        account = await self._github_login(github_token, http)
        seed = Credential(provider=self.name, access="", refresh=github_token, expires=0.0, account=account)
        credential = await self._exchange(seed, http)
        interaction.progress("enabling the plan's models …")
        await self.enable_models(credential, http)
        return credential

    async def enable_models(self, credential: Credential, http: httpx.AsyncClient | None = None) -> list[str]:
        """Accept each catalog model's policy for the account (``POST <api>/models/<id>/policy``,
        ``{"state": "enabled"}``), as Copilot's own clients do once: some models (Claude, Gemini)
        answer 400 until their policy is accepted. Best effort: a model the account cannot enable, a
        refusal or an unreachable host is skipped, never a failed login. Returns the ids enabled."""
        from streamfns.catalog import list_models  # noqa: PLC0415 - the catalog, only at login

        origin = credential.data.get("base_url") or _DEFAULT_API
        headers = {
            "authorization": f"Bearer {credential.access}",
            **COPILOT_HEADERS,
            "openai-intent": "chat-policy",
            "x-interaction-type": "chat-policy",
        }
        gate = asyncio.Semaphore(_POLICY_CONCURRENCY)

        async def enable(model_id: str) -> str | None:
            async with gate:
                try:
                    answer = await request(
                        "POST",
                        f"{origin}/models/{quote(model_id, safe='')}/policy",
                        headers=headers,
                        json_body={"state": "enabled"},
                        what=f"Copilot policy for {model_id}",
                        via=http,
                    )
                except Exception:  # best effort: nothing here may fail the login that succeeded
                    return None
                return model_id if 200 <= answer.status < 300 else None

        ids = [model.id for model in list_models(self.name)] if self.name == "github-copilot" else []
        done = await asyncio.gather(*(enable(model_id) for model_id in ids))
        return [model_id for model_id in done if model_id is not None]

    async def _github_login(self, github_token: str, http: httpx.AsyncClient) -> str:
        # Only for `auth status`: who is logged in. A failure here must not fail the login.
        try:
            answer = await request(
                "GET",
                f"{self.api_url}/user",
                headers={"accept": "application/json", "authorization": f"token {github_token}", **COPILOT_HEADERS},
                what="GitHub user lookup",
                via=http,
            )
        except LoginFailed:
            return ""
        login = answer.json().get("login") if answer.status == 200 else None
        return login if isinstance(login, str) and login.isprintable() and len(login) <= 100 else ""

    # -- refresh --------------------------------------------------------------------------------

    async def refresh(self, credential: Credential) -> Credential:
        if not credential.refresh:
            raise LoginExpired(
                f"the {self.title} login cannot be renewed (no GitHub token): run `{self.login_command}`",
                login_command=self.login_command,
            )
        async with client() as http:
            return await self._exchange(credential, http)

    async def _exchange(self, credential: Credential, http: httpx.AsyncClient) -> Credential:
        secrets = credential.secrets()
        answer = await request(
            "GET",
            f"{self.api_url}/copilot_internal/v2/token",
            headers={"accept": "application/json", "authorization": f"token {credential.refresh}", **COPILOT_HEADERS},
            what="Copilot token exchange",
            via=http,
        )
        if answer.status == 401:
            raise LoginExpired(
                f"GitHub refused the {self.title} login ({answer.quote(secrets)}); "
                f"log in again: `{self.login_command}`",
                login_command=self.login_command,
            )
        if answer.status == 403:
            raise LoginFailed(
                f"this GitHub account has no Copilot access ({answer.quote(secrets)}); "
                f"check the plan, or run `{self.login_command}` with another account"
            )
        body = answer.json()
        token = body.get("token")
        if answer.status != 200 or not isinstance(token, str) or not token:
            raise LoginFailed(f"Copilot token exchange failed ({answer.quote(secrets)})", kind=answer.failure_kind())
        data = {key: value for key, value in credential.data.items() if key != "base_url"}
        base_url = self._api_origin(body)
        if base_url:
            data["base_url"] = base_url
        if self.domain != "github.com":
            data["enterprise_domain"] = self.domain
        now = self._now()
        return Credential(
            provider=self.name,
            access=token,
            refresh=credential.refresh,
            expires=expiry(
                now,
                relative=body.get("refresh_in"),
                absolute=body.get("expires_at"),
                server_now=answer.server_now,
                default_s=25 * 60.0,
            ),
            account=credential.account,
            data=data,
        )

    def _api_origin(self, body: dict[str, Any]) -> str:
        """The exchange's ``endpoints.api`` as an origin, when it is a host Copilot is served from."""
        api = json_object(body.get("endpoints")).get("api")
        if not isinstance(api, str):
            return ""
        try:
            parts = urlsplit(api)
            port = parts.port
        except ValueError:
            return ""
        host = (parts.hostname or "").lower()
        if parts.username or parts.password or parts.query or parts.fragment or parts.path not in ("", "/"):
            return ""
        trusted = parts.scheme == "https" and (
            host == _COPILOT_DOMAIN
            or host.endswith("." + _COPILOT_DOMAIN)
            or (self.domain != "github.com" and (host == self.domain or host.endswith("." + self.domain)))
        )
        if not trusted and not (parts.scheme in ("http", "https") and _loopback(host)):
            return ""
        shown = f"[{host}]" if ":" in host else host
        origin = f"{parts.scheme}://{shown}" + (f":{port}" if port is not None else "")
        try:
            # The kit checks a signature's origin the same way before it sends: one it would refuse
            # (a space, a zero-width character, port 0) is not kept, so the catalog's URL serves.
            endpoint_url(origin, source="the Copilot token exchange's endpoints.api")
        except CompatError:
            return ""
        return origin

    # -- requests -------------------------------------------------------------------------------

    def to_auth(self, credential: Credential, request_body: bytes) -> ProviderAuth:
        headers = {
            "authorization": f"Bearer {credential.access}",
            **COPILOT_HEADERS,
            "openai-intent": "conversation-edits",
            "x-initiator": copilot_initiator(request_body),
        }
        if copilot_vision(request_body):
            headers["copilot-vision-request"] = "true"
        return ProviderAuth(headers=headers, origin=credential.data.get("base_url") or None)
