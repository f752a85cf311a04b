"""Wire profiles: endings, envelopes, terminal edits, the lookup by api name, and content types."""

from __future__ import annotations

import base64
import importlib.metadata
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from cassettes import load
from normalize.wire import (
    AWS_EVENTSTREAM,
    DROP,
    NDJSON,
    SSE,
    Base64Field,
    Ending,
    FrameView,
    WireProfile,
    decode_message,
    framing_for,
    known_profiles,
    profile_for,
    profile_problems,
    register_profile,
)
from normalize.wire import registry as wire_registry

RECORDINGS = Path(__file__).resolve().parents[1] / "conformance" / "recordings"


def test_an_ending_of_frames_matches_the_frame_name_or_the_json_type() -> None:
    ending = Ending.frames("message_stop")
    assert ending.strip is not None
    assert ending.strip(FrameView("message_stop", b"{}")) is DROP
    assert ending.strip(FrameView("chunk", b'{"type": "message_stop"}')) is DROP, "inside an envelope"
    assert ending.strip(FrameView(None, b'{"type":"message_delta"}')) is None
    assert ending.strip(FrameView(None, b"not json")) is None
    several = Ending.frames("a terminal response event", "response.completed", "response.failed")
    assert several.strip is not None
    assert several.strip(FrameView("response.failed", b"{}")) is DROP
    assert several.strip(FrameView("a terminal response event", b"{}")) is None, "the marker's name is only a name"


def test_the_base64_envelope_opens_and_seals_keeping_the_other_members() -> None:
    envelope = Base64Field()
    payload = json.dumps({"bytes": base64.b64encode(b'{"type":"ping"}').decode(), "p": "abc"}).encode()
    assert envelope.open(payload) == b'{"type":"ping"}'
    sealed = json.loads(envelope.seal(b'{"type":"pong"}', payload))
    assert sealed == {"bytes": base64.b64encode(b'{"type":"pong"}').decode(), "p": "abc"}
    for hostile in (b"not json", b"[]", b'{"bytes": 5}', b'{"bytes": "%%%"}', b'{"other": "eA=="}'):
        assert envelope.open(hostile) is None, hostile


def test_terminal_edits_reach_inside_the_envelope_and_reframe_with_valid_crcs() -> None:
    body = load(RECORDINGS / "claude_invoke_text.jsonl").interactions[0].response.body
    profile = WireProfile(
        api="claude-invoke-test",
        framing=AWS_EVENTSTREAM,
        ending=Ending.frames("message_stop"),
        envelope=Base64Field(),
    )
    [(start, end, replacement)] = profile.terminal_edits(body)
    assert replacement == b"", "the chunk that carries message_stop is dropped, envelope and all"
    assert end == len(body)
    inner = [payload for _, payload in profile.frames(body[:start])]
    assert [json.loads(item or b"")["type"] for item in inner][-2:] == ["content_block_stop", "message_delta"]
    span, payload = profile.frames(body)[2]
    assert payload is not None
    s, e, rewritten = profile.rewrite(span, payload[:10])
    assert (s, e) == (span.start, span.end)
    outer = json.loads(decode_message(rewritten).payload)
    assert base64.b64decode(outer["bytes"]) == payload[:10]
    assert "p" in outer, "the envelope's other members stay"


def test_an_ending_that_rewrites_a_frame() -> None:
    def strip(frame: FrameView) -> bytes | None:
        value = frame.fields()
        return FrameView.encode({**value, "done": False}) if value.get("done") else None

    profile = WireProfile(api="x", framing=NDJSON, ending=Ending('"done": true', strip))
    body = b'{"a":1}\n{"done":true,"n":2}\n'
    assert profile.terminal_edits(body) == [(8, len(body), b'{"done":false,"n":2}\n')]
    assert WireProfile(api="x", framing=NDJSON, ending=Ending("done")).terminal_edits(body) == []


