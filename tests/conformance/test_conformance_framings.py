"""The harness on adapters whose bodies are not server-sent events: JSON lines and the AWS event stream
(with a trailer after the marker, with a payload envelope). Each good adapter gets a plain verdict,
and each broken twin is caught by the checks its defect breaks."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import conformance
from cassettes import Chunk, load, save
from conformance.checks import PROCESS_ONLY
from conformance.cli import main
from normalize.wire import Ending, ErrorSample
from tests.conformance._framed import Defect, claude_invoke_target, converse_target, ndjson_target

pytestmark = pytest.mark.slow
TEXT = Path(__file__).resolve().parents[2] / "examples" / "ndjson_chat" / "cassettes" / "text.jsonl"


def _statuses(report: conformance.Report) -> dict[str, str]:
    return {result.id: result.status for result in report.results}


async def test_the_ndjson_example_is_plainly_conformant() -> None:
    report = await conformance.run(ndjson_target())
    assert report.verdict == "conformant", report.to_text()
    assert set(_statuses(report).values()) == {"pass"}
    assert len(report.results) == len(conformance.CHECK_IDS) - len(PROCESS_ONLY)


async def test_an_event_stream_adapter_with_a_trailer_and_a_signer_is_plainly_conformant() -> None:
    report = await conformance.run(converse_target())
    assert report.verdict == "conformant", report.to_text()
    assert set(_statuses(report).values()) == {"pass"}


async def test_an_enveloped_event_stream_adapter_is_conformant_for_what_it_declares() -> None:
    report = await conformance.run(claude_invoke_target())
    statuses = _statuses(report)
    assert report.verdict == "conformant-with-limitations", report.to_text()
    assert {check for check, status in statuses.items() if status != "pass"} == {"P3", "P4", "U1"}
    assert {statuses[check] for check in ("P3", "P4", "U1")} == {"unsupported"}, "only what it does not declare"


@pytest.mark.parametrize(
    ("target", "defect", "caught"),
    [
        ("ndjson", "eof_is_success", ["T1", "M4", "R2"]),
        ("ndjson", "skips_bad_chunks", ["M3"]),
        ("converse", "done_at_marker", ["U1", "T1"]),
        ("converse", "eof_is_success", ["T1", "M4", "R2"]),
        ("claude_invoke", "skips_bad_chunks", ["M3"]),
        ("ndjson", "misreads_vendor_errors", ["V1"]),
        ("converse", "misreads_vendor_errors", ["V1"]),
    ],
)
async def test_each_broken_twin_is_caught_by_the_checks_its_defect_breaks(
    target: str, defect: Defect, caught: list[str]
) -> None:
    make = {"ndjson": ndjson_target, "converse": converse_target, "claude_invoke": claude_invoke_target}[target]
    report = await conformance.run(make(defect), checks=["P1", "U1", "T1", "M1", "M3", "M4", "V1", "R2"])
    assert report.failing == caught, report.to_text()
    assert report.verdict == "non-conformant"


async def test_the_trailer_cut_is_what_catches_an_adapter_that_stops_at_the_marker() -> None:
    report = await conformance.run(converse_target("done_at_marker"), checks=["T1"])
    [t1] = report.results
    # The cuts before the marker pass; only the cut between messageStop and its metadata trailer fails.
    assert {item.scenario.rpartition("|")[0] for item in t1.evidence} == {
        "converse_text",
        "converse_tool",
        "converse_parallel",
        "converse_thinking",
    }
    assert all("got done(" in item.detail for item in t1.evidence)
    assert len(t1.evidence) == 4


async def test_a_profile_that_cannot_take_its_marker_out_gets_a_thinner_run_with_cuts_on_line_boundaries() -> None:
    target = ndjson_target()
    assert target.profile is not None
    bare = dataclasses.replace(target.profile, ending=Ending('"done": true'))
    report = await conformance.run(dataclasses.replace(target, profile=bare))
    statuses = _statuses(report)
    assert statuses.pop("M4") == "unsupported"
    assert statuses.pop("V1") == "pass", "the in-stream error is still declared"
    assert set(statuses.values()) == {"pass"}, report.to_text()
    [m4] = [result for result in report.results if result.id == "M4"]
    assert "needs the api's wire profile to say how its stream ends" in (m4.reason or "")


def test_the_cli_takes_any_api_and_reads_the_framing_from_the_recordings(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["run", "examples.ndjson_chat.adapter:stream_ndjson_chat", "--api", "ndjson-chat"]
    flags = ["--tools", "--parallel-tools", "--thinking", "--usage", "--images", "--retries"]
    assert main([*argv, *flags, "--cassettes", "examples/ndjson_chat/cassettes"]) == 0
    out = capsys.readouterr().out
    assert "api ndjson-chat" in out
    assert "verdict: conformant-with-limitations (31 pass, 2 unsupported" in out, out
    assert "M4   unsupported" in out
    assert "V1   unsupported" in out, "nobody declares the api: its in-stream error is unknown"


def test_the_cli_says_which_apis_have_bundled_recordings(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "examples.ndjson_chat.adapter:stream_ndjson_chat", "--api", "carrier-pigeon"]) == 2
    err = capsys.readouterr().err
    assert "no recordings to replay: pass --cassettes PATH" in err
    assert "anthropic-messages" in err
    assert "google-generative-ai" in err


async def test_a_one_line_reply_still_gets_a_vendor_error_first_and_no_false_verdicts(tmp_path: Path) -> None:
    """A reply whose only frame carries the marker: V1 sends its error before it, R2 cuts the marker
    out of it; a declared error body that leaves the vendor's message out is not held against H1."""
    reply = {"model": "m", "message": {"role": "assistant", "content": "Hi"}, "done": True, "done_reason": "stop"}
    line = json.dumps({**reply, "prompt_eval_count": 3, "eval_count": 1}).encode() + b"\n"
    text = load(TEXT)
    response = dataclasses.replace(text.interactions[0].response, chunks=(Chunk(line, 0.0),))
    save(
        dataclasses.replace(text, interactions=(dataclasses.replace(text.interactions[0], response=response),)),
        tmp_path / "text.jsonl",
    )
    target = ndjson_target()
    assert target.profile is not None

    def without_the_message(status: int, message: str) -> ErrorSample:
        return ErrorSample(b'{"error":"no"}')

    quiet = dataclasses.replace(target.profile, error_body=without_the_message)
    report = await conformance.run(
        dataclasses.replace(target, cassettes=tmp_path, profile=quiet), checks=["P1", "V1", "R2", "H1"]
    )
    assert {result.id: result.status for result in report.results} == dict.fromkeys(["P1", "V1", "R2", "H1"], "pass"), (
        report.to_text()
    )
