"""Each of P2–P4 is judged on the recording picked for its own feature — P2 on the ``tool`` one, never on
a parallel-calls recording not named for it — one recording may serve several features, and the
report says so consistently: in its features section, its checks' reasons and its JSON."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import conformance
from cassettes import library
from conformance import Capabilities
from conformance.recordings import library_recordings
from conformance.report import report_json_text
from normalize.wire import profile_for
from tests.conformance.test_conformance_features import REPLAYS, _copy, _target  # pyright: ignore[reportPrivateUsage]

pytestmark = pytest.mark.parallel  # loopback replays: no clock is read for a verdict


async def test_p2_is_not_examined_on_a_parallel_recording_and_the_report_says_why(tmp_path: Path) -> None:
    # The tool-call cassette is named for nothing; the parallel one holds tool calls, which P2 used
    # to pass on while the features section said tool had no recording.
    folder = _copy(tmp_path, {"tool": ("calls", "calls")})
    report = await conformance.run(_target(folder), checks=REPLAYS)
    p2 = report.result("P2")
    assert (p2.status, p2.limitation) == ("unsupported", True)
    assert p2.reason.startswith("not examined: no recording shows tool (")
    assert report.result("P3").status == "pass", "the parallel recording is P3's"
    assert report.verdict == "conformant-with-limitations"
    served = {source.feature: source for source in report.features}
    assert served["tool"].recording is None
    assert "the parallel-calls recording 'parallel' serves tool only when named for it too" in served["tool"].problem
    assert served["parallel"].also == ()


async def test_one_cassette_named_for_two_features_serves_both(tmp_path: Path) -> None:
    # The map names the parallel cassette for tool too; the example's own tool cassette is renamed away.
    folder = _copy(tmp_path, {"tool": ("x", "x")})
    target = _target(folder, text="text", tool="parallel", parallel="parallel", thinking="thinking")
    report = await conformance.run(target, checks=REPLAYS)
    assert {check: report.result(check).status for check in REPLAYS} == dict.fromkeys(REPLAYS, "pass")
    assert report.verdict == "conformant"
    served = {source.feature: source for source in report.features}
    assert (served["tool"].recording, served["tool"].matched_by, served["tool"].also) == (
        "parallel",
        "name",
        ("parallel",),
    )
    assert (served["parallel"].recording, served["parallel"].problem) == ("parallel", "")
    assert served["parallel"].also == ("tool",)
    text = report.to_text()
    assert "  tool: parallel, by its header name (it serves parallel too)" in text
    assert "no cassette given is named 'parallel'" not in text
    assert report.recordings.count("parallel") == 1, "replayed once"


def test_a_bundled_recording_named_for_two_features_is_one_recording_serving_both() -> None:
    # Before: two recordings of one name, and a golden replay keyed twice.
    name = "llma__parallel_tool_use_x2_haiku45"
    assert name in library.names()
    profile = profile_for("anthropic-messages")
    assert profile is not None
    both = dataclasses.replace(profile, recordings={**profile.recordings, "tool": name, "parallel": name})
    found = library_recordings(Capabilities.every_feature("anthropic-messages"), both)
    names = [recording.name for recording in found]
    assert len(names) == len(set(names))
    (shared,) = [recording for recording in found if recording.name == name]
    assert shared.features == ("tool", "parallel")
    assert [pick.by for pick in shared.picks] == ["library", "library"]


async def test_the_json_features_say_how_as_a_token_and_where_as_a_stable_path(tmp_path: Path) -> None:
    folder = _copy(tmp_path / "deep" / "cassettes", {"tool": ("tool", "llama-weather-call")})
    report = await conformance.run(_target(folder), checks=["P1", "P2"])
    features = {item["feature"]: item for item in json.loads(report_json_text(report))["features"]}
    assert features["tool"] == {
        "feature": "tool",
        "recording": "llama-weather-call",
        "source": "tool.jsonl",
        "matchedBy": "file",
        "detail": "its file name tool.jsonl (its header names it 'llama-weather-call')",
        "also": [],
        "wanted": ["tool"],
        "problem": "",
    }
    assert features["text"]["matchedBy"] == "name"
    assert str(tmp_path) not in json.dumps(features), "no machine's own path"


async def test_a_recording_named_for_no_text_serves_it_first_and_says_so(tmp_path: Path) -> None:
    folder = _copy(tmp_path, {"text": ("hello", "hello")})
    report = await conformance.run(_target(folder), checks=["P1"])
    features = json.loads(report_json_text(report))["features"]
    assert features[0]["feature"] == "text"
    assert features[0]["matchedBy"] == "first"
    assert features[0]["detail"].startswith("being the first recording (")


async def test_a_line_break_in_a_cassette_name_is_escaped_in_the_features_section(tmp_path: Path) -> None:
    # textwrap turned the raw line break into a space before the report escaped anything.
    folder = _copy(tmp_path, {"tool": ("tool", "weather\ncall")})
    report = await conformance.run(_target(folder), checks=["P1", "P2"])
    text = report.to_text()
    assert "  tool: weather\\x0acall, by its file name tool.jsonl" in text
    assert "weather call" not in text


def test_the_harness_version_says_p2_to_p4_changed() -> None:
    assert conformance.__version__ == "0.2.0"
