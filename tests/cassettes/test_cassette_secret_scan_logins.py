"""The secret scan finds the tokens of the subscription logins (issue 37) wherever a recording could
carry them — a body, a header, JSON- or URL-escaped, inside base64 — and leaves public look-alikes
alone, in time linear in the bytes however hostile they are.

Every token is assembled at runtime from obviously fake parts: a token-shaped literal in a committed
file is what the scan exists to reject.
"""

from __future__ import annotations

import base64
import json
import time
from urllib.parse import quote

import pytest

from cassettes import SecretFound, scan_cassette, scan_text
from cassettes.model import Cassette, Chunk, End, Interaction, RecordedRequest, RecordedResponse
from cassettes.redact import scrub_secrets
from cassettes.secret_scan import scan_bytes, secret_spans

HMAC = "0123456789abcdef" * 4  # 64 hex digits, where Copilot puts its signature
LOGIN_TOKENS = {
    "GitHub OAuth token": "gh" + "o_" + "FAKE0fake1" * 4,
    "GitHub user-to-server token": "gh" + "u_" + "FAKE2fake3" * 4,
    "GitHub server-to-server token": "gh" + "s_" + "FAKE4fake5" * 4,
    "GitHub refresh token": "gh" + "r_" + "FAKE6fake7" * 8,
    "GitHub personal access token": "gh" + "p_" + "FAKE8fake9" * 4,
    # The fine-grained form: 22 characters, an underscore, 59 more.
    "GitHub personal access token (fine-grained)": "github" + "_pat_" + "FAKE" * 5 + "xy_" + "fake" * 14 + "abc",
    # The exchange's Copilot token, as it read in 2024 (`8kp=1:<hmac>` last) ...
    "GitHub Copilot token": "tid=" + "fa" * 16 + ";exp=1999999999;sku=fake_subscriber;st=dotcom;chat=1;8kp=1:" + HMAC,
    # ... and since 2025 (more fields, an IP address, the HMAC after the last field's value).
    "GitHub Copilot token (2025)": "tid="
    + "fb" * 16
    + ";exp=1999999999;sku=free_limited_copilot;proxy-ep=proxy.individual.githubcopilot.com;st=dotcom;chat=1;"
    + "cit=1;malfil=1;agent_mode=1;mcp=1;rt=1;8kp=1;ip=2001:db8::1;asn=AS64496;cq=1323;rd=1757721600:"
    + HMAC,
    # ChatGPT's refresh tokens (its access tokens are JWTs: `JSON Web Token`).
    "ChatGPT refresh token": "rt_" + "FAKE-fake_" * 4 + "xyz" + "." + "fake_FAKE-" * 4 + "xyz",
    "ChatGPT refresh token (v1)": "v1." + "MFAKEfake-" * 6,
    "JSON Web Token": "eyJ" + "hbGciOiJSUzI1NiJ9" + "." + "eyJ" + "odHRwczovL2FwaS5vcGVuYWkuY29tIn0" + ".FAKE",
}


def _kind(label: str) -> str:
    """The kind a planted token is reported as (the label without its variant)."""
    return label.split(" (", maxsplit=1)[0]


def _cassette(*, body: bytes = b"data: {}\n\n", header: str = "ok", request_header: str = "ok") -> Cassette:
    request = RecordedRequest(
        "POST",
        "https://api.example.test/v1/responses",
        (("content-type", "application/json"), ("x-client-note", request_header)),
        b'{"model":"m","stream":true}',
    )
    response = RecordedResponse(
        200,
        (("content-type", "text/event-stream"), ("x-debug-echo", header)),
        0,
        (Chunk(body, 0.0),),
        End("eof", 0.0),
    )
    return Cassette(interactions=(Interaction(request, response),), api="openai-responses", model="m")


def _spellings(token: str) -> dict[str, str]:
    """The ways a server or a proxy echoes a token back in text."""
    return {
        "raw": token,
        "JSON, every = and ; escaped": token.replace("=", "\\u003d").replace(";", "\\u003b"),
        "JSON, fully escaped": "".join(f"\\u{ord(c):04x}" for c in token),
        "URL-encoded": quote(token, safe=""),
        "base64": base64.b64encode(f"echo {token} end".encode()).decode(),
    }


@pytest.mark.parametrize(("label", "token"), LOGIN_TOKENS.items())
@pytest.mark.parametrize(
    "spelling", ["raw", "JSON, every = and ; escaped", "JSON, fully escaped", "URL-encoded", "base64"]
)
def test_a_login_token_in_a_response_body_is_found_in_every_spelling(label: str, token: str, spelling: str) -> None:
    spelled = _spellings(token)[spelling]
    body = b'data: {"type":"error","message":"' + spelled.encode() + b'"}\n\n'
    findings = [f for f in scan_cassette(_cassette(body=body), env={}) if "response body" in f.location]
    assert findings, spelling
    assert {f.kind.split(" (")[0] for f in findings} == {_kind(label)}
    assert token not in str(SecretFound(findings))


