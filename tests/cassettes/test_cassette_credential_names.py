"""Credentials are recognised by name, wherever configuration carries them — and data is left alone.

A gateway's own key header, an MCP tool's `authorization` field or `headers` object, `?auth=` or
`?code=` are credentials although no list names them: they are scrubbed from what is stored, their
values join the recording's secret set (so an echo in any spelling is refused), and a stored
request that still holds one fails the scan. The conversation, tool schemas and tool-call
arguments are data: a property or an argument called `token`, a thinking block's `signature`, or
`prompt_cache_key` (which vendors echo back) are neither scrubbed nor collected, so real adapter
requests record and replay as before.
"""

from __future__ import annotations

import base64
import importlib
import json
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import httpx
import pytest

import streamfns
from cassettes import (
    Cassette,
    Interaction,
    SecretFound,
    capture_request,
    load,
    recorder,
    request_credentials,
    save,
    scan_cassette,
    scrub_body,
    stored_credentials,
    use_cassette,
)
from cassettes.canonical import canonical_json
from cassettes.cli import main
from cassettes.model import RecordedRequest
from cassettes.scrub import DEFAULT_SCRUB, response_headers
from conformance.loopback import LoopbackServer, ReceivedRequest, Scripted
from normalize import (
    AssistantMessage,
    Context,
    Model,
    StreamOptions,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from normalize.wire import WireProfile
from normalize.wire.tags import API_EXTENSION
from tests.cassettes._helpers import make_cassette, upstream
from tests.conformance._framed import converse_wire

KEY = "test-unshaped-credential-0123456789"  # no known key shape: only its name gives it away
URL = "https://gateway.example.test/v1/responses"


def _live(
    body: dict[str, Any] | None = None, *, headers: dict[str, str] | None = None, url: str = URL
) -> httpx.Request:
    request = httpx.Request("POST", url, json=body or {"model": "m"}, headers=headers)
    request.read()
    return request


# -- what counts as a credential ------------------------------------------------------------------------

CARRIERS: dict[str, tuple[str, httpx.Request]] = {
    "custom key header": ("x-portkey-api-key header", _live(headers={"x-portkey-api-key": KEY})),
    "gateway authorization header": (
        "cf-aig-authorization header",
        _live(headers={"cf-aig-authorization": f"Bearer {KEY}"}),
    ),
    "auth header": ("helicone-auth header", _live(headers={"helicone-auth": f"Bearer {KEY}"})),
    "query auth": ("query parameter auth", _live(url=f"{URL}?auth={KEY}")),
    "query code": ("query parameter code", _live(url=f"{URL}?code={KEY}")),
    "query signature": ("query parameter X-Amz-Signature", _live(url=f"{URL}?X-Amz-Signature={KEY}")),
    "MCP tool authorization": (
        "body field tools[0].authorization",
        _live({"model": "m", "tools": [{"type": "mcp", "server_url": "https://x.test", "authorization": KEY}]}),
    ),
    "MCP tool headers object": (
        "body field tools[0].headers.X-Api-Key",
        _live({"model": "m", "tools": [{"type": "mcp", "headers": {"X-Api-Key": KEY, "X-Region": "eu"}}]}),
    ),
    "headers object, scheme and all": (
        "body field mcp_servers[0].headers.Authorization",
        _live({"model": "m", "mcp_servers": [{"headers": {"Authorization": f"Bearer {KEY}"}}]}),
    ),
    "header given as a list": (
        "body field tools[0].headers.Cookie[0]",
        _live({"model": "m", "tools": [{"headers": {"Cookie": [f"sid={KEY}"]}}]}),
    ),
    "headers as name-value pairs": (
        "body field gateway.headers[1]",
        _live({"model": "m", "gateway": {"headers": [["X-Region", "eu"], ["Proxy-Authorization", KEY]]}}),
    ),
    "camelCase field": ("body field apiKey", _live({"model": "m", "apiKey": KEY})),
    "secret field": ("body field client.secret", _live({"model": "m", "client": {"secret": KEY}})),
    "kebab field": ("body field x-api-key", _live({"model": "m", "x-api-key": KEY})),
    "URL in a config field": (
        "body field tools[0].server_url, query parameter token",
        _live({"model": "m", "tools": [{"type": "mcp", "server_url": f"https://mcp.example.test/sse?token={KEY}"}]}),
    ),
}


@pytest.mark.parametrize("case", CARRIERS)
def test_a_credential_is_known_by_its_name_scrubbed_and_collected(case: str) -> None:
    where, request = CARRIERS[case]
    stored = capture_request(request)
    assert KEY not in stored.url
    assert KEY.encode() not in stored.body
    assert all(KEY not in value for _, value in stored.headers)
    found = request_credentials(request)
    assert (f"request credential ({where})", KEY) in found or any(
        label == f"request credential ({where})" and KEY in value for label, value in found
    ), found
    assert stored_credentials(stored) == [], "what the recorder stores holds none any more"


def test_scrubbing_keeps_everything_that_is_not_a_credential() -> None:
    request = _live(
        {
            "model": "m",
            "tools": [
                {
                    "type": "mcp",
                    "server_label": "docs",
                    "server_url": "https://mcp.example.test/sse?region=eu&token=" + KEY,
                    "authorization": KEY,
                    "headers": {"X-Api-Key": KEY, "X-Region": "eu"},
                    "require_approval": "never",
                }
            ],
            "max_tokens": 100,
            "auth": {"type": "bearer", "token": KEY},
        }
    )
    assert json.loads(capture_request(request).body) == {
        "model": "m",
        "tools": [
            {
                "type": "mcp",
                "server_label": "docs",
                "server_url": "https://mcp.example.test/sse?region=eu",
                "headers": {"X-Region": "eu"},
                "require_approval": "never",
            }
        ],
        "max_tokens": 100,
        "auth": {"type": "bearer"},
    }


def test_a_form_body_is_scrubbed_by_name_too() -> None:
    body = f"grant_type=client_credentials&client_secret={KEY}&scope=all".encode()
    assert scrub_body(body, "application/x-www-form-urlencoded") == b"grant_type=client_credentials&scope=all"


# -- what does not ----------------------------------------------------------------------------------------


def _schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"token": {"type": "string"}, "key": {"type": "string"}, "password": {"type": "string"}},
        "required": ["token"],
    }


