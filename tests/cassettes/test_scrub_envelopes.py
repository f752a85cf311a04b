"""A key inside a payload's own encoding never reaches disk (issue 35, item 2).

Claude on Bedrock sends each Anthropic event as `{"bytes": base64(event JSON)}` inside an event-stream
message. A server that echoes a key inside that JSON with one character `\\u`-escaped hides it from
every spelling a scan of the bytes can see: the base64 is of the escaped text. The scan and the
recorder open the envelope the wire profile declares and look inside; a frame they can not open is
refused; `scrub_secrets` takes such a key out of a cassette written before, and the cassette still
replays. Every key here is fake and assembled at runtime.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from cassettes import CassetteError, SecretFound, dumps, library, load, scan_file, use_cassette
from cassettes.model import Cassette, Chunk
from cassettes.recorder import CassetteWriter
from cassettes.redact import PLACEHOLDER, scrub_secrets
from cassettes.secret_scan import SecretSet, UncheckedPayload, enveloped_framing, scan_cassette, scan_decoded
from cassettes.session import Mode
from conformance.loopback import LoopbackServer, ReceivedRequest, Scripted, ScriptedEnd
from normalize import AssistantMessage, StreamOptions
from normalize.wire import (
    AWS_EVENTSTREAM,
    NDJSON,
    Base64Field,
    EnvelopeError,
    WireProfile,
    decode_message,
    encode_message,
    open_checked,
    profile_for,
)
from streamfns.anthropic_bedrock import stream_anthropic_bedrock
from tests.adapters import ANTHROPIC_BEDROCK, CONTEXT, response_of, texts
from tests.anthropic_bedrock._frames import EVENT_STREAM, chunk, chunk_payload, inner_events
from tests.cassettes._helpers import make_cassette

NAME = "fantasy__simple_streaming_claude-sonnet-4-5-20250929-v1-0"
MODEL_ID = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
#: A Bedrock API key's shape (`ABSK` + base64), sent as the request's bearer token.
BEARER = "ABSK" + base64.b64encode(b"BedrockAPIKey-fake-for-tests-0123456789").decode()
#: An Anthropic key's shape: known to nobody, found by its shape alone.
SK_ANT = "sk-" + "ant-" + "api03-" + "FAKEtestKEY" * 4
KEYS = {"bedrock api key": (BEARER, 1), "anthropic key shape": (SK_ANT, 0)}  # (key, which character to escape)


def spelled(key: str, escaped: int) -> str:
    """`key` as JSON text with its character `escaped` written as a `\\u` escape."""
    return key[:escaped] + f"\\u{ord(key[escaped]):04x}" + key[escaped + 1 :]


def planted_frames(inner_text: str) -> list[bytes]:
    """The real Claude-on-Bedrock body, message by message, with one more text delta right after the
    first one: `inner_text` spliced into the event's JSON text as it is (escapes and all)."""
    body = response_of(NAME).body
    frames = [span.raw for span in AWS_EVENTSTREAM.spans(body)]
    after = next(n for n, event in enumerate(inner_events(body)) if event["type"] == "content_block_delta") + 1
    event = '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" echo ' + inner_text + '"}}'
    return [*frames[:after], chunk(event.encode()), *frames[after:]]


def with_body(frames: list[bytes]) -> Cassette:
    """The bundled cassette with `frames` as its body, one chunk each."""
    bundled = library.load(NAME)
    response = bundled.interactions[0].response
    chunks = tuple(Chunk(frame, float(n)) for n, frame in enumerate(frames))
    interaction = replace(bundled.interactions[0], response=replace(response, chunks=chunks))
    return replace(bundled, interactions=(interaction,))


def every_form_absent(data: bytes, key: str) -> None:
    """No spelling of `key` in `data`: raw, `\\u`-escaped anywhere, base64 at any alignment; nor in any
    event-stream payload, nor in any envelope's decoded bytes (raw or JSON-decoded)."""
    assert key.encode() not in data
    for escaped in range(len(key)):
        assert spelled(key, escaped).encode() not in data
    spellings = [needle for needle, _kind in SecretSet([("key", key)]).items()]
    assert not [needle for needle in spellings if needle in data]
    for span in AWS_EVENTSTREAM.spans(data):
        if span.payload is None:
            continue
        inner = Base64Field().open(span.payload)
        if inner is not None:
            assert key.encode() not in inner
            assert key not in json.dumps(json.loads(inner), ensure_ascii=False)


def file_payloads(path: Path) -> bytes:
    """Every response body of a cassette file, joined."""
    return b"".join(item.response.body for item in load(path).interactions)


# -- the declaration: an envelope that tells "none" from "does not open" ---------------------------------


