"""Cassette tools on bodies that are not server-sent events: JSON lines and the AWS event stream,
with a payload envelope. Framing, terminal marker and error bodies come from the adapter's wire
profile (``--adapter`` for one no installed package declares), never from an api name."""

from __future__ import annotations

import base64
import dataclasses
import json
from pathlib import Path

import jiter
import pytest
from botocore.eventstream import EventStreamBuffer  # pyright: ignore[reportMissingTypeStubs]

from cassettes import CassetteError, corrupt_json, drop_terminal, load, rechunk, resolve_profile, save, status_override
from cassettes.cli import main
from normalize.wire import AWS_EVENTSTREAM, NDJSON, Ending, profile_for
from tests.conformance._framed import CLAUDE_INVOKE_WIRE, CONVERSE_WIRE

ROOT = Path(__file__).resolve().parents[2]
NDJSON_TEXT = ROOT / "examples/ndjson_chat/cassettes/text.jsonl"
RECORDINGS = ROOT / "tests/conformance/recordings"


def _botocore(body: bytes) -> list[tuple[str, bytes]]:
    buffer = EventStreamBuffer()
    buffer.add_data(body)  # pyright: ignore[reportUnknownMemberType]
    return [(str(message.headers[":event-type"]), bytes(message.payload)) for message in buffer]  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]


def _inner_types(body: bytes) -> list[str]:
    return [json.loads(base64.b64decode(json.loads(payload)["bytes"]))["type"] for _, payload in _botocore(body)]


def test_show_cuts_json_lines_into_lines_and_marks_the_declared_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(NDJSON_TEXT), "--adapter", "examples.ndjson_chat:ADAPTER", "--width", "400"]) == 0
    out = capsys.readouterr().out
    assert "text: api=ndjson-chat model=gemma3:1b recorded_at=None framing=ndjson" in out
    assert 'line {"model":"gemma3:1b"' in out
    marked = [line for line in out.splitlines() if "<- terminal marker" in line]
    assert len(marked) == 1
    assert '"done":true' in marked[0]