def _conversation(model: Model) -> Context:
    """A finished tool round trip by `model` itself (so its thinking and signatures are sent back),
    whose arguments, result and thinking carry credential-like names."""
    arguments = {"token": "tok-argument-value-0001", "api_key": "argument-value-0002", "secret": {"depth": 1}}
    signature = base64.b64encode(b"thinking-signature-bytes-0001").decode()
    if model.api == "openai-responses":
        item: dict[str, Any] = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": signature}
        signature = json.dumps(item)
    return Context(
        system_prompt="Be brief.",
        tools=[Tool(name="lookup", description="Look a thing up.", parameters=_schema())],
        messages=[
            UserMessage(content="Find the session token for user 7."),
            AssistantMessage(
                content=[
                    ThinkingContent(thinking="I should call the tool.", thinking_signature=signature),
                    ToolCall(id="call_1", name="lookup", arguments=arguments, thought_signature=signature),
                ],
                api=model.api,
                provider=model.provider,
                model=model.id,
                stop_reason="toolUse",
            ),
            ToolResultMessage(
                tool_call_id="call_1",
                tool_name="lookup",
                content=[TextContent(text='{"session": "result-session-value-0003"}')],
            ),
        ],
    )


MODELS = [
    ("anthropic", "claude-sonnet-4-5"),
    ("openai", "gpt-5"),
    ("google", "gemini-2.5-flash"),
    ("openrouter", "anthropic/claude-sonnet-4.5"),
    ("openai", "gpt-4o"),
]


@pytest.mark.parametrize(("provider", "model_id"), MODELS)
def test_real_adapter_requests_carry_no_credential_but_the_key(provider: str, model_id: str) -> None:
    """Each adapter's own request for a tool round trip with thinking, session and schemas: the body
    is stored whole (canonical), and nothing in it joins the secret set."""
    model = streamfns.get_model(provider, model_id)
    builder = _builder(model.api)
    context = _conversation(model)
    options = StreamOptions(api_key="test-key", session_id="session-for-prompt-cache-0004", reasoning="medium")
    wire = builder(model, context, options)
    body = json.dumps(wire.payload).encode()
    assert b"tok-argument-value-0001" in body, "the request does carry look-alike names, and values"
    assert b"api_key" in body
    if model.api != "openai-completions":  # chat completions sends no thinking signature back
        assert base64.b64encode(b"thinking-signature-bytes-0001") in body, "a signature goes back to the vendor"
    assert scrub_body(body, "application/json") == canonical_json(wire.payload)
    request = _live(wire.payload, url=wire.url)
    assert request_credentials(request) == []
    assert stored_credentials(capture_request(request)) == []


def _builder(api: str) -> Callable[..., Any]:
    module = {
        "anthropic-messages": "anthropic",
        "openai-responses": "openai_responses",
        "openai-completions": "openai_completions",
        "google-generative-ai": "google",
    }[api]
    return importlib.import_module(f"streamfns.{module}.request").build_request


