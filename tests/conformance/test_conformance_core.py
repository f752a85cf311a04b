"""The harness's own parts: declarations, target resolution, recordings, the loopback server,
the verdict rule, the renderers, and the Python-level checks on tiny adapters without HTTP."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import conformance
import conformance.session
from cassettes import library, load, save, use_cassette
from cassettes.mutations import status_override
from conformance import Capabilities, CheckResult, Limits, LoopbackServer, Report, Scripted, Target
from conformance.plans import plan
from conformance.recordings import load_recordings
from conformance.targets import FAUX_CAPABILITIES, builtin_targets, faux_target
from normalize import Context, Model, StreamOptions, UserMessage
from normalize.wire import FEATURES, known_profiles
from streamfns.anthropic import ADAPTER, stream_anthropic
from streamfns.faux import FauxProvider
from tests.conformance._fakes import NO_HTTP, TARGETS, well_behaved

QUICK = Limits(scenario_deadline_s=0.3)
#: The Anthropic adapter as its declaration gives it to the harness.
anthropic = Target.from_adapter(ADAPTER)


# -- declarations and arguments ---------------------------------------------------------------------


def test_capabilities_take_any_api_name_but_reject_an_empty_one_and_parallel_tools_without_tools() -> None:
    assert Capabilities(api="carrier-pigeon").api == "carrier-pigeon"  # a third party's api: any name
    assert Capabilities(api="acme/ndjson-chat.v2").api == "acme/ndjson-chat.v2"
    for bad in (" ", "", "two words", "a,b", "a+b", "a=b"):
        with pytest.raises(ValueError, match="api must be a name"):
            Capabilities(api=bad)
    with pytest.raises(ValueError, match="parallel_tool_calls=True needs tool_calls=True"):
        Capabilities(parallel_tool_calls=True)
    assert Capabilities().lacks("terminal")
    assert not Capabilities().lacks("http")
    assert Capabilities(http=False).lacks("http")


async def test_an_xfail_needs_a_written_reason() -> None:
    with pytest.raises(ValueError, match="xfail for G1 needs a written reason"):
        await conformance.run(well_behaved, capabilities=NO_HTTP, xfail={"G1": "  "})


async def test_unknown_check_ids_are_rejected() -> None:
    with pytest.raises(ValueError, match="unknown check id"):
        await conformance.run(well_behaved, capabilities=NO_HTTP, checks=["G9"])
    with pytest.raises(ValueError, match="unknown check id"):
        await conformance.run(well_behaved, capabilities=NO_HTTP, xfail={"Z1": "no such check"})


async def test_capabilities_are_required_unless_the_target_carries_them() -> None:
    with pytest.raises(TypeError, match="needs capabilities"):
        await conformance.run(well_behaved)


async def test_an_http_adapter_without_recordings_is_a_usage_error() -> None:
    with pytest.raises(ValueError, match="no recordings to replay"):
        await conformance.run(well_behaved, capabilities=Capabilities())


def test_factories_and_stream_fns_are_told_apart_by_signature() -> None:
    assert conformance.is_factory(faux_target)
    assert conformance.is_factory(FauxProvider)  # a class whose constructor has defaults
    assert not conformance.is_factory(well_behaved)
    assert not conformance.is_factory(FauxProvider())  # an instance: __call__(model, context, ...)


def test_check_ids_are_unique_and_documented() -> None:
    assert len(set(conformance.CHECK_IDS)) == len(conformance.CHECK_IDS)
    for check in conformance.CHECKS:
        assert check.title
        assert len(check.troubleshooting) > 80, check.id


# -- recordings -----------------------------------------------------------------------------------


def test_every_declared_recording_is_bundled_and_successful() -> None:
    names = set(library.names())
    profiles = known_profiles()
    targets = builtin_targets()
    assert {"anthropic-messages", "openai-completions", "openai-responses", "google-generative-ai"} <= set(profiles)
    for api, profile in profiles.items():
        assert set(profile.recordings) == {"text", "tool", "parallel", "thinking"}, api
        for feature, name in profile.recordings.items():
            if name not in names:
                # No bundled body shows the feature (Responses: two calls in one response): then it is
                # one of the adapter's own cassettes, which the harness replays in place of the library.
                own = targets[api].cassettes
                assert isinstance(own, tuple), (api, feature, name)
                paths = [path for path in own if isinstance(path, Path)]
                found = [cassette for cassette in map(load, paths) if cassette.name == name]
                assert [c.interactions[0].response.status for c in found] == [200], (api, feature, name)
                continue
            cassette = library.load(name)
            assert cassette.interactions[0].response.status == 200
            if name in library.names(api):
                continue
            # A recording of another api (Vertex declares the Messages recording of parallel calls) is
            # honest only when it is this api's bytes: the same framing and envelope, and this api's end
            # marker is in it.
            assert cassette.api is not None, (api, feature, name)
            other = profiles[cassette.api]
            assert (other.framing, other.envelope) == (profile.framing, profile.envelope), (api, feature, name)
            assert profile.terminal_edits(cassette.interactions[0].response.body), (api, feature, name)


def test_recordings_load_from_a_directory_keeping_only_successes(tmp_path: Path) -> None:
    good = library.load("llma__text_haiku45")
    save(good, tmp_path / "hello.jsonl")
    save(status_override(good, 429), tmp_path / "limited.jsonl")
    with pytest.raises(ValueError, match="no successful"):
        load_recordings(tmp_path / "limited.jsonl")
    recordings = load_recordings(tmp_path)
    assert [r.name for r in recordings] == ["llma__text_haiku45"]
    with pytest.raises(ValueError, match="does not exist"):
        load_recordings(tmp_path / "missing.jsonl")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match=r"no \*\.jsonl"):
        load_recordings(tmp_path / "empty")


def test_recordings_of_the_same_name_keep_apart_and_reproduce_from_their_own_file(tmp_path: Path) -> None:
    # Two cassettes named alike (same file stem, no name inside) in two folders: both replay, and
    # each scenario's reproduction command names its own file.
    texts = library.load("llma__text_haiku45")
    tools = library.load("vercel__text_then_tool_use_haiku45")
    for folder, cassette in (("a", texts), ("b", tools)):
        (tmp_path / folder).mkdir()
        unnamed = dataclasses.replace(cassette, extra={k: v for k, v in cassette.extra.items() if k != "name"})
        save(unnamed, tmp_path / folder / "hello.jsonl")
    recordings = load_recordings(tmp_path)
    assert [(r.name, Path(r.source or "").parent.name) for r in recordings] == [("a/hello", "a"), ("b/hello", "b")]
    session = conformance.session.Session(anthropic.capabilities, recordings, Limits())
    assert [scenario.key for scenario in session.golden()] == ["a/hello", "b/hello"]
    dropped = conformance.get_check("M4").scenarios(session)
    assert [scenario.key for scenario in dropped] == ["a/hello|drop-terminal", "b/hello|drop-terminal"]
    for scenario, folder in zip(dropped, "ab", strict=True):
        assert f"cassettes mutate {tmp_path / folder / 'hello.jsonl'} --op" in session.reproduce(scenario)
    same_file = load_recordings([tmp_path / "a" / "hello.jsonl", tmp_path / "a" / "hello.jsonl"])
    assert [r.name for r in same_file] == [f"{tmp_path / 'a' / 'hello'}", f"{tmp_path / 'a' / 'hello'}~2"]


@pytest.mark.slow
async def test_the_authors_own_cassettes_replace_the_library(tmp_path: Path) -> None:
    save(library.load("llma__text_haiku45"), tmp_path / "mine.jsonl")
    report = await conformance.run(anthropic, cassettes=tmp_path, checks=["P1", "M1", "M4", "D1"], name="anthropic")
    assert report.recordings == ("llma__text_haiku45",)
    assert report.ids("pass") == ["P1", "D1", "M1", "M4"], report.to_text()
    assert report.adapter == "anthropic"


# -- the loopback server --------------------------------------------------------------------------


async def _request(url: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Send one request and read its whole body; the connection is left open."""
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(b"POST /v1/x HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}")
    await writer.drain()
    await reader.readuntil(b"0\r\n\r\n")
    return reader, writer