def test_show_without_a_declaration_reads_the_framing_from_the_content_type(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cut.jsonl"
    save(rechunk(load(NDJSON_TEXT), 50), path)
    assert main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "framing=ndjson" in out
    assert "(inside a line)" in out
    assert "<- terminal marker" not in out, "no profile is declared for ndjson-chat: nothing to mark"


def test_show_names_event_stream_messages_and_their_payloads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cut.jsonl"
    save(rechunk(load(RECORDINGS / "converse_text.jsonl"), 7), path)
    assert main(["show", str(path), "--adapter", "tests.conformance._framed:CONVERSE_WIRE"]) == 0
    out = capsys.readouterr().out
    assert "framing=aws-eventstream" in out
    assert 'messageStart {"p":"abcde","role":"assistant"}' in out
    assert "(inside a message)" in out
    assert "messageStop" in next(line for line in out.splitlines() if "<- terminal marker" in line)


def test_drop_terminal_reaches_inside_the_envelope_and_recomputes_the_crcs(tmp_path: Path) -> None:
    source = RECORDINGS / "claude_invoke_text.jsonl"
    out = tmp_path / "no-stop.jsonl"
    command = ["mutate", str(source), "--op", "drop-terminal", "-o", str(out)]
    assert main([*command, "--adapter", "tests.conformance._framed:CLAUDE_INVOKE_WIRE"]) == 0
    before = load(source).interactions[0].response.body
    after = load(out).interactions[0].response.body
    assert _inner_types(before)[-1] == "message_stop"
    assert _inner_types(after) == _inner_types(before)[:-1], "botocore reads every other message unchanged"
    assert profile_for("claude-invoke-test") is None, "--adapter is used for the command, not registered"


def test_without_a_declaration_drop_terminal_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = RECORDINGS / "claude_invoke_text.jsonl"
    assert main(["mutate", str(source), "--op", "drop-terminal", "-o", str(tmp_path / "x.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "does not know the terminal marker of api 'claude-invoke-test': no installed adapter declares it" in err
    assert main(["mutate", str(source), "--op", "drop-terminal", "-o", "x", "--adapter", "nope:X"]) == 2
    assert "--adapter nope:X: ModuleNotFoundError" in capsys.readouterr().err
    assert main(["mutate", str(source), "--op", "empty-body", "-o", "x", "--adapter", "json:dumps"]) == 2
    assert "declares no wire profile" in capsys.readouterr().err


def test_corrupt_json_breaks_the_inner_payload_and_keeps_the_framing_valid() -> None:
    cassette = load(RECORDINGS / "claude_invoke_text.jsonl")
    broken = corrupt_json(cassette, 2, profile=CLAUDE_INVOKE_WIRE.profile).interactions[0].response.body
    messages = _botocore(broken)  # every CRC checks out
    assert len(messages) == len(_botocore(cassette.interactions[0].response.body))
    inner = base64.b64decode(json.loads(messages[2][1])["bytes"])
    with pytest.raises(ValueError, match="EOF while parsing"):
        jiter.from_json(inner)
    assert "p" in json.loads(messages[2][1]), "the envelope keeps its padding"
    lines = load(NDJSON_TEXT)
    cut = corrupt_json(lines, -1).interactions[0].response.body.splitlines()
    assert len(cut) == len(lines.interactions[0].response.body.splitlines())
    with pytest.raises(ValueError, match="EOF while parsing"):
        jiter.from_json(cut[-1])


def test_an_injected_error_reads_like_the_vendors_with_the_headers_that_carry_it() -> None:
    cassette = load(RECORDINGS / "converse_text.jsonl")
    response = status_override(cassette, 429, profile=CONVERSE_WIRE.profile).interactions[0].response
    headers = dict(response.headers)
    assert headers["x-amzn-errortype"].startswith("ThrottlingException:")
    assert headers["retry-after"] == "1"
    assert json.loads(response.body) == {"message": "Too Many Requests (injected by a cassette mutation)"}


def test_resolve_profile_falls_back_to_the_recorded_content_type() -> None:
    assert resolve_profile(load(NDJSON_TEXT)).framing is NDJSON
    assert resolve_profile(load(RECORDINGS / "converse_text.jsonl")).framing is AWS_EVENTSTREAM
    assert resolve_profile(load(RECORDINGS / "converse_text.jsonl"), profile=CONVERSE_WIRE.profile).ending is not None
    with pytest.raises(CassetteError, match="found no terminal marker for api 'converse-test'"):
        drop_terminal(
            drop_terminal(load(RECORDINGS / "converse_text.jsonl"), profile=CONVERSE_WIRE.profile),
            profile=CONVERSE_WIRE.profile,
        )


def test_a_declaration_whose_code_fails_is_one_line_of_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = RECORDINGS / "claude_invoke_text.jsonl"
    argv = ["mutate", str(source), "--op", "drop-terminal", "-o", str(tmp_path / "x.jsonl")]
    assert main([*argv, "--adapter", "tests.cassettes.test_cassette_framings:BROKEN"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "cassettes: error: reading the cassette with the api's wire profile failed: ZeroDivisionError"
    )
    assert "Traceback" not in err


def _broken_strip(frame: object) -> None:
    raise ZeroDivisionError("the strip function's own bug")


BROKEN = dataclasses.replace(CLAUDE_INVOKE_WIRE.profile, ending=Ending("message_stop", _broken_strip))  # pyright: ignore[reportArgumentType]


def test_every_profile_dependent_op_names_the_api_it_reads_the_cassette_as() -> None:
    from cassettes import mutation_specs

    for spec in (
        "corrupt-json:2,api=acme/chat",
        "stream-error:after=3,api=acme/chat",
        "status:429,api=acme/chat",
        "drop-terminal:api=acme/chat",
    ):
        assert mutation_specs.parse(spec).spec == spec
    with pytest.raises(CassetteError, match="is not an api name"):
        mutation_specs.parse("status:429,api=a=b")