def test_a_base64_field_tells_a_payload_without_one_from_one_that_does_not_open() -> None:
    field = Base64Field()
    assert field.open_checked(b'{"bytes":"' + base64.b64encode(b"inner") + b'"}') == b"inner"
    assert field.open_checked(b'{"message":"ThrottlingException"}') is None  # an exception message
    assert field.open_checked(b"not json") is None
    for broken in (b'{"bytes":"eyJ0!!"}', b'{"bytes":"eyJ"}', b'{"bytes":7}'):
        assert field.open(broken) is None  # what the edits use: nothing to edit
        with pytest.raises(EnvelopeError):
            field.open_checked(broken)
        with pytest.raises(EnvelopeError):
            open_checked(field, broken)


def test_an_envelope_without_a_checked_opening_is_read_by_its_own_open() -> None:
    class Reversed:
        def open(self, payload: bytes, /) -> bytes | None:
            return payload[::-1] if payload.startswith(b"<") else None

        def seal(self, inner: bytes, payload: bytes, /) -> bytes:
            return inner[::-1]

    assert open_checked(Reversed(), b"<ab") == b"ba<"
    assert open_checked(Reversed(), b"ab") is None


def test_claude_on_bedrock_declares_its_envelope_for_the_cassettes() -> None:
    profile = profile_for("anthropic-bedrock")
    assert profile is not None
    assert enveloped_framing(profile, 200, EVENT_STREAM) == (AWS_EVENTSTREAM, profile.envelope)
    assert enveloped_framing(profile, 403, "application/json") is None  # an error document is read as it is
    assert enveloped_framing(profile_for("anthropic-messages"), 200, "text/event-stream") is None


# -- the scan -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("which", KEYS)
def test_scan_file_finds_a_key_escaped_inside_a_bedrock_envelope(which: str, tmp_path: Path) -> None:
    key, escaped = KEYS[which]
    path = tmp_path / "by-hand.jsonl"
    path.write_text(dumps(with_body(planted_frames(spelled(key, escaped)))), encoding="utf-8")  # not `save`: it scans
    raw = path.read_bytes()
    assert key.encode() not in raw  # no spelling a scan of the bytes could see
    secrets = SecretSet([("request credential (authorization header)", BEARER)])
    findings, problem = scan_file(path, secrets=secrets)
    assert problem is None
    assert [f.kind.endswith("(inside the envelope)") for f in findings] == [True], findings
    assert "interaction 0 response body, offset" in findings[0].location
    assert key not in str(SecretFound(findings))


def test_the_scan_reports_a_declared_envelope_it_can_not_open() -> None:
    frames = planted_frames("hello")
    frames.insert(3, chunk_payload(b'{"bytes":"eyJ0eXBlIjo!!"}'))
    findings = scan_cassette(with_body(frames), secrets=SecretSet())
    reason = "the 'bytes' member is not valid base64 (Only base64 data is allowed)"
    assert [f.kind for f in findings] == [f"a payload whose envelope does not open ({reason}): not checked"]


def test_the_scan_opens_an_envelope_a_third_party_declares() -> None:
    """An NDJSON api whose lines carry `{"data": base64}`: the scan reads its profile, not its name."""
    profile = WireProfile(api="test-enveloped-lines", framing=NDJSON, envelope=Base64Field("data"))
    inner = ('{"text":"' + spelled(SK_ANT, 0) + '"}').encode()
    line = json.dumps({"data": base64.b64encode(inner).decode()}).encode() + b"\n"
    made = make_cassette([b'{"data":"e30="}\n', line], api=profile.api)
    response = replace(made.interactions[0].response, headers=(("content-type", "application/x-ndjson"),))
    cassette = replace(made, interactions=(replace(made.interactions[0], response=response),))
    assert scan_cassette(cassette, secrets=SecretSet()) == []  # no adapter declares this api: not opened
    found = scan_decoded(cassette, "c", SecretSet(), profile=profile)
    assert [f.kind for f in found] == ["Anthropic API key (escaped) (inside the envelope)"]


# -- the recorder -------------------------------------------------------------------------------------------


async def _stream(server: LoopbackServer, http: httpx.AsyncClient) -> AssistantMessage:
    """Claude on Bedrock through `http`, with a Bedrock API key (sent as a bearer token)."""
    model = ANTHROPIC_BEDROCK.model(id=MODEL_ID, base_url=server.base_url, compat={"region": "us-west-2"})
    options = StreamOptions(api_key=BEARER, http_client=http, max_retries=0)
    return await stream_anthropic_bedrock(model, CONTEXT, options).result()