def test_prompt_cache_key_is_no_credential() -> None:
    request = _live({"model": "m", "prompt_cache_key": "session-for-prompt-cache-0004"})
    assert request_credentials(request) == []
    assert json.loads(capture_request(request).body)["prompt_cache_key"] == "session-for-prompt-cache-0004"


# -- the recording's secret set, end to end ---------------------------------------------------------------


def _echo_401(request: ReceivedRequest) -> Scripted:
    """A gateway that echoes back, in hex, every header value it was sent."""
    said = " ".join(value.encode().hex() for value in request.headers.values())
    body = json.dumps({"error": {"message": f"rejected: {said}"}}).encode()
    return Scripted(status=401, headers=[("content-type", "application/json")], chunks=[(0.0, body)])


async def test_a_custom_key_header_echoed_in_hex_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "gateway.jsonl"
    with pytest.raises(SecretFound, match=re.escape("request credential (x-portkey-api-key header) (hex)")) as caught:
        async with LoopbackServer(_echo_401) as server, use_cassette(path, mode="once") as http:
            await http.post(server.base_url + "/v1/messages", json={"model": "m"}, headers={"x-portkey-api-key": KEY})
    assert KEY not in str(caught.value)
    assert not path.exists()


async def test_an_mcp_token_is_never_written_and_the_recording_replays(tmp_path: Path) -> None:
    path = tmp_path / "mcp.jsonl"
    body = {"model": "m", "tools": [{"type": "mcp", "server_label": "docs", "authorization": KEY}]}
    async with LoopbackServer(upstream()) as server:
        url = server.base_url + "/v1/responses"
        async with use_cassette(path, mode="once") as http:
            await http.post(url, json=body)
        assert KEY not in path.read_text(encoding="utf-8")
        async with use_cassette(path, mode="none") as http:
            replayed = await http.post(url, json=body)  # the live request, token and all, matches
        assert replayed.status_code == 200


# -- the scan flags what a scrubber would have removed ----------------------------------------------------


def _stored(body: dict[str, Any], url: str = "https://api.example.test/v1/responses") -> RecordedRequest:
    return RecordedRequest("POST", url, (("content-type", "application/json"),), canonical_json(body))


def _with_request(request: RecordedRequest) -> Cassette:
    cassette = make_cassette([b"data: ok\n\n"])
    (interaction,) = cassette.interactions
    return replace(cassette, interactions=(Interaction(request, interaction.response),))


def test_a_stored_request_still_holding_a_credential_fails_the_scan(tmp_path: Path) -> None:
    request = _stored(
        {"model": "m", "tools": [{"type": "mcp", "authorization": "short"}]},
        url="https://api.example.test/v1/responses?auth=abc",
    )
    assert stored_credentials(request) == ["query parameter auth", "body field tools[0].authorization"]
    cassette = _with_request(request)
    kinds = [finding.kind for finding in scan_cassette(cassette, env={})]
    assert kinds == [
        "unscrubbed credential (query parameter auth)",
        "unscrubbed credential (body field tools[0].authorization)",
    ]
    path = tmp_path / "hand-written.jsonl"
    with pytest.raises(SecretFound, match=r"unscrubbed credential \(body field tools\[0\]\.authorization\)"):
        save(cassette, path)
    save(cassette, path, scan=False)
    assert main(["scan", str(path)]) == 1


def test_data_and_empty_values_are_not_flagged_in_a_stored_request() -> None:
    request = _stored(
        {
            "model": "m",
            "messages": [{"role": "assistant", "content": [{"type": "thinking", "signature": "sig-0000000001"}]}],
            "tools": [{"name": "t", "input_schema": _schema()}],
            "api_key": "",
            "prompt_cache_key": "session-0004",
        }
    )
    assert stored_credentials(request) == []


def test_the_bundled_recordings_hold_no_unscrubbed_credential() -> None:
    from cassettes import library

    for name in library.names():
        for interaction in library.load(name).interactions:
            assert stored_credentials(interaction.request) == [], name


async def test_an_older_recording_with_a_now_credential_field_still_replays(tmp_path: Path) -> None:
    """A cassette recorded before `secret` counted as a credential stored it; replay scrubs both
    sides the same way, so the live request (which now loses the field) still matches."""
    old = _stored({"model": "m", "config": {"secret": "hunter2-but-longer"}}, url="https://api.example.test/v1/x")
    path = tmp_path / "old.jsonl"
    save(_with_request(old), path, scan=False)
    async with use_cassette(path, mode="none") as http:
        response = await http.post(old.url, json={"model": "m", "config": {"secret": "another-value-entirely"}})
    assert response.status_code == 200
    assert load(path).interactions[0].request.body == old.body, "replay never rewrites the file"


