"""Every scenario names its mutation in the `cassettes.mutation_specs` grammar, and the `cassettes mutate` command the
report prints for it writes a cassette the loopback server plays byte for byte like the scenario (issue 9 #6)."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
from pathlib import Path

import pytest

import conformance
from cassettes import Cassette, library, load, mutation_specs, save
from cassettes.cli import main as cassettes_main
from cassettes.cli import parse_op
from conformance import LoopbackServer, Scripted
from conformance.checks import CHECKS
from conformance.observe import Scenario
from conformance.plans import plan, with_reset
from conformance.recordings import library_recordings, load_recordings
from conformance.session import Session
from streamfns.anthropic import ADAPTER
from tests.conformance._broken import BrokenAdapter, Defects

pytestmark = pytest.mark.slow

#: The Anthropic adapter as its declaration gives it to the harness.
ANTHROPIC = conformance.Target.from_adapter(ADAPTER)

_COMMAND = re.compile(r"cassettes mutate (\S+) --op '([^']+)' -o (\S+)")
_AS_RECORDED = re.compile(r"the recording as recorded: (\S+)")


def _session(recordings: list[conformance.Recording]) -> Session:
    return Session(ANTHROPIC.capabilities, recordings, conformance.Limits())


def _scenarios(session: Session) -> list[Scenario]:
    found: dict[str, Scenario] = {}
    for check in CHECKS:
        for scenario in check.scenarios(session):
            found.setdefault(scenario.key, scenario)
    return list(found.values())


def _open(source: str) -> Cassette:
    return load(source) if Path(source).exists() else library.load(source)


def _replayed(how: str, tmp_path: Path, *, through_cli: bool = True) -> list[Scripted]:
    """The plans the printed reproduction yields: run each command, load what it wrote, plan it.
    Without ``through_cli`` the spec goes straight to ``cassettes.cli.parse_op`` (what the command
    runs), sparing the file round trip."""
    plans: list[Scripted] = []
    for part in how.split("; "):
        command = _COMMAND.search(part)
        if command is not None:
            source, spec, out = (shlex.split(item)[0] for item in command.groups())
            if through_cli:
                written = tmp_path / out
                assert cassettes_main(["mutate", source, "--op", spec, "-o", str(written)]) == 0, part
                scripted = plan(load(written))
            else:
                scripted = plan(parse_op(spec)(_open(source)))
        else:
            recorded = _AS_RECORDED.search(part)
            assert recorded is not None, f"no way to reproduce {part!r}"
            scripted = plan(_open(shlex.split(recorded.group(1))[0]))
        plans.append(with_reset(scripted) if "TCP reset" in part else scripted)
    return plans


async def _wire(scripted: Scripted) -> tuple[bytes, str]:
    """What a client reads from the loopback server playing ``scripted``: every byte, and how it ended.

    A plan that ends in a stall is read for a few seconds and then called silence; any other plan is
    read to its end however long a loaded machine takes (its end comes from the server, not a clock)."""
    async with LoopbackServer(scripted, linger_s=0.05) as server:
        host, port = server.base_url.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(b"POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}")
        await writer.drain()
        received = bytearray()
        ending = "eof"
        try:
            async with asyncio.timeout(3.0 if scripted.end == "stall" else 120.0):
                while chunk := await reader.read(65536):
                    received += chunk
        except TimeoutError:
            ending = "silence"
        except ConnectionResetError:
            ending = "reset"
        writer.close()
        return bytes(received), ending


def _without_date(raw: bytes) -> bytes:
    return re.sub(rb"\r\ndate: [^\r]*", b"", raw)


async def test_every_scenario_is_named_in_the_grammar_and_its_command_reproduces_the_served_bytes(
    tmp_path: Path,
) -> None:
    session = _session(library_recordings(ANTHROPIC.capabilities))
    pairs: list[tuple[str, Scripted, Scripted]] = []
    ran: set[tuple[str, ...]] = set()
    for scenario in _scenarios(session):
        if not scenario.served:
            assert scenario.fault, f"{scenario.key} says neither what it serves nor what it is"
            continue
        for served in scenario.served:
            if served.mutation is not None:
                assert mutation_specs.parse(served.mutation).spec == served.mutation, scenario.key
            assert served.recording or served.fault, scenario.key
        how = session.reproduce(scenario)
        if any(served.fault for served in scenario.served):
            assert "cassettes mutate" not in how, (scenario.key, how)
            continue
        # Every kind of op goes through the real command once (a save costs ~0.1 s of secret scanning).
        kinds = tuple(
            sorted({op.split(":")[0] for served in scenario.served for op in (served.mutation or "").split("+")})
        )
        replayed = _replayed(how, tmp_path, through_cli=kinds not in ran)
        ran.add(kinds)
        assert replayed == list(scenario.plans), (scenario.key, how)
        pairs.extend((scenario.key, a, b) for a, b in zip(scenario.plans, replayed, strict=True))
    assert len(pairs) >= 50
    # On the wire too: both plans, played by the loopback server, give a client the same bytes and ending.
    wire = await asyncio.gather(*(_wire(p) for _, a, b in pairs for p in (a, b)))
    for index, (key, _, _) in enumerate(pairs):
        (raw_a, end_a), (raw_b, end_b) = wire[2 * index], wire[2 * index + 1]
        assert (_without_date(raw_a), end_a) == (_without_date(raw_b), end_b), key


def test_a_failing_report_prints_the_commands_and_they_reproduce_what_was_served(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The author's own cassette (a file holding a 429 and then the success), a defect that takes EOF for success."""
    own = tmp_path / "mine.jsonl"
    text = library.load("llma__text_haiku45")
    limited = mutation_specs.parse("status:429")(text)
    save(type(text)(interactions=(*limited.interactions, *text.interactions), api=text.api, model=text.model), own)
    report = conformance.run_sync(
        BrokenAdapter(Defects(done_on_truncation=True)),
        capabilities=ANTHROPIC.capabilities,
        cassettes=own,
        checks=["T1", "M4", "P1"],
    )
    assert report.failing == ["T1", "M4"], report.to_text()
    printed = report.to_text()
    reproduce = report.to_json()["reproduce"]
    assert len(reproduce) == 4, reproduce  # three cuts and the missing marker
    session = _session(load_recordings(own))
    scenarios = {scenario.key: scenario for scenario in _scenarios(session)}
    for key, how in reproduce.items():
        assert how in " ".join(printed.split()), how
        assert f"cassettes mutate {own} --op 'interaction:1+" in how, how
        assert _replayed(how, tmp_path) == list(scenarios[key].plans), how
    evidence = report.result("M4").evidence[0]
    assert evidence.mutation == "drop-terminal"
    assert evidence.reproduce == reproduce[evidence.scenario]
    assert json.loads(json.dumps(report.to_json()))["results"]