def _plan(frames: list[bytes], *, end: ScriptedEnd = "eof") -> Callable[[ReceivedRequest], Scripted]:
    """One HTTP chunk per frame; `hangup` closes the connection mid-body without losing a byte sent."""
    chunks = [(0.0, frame) for frame in frames]
    return lambda _request: Scripted(headers=[("content-type", EVENT_STREAM)], chunks=chunks, end=end)


async def _record(
    path: Path, frames: list[bytes], *, mode: Mode = "once", end: ScriptedEnd = "eof"
) -> AssistantMessage:
    """Record Claude on Bedrock answering with `frames` (one HTTP chunk each) into `path`."""
    async with LoopbackServer(_plan(frames, end=end)) as server, use_cassette(path, mode=mode) as http:
        return await _stream(server, http)


@pytest.mark.parametrize("which", KEYS)
async def test_recording_refuses_a_key_escaped_inside_a_bedrock_envelope(which: str, tmp_path: Path) -> None:
    key, escaped = KEYS[which]
    path = tmp_path / "bedrock.jsonl"
    clean = await _record(path, planted_frames("nothing to see"))  # a first, clean recording
    assert clean.stop_reason == "stop"
    before = path.read_bytes()
    with pytest.raises(SecretFound, match=r"\(inside the envelope\)") as caught:
        await _record(path, planted_frames(spelled(key, escaped)), mode="rewrite")
    assert key not in str(caught.value)
    # The file on disk is still the clean recording, and holds no form of the key anywhere.
    assert path.read_bytes() == before
    assert not path.with_name(path.name + ".partial").exists()
    assert scan_file(path, secrets=SecretSet([("key", key)])) == ([], None)
    every_form_absent(before, key)
    every_form_absent(file_payloads(path), key)


async def test_the_caller_of_a_refused_recording_never_gets_the_key(tmp_path: Path) -> None:
    path = tmp_path / "bedrock.jsonl"
    message: list[AssistantMessage] = []

    async def run() -> None:
        plan = _plan(planted_frames(spelled(BEARER, 1)))
        async with LoopbackServer(plan) as server, use_cassette(path, mode="once") as http:
            message.append(await _stream(server, http))

    with pytest.raises(SecretFound):
        await run()
    (result,) = message
    assert result.stop_reason == "error"  # the frame with the key was never handed on
    assert BEARER not in texts(result)
    assert BEARER not in (result.error_message or "")
    assert not path.exists()


@pytest.mark.parametrize(
    "broken",
    [
        pytest.param(chunk_payload(b'{"bytes":"eyJ0eXBlIjo!!"}'), id="bad base64"),
        pytest.param(chunk_payload(b'{"bytes":42}'), id="bytes not a string"),
        pytest.param(chunk(b'{"type":"ping"}')[:-1] + bytes([chunk(b'{"type":"ping"}')[-1] ^ 0xFF]), id="bad CRC"),
    ],
)
async def test_a_declared_envelope_that_can_not_be_opened_is_never_written(broken: bytes, tmp_path: Path) -> None:
    path = tmp_path / "bedrock.jsonl"
    frames = planted_frames("fine")
    frames.insert(3, broken)
    with pytest.raises(UncheckedPayload, match="can not look inside the payload"):
        await _record(path, frames)
    assert not path.exists()
    assert not path.with_name(path.name + ".partial").exists()


