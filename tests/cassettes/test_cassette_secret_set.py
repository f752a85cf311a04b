"""The recorder's own header scan is fail-closed, by the rule the adapter kit follows.

A third party's client tags nothing on its requests, so the recorder must find every secret header
itself: the value of every header not on the public list is a secret, whatever it is called
(`x-gw-pass`, `x-upstream-pwd`) or however it is spelled (`Api-Key …`, `Token token=…`). An echo of
it is refused with nothing written; a header a wire profile allow-lists for storage never stores a
secret value; public headers, short values and dates are recorded as they are. The kit and the
recorder read the same rule, so they always guard the same values. Credentials are synthetic, built
at run time.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cassettes import SecretFound, capture_request, load, request_credentials, use_cassette
from cassettes.scrub import DEFAULT_SCRUB
from conformance.loopback import LoopbackServer, ReceivedRequest, Scripted
from normalize.secret_forms import MIN_SECRET_BYTES
from normalize.wire.tags import (
    MIN_SECRET_CHARS,
    PUBLIC_HEADERS,
    SECRETS_EXTENSION,
    guarded,
    header_secrets,
    public_header,
)
from streamfns.kit.keys import credentials_in
from tests.cassettes._helpers import upstream

SECRET = "-".join(["synthetic", "upstream", "credential", "0123456789"])
URL_PATH = "/v1/chat/completions"

# (header name, value sent, the label the refusal names)
SPELLINGS: dict[str, tuple[str, str, str]] = {
    "authorization: Api-Key": ("authorization", f"Api-Key {SECRET}", "authorization header"),
    "authorization: Token token=": ("authorization", f"Token token={SECRET}", "authorization header"),
    "x-gw-pass": ("x-gw-pass", SECRET, "x-gw-pass header"),
    "x-upstream-pwd": ("x-upstream-pwd", SECRET, "x-upstream-pwd header"),
    "helicone-auth": ("helicone-auth", f"Bearer {SECRET}", "helicone-auth header"),
    "cf-aig-authorization": ("cf-aig-authorization", f"Bearer {SECRET}", "cf-aig-authorization header"),
}


def _echo_bare_secret(_request: ReceivedRequest) -> Scripted:
    """A 401 whose body says the secret alone (not the header's whole value)."""
    body = json.dumps({"error": {"message": f"upstream rejected credential {SECRET}"}}).encode()
    return Scripted(status=401, headers=[("content-type", "application/json")], chunks=[(0.0, body)])


@pytest.mark.parametrize("spelling", SPELLINGS)
async def test_an_untagged_requests_secret_header_echoed_back_is_refused(spelling: str, tmp_path: Path) -> None:
    name, value, label = SPELLINGS[spelling]
    path = tmp_path / "third-party.jsonl"
    async with LoopbackServer(_echo_bare_secret) as server:
        with pytest.raises(SecretFound, match=re.escape(f"request credential ({label}")) as caught:
            async with use_cassette(path, mode="once") as http:  # a plain client: no kit, no tag
                await http.post(server.base_url + URL_PATH, json={"model": "m"}, headers={name: value})
        assert server.requests[0].headers.get(name) == value
    assert SECRET not in str(caught.value)
    assert not path.exists()
    assert not path.with_name(path.name + ".partial").exists()


async def test_a_tagged_secret_no_header_shows_is_refused(tmp_path: Path) -> None:
    """What the kit tags (here a value sent nowhere) joins the set as well: the union of both."""
    path = tmp_path / "tagged.jsonl"

    async def record(url: str) -> None:
        async with use_cassette(path, mode="once") as http:
            request = http.build_request("POST", url, json={"model": "m"})
            request.extensions[SECRETS_EXTENSION] = (SECRET,)
            await (await http.send(request)).aread()

    async with LoopbackServer(_echo_bare_secret) as server:
        with pytest.raises(SecretFound, match=re.escape("request credential (signing secret)")):
            await record(server.base_url + URL_PATH)
    assert not path.exists()


def test_a_live_requests_header_credentials_exactly() -> None:
    request = httpx.Request(
        "POST",
        "https://gw.example.test" + URL_PATH,
        json={"model": "m"},
        headers={
            "authorization": f"Token token={SECRET}",
            "x-gw-pass": "gw-pass-42x",
            "anthropic-version": "2023-06-01",
            "x-client-date": "2026-01-01",
            "x-team": "red",
            "user-agent": "synthetic-agent/1.2.3",
        },
    )
    request.read()
    assert request_credentials(request) == [
        ("request credential (authorization header)", f"Token token={SECRET}"),
        ("request credential (authorization header)", f"token={SECRET}"),
        ("request credential (authorization header), token", SECRET),
        ("request credential (x-gw-pass header)", "gw-pass-42x"),
    ]


async def test_a_profile_allow_listed_header_never_stores_a_secret_value(tmp_path: Path) -> None:
    """A wire profile may allow-list a prefix (`x-gw-*`) for storage; a secret sent under it is
    neither stored nor allowed through in an echo, nor is a short password (named as one), while a
    short flag under it is kept."""
    policy = DEFAULT_SCRUB.with_headers(["x-gw-*"])
    headers = {"x-gw-pass": SECRET, "x-gw-pwd": "pw-42", "x-gw-trace": "on"}
    live = httpx.Request("POST", "https://gw.example.test" + URL_PATH, json={"model": "m"}, headers=headers)
    live.read()
    assert sorted(capture_request(live, policy).headers) == [("content-type", "application/json"), ("x-gw-trace", "on")]
    path = tmp_path / "profile.jsonl"
    async with LoopbackServer(upstream()) as server, use_cassette(path, mode="once", scrub=policy) as http:
        await (await http.post(server.base_url + URL_PATH, json={"model": "m"}, headers=headers)).aread()
    text = path.read_text(encoding="utf-8")
    assert SECRET not in text
    assert "pw-42" not in text
    assert dict(load(path).interactions[0].request.headers).get("x-gw-trace") == "on"


async def test_public_headers_short_values_and_dates_echoed_back_are_recorded(tmp_path: Path) -> None:
    """Not secrets: the recording is written, with the echo in it, exactly as the server said it."""
    sent = {
        "anthropic-version": "2023-06-01",
        "anthropic-beta": "fine-grained-tool-streaming-2025-05-14",
        "user-agent": "synthetic-agent/1.2.3 (test run)",
        "x-stainless-runtime-version": "3.12.4-synthetic",
        "x-client-date": "2026-01-01",
        "x-team": "red",
    }
    echo = json.dumps({"error": {"message": " ".join(sent.values())}}).encode()
    plan = Scripted(status=400, headers=[("content-type", "application/json")], chunks=[(0.0, echo)])
    path = tmp_path / "public.jsonl"
    async with LoopbackServer(plan) as server, use_cassette(path, mode="once") as http:
        await (await http.post(server.base_url + URL_PATH, json={"model": "m"}, headers=sent)).aread()
    assert load(path).interactions[0].response.body == echo


# -- one rule --------------------------------------------------------------------------------------------


def test_the_rules_bounds() -> None:
    assert MIN_SECRET_CHARS == MIN_SECRET_BYTES, "the kit and the recorder drop the same short values"
    assert [guarded(v) for v in ("true", "1234567", "2023-06-01", "20260101T000000Z", "2026-01-01T10:00:00Z")] == [
        False,
        False,
        False,
        False,
        False,
    ]
    assert [guarded(v) for v in ("v1.2.3", "12345678", "2024-05-01-preview", f"Api-Key {SECRET}")] == [
        False,
        True,
        True,
        True,
    ]
    assert [public_header(n) for n in ("Content-Type", "x-stainless-os", "x-stainless-api-key", "x-gw-pass")] == [
        True,
        True,
        False,
        False,
    ]


_NAMES = st.one_of(
    st.sampled_from(sorted(PUBLIC_HEADERS)),
    st.sampled_from(["authorization", "x-gw-pass", "x-upstream-pwd", "cookie", "x-stainless-lang", "x-custom"]),
    st.from_regex(r"x-[a-z]{1,8}", fullmatch=True),
)
_VALUES = st.one_of(
    st.sampled_from(["Api-Key ", "Token token=", "Bearer ", "Basic ", "", "sid="]).flatmap(
        lambda prefix: st.from_regex(r"[A-Za-z0-9._~+/-]{0,24}", fullmatch=True).map(lambda tail: prefix + tail)
    ),
    st.sampled_from(["2023-06-01", "1.2.3", "true", "text/event-stream"]),
)


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(_NAMES, _VALUES, max_size=6))
def test_the_kit_and_the_recorder_guard_the_same_header_values(headers: dict[str, str]) -> None:
    request = httpx.Request("POST", "https://gw.example.test" + URL_PATH, headers=headers)
    request.read()
    recorder_values = {value for _, value in request_credentials(request)}
    assert set(credentials_in(headers)) == recorder_values
    assert recorder_values == {secret.value for secret in header_secrets(headers.items())}
    for name, value in headers.items():
        if not public_header(name) and guarded(value):
            assert value.strip() in recorder_values, "fail-closed: every guarded value of a non-public header"


def test_a_sigv4_authorization_guards_its_credential_and_signature_but_not_its_signed_header_names() -> None:
    access, signature = "AKIA" + "EXAMPLE" * 2 + "Q", "5d" * 32
    value = (
        f"AWS4-HMAC-SHA256 Credential={access}/20260101/us-east-1/bedrock/aws4_request, "
        f"SignedHeaders=content-type;host;x-amz-date;x-amz-security-token, Signature={signature}"
    )
    found = {secret.value for secret in header_secrets([("Authorization", value)])}
    assert {access, signature, f"{access}/20260101/us-east-1/bedrock/aws4_request", value} <= found
    assert not found & {"content-type", "x-amz-date", "x-amz-security-token", "content-type;host"}
    # The list is cut out by its name alone: a credential-looking parameter elsewhere is still read.
    spoof = "Token SignedHeadersX=" + signature
    assert signature in {secret.value for secret in header_secrets([("Authorization", spoof)])}
