"""GitHub Copilot as conformance targets: one per api Copilot serves its models on, each signed in
through the real subscription-login path.

- :data:`github_copilot` — the Responses api (Copilot's GPT-5 models; the recorded Copilot body),
- :data:`github_copilot_completions` — chat completions (its Gemini, GPT-4 and Grok models),
- :data:`github_copilot_messages` — Anthropic Messages (its Claude models).

``python -m conformance run conformance.targets:github_copilot`` (also ``:github_copilot_completions``,
``:github_copilot_messages``). Each target's StreamFn (:class:`CopilotStreamFn`, made once per run)
calls the api's built-in StreamFn with the harness's model moved to provider ``github-copilot`` and no
``api_key``, so the kit's provider signer authenticates every attempt: on first use it starts a
loopback server playing GitHub's ``copilot_internal/v2/token`` exchange (:class:`TokenServer`, a
thread), registers a :class:`~streamfns.auth.CopilotOAuth` pointed at it, keeps a GitHub token in a
temporary :class:`~streamfns.auth.CredentialStore` and registers an
:class:`~streamfns.auth.OAuthSigner` on that store as ``github-copilot``'s provider signer. Every
request then goes through ``fresh_credential`` → the token exchange → ``CopilotOAuth.to_auth``
(``Authorization: Bearer <Copilot token>``, Copilot's editor headers, ``X-Initiator``) and the
exchange's ``endpoints.api`` origin, as a logged-in user's does. ``aclose()`` (which the harness awaits
after the last scenario) stops the server, deletes the store and puts the previous registrations back.

**The harness's key.** The harness passes its own ``api_key`` to see that no key ever leaks (S1 serves
a 401 whose body quotes it back). Passed on, an explicit key would win over the login and the OAuth
path would not run; dropped, the harness would search for a string that was never sent. So the
StreamFn drops the key from the options and has the token server issue *that key* as the Copilot
token: the bearer token each request carries is the one the login obtained from the exchange, and it
is what the harness searches every event, error message and result for. The key-leak checks thus
examine the login's token (a credential's secrets, which the kit redacts), and the GitHub token
behind it never leaves the token exchange.

The token server gives each Copilot token a lifetime of :data:`TOKEN_LIFETIME_S` (less than the
five-minute refresh margin), so every call exchanges again and learns the scenario's loopback server
as the account's api origin (the harness starts a server per scenario; a real account keeps one). A
base URL without an origin (a check's ``"not a url"``) is not announced, and the request keeps it.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from cassettes import Cassette, library
from cassettes import load as load_cassette
from conformance.target import Capabilities, Target
from normalize import AssistantMessageEventStream, Context, Model, StreamOptions
from normalize.wire import FEATURES, Feature
from streamfns import StreamFn, error_stream, guarded_call
from streamfns._adapters import builtin_adapters
from streamfns.catalog import get_model
from streamfns.kit.provider_auth import provider_signers, register_provider_signer
from streamfns.kit.signing import Signer

__all__ = [
    "COPILOT_PROVIDER",
    "GITHUB_TOKEN",
    "TARGETS",
    "TOKEN_LIFETIME_S",
    "CopilotStreamFn",
    "TokenServer",
    "copilot_recordings",
    "copilot_target",
]

COPILOT_PROVIDER: Final = "github-copilot"
#: The GitHub OAuth token the temporary store holds (an obvious fake; it only ever reaches the token server).
GITHUB_TOKEN: Final = "fake-github-oauth-token-for-conformance"
#: The Copilot token issued when a call carries no key of the harness's (an obvious fake).
DEFAULT_COPILOT_TOKEN: Final = "tid=fake-conformance-copilot-token;exp=0;sku=fake"
#: The stored Copilot token of the login the target starts with, long expired (an obvious fake).
EXPIRED_COPILOT_TOKEN: Final = "tid=fake-expired-conformance-copilot-token;exp=0;sku=fake"
#: Seconds a Copilot token the server issues is valid: under the login's refresh margin, so each call
#: exchanges again (and picks up the scenario's server as the api origin).
TOKEN_LIFETIME_S: Final = 60


def _origin(base_url: str) -> str | None:
    """``scheme://host[:port]`` of ``base_url``; None when it has none (not a URL)."""
    try:
        parts = urlsplit(base_url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}" + (f":{port}" if port is not None else "")