def test_hex_and_html_spellings_are_needles() -> None:
    from cassettes.secret_scan import SecretSet, scan_bytes

    secrets = SecretSet([("k", KEY)])
    spelled = {
        "hex": KEY.encode().hex(),
        "HEX": KEY.encode().hex().upper(),
        "upper": KEY.upper(),
        "decimal entities": "".join(f"&#{ord(c)};" for c in KEY),
        "hex entities": "".join(f"&#x{ord(c):x};" for c in KEY),
        "entities inside JSON escapes": "".join(f"\\u0026#{ord(c)};" for c in KEY),
    }
    missed = [form for form, text in spelled.items() if not scan_bytes(f"echo {text} .".encode(), "x", secrets=secrets)]
    assert missed == []


# -- bodies that are not strict JSON hide nothing -----------------------------------------------------------


def _raw(body: bytes, content_type: str = "application/json") -> httpx.Request:
    request = httpx.Request("POST", URL, content=body, headers={"content-type": content_type})
    request.read()
    return request


def test_a_body_holding_nan_is_scrubbed_and_its_credential_collected() -> None:
    # What `json.dumps` writes for a float NaN: not JSON, strictly, but every Python client sends it.
    body = json.dumps({"model": "m", "api_key": KEY, "temperature": float("nan"), "top_p": float("inf")})
    request = _raw(body.encode())
    assert request_credentials(request) == [("request credential (body field api_key)", KEY)]
    stored = capture_request(request)
    assert stored.body == b'{"model":"m","temperature":NaN,"top_p":Infinity}'
    assert stored_credentials(stored) == []
    assert stored_credentials(RecordedRequest("POST", URL, (), body.encode())) == ["body field api_key"]


def test_a_body_that_does_not_parse_is_kept_but_its_credentials_are_still_found() -> None:
    cut = b'{"model": "m", "auth": {"api_key": "' + KEY.encode() + b'"}, "messages": [{"role": "us'
    escaped = b'{"model": "m", "client_secret": "' + KEY.replace("0", "\\u0030").encode() + b'", '
    form_like = b"model=m&access_token=" + KEY.encode() + b"&x=1"  # a form body without its content type
    note = " (in a body that is not JSON)"
    for body, field in ((cut, "api_key"), (escaped, "client_secret"), (form_like, "access_token")):
        request = _raw(body)
        assert request_credentials(request) == [(f"request credential (body field {field}{note})", KEY)], body
        assert capture_request(request).body == body, "stored as it is: the recorder refuses it (below)"
        assert stored_credentials(RecordedRequest("POST", URL, (), body)) == [f"body field {field}{note}"]
    assert request_credentials(_raw(b'{"model": "m", "prompt_cache_key": "not-a-secret-at-all", ')) == []


async def test_a_credential_in_a_body_with_nan_never_reaches_the_disk(tmp_path: Path) -> None:
    path = tmp_path / "nan.jsonl"
    body = json.dumps({"model": "m", "api_key": KEY, "temperature": float("nan")}).encode()
    async with LoopbackServer(upstream()) as server:
        async with use_cassette(path, mode="once") as http:
            await http.post(server.base_url + "/v1/chat", content=body, headers={"content-type": "application/json"})
        assert KEY not in path.read_text(encoding="utf-8")
        async with use_cassette(path, mode="none") as http:  # the live request, key and all, matches
            replayed = await http.post(server.base_url + "/v1/chat", content=body)
        assert replayed.status_code == 200