async def _close(writer: asyncio.StreamWriter) -> None:
    writer.close()
    await writer.wait_closed()


async def test_a_connection_counts_as_released_only_when_the_client_closes_it() -> None:
    plan = Scripted(chunks=[(0.0, b"data: {}\n\n")])
    async with LoopbackServer(plan, linger_s=0.05) as server:
        _, prompt = await _request(server.base_url)
        await _close(prompt)
        reader, slow = await _request(server.base_url)
        # Past linger_s the server ends its side (the client reads EOF), but that is not a release...
        assert await asyncio.wait_for(reader.read(), 5) == b""
        first, second = server.requests
        await asyncio.wait_for(first.connection_closed.wait(), 5)
        assert not second.connection_closed.is_set()
        # ...the client's own close is, however late it comes.
        await _close(slow)
        await asyncio.wait_for(second.connection_closed.wait(), 5)
        assert first.received_at <= second.received_at
        assert first.path == "/v1/x"


async def test_a_refused_url_refuses() -> None:
    host, port = conformance.refused_url().removeprefix("http://").split(":")
    with pytest.raises(OSError):
        await asyncio.open_connection(host, int(port))


# -- the verdict and the renderers ------------------------------------------------------------------


def _report(*results: CheckResult) -> Report:
    return Report(adapter="x.y", harness_version="9.9.9", capabilities=anthropic.capabilities, results=results)