class TokenServer:
    """A loopback server playing GitHub's ``GET /copilot_internal/v2/token`` (in a daemon thread).

    It answers a request carrying ``Authorization: token`` :data:`GITHUB_TOKEN` with ``token`` =
    :attr:`copilot_token`, ``expires_at``, ``refresh_in`` = :data:`TOKEN_LIFETIME_S` and, when
    :attr:`api_origin` is set, ``endpoints.api``; any other credential gets GitHub's 401
    ``Bad credentials``, any other path a 404. :attr:`exchanges` counts the exchanges answered.
    """

    def __init__(self) -> None:
        self.copilot_token = DEFAULT_COPILOT_TOKEN
        self.api_origin: str | None = None
        self.exchanges = 0
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner._answer(self)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="conformance-copilot-token", daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``: GitHub's api url, as :class:`~streamfns.auth.CopilotOAuth` takes it."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def serve(self, copilot_token: str, api_origin: str | None) -> None:
        """What the next exchanges answer: the token to issue and the api origin to announce."""
        with self._lock:
            self.copilot_token = copilot_token
            self.api_origin = api_origin

    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        path = urlsplit(handler.path).path
        scheme, _, token = (handler.headers.get("authorization") or "").partition(" ")
        status: int
        body: dict[str, Any]
        if path != "/copilot_internal/v2/token":
            status, body = 404, {"message": "Not Found"}
        elif scheme.lower() not in ("token", "bearer") or token != GITHUB_TOKEN:
            status, body = 401, {"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"}
        else:
            with self._lock:
                self.exchanges += 1
                status = 200
                body = {
                    "token": self.copilot_token,
                    "expires_at": int(time.time()) + TOKEN_LIFETIME_S,
                    "refresh_in": TOKEN_LIFETIME_S,
                    "sku": "fake",
                }
                if self.api_origin is not None:
                    body["endpoints"] = {"api": self.api_origin}
        payload = json.dumps(body).encode()
        handler.send_response(status)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)

    def close(self) -> None:
        """Stop serving and release the port."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


class CopilotStreamFn:
    """The StreamFn of a Copilot target: ``stream_fn`` (an api's built-in StreamFn) signed in through
    the Copilot login (see the module docstring). ``__call__`` never raises for the login's sake: a
    login that fails ends the stream as the kit ends it (``auth``, the login command named)."""

    def __init__(self, stream_fn: StreamFn) -> None:
        self._stream_fn = stream_fn
        self._server: TokenServer | None = None
        self._dir: Path | None = None
        self._restore: list[Callable[[], None]] = []

    @property
    def token_server(self) -> TokenServer | None:
        """The loopback token server, once the first call started it (None before, and after ``aclose``)."""
        return self._server

    def _start(self) -> TokenServer:
        # Imported here: the harness and the other targets never load the login machinery.
        from streamfns.auth import (  # noqa: PLC0415
            CopilotOAuth,
            Credential,
            CredentialStore,
            OAuthSigner,
            oauth_providers,
            register_oauth_provider,
        )

        server = TokenServer()
        self._server = server
        self._dir = Path(tempfile.mkdtemp(prefix="conformance-copilot-"))
        store = CredentialStore(self._dir / "auth.json")
        # A finished login whose Copilot token has run out: the first call exchanges the GitHub token.
        expired = Credential(provider=COPILOT_PROVIDER, access=EXPIRED_COPILOT_TOKEN, refresh=GITHUB_TOKEN, expires=0.0)
        store.save(expired)
        previous_oauth = oauth_providers().get(COPILOT_PROVIDER)
        register_oauth_provider(CopilotOAuth(github_url=server.url, api_url=server.url))
        if previous_oauth is not None:
            self._restore.append(lambda: register_oauth_provider(previous_oauth))
        previous_signer: Signer | str | None = provider_signers().get(COPILOT_PROVIDER)
        register_provider_signer(COPILOT_PROVIDER, OAuthSigner(COPILOT_PROVIDER, store=store))
        self._restore.append(lambda: register_provider_signer(COPILOT_PROVIDER, previous_signer))
        return server

    def __call__(
        self, model: Model, context: Context, options: StreamOptions | None = None, /
    ) -> AssistantMessageEventStream:
        """Stream ``context`` on ``model`` as provider ``github-copilot``, signed in by the login. Never
        raises: a login machinery that cannot start ends the stream ``config``."""
        try:
            server = self._server or self._start()
        except Exception as exc:  # the StreamFn contract: an error stream, never a raise
            return error_stream(model, "config", f"the Copilot login could not be set up: {type(exc).__name__}: {exc}")
        key = options.api_key if options is not None else None
        server.serve(key or DEFAULT_COPILOT_TOKEN, _origin(model.base_url))
        opts = dataclasses.replace(options, api_key=None) if options is not None else None
        return guarded_call(self._stream_fn, dataclasses.replace(model, provider=COPILOT_PROVIDER), context, opts)

    async def aclose(self) -> None:
        """Stop the token server, delete the store and restore the registrations this object replaced."""
        for restore in reversed(self._restore):
            restore()
        self._restore.clear()
        if self._server is not None:
            self._server.close()
            self._server = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None


#: Each target's name, and a Copilot model of the api it covers: the catalog says which api that is.
TARGETS: Final[dict[str, str]] = {
    "github_copilot": "gpt-5.3-codex",
    "github_copilot_completions": "gpt-4.1",
    "github_copilot_messages": "claude-sonnet-4.5",
}
#: Where Copilot serves its apis (``api.individual.githubcopilot.com``, ``api.githubcopilot.com`` …).
_COPILOT_DOMAIN: Final = "githubcopilot.com"


def _recorded_at_copilot(recording: Cassette) -> bool:
    """Whether ``recording``'s (first) request went to a Copilot host."""
    if not recording.interactions:
        return False
    host = (urlsplit(recording.interactions[0].request.url).hostname or "").lower()
    return host == _COPILOT_DOMAIN or host.endswith("." + _COPILOT_DOMAIN)


def copilot_recordings(api: str, package: str) -> list[tuple[Path, Cassette]]:
    """The recordings of ``api`` made at a Copilot host: the adapter package's own cassette files
    (the synthetic ones), then the bundled library's (the recorded one), each with its file."""
    found: list[tuple[Path, Cassette]] = []
    own = resources.files(package)
    for item in sorted(own.iterdir(), key=lambda entry: entry.name):
        if isinstance(item, Path) and item.suffix == ".jsonl" and item.is_file():
            recording = load_cassette(item)
            if recording.api == api and _recorded_at_copilot(recording):
                found.append((item, recording))
    for name in library.names(api):
        recording = library.load(name)
        if _recorded_at_copilot(recording):
            found.append((library.path(name), recording))
    return found


def _recording_file(package: str, name: str) -> Path:
    """The file of recording ``name``: the adapter package's own ``<name>.jsonl``, else the bundled one."""
    local = resources.files(package).joinpath(f"{name}.jsonl")
    return local if isinstance(local, Path) and local.is_file() else library.path(name)


def _features_named(name: str) -> list[Feature]:
    """The features a recording's name announces, as words of it (``copilot__tool_call_…``: tool)."""
    words = set(name.lower().split("_"))
    return [feature for feature in FEATURES if feature in words]


@functools.cache
def copilot_target(name: str) -> Target:
    """The Copilot target ``name`` (a key of :data:`TARGETS`): the built-in adapter of the api the
    catalog serves that target's model on, behind the login (:class:`CopilotStreamFn`), every feature
    declared. Its recordings are Copilot's own first (those of the api recorded at a Copilot host), then
    the api's bundled ones: a Copilot recording serves each feature its name announces and ``text``
    (the first one); the api's serve the rest, as its wire profile names them.

    Raises ``KeyError`` for a name that is not a Copilot target."""
    api = get_model(COPILOT_PROVIDER, TARGETS[name]).api
    adapter = builtin_adapters()[api]
    profile = adapter.profile
    if profile is None:
        raise ValueError(f"the {api} adapter declares no wire profile")
    own = copilot_recordings(api, adapter.package)
    served: dict[Feature, str] = {}
    for _, recording in own:
        for feature in _features_named(recording.name or ""):
            served.setdefault(feature, recording.name or "")
    # Copilot's first recording serves text unless one is named for it: the profile's text name is dropped.
    recordings: dict[Feature, str] = {
        feature: named for feature, named in profile.recordings.items() if feature != "text"
    }
    recordings.update(served)
    files = [file for file, _ in own]
    files.extend(
        _recording_file(adapter.package, named) for feature, named in recordings.items() if feature not in served
    )
    cassettes = list(dict.fromkeys(files))

    def factory() -> CopilotStreamFn:
        return CopilotStreamFn(adapter.stream_fn)

    factory.__qualname__ = factory.__name__ = f"{name}_stream_fn"
    return Target(
        factory,
        Capabilities.every_feature(api),
        name=f"GitHub Copilot on {api} (conformance.targets:{name})",
        cassettes=cassettes,
        profile=dataclasses.replace(profile, recordings=recordings),
    )


def __getattr__(name: str) -> Target:
    # The targets are made on first use: they read the catalog and the recordings.
    if name in TARGETS:
        return copilot_target(name)
    raise AttributeError(f"module 'conformance.copilot_target' has no attribute {name!r}")