def test_built_in_profiles_are_found_by_api_name_through_the_entry_points() -> None:
    found = known_profiles()
    for api in ("anthropic-messages", "openai-completions", "openai-responses", "google-generative-ai"):
        assert found[api].api == api
        assert found[api].framing is SSE
        assert profile_for(api) is found[api]
    assert profile_for(None) is None
    assert profile_for("carrier-pigeon") is None


class _EntryPoint:
    def __init__(self, name: str, value: str) -> None:
        self.name, self.value = name, value

    def load(self) -> object:
        if self.value == "boom":
            raise RuntimeError("the plugin failed at import")
        return WireProfile(api=self.value)


@pytest.fixture
def entry_points(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    entries = [_EntryPoint("good", "plugin-api"), _EntryPoint("broken", "boom")]

    def listed(*, group: str) -> list[_EntryPoint]:
        return entries if group == "streamfns.adapters" else []

    monkeypatch.setattr(importlib.metadata, "entry_points", listed)
    monkeypatch.setattr(wire_registry, "_problems", [])
    wire_registry._load_entry_points.cache_clear()  # pyright: ignore[reportPrivateUsage]
    yield
    wire_registry._load_entry_points.cache_clear()  # pyright: ignore[reportPrivateUsage]


@pytest.mark.usefixtures("entry_points")
def test_a_broken_entry_point_is_reported_never_raised_and_a_registered_profile_wins() -> None:
    found = profile_for("plugin-api")
    assert found is not None
    assert found.framing is SSE
    assert any("'broken'" in problem and "failed at import" in problem for problem in profile_problems())
    mine = WireProfile(api="plugin-api", framing=NDJSON)
    register_profile(mine)
    try:
        assert profile_for("plugin-api") is mine
        assert known_profiles()["plugin-api"] is mine
    finally:
        wire_registry._registered.pop("plugin-api")  # pyright: ignore[reportPrivateUsage]
    with pytest.raises(TypeError, match="expected a WireProfile"):
        register_profile("plugin-api")  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize(
    ("content_type", "framing"),
    [
        ("text/event-stream; charset=utf-8", SSE),
        ("application/x-ndjson", NDJSON),
        ("APPLICATION/JSONL", NDJSON),
        ("application/vnd.amazon.eventstream", AWS_EVENTSTREAM),
        ("application/json", None),
        (None, None),
    ],
)
def test_a_content_type_names_its_framing(content_type: str | None, framing: object) -> None:
    assert framing_for(content_type) is framing


def test_each_framing_accepts_its_own_types_and_refuses_documents() -> None:
    assert NDJSON.accepts("application/x-ndjson")
    assert not SSE.accepts("application/x-ndjson"), "a JSON type is a document to the SSE framing"
    for framing in (SSE, NDJSON, AWS_EVENTSTREAM):
        assert framing.accepts("")
        assert framing.accepts("text/plain")
        for document in ("application/json", "text/html; charset=utf-8", "application/problem+json", "text/xml"):
            assert not framing.accepts(document), (framing, document)


def test_the_sse_splitter_drops_a_leading_bom_as_the_decoder_does() -> None:
    [span] = SSE.spans(b"\xef\xbb\xbfevent: message_stop\ndata: {}\n\n")
    assert (span.name, span.payload) == ("message_stop", b"{}")
    assert Ending.frames("message_stop").strip(FrameView(span.name, span.payload or b"")) is DROP  # pyright: ignore[reportOptionalCall]


@pytest.mark.usefixtures("entry_points")
def test_a_second_entry_point_for_an_api_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    entries = [_EntryPoint("first", "plugin-api"), _EntryPoint("second", "plugin-api")]
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda *, group: entries)  # pyright: ignore[reportUnknownLambdaType, reportUnknownArgumentType]
    wire_registry._load_entry_points.cache_clear()  # pyright: ignore[reportPrivateUsage]
    assert profile_for("plugin-api") is not None
    assert any("'second' declares api 'plugin-api' a second time" in problem for problem in profile_problems())