def test_the_verdict_rule() -> None:
    ok = CheckResult(id="G1", title="t", status="pass")
    transport = CheckResult(id="H1", title="t", status="unsupported", reason="no http", limitation=False)
    feature = CheckResult(id="P2", title="t", status="unsupported", reason="no tools", limitation=True)
    expected = CheckResult(id="C3", title="t", status="xfail", reason="known", limitation=True)
    failed = CheckResult(id="N1", title="t", status="fail", message="raised")
    broken = CheckResult(id="N2", title="t", status="harness-error", message="bug")
    assert _report(ok, transport).verdict == "conformant"
    assert _report(ok, feature).verdict == "conformant-with-limitations"
    assert _report(ok, expected).verdict == "conformant-with-limitations"
    assert _report(ok, expected, failed).verdict == "non-conformant"
    assert _report(ok, broken).verdict == "non-conformant"
    assert _report(ok, broken, failed).failing == ["N2", "N1"]


@pytest.mark.slow
async def test_reports_render_as_text_json_and_junit() -> None:
    report = await conformance.run(
        TARGETS["starts_twice"], checks=["G1", "G2", "H1"], xfail={"G2": "never fails, on purpose"}
    )
    assert report.harness_version == conformance.__version__ == "0.2.0"
    text = report.to_text()
    assert "G1   FAIL" in text
    assert "second start at event 1" in text
    assert "verdict: non-conformant" in text
    data = json.loads(json.dumps(report.to_json()))
    assert data["adapter"] == "tests.conformance._fakes.starts_twice"
    assert data["verdict"] == "non-conformant"
    g1 = data["results"][0]
    assert (g1["id"], g1["status"], g1["evidence"][0]["eventIndex"]) == ("G1", "fail", 1)
    suite = ET.fromstring(report.to_junit())
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("3", "2", "1")
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["harness_version"] == "0.2.0"
    assert properties["verdict"] == "non-conformant"
    assert [case.get("name", "").split()[0] for case in suite.iter("testcase")] == ["G1", "G2", "H1"]


@pytest.mark.slow
async def test_failing_evidence_quotes_the_streams_error_message_with_the_key_redacted() -> None:
    report = await conformance.run(TARGETS["fails_quoting_the_key"], checks=["P1", "S1"])
    assert report.failing == ["P1", "S1"], report.to_text()
    text = report.to_text()
    assert "errorMessage: the upstream refused key [redacted]: model warming up, retry in 30 s" in " ".join(
        text.split()
    )
    assert conformance.API_KEY not in text
    data = json.loads(json.dumps(report.to_json()))
    excerpts = [item["excerpt"] for result in data["results"] for item in result["evidence"]]
    assert excerpts
    assert all("model warming up" in excerpt for excerpt in excerpts), excerpts
    assert conformance.API_KEY not in json.dumps(data)
    junit = report.to_junit()
    assert "model warming up" in junit
    assert conformance.API_KEY not in junit


# -- Python-level checks on adapters without HTTP ----------------------------------------------------


@pytest.mark.slow
async def test_a_well_behaved_adapter_without_http_is_limited_only_by_its_features() -> None:
    report = await conformance.run(TARGETS["well_behaved"])
    assert report.failing == [], report.to_text()
    limitations = [r.id for r in report.results if r.status == "unsupported" and r.limitation]
    assert limitations == ["P2", "P3", "P4", "U1"], report.to_text()
    assert report.verdict == "conformant-with-limitations"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "failing"),
    [
        ("starts_twice", ["G1", "A1"]),
        # No stream to judge: the grammar checks examined nothing, which is no pass — nor are L2 and
        # S1, which judge only scenarios whose stream started.
        (
            "raises_on_call",
            ["G1", "G2", "G3", "G4", "G5", "G6", "G7", "N1", "N2", "A1", "A2", "P1", "D1", "L2", "S1"],
        ),
        ("swallows_cancellation", ["N2"]),
    ],
)
async def test_python_level_defects_are_flagged(name: str, failing: list[str]) -> None:
    report = await conformance.run(TARGETS[name], limits=QUICK)
    assert report.failing == failing, report.to_text()


