"""A loopback OAuth server that plays OpenAI's ChatGPT (Codex) login and GitHub's (Copilot) login.

Reused by every test of the subscription logins (auth core, the Codex and Copilot apis, the CLI)::

    with OAuthServer() as server:
        register_oauth_provider(server.codex())      # CodexOAuth pointed at the server
        register_oauth_provider(server.copilot())    # CopilotOAuth pointed at the server
        ...
        assert server.counts["codex.refresh"] == 1

It runs in a thread on ``127.0.0.1`` (so a sync test, an async test and other processes can all reach
it at :attr:`OAuthServer.url`) and plays:

- **OpenAI** (issuer = :attr:`url`): ``POST /api/accounts/deviceauth/usercode`` → a device auth id and
  user code (``interval`` as a string, as OpenAI sends it); ``POST /api/accounts/deviceauth/token``
  answers 403 :attr:`codex_pending` times, then the authorization code and PKCE verifier;
  ``POST /oauth/token`` exchanges the code (form) or refreshes (JSON or form). Refresh tokens rotate:
  an old one answers 401 ``refresh_token_reused``. Access tokens are JWTs (unsigned fakes) naming
  :data:`ACCOUNT_ID` and :data:`EMAIL`, with ``expires_in`` = :attr:`codex_lifetime_s`.
- **GitHub** (github_url = api_url = :attr:`url`): ``POST /login/device/code``;
  ``POST /login/oauth/access_token`` answers the errors of :attr:`github_script` in turn
  (``authorization_pending``, ``slow_down`` with the new ``interval``, ``expired_token``,
  ``access_denied`` …; HTTP 200, as GitHub does), then the GitHub token; ``GET /user`` → :data:`LOGIN`;
  ``GET /copilot_internal/v2/token`` → a Copilot token with ``expires_at`` (server clock),
  ``refresh_in`` (:attr:`copilot_refresh_in`; None leaves it out) and ``endpoints.api`` =
  :attr:`copilot_api` (default: the server itself).

Knobs (plain attributes, set before or between requests): :attr:`revoked` (refresh and exchange answer
401), :attr:`hostile` (every error body echoes every token and code the server issued or received, and
the request itself), :attr:`clock_offset_s` (the server's clock runs that far from the local one, in
``expires_at``, JWT ``exp`` and ``Date``), :attr:`send_date`, :attr:`refresh_hold_s` (the first refresh
is held until a second arrives or that many seconds pass: two racing refreshers both reach the server
when nothing serializes them). :attr:`counts` counts requests by name (``codex.usercode``,
``codex.poll``, ``codex.exchange``, ``codex.refresh``, ``github.device``, ``github.poll``,
``github.user``, ``copilot.token``, and ``route <METHOD> <path>``); :attr:`requests` keeps each one;
:meth:`secrets` lists every token and code in play (for leak assertions). :meth:`add_route` serves
anything else (a fake model api) or replaces a step.

Also here, for tests that drive a login: :class:`Interaction` (a recording
:class:`~streamfns.auth.LoginInteraction`) and :class:`FakeTime` (an injectable clock and sleep that
never waits). Every token is an obvious fake.
"""

from __future__ import annotations

import base64
import email.utils
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from normalize import AbortSignal
from streamfns.auth import CodexOAuth, CopilotOAuth

__all__ = [
    "ACCOUNT_ID",
    "EMAIL",
    "LOGIN",
    "FakeTime",
    "Interaction",
    "OAuthServer",
    "Received",
    "Reply",
    "fake_jwt",
]

ACCOUNT_ID = "acct-fake-0000-test"
EMAIL = "someone@example.test"
LOGIN = "octocat-fake"
CODEX_USER_CODE = "FAKE-CODE"
GITHUB_USER_CODE = "FAKE-GHCD"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def fake_jwt(claims: dict[str, Any], signature: str = "fake-signature") -> str:
    """An unsigned JWT-shaped fake token carrying ``claims``."""
    header = _b64(json.dumps({"alg": "none", "typ": "JWT"}).encode())
    return f"{header}.{_b64(json.dumps(claims).encode())}.{_b64(signature.encode())}"


@dataclass(frozen=True, slots=True)
class Received:
    """One request the server answered: ``name`` (see :attr:`OAuthServer.counts`), method, path,
    lower-case headers and body."""

    name: str
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass(frozen=True, slots=True)
class Reply:
    """An answer: status, JSON-able ``body`` (or raw bytes / text) and extra headers."""

    status: int = 200
    body: object = None
    headers: dict[str, str] = field(default_factory=dict[str, str])


Route = Callable[[Received], Reply]