async def test_a_stream_cut_inside_its_last_frame_is_still_recorded(tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl"
    frames = planted_frames("fine")
    cut = frames[3][: len(frames[3]) // 2]
    result = await _record(path, [*frames[:3], cut], end="hangup")
    assert result.stop_reason == "error"
    recorded = load(path).interactions[0].response
    assert recorded.body == b"".join([*frames[:3], cut])
    assert recorded.end.kind == "reset"


async def test_a_key_in_the_base64_prefix_of_a_cut_last_frame_is_refused(tmp_path: Path) -> None:
    """The cut frame has no whole payload to open: its base64 prefix is decoded and looked through."""
    path = tmp_path / "cut.jsonl"
    frames = planted_frames(spelled(SK_ANT, 0) + " and a few more words after it")
    cut = frames[3][:-24]  # the CRC, the end of the JSON and of the base64 gone; the key's part is whole
    prefix = cut.partition(b'"bytes": "')[2]
    assert SK_ANT.encode()[1:] in base64.b64decode(prefix[: len(prefix) // 4 * 4])
    with pytest.raises(SecretFound, match=r"\(in base64 text\)"):
        await _record(path, [*frames[:3], cut], end="hangup")
    assert not path.exists()


def test_a_chunk_is_written_only_once_every_frame_it_touches_was_opened(tmp_path: Path) -> None:
    path = tmp_path / "held.jsonl"
    writer = CassetteWriter(path, api="anthropic-bedrock", env={})
    frames = planted_frames("fine")
    body = b"".join(frames)
    request = library.load(NAME).interactions[0].request
    profile = profile_for("anthropic-bedrock")
    opened = enveloped_framing(profile, 200, EVENT_STREAM)
    index = writer.begin(request, 200, (("content-type", EVENT_STREAM),), 0.0, enveloped=opened)
    partial = path.with_name(path.name + ".partial")
    middle = len(frames[0]) + len(frames[1]) // 2
    writer.chunk(index, Chunk(body[:middle], 1.0))
    assert b'"type":"chunk"' not in partial.read_bytes()  # the second frame is not whole yet: held
    writer.chunk(index, Chunk(body[middle:], 2.0))
    assert partial.read_bytes().count(b'"type":"chunk"') == 2
    writer.close()
    assert load(path).interactions[0].response.body == body


# -- scrubbing a cassette written before ----------------------------------------------------------------------


@pytest.mark.parametrize("which", KEYS)
async def test_a_scrubbed_bedrock_cassette_replays_the_same_message_without_the_key(which: str, tmp_path: Path) -> None:
    key, escaped = KEYS[which]
    leaky = with_body(planted_frames(spelled(key, escaped)))
    secrets = SecretSet([("key", key)])
    _, before = await ANTHROPIC_BEDROCK.replay(leaky)
    assert key in texts(before)  # what replaying the leaky file gives: the raw key

    scrubbed = scrub_secrets(leaky, secrets)
    path = tmp_path / "scrubbed.jsonl"
    path.write_text(dumps(scrubbed), encoding="utf-8")
    assert scan_file(path, secrets=secrets) == ([], None)
    every_form_absent(path.read_bytes(), key)
    every_form_absent(file_payloads(path), key)
    assert load(path).synthetic["body"] == "redacted"

    _, after = await ANTHROPIC_BEDROCK.replay(load(path))
    assert after.error_message is None
    assert key not in texts(after)
    assert texts(after) == texts(before).replace(key, PLACEHOLDER)
    assert (after.stop_reason, after.usage, after.response_id) == (before.stop_reason, before.usage, before.response_id)
    assert [block.type for block in after.content] == [block.type for block in before.content]
    # Frames without the key keep their exact bytes; the one with it is re-encoded with valid CRCs.
    old_frames = AWS_EVENTSTREAM.spans(leaky.interactions[0].response.body)
    new_frames = AWS_EVENTSTREAM.spans(scrubbed.interactions[0].response.body)
    changed = [n for n, (old, new) in enumerate(zip(old_frames, new_frames, strict=True)) if old.raw != new.raw]
    assert changed == [3]
    decode_message(new_frames[3].raw)


def test_scrubbing_takes_a_key_out_of_an_event_stream_header_too() -> None:
    headers = {":event-type": "chunk", ":content-type": "application/json", "x-echo": "key=" + BEARER}
    frames = planted_frames("fine")
    frames.insert(3, encode_message({**headers, ":message-type": "event"}, b'{"bytes":"e30="}'))
    scrubbed = scrub_secrets(with_body(frames), SecretSet([("key", BEARER)]))
    message = decode_message(AWS_EVENTSTREAM.spans(scrubbed.interactions[0].response.body)[3].raw)
    assert message.headers["x-echo"] == "key=" + PLACEHOLDER


def test_a_body_whose_envelope_does_not_open_is_not_scrubbed() -> None:
    frames = planted_frames("fine")
    frames.insert(3, chunk_payload(b'{"bytes":"eyJ0eXBlIjo!!"}'))
    with pytest.raises(CassetteError, match="its envelope does not open"):
        scrub_secrets(with_body(frames), SecretSet())


def test_scrubbing_a_text_stream_keeps_its_chunks_and_times() -> None:
    """No envelope to open: the escaped echo itself is replaced where it lies, in its own chunk."""
    echo = f'data: {{"text": "key {spelled(BEARER, 1)} end"}}\n\n'.encode()
    chunks = [b"data: {}\n\n", echo[:20], echo[20:], b"data: {}\n\n"]
    leaky = make_cassette(chunks, api="anthropic-messages")
    scrubbed = scrub_secrets(leaky, SecretSet([("key", BEARER)]))
    after = scrubbed.interactions[0].response
    assert [chunk.t_ms for chunk in after.chunks] == [0.0, 10.0, 20.0, 30.0]
    assert after.chunks[0].data == chunks[0]
    assert after.chunks[1].data == chunks[1]  # the echo starts after this chunk's end
    assert after.body == chunks[0] + f'data: {{"text": "key {PLACEHOLDER} end"}}\n\n'.encode() + chunks[3]