@pytest.mark.slow
async def test_a_hanging_stream_is_cancelled_at_the_deadline_and_reported() -> None:
    report = await conformance.run(TARGETS["hangs"], checks=["G2", "A2"], limits=QUICK)
    assert report.failing == ["G2", "A2"], report.to_text()
    assert "did not end within 0.3 s" in report.result("G2").message


async def test_a_harness_bug_while_running_is_a_harness_error_not_the_adapters_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def broken(self: object, scenarios: object) -> None:
        raise RuntimeError("a bug in the harness")

    monkeypatch.setattr(conformance.session.Session, "observe_all", broken)
    report = await conformance.run(TARGETS["well_behaved"], checks=["G1", "N1"])
    assert report.ids("harness-error") == ["G1", "N1"], report.to_text()
    assert "a bug in the harness" in report.result("N1").message


async def test_even_an_exit_while_judging_is_a_harness_error_not_the_end_of_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def exits(self: object, session: object, observed: object) -> None:
        raise SystemExit(0)

    monkeypatch.setattr(type(conformance.get_check("N1")), "evaluate", exits)
    report = await conformance.run(TARGETS["well_behaved"], checks=["G1", "N1"])
    assert report.ids("pass") == ["G1"], report.to_text()
    assert report.ids("harness-error") == ["N1"], report.to_text()
    assert report.result("N1").message == "SystemExit: 0"


@pytest.mark.slow
def test_run_sync_runs_in_its_own_loop() -> None:
    report = conformance.run_sync(Target(faux_target, FAUX_CAPABILITIES), checks=["P1"])
    assert report.ids("pass") == ["P1"]


@pytest.mark.slow
async def test_the_guides_record_then_replay_path(tmp_path: Path) -> None:
    """The conformance guide (docs/conformance.md), steps 4 and 5: record a cassette with
    `use_cassette(mode="once")`, then replay it."""
    recorded = tmp_path / "cassettes" / "text.jsonl"
    upstream = plan(library.load("llma__text_haiku45"))
    async with LoopbackServer(upstream) as server:  # stands in for the vendor's API
        model = Model(id="claude-haiku-4-5", api="anthropic-messages", provider="anthropic", base_url=server.base_url)
        async with use_cassette(recorded, mode="once", api="anthropic-messages", model=model.id) as http:
            options = StreamOptions(api_key="sk-ant-guide-0000000000", http_client=http)
            message = await stream_anthropic(
                model, Context(messages=[UserMessage(content="Say hello.")]), options
            ).result()
    assert message.stop_reason == "stop"
    assert "sk-ant-guide" not in recorded.read_text()
    report = await conformance.run(anthropic, cassettes=recorded.parent, checks=["P1", "M1"])
    assert report.recordings == ("text",)
    assert report.ids("pass") == ["P1", "M1"], report.to_text()


def test_every_feature_declares_each_capability_a_check_can_need() -> None:
    full = Capabilities.every_feature("openai-completions")
    assert full.api == "openai-completions"
    assert full.http
    assert not [
        field.name for field in dataclasses.fields(full) if field.type == "bool" and not getattr(full, field.name)
    ]
    assert Capabilities.every_feature("carrier-pigeon").api == "carrier-pigeon"


def test_recordings_are_picked_by_name_never_by_sort_order() -> None:
    """An api nobody declares: the cassettes named after a feature show it (``parallel.jsonl``
    sorts first, yet ``text.jsonl`` is the text recording)."""
    recordings = load_recordings(Path(__file__).resolve().parents[2] / "examples" / "ndjson_chat" / "cassettes")
    assert recordings[0].name == "parallel"
    session = conformance.session.Session(Capabilities(api="ndjson-chat"), recordings, Limits())
    assert {feature: getattr(session.recording(feature), "name", None) for feature in FEATURES} == {
        "text": "text",
        "tool": "tool",
        "parallel": "parallel",
        "thinking": "thinking",
    }