class OAuthServer:
    """See the module docstring. Use as a context manager (or :meth:`start` / :meth:`close`)."""

    def __init__(
        self,
        *,
        hostile: bool = False,
        codex_pending: int = 1,
        github_script: Iterable[str] = ("authorization_pending",),
        codex_lifetime_s: float = 3600.0,
        copilot_lifetime_s: float = 1800.0,
        copilot_refresh_in: float | None = 1500.0,
        clock_offset_s: float = 0.0,
    ) -> None:
        self.hostile = hostile
        self.codex_pending = codex_pending
        self.github_script: list[str] = list(github_script)
        self.codex_lifetime_s = codex_lifetime_s
        self.copilot_lifetime_s = copilot_lifetime_s
        self.copilot_refresh_in = copilot_refresh_in
        self.copilot_expires_at: float | None = None  # an explicit expires_at (server epoch), overriding the lifetime
        self.copilot_api: str | None = None
        self.clock_offset_s = clock_offset_s
        self.send_date = True
        self.revoked = False
        self.refresh_hold_s = 0.0
        self.github_interval = 5
        self.counts: Counter[str] = Counter()
        self.requests: list[Received] = []
        self._routes: dict[tuple[str, str], Route] = {}
        self._lock = threading.RLock()
        self._issued: list[str] = []
        self._received_secrets: list[str] = []
        self._serial = 0
        self._codex_refresh = ""
        self._github_token = ""
        self._second_refresh = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> OAuthServer:
        """Listen on a free loopback port and serve in a daemon thread."""
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner._handle(self, "GET")

            def do_POST(self) -> None:
                owner._handle(self, "POST")

            def date_time_string(self, timestamp: float | None = None) -> str:
                return email.utils.formatdate(time.time() + owner.clock_offset_s, usegmt=True)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="oauth-server", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving and release the port."""
        self._second_refresh.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = None
        self._thread = None

    def __enter__(self) -> OAuthServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        assert self._server is not None, "the server is not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    # -- helpers for tests ----------------------------------------------------------------------

    def codex(self, **options: Any) -> CodexOAuth:
        """A :class:`CodexOAuth` whose issuer is this server (``options`` go to its constructor)."""
        return CodexOAuth(self.url, **options)

    def copilot(self, **options: Any) -> CopilotOAuth:
        """A :class:`CopilotOAuth` whose GitHub and api urls are this server."""
        return CopilotOAuth(github_url=self.url, api_url=self.url, **options)

    def add_route(self, method: str, path: str, route: Route) -> None:
        """Serve ``method path`` (path without query) with ``route`` (replacing a built-in endpoint of
        that path: a test can stall or break any step). Counted under the endpoint's name."""
        self._routes[(method.upper(), path)] = route

    def secrets(self) -> list[str]:
        """Every token and code the server issued or was sent: none may appear in a message."""
        with self._lock:
            return list(dict.fromkeys([*self._issued, *self._received_secrets]))

    def codex_seed(self, *, expires_in_s: float = 3600.0) -> dict[str, Any]:
        """Tokens as a finished Codex login would hold them (issued by this server, so refreshable):
        ``access``, ``refresh``, and ``lifetime`` for a :class:`~streamfns.auth.Credential`."""
        with self._lock:
            access, refresh, _ = self._codex_tokens(expires_in_s)
        return {"access": access, "refresh": refresh}

    def github_seed(self) -> str:
        """A GitHub token this server accepts at the Copilot exchange, as a finished login holds it."""
        with self._lock:
            self._github_token = self._issue(f"fake-github-oauth-token-{self._next()}")
            return self._github_token

    # -- internals ------------------------------------------------------------------------------

    def _next(self) -> int:
        self._serial += 1
        return self._serial

    def _issue(self, token: str) -> str:
        self._issued.append(token)
        return token

    def _server_now(self) -> float:
        return time.time() + self.clock_offset_s

    def _codex_tokens(self, lifetime: float) -> tuple[str, str, str]:
        serial = self._next()
        claims = {
            "exp": int(self._server_now() + lifetime),
            "email": EMAIL,
            "https://api.openai.com/auth": {"chatgpt_account_id": ACCOUNT_ID},
        }
        access = self._issue(fake_jwt(claims, f"fake-codex-access-{serial}"))
        id_token = self._issue(fake_jwt({"email": EMAIL, **claims}, f"fake-codex-id-{serial}"))
        self._codex_refresh = self._issue(f"fake-codex-refresh-token-{serial}")
        return access, self._codex_refresh, id_token

    def _error(self, status: int, body: dict[str, Any], request: Received) -> Reply:
        if self.hostile:
            # Echo everything: every token in play, the request's credentials, its body.
            echo = " ".join(self.secrets())
            body = {
                **body,
                "error_description": f"{body.get('error_description', '')} {echo}".strip(),
                "echo": echo,
                "request": request.body.decode("utf-8", "replace"),
                "authorization": request.headers.get("authorization", ""),
            }
        return Reply(status, body)

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        length = int(handler.headers.get("content-length") or 0)
        body = handler.rfile.read(length) if length else b""
        path = urlsplit(handler.path).path
        headers = {key.lower(): value for key, value in handler.headers.items()}
        name = self._name(method, path)
        request = Received(name, method, path, headers, body)
        with self._lock:
            self.counts[name] += 1
            self.requests.append(request)
            auth = headers.get("authorization", "")
            if auth:
                self._received_secrets.append(auth.partition(" ")[2])
        try:
            reply = self._answer(request)
        except Exception as exc:  # a bug in a test route: say so in the answer
            reply = Reply(500, {"error": "server_error", "error_description": type(exc).__name__})
        self._send(handler, reply)

    def _send(self, handler: BaseHTTPRequestHandler, reply: Reply) -> None:
        if isinstance(reply.body, bytes):
            payload, kind = reply.body, "application/octet-stream"
        elif isinstance(reply.body, str):
            payload, kind = reply.body.encode(), "text/plain"
        else:
            payload, kind = json.dumps(reply.body if reply.body is not None else {}).encode(), "application/json"
        if self.send_date:
            handler.send_response(reply.status)
        else:
            handler.send_response_only(reply.status)
            handler.send_header("Server", "fake-oauth")
        headers = {"content-type": kind, **reply.headers}
        for key, value in headers.items():
            handler.send_header(key, value)
        handler.send_header("content-length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)

    @staticmethod
    def _name(method: str, path: str) -> str:
        return {
            ("POST", "/api/accounts/deviceauth/usercode"): "codex.usercode",
            ("POST", "/api/accounts/deviceauth/token"): "codex.poll",
            ("POST", "/login/device/code"): "github.device",
            ("POST", "/login/oauth/access_token"): "github.poll",
            ("GET", "/user"): "github.user",
            ("GET", "/copilot_internal/v2/token"): "copilot.token",
        }.get((method, path), f"route {method} {path}")

    def _answer(self, request: Received) -> Reply:
        route = self._routes.get((request.method, request.path))
        if route is not None:
            return route(request)
        if request.method == "POST" and request.path == "/oauth/token":
            return self._oauth_token(request)
        handlers: dict[str, Callable[[Received], Reply]] = {
            "codex.usercode": self._codex_usercode,
            "codex.poll": self._codex_poll,
            "github.device": self._github_device,
            "github.poll": self._github_poll,
            "github.user": self._github_user,
            "copilot.token": self._copilot_token,
        }
        handle = handlers.get(request.name)
        if handle is not None:
            return handle(request)
        return Reply(404, {"error": "not_found"})

    # -- OpenAI ---------------------------------------------------------------------------------

    def _codex_usercode(self, request: Received) -> Reply:
        with self._lock:
            device_auth_id = self._issue(f"fake-device-auth-id-{self._next()}")
        return Reply(200, {"device_auth_id": device_auth_id, "user_code": CODEX_USER_CODE, "interval": "5"})

    def _codex_poll(self, request: Received) -> Reply:
        with self._lock:
            if self.counts["codex.poll"] <= self.codex_pending:
                return Reply(403, {"error": {"message": "authorization pending", "code": "deviceauth_pending"}})
            code = self._issue(f"fake-authorization-code-{self._next()}")
            verifier = self._issue(f"fake-code-verifier-{self._next()}")
        return Reply(200, {"authorization_code": code, "code_challenge": "fake-challenge", "code_verifier": verifier})

    def _oauth_token(self, request: Received) -> Reply:
        text = request.body.decode("utf-8", "replace")
        try:
            decoded = json.loads(text)
            fields = {str(key): str(value) for key, value in decoded.items()}
        except (ValueError, AttributeError):
            fields = dict(parse_qsl(text))
        grant = fields.get("grant_type")
        if grant == "authorization_code":
            with self._lock:
                self.counts["codex.exchange"] += 1
                if fields.get("code") not in self._issued or fields.get("code_verifier") not in self._issued:
                    return self._error(400, {"error": "invalid_grant"}, request)
                access, refresh, id_token = self._codex_tokens(self.codex_lifetime_s)
            body = {"access_token": access, "refresh_token": refresh, "id_token": id_token}
            return Reply(200, {**body, "expires_in": self.codex_lifetime_s, "token_type": "Bearer"})
        if grant == "refresh_token":
            return self._codex_refresh_answer(request, fields)
        return self._error(400, {"error": "unsupported_grant_type"}, request)

    def _codex_refresh_answer(self, request: Received, fields: dict[str, str]) -> Reply:
        with self._lock:
            self.counts["codex.refresh"] += 1
            self._received_secrets.append(fields.get("refresh_token", ""))
            first = self.counts["codex.refresh"] == 1
        if first and self.refresh_hold_s > 0:
            # Hold the first refresh: a second refresher, unless something serializes them, arrives now.
            self._second_refresh.wait(self.refresh_hold_s)
        else:
            self._second_refresh.set()
        with self._lock:
            if self.revoked:
                return self._error(401, {"error": {"code": "refresh_token_invalidated"}}, request)
            if fields.get("refresh_token") != self._codex_refresh:
                return self._error(401, {"error": {"code": "refresh_token_reused"}}, request)
            access, refresh, id_token = self._codex_tokens(self.codex_lifetime_s)
        body = {"access_token": access, "refresh_token": refresh, "id_token": id_token}
        return Reply(200, {**body, "expires_in": self.codex_lifetime_s})

    # -- GitHub ---------------------------------------------------------------------------------

    def _github_device(self, request: Received) -> Reply:
        with self._lock:
            device_code = self._issue(f"fake-github-device-code-{self._next()}")
        return Reply(
            200,
            {
                "device_code": device_code,
                "user_code": GITHUB_USER_CODE,
                "verification_uri": f"{self.url}/login/device",
                "interval": self.github_interval,
                "expires_in": 900,
            },
        )

    def _github_poll(self, request: Received) -> Reply:
        with self._lock:
            step = self.github_script.pop(0) if self.github_script else "ok"
            if step == "ok":
                self._github_token = self._issue(f"fake-github-oauth-token-{self._next()}")
                return Reply(200, {"access_token": self._github_token, "token_type": "bearer", "scope": "read:user"})
        body: dict[str, Any] = {"error": step, "error_description": f"fake {step}"}
        if step == "slow_down":
            self.github_interval += 5
            body["interval"] = self.github_interval
        return self._error(200, body, request)

    def _github_token_valid(self, request: Received) -> bool:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        return scheme.lower() in ("token", "bearer") and bool(token) and token == self._github_token

    def _github_user(self, request: Received) -> Reply:
        if not self._github_token_valid(request):
            return self._error(401, {"message": "Bad credentials"}, request)
        return Reply(200, {"login": LOGIN, "id": 1})

    def _copilot_token(self, request: Received) -> Reply:
        with self._lock:
            if self.revoked or not self._github_token_valid(request):
                return self._error(401, {"message": "Bad credentials"}, request)
            now = self._server_now()
            expires_at = (
                self.copilot_expires_at if self.copilot_expires_at is not None else now + self.copilot_lifetime_s
            )
            token = self._issue(
                f"tid=fake-copilot-token-{self._next()};exp={int(expires_at)};sku=fake;proxy-ep=proxy.fake"
            )
        body: dict[str, Any] = {
            "token": token,
            "expires_at": int(expires_at),
            "endpoints": {"api": self.copilot_api or self.url},
            "sku": "fake",
        }
        if self.copilot_refresh_in is not None:
            body["refresh_in"] = self.copilot_refresh_in
        return Reply(200, body)


class Interaction:
    """A :class:`~streamfns.auth.LoginInteraction` that records what a login showed (``codes``:
    ``(uri, user_code, expires_in_s)``; ``messages``), with an optional abort ``signal``."""

    def __init__(self, signal: AbortSignal | None = None) -> None:
        self.signal = signal
        self.codes: list[tuple[str, str, float]] = []
        self.messages: list[str] = []

    def show_code(self, verification_uri: str, user_code: str, expires_in_s: float) -> None:
        self.codes.append((verification_uri, user_code, expires_in_s))

    def progress(self, message: str) -> None:
        self.messages.append(message)


class FakeTime:
    """An injectable clock: :meth:`sleep` records the delay and advances :meth:`monotonic` and
    :meth:`time` (epoch, starting at ``start``) without waiting; ``on_sleep`` runs after each sleep
    (to abort, or to change the server between polls)."""

    def __init__(self, start: float | None = None) -> None:
        self.epoch = time.time() if start is None else start
        self.mono = 1000.0
        self.sleeps: list[float] = []
        self.on_sleep: Callable[[int], object] | None = None

    def time(self) -> float:
        return self.epoch

    def monotonic(self) -> float:
        return self.mono

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.epoch += seconds
        self.mono += seconds
        if self.on_sleep is not None:
            self.on_sleep(len(self.sleeps))
