"""Which recording serves each declared feature, said in the report — and a feature no recording shows
is not examined (P2–P4 ``unsupported`` with the reason), never passed on some other replay."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path

import pytest

import conformance
from cassettes import load, save
from conformance import Capabilities, Target
from conformance.cli import main as harness_main
from conformance.report import report_json_text
from examples.ndjson_chat import ADAPTER as NDJSON
from examples.ndjson_chat.adapter import WIRE as NDJSON_WIRE
from normalize.wire import FEATURES
from streamfns.openai_responses import stream_openai_responses

pytestmark = pytest.mark.parallel  # loopback replays: no clock is read for a verdict

CASSETTES = Path(__file__).resolve().parents[2] / "examples" / "ndjson_chat" / "cassettes"
REPLAYS = ["P1", "P2", "P3", "P4"]


def _copy(tmp_path: Path, renames: Mapping[str, tuple[str, str | None]]) -> Path:
    """The example's four cassettes in ``tmp_path``: feature → (file stem, header name) for the renamed
    ones (a None header name: none); the others as they are."""
    for source in sorted(CASSETTES.glob("*.jsonl")):
        cassette = load(source)
        stem, header = renames.get(source.stem, (source.stem, cassette.name))
        extra = {key: value for key, value in cassette.extra.items() if key != "name"}
        if header is not None:
            extra["name"] = header
        save(dataclasses.replace(cassette, extra=extra), tmp_path / f"{stem}.jsonl")
    return tmp_path


def _target(cassettes: Path, **recordings: str) -> Target:
    """The NDJSON example adapter replaying ``cassettes``, its recordings map replaced by ``recordings``."""
    wire = dataclasses.replace(NDJSON_WIRE, recordings=recordings)
    return dataclasses.replace(Target.from_adapter(NDJSON), cassettes=cassettes, profile=wire.profile)


async def test_a_feature_no_recording_shows_is_not_examined_and_the_report_says_why(tmp_path: Path) -> None:
    # The tool-call cassette is named neither as the map names it nor after its feature; the parallel
    # one still holds tool calls, which the old fallback ("some replay shows one") took as a pass of P3.
    folder = _copy(tmp_path, {"parallel": ("calls", "calls")})
    report = await conformance.run(_target(folder, text="text", parallel="my-parallel"), checks=REPLAYS)
    p3 = report.result("P3")
    assert p3.status == "unsupported"
    assert p3.limitation
    assert p3.reason.startswith("not examined: no recording shows parallel")
    assert "'my-parallel'" in p3.reason
    assert report.result("P2").status == "pass", "the tool cassette is named after its feature"
    assert report.verdict == "conformant-with-limitations"
    served = {source.feature: source for source in report.features}
    assert served["parallel"].recording is None
    assert "the api's recordings map names 'my-parallel' for it" in served["parallel"].problem
    assert "parallel: no recording — the api's recordings map names 'my-parallel'" in report.to_text()
    features = json.loads(report_json_text(report))["features"]
    assert {key: features[2][key] for key in ("feature", "recording", "source", "matchedBy", "detail")} == {
        "feature": "parallel",
        "recording": None,
        "source": None,
        "matchedBy": None,
        "detail": "",
    }
    assert features[2]["wanted"] == ["my-parallel", "parallel"]


async def test_without_a_tool_recording_p2_is_not_passed_on_other_replays(tmp_path: Path) -> None:
    folder = _copy(tmp_path, {"tool": ("calls", "calls"), "parallel": ("more-calls", "more-calls")})
    report = await conformance.run(_target(folder), checks=REPLAYS)
    assert report.result("P2").status == "unsupported"
    assert "no recording shows tool" in report.result("P2").reason
    assert report.result("P3").status == "unsupported"
    assert report.result("P1").status == "pass"
    assert report.result("P4").status == "pass"


async def test_a_file_name_serves_a_feature_when_the_header_name_differs_and_the_report_says_so(
    tmp_path: Path,
) -> None:
    folder = _copy(tmp_path, {"tool": ("tool", "llama-weather-call")})
    report = await conformance.run(_target(folder), checks=REPLAYS)
    assert report.result("P2").status == "pass"
    served = {source.feature: source for source in report.features}
    assert served["tool"].recording == "llama-weather-call"
    assert served["tool"].via == "its file name tool.jsonl (its header names it 'llama-weather-call')"
    assert served["tool"].source == "tool.jsonl", "relative to the folder given: the same on every machine"
    assert served["tool"].matched_by == "file"
    assert served["text"].via == "its header name"
    assert "tool: llama-weather-call, by its file name tool.jsonl" in report.to_text()


async def test_a_header_name_wins_over_another_cassettes_file_name(tmp_path: Path) -> None:
    # a.jsonl is named "tool" in its header; tool.jsonl's header says "b": the header name serves.
    folder = _copy(tmp_path, {"tool": ("a", "tool"), "parallel": ("tool", "b")})
    report = await conformance.run(_target(folder), checks=["P1", "P2"])
    served = {source.feature: source for source in report.features}
    assert (served["tool"].recording, served["tool"].via) == ("tool", "its header name")
    assert served["tool"].source == "a.jsonl"
    assert served["tool"].matched_by == "name"


async def test_a_bundled_pick_the_library_lacks_is_named_in_the_report() -> None:
    # The Responses profile names its own hand-edited cassette for parallel calls: no bundled body has
    # two calls in one response, so a run on the bundled recordings alone cannot examine P3.
    capabilities = Capabilities.every_feature("openai-responses")
    report = await conformance.run(stream_openai_responses, capabilities=capabilities, checks=["P1", "P3"])
    assert report.result("P3").status == "unsupported"
    assert "which the installed library does not hold" in report.result("P3").reason
    served = {source.feature: source for source in report.features}
    assert served["text"].via == "the bundled recording the wire profile names"
    assert served["parallel"].wanted == ("pai__parallel_function_calls_gpt4o_HANDEDITED",)


def test_the_command_line_reports_what_served_each_feature_of_its_cassettes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _copy(tmp_path / "cassettes", {"thinking": ("reasoning", "reasoning")})
    written = tmp_path / "report.json"
    argv = ["run", "examples.ndjson_chat:ADAPTER", "--cassettes", str(folder), "--checks", *REPLAYS]
    status = harness_main([*argv, "--format", "json", "--report", str(written)])
    out = capsys.readouterr().out
    assert status == 0  # a limitation, not a failure
    assert "thinking: no recording — the api's recordings map names 'thinking' for it" in out
    assert "P4   unsupported   pi        the thinking recording yields a thinking block     not examined" in out
    data = json.loads(written.read_text(encoding="utf-8"))
    assert data["verdict"] == "conformant-with-limitations"
    assert [item["feature"] for item in data["features"]] == ["text", "tool", "parallel", "thinking"]
    assert data["features"][3]["problem"] == (
        "the api's recordings map names 'thinking' for it; no cassette given is named 'thinking' "
        "(by its header name or its file name)"
    )
    assert (data["features"][0]["matchedBy"], data["features"][0]["detail"]) == ("name", "its header name")
    assert data["features"][0]["source"] == "text.jsonl"


async def test_cassettes_none_of_which_is_named_for_a_feature_are_said_to_be_so(tmp_path: Path) -> None:
    renames = {feature: (f"recording-{number}", f"recording-{number}") for number, feature in enumerate(FEATURES)}
    report = await conformance.run(_target(_copy(tmp_path, renames)), checks=REPLAYS)
    assert report.ids("unsupported") == ["P2", "P3", "P4"]
    text, *others = report.features
    assert text.recording == "recording-0", "the text checks take the first recording"
    assert text.via.startswith("being the first recording (no cassette given is named 'text'")
    assert [(source.recording, source.problem) for source in others] == [
        (None, f"no cassette given is named {feature!r} (by its header name or its file name)")
        for feature in ("tool", "parallel", "thinking")
    ]
