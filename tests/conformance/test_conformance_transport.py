"""``conformance run --transport NAME``: the kit's process-wide transport for the run, checked before
anything runs (a bad name or a missing aiohttp is a usage error, exit 2), named by the report, and
put back as it was when the command returns; the command's loop runs through ``run_async``."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from conformance import cli
from streamfns.kit import TRANSPORT_ENV, default_transport, set_default_transport

_T = TypeVar("_T")


@pytest.fixture(autouse=True)
def no_choice(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts with no transport chosen (neither by the environment nor by a call), and leaves none."""
    monkeypatch.delenv(TRANSPORT_ENV, raising=False)
    set_default_transport(None)
    try:
        yield
    finally:
        set_default_transport(None)


# -- usage errors: told before anything runs (no socket, no harness) ----------------------------------


@pytest.mark.parallel
def test_the_help_names_the_option_and_its_choices(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "--transport {aiohttp,httpx,native}" in out
    assert "streamfns[aiohttp]" in out
    assert "run streamfns.anthropic:ADAPTER --transport aiohttp" in out


@pytest.mark.parallel
def test_an_unknown_transport_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "conformance.targets:faux", "--transport", "carrier-pigeon"]) == 2
    err = capsys.readouterr().err
    assert "argument --transport: invalid choice: 'carrier-pigeon'" in err
    assert default_transport() == "httpx"


@pytest.mark.parallel
def test_aiohttp_without_its_extra_is_a_usage_error_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "aiohttp", None)  # `import aiohttp` now raises ImportError
    assert cli.main(["run", "conformance.targets:faux", "--transport", "aiohttp"]) == 2
    out, err = capsys.readouterr()
    assert err.startswith("conformance: error: --transport: ")
    assert "pip install 'streamfns[aiohttp]'" in err
    assert "Traceback" not in err
    assert out == ""  # nothing ran
    assert default_transport() == "httpx"


@pytest.mark.parallel
def test_an_unusable_transport_in_the_environment_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(TRANSPORT_ENV, "carrier-pigeon")
    assert cli.main(["run", "conformance.targets:faux"]) == 2
    err = capsys.readouterr().err
    assert f"the {TRANSPORT_ENV} environment variable: unknown transport 'carrier-pigeon'" in err


@pytest.mark.parallel
def test_the_process_wide_choice_is_put_back_when_the_command_returns(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The target cannot be imported: the command fails inside the chosen transport, and returns.
    assert cli.main(["run", "no.such.module:fn", "--transport", "aiohttp"]) == 2
    assert "no.such.module" in capsys.readouterr().err
    # Nothing was chosen before: nothing is chosen after (the environment still decides).
    monkeypatch.setenv(TRANSPORT_ENV, "aiohttp")
    assert default_transport() == "aiohttp"
    monkeypatch.delenv(TRANSPORT_ENV)
    # A caller's own choice survives the command.
    set_default_transport("aiohttp")
    assert cli.main(["run", "no.such.module:fn", "--transport", "httpx"]) == 2
    assert default_transport() == "aiohttp"


# -- runs: the report names the transport ---------------------------------------------------------------


@pytest.mark.slow
def test_the_report_names_the_transport_the_run_used(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    loops: list[str] = []
    run_async = cli.run_async

    def spy(main: Coroutine[Any, Any, _T]) -> _T:
        loops.append("run_async")
        return run_async(main)

    monkeypatch.setattr(cli, "run_async", spy)
    report = tmp_path / "report.xml"
    argv = ["run", "streamfns.anthropic:ADAPTER", "--checks", "T1", "--transport", "aiohttp"]
    assert cli.main([*argv, "--format", "junit", "--report", str(report)]) == 0
    text = capsys.readouterr().out
    assert "http yes · transport aiohttp · recordings:" in text
    properties = {p.get("name"): p.get("value") for p in ET.fromstring(report.read_text()).iter("property")}
    assert properties["transport"] == "aiohttp"
    assert cli.main([*argv[:-1], "httpx", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["transport"] == "httpx"
    assert loops == ["run_async", "run_async"]
    assert default_transport() == "httpx"  # put back: nothing was chosen before


@pytest.mark.slow
def test_an_adapter_without_http_names_no_transport(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "conformance.targets:faux", "--checks", "G1", "--transport", "aiohttp"]) == 0
    assert "transport" not in capsys.readouterr().out
    assert cli.main(["run", "conformance.targets:faux", "--checks", "G1", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["transport"] is None