@pytest.mark.parametrize(("label", "token"), LOGIN_TOKENS.items())
def test_a_login_token_in_a_response_or_request_header_is_found(label: str, token: str) -> None:
    findings = scan_cassette(_cassette(header=f"echo {token}"), env={})
    assert {f.kind for f in findings if "response header x-debug-echo" in f.location} == {_kind(label)}
    findings = scan_cassette(_cassette(request_header=quote(token, safe="")), env={})
    assert {f.kind.split(" (")[0] for f in findings if "request header x-client-note" in f.location} == {_kind(label)}


@pytest.mark.parametrize(("label", "token"), LOGIN_TOKENS.items())
def test_redaction_takes_out_the_whole_token(label: str, token: str) -> None:
    data = f'{{"echo": "{token}", "next": 1}}'.encode()
    spans = secret_spans(data)
    assert [kind for kind, _, _ in spans] == [_kind(label)]
    _, start, end = spans[0]
    assert data[start:end] == token.encode()


def test_a_token_the_store_would_hold_is_found_in_a_json_file_shape() -> None:
    """What a credential store's JSON looks like: every token in it is found, each once."""
    stored = json.dumps(
        {
            "github-copilot": {
                "access": LOGIN_TOKENS["GitHub Copilot token (2025)"],
                "refresh": LOGIN_TOKENS["GitHub user-to-server token"],
            },
            "openai-codex": {
                "access": LOGIN_TOKENS["JSON Web Token"],
                "refresh": LOGIN_TOKENS["ChatGPT refresh token"],
            },
        }
    )
    kinds = sorted(f.kind for f in scan_text(stored, "store", env={}))
    assert kinds == ["ChatGPT refresh token", "GitHub Copilot token", "GitHub user-to-server token", "JSON Web Token"]


@pytest.mark.parametrize(
    "text",
    [
        "gh" + "p_short",
        "a" + "gh" + "o_" + "x" * 40,  # inside a word
        "gh" + "x_" + "y" * 40,  # not a GitHub prefix
        "github" + "_pat_copilot_requests",
        "tid=abc;exp=123;proxy-ep=proxy.business.githubcopilot.com;chat=1",  # no signature: not a token
        "tid=1;exp=2;sku=x;8kp=1:abc",  # a signature too short to be one
        "the tid=5 value: 0123",
        "ticket_tid=" + "a" * 10 + ";x=1:" + HMAC,  # `tid=` inside a name
        "rt_mock",
        "rt_test_refresh_token",
        "start_" + "a" * 30 + "." + "b" * 30,  # `rt_` inside a word
        "GET /api/v1.2/models and v1.0.0",
        "release v1.12.3-" + "rc" * 5,
        "eyJonly.one",
        "x-eyJ" + "a" * 30 + ".notjwt",
    ],
)
def test_public_look_alikes_of_login_tokens_are_not_reported(text: str) -> None:
    assert scan_text(text, "sample", env={}) == []


def test_a_redacted_cassette_with_a_copilot_token_scans_clean() -> None:
    token = LOGIN_TOKENS["GitHub Copilot token (2025)"]
    body = f'data: {{"echo": "{token}"}}\n\n'.encode()
    cassette = _cassette(body=body, header=token)
    assert scan_cassette(cassette, env={})
    cleaned = scrub_secrets(cassette, env={})  # raises SecretFound if anything of it is left
    assert token.encode() not in cleaned.interactions[0].response.body
    assert scan_cassette(cleaned, env={}) == []


HOSTILE = {
    # Each makes a pattern with a suffix after an open-ended run retry at every start inside the run:
    # quadratic in a regex without a look-behind on the run's own characters.
    "JWT starts glued by dashes": b"-eyJ",
    "ChatGPT refresh-token starts glued by underscores": b"_rt_",
    "Copilot fields, each starting a token": b";tid=a",
    "Copilot fields with a name ending in tid": b";_tid=a",
    "Copilot values with colons before almost-HMACs": b";a=b:" + b"f" * 31 + b"z",
    "GitHub prefixes glued by underscores": b"_gho_",
}


@pytest.mark.parametrize("pattern", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_text_is_scanned_in_linear_time(pattern: bytes) -> None:
    """A 400 KB body of near-tokens: a quadratic pattern takes minutes here (the JWT shape did, before
    its look-behind: 5 s at 160 KB and four times that for each doubling), a linear one well under a
    second; the budget sits far from both."""
    data = b"data: tid=x" + pattern * (400_000 // len(pattern))
    started = time.process_time()
    scan_bytes(data, "body")
    assert time.process_time() - started < 5.0