async def test_a_credential_in_a_body_that_does_not_parse_stops_the_recording(tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl"
    body = b'{"model": "m", "api_key": "' + KEY.encode() + b'", "messages": ['
    with pytest.raises(SecretFound, match=re.escape("body field api_key (in a body that is not JSON)")) as caught:
        async with LoopbackServer(upstream()) as server, use_cassette(path, mode="once") as http:
            await http.post(server.base_url + "/v1/chat", content=body)
    assert KEY not in str(caught.value)
    assert not path.exists()


# -- vendor headers: what is kept, what is a secret ----------------------------------------------------------


def test_signing_headers_are_credentials_or_dropped_and_google_metadata_is_kept() -> None:
    signature = "f" * 64
    authorization = (
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260101/us-east-1/bedrock/aws4_request, "
        f"SignedHeaders=host;x-amz-date, Signature={signature}"
    )
    headers = {
        "authorization": authorization,
        "x-amz-security-token": KEY,
        "x-amz-date": "20260101T000000Z",
        "x-amz-content-sha256": "e3b0c442",
        "x-goog-api-key": KEY,
        "x-goog-user-project": "my-project",
    }
    request = _live(headers=headers)
    assert capture_request(request).headers == (("content-type", "application/json"),)
    found = request_credentials(request)
    assert {KEY, authorization, signature, "AKIDEXAMPLE"} <= {value for _, value in found}
    assert ("request credential (authorization header), Signature", signature) in found
    assert ("request credential (x-amz-security-token header)", KEY) in found
    response = httpx.Headers(
        {"content-type": "application/json", "x-goog-request-id": "abc", "x-goog-api-key": KEY, "set-cookie": KEY}
    )
    assert response_headers(response) == (("content-type", "application/json"), ("x-goog-request-id", "abc"))


AWS_RESPONSE = [
    ("content-type", "application/vnd.amazon.eventstream"),
    ("x-amzn-requestid", "0e7a-4c1b"),
    ("x-amzn-bedrock-input-token-count", "12"),
    ("x-amzn-bedrock-invocation-latency", "560"),
    ("x-amzn-remapped-date", "Thu, 01 Jan 2026 00:00:00 GMT"),
]


def test_a_wire_api_records_the_headers_it_declares_and_those_its_errors_read() -> None:
    assert converse_wire().profile.recorded_headers == ("x-amzn-errortype",)
    declared = replace(converse_wire(), recorded_headers=("X-Amzn-RequestId", "x-amzn-bedrock-*"))
    assert declared.profile.recorded_headers == ("x-amzn-requestid", "x-amzn-bedrock-*", "x-amzn-errortype")
    policy = DEFAULT_SCRUB.with_headers(declared.profile.recorded_headers)
    assert response_headers(httpx.Headers(AWS_RESPONSE), policy) == tuple(AWS_RESPONSE[:4])
    assert response_headers(httpx.Headers(AWS_RESPONSE)) == tuple(AWS_RESPONSE[:1]), "not without the profile"
    trace = _live(headers={"x-amzn-bedrock-trace": "ENABLED", "x-amzn-bedrock-token": KEY})
    assert dict(capture_request(trace, policy).headers) == {
        "content-type": "application/json",
        "x-amzn-bedrock-trace": "ENABLED",
    }, "a declared prefix never lets a credential-named header through"


async def test_the_recorder_keeps_the_headers_of_the_requesting_adapters_profile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    declared = replace(converse_wire(), recorded_headers=("x-amzn-requestid", "x-amzn-bedrock-*")).profile

    def profile_for(api: object) -> WireProfile | None:
        return declared if api == declared.api else None

    monkeypatch.setattr(recorder, "profile_for", profile_for)
    path = tmp_path / "aws.jsonl"
    served = upstream([b"data: x\n\n"], headers=AWS_RESPONSE)
    async with LoopbackServer(served) as server, use_cassette(path, mode="once") as http:
        tagged = http.build_request("POST", server.base_url + "/model/invoke", json={"model": "m"})
        tagged.extensions[API_EXTENSION] = declared.api
        await (await http.send(tagged)).aread()
    headers = dict(load(path).interactions[0].response.headers)
    assert {name: headers.get(name) for name, _ in AWS_RESPONSE} == {
        "content-type": "application/vnd.amazon.eventstream",
        "x-amzn-requestid": "0e7a-4c1b",
        "x-amzn-bedrock-input-token-count": "12",
        "x-amzn-bedrock-invocation-latency": "560",
        "x-amzn-remapped-date": None,
    }


def test_a_plugins_malformed_header_list_is_read_as_far_as_it_makes_sense(monkeypatch: pytest.MonkeyPatch) -> None:
    one_name = replace(converse_wire().profile, recorded_headers=cast(Any, "x-amzn-requestid"))
    mixed = replace(converse_wire().profile, recorded_headers=cast(Any, ["x-amzn-bedrock-*", 7, None]))
    for profile, kept in ((one_name, AWS_RESPONSE[:2]), (mixed, [AWS_RESPONSE[0], *AWS_RESPONSE[2:4]])):

        def profile_for(_api: object, chosen: WireProfile = profile) -> WireProfile:
            return chosen

        monkeypatch.setattr(recorder, "profile_for", profile_for)
        policy = recorder._with_profile_headers(DEFAULT_SCRUB, "converse-test")  # pyright: ignore[reportPrivateUsage]
        assert response_headers(httpx.Headers(AWS_RESPONSE), policy) == tuple(kept)
