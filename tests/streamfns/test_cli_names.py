"""The names a user types: the model ids the documentation shows exist and are listed, a cassette
argument that names nothing gets the close names, and every message names the program typed and
the command line's own way (never a Python-only argument)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import streamfns
from cassettes import CassetteIncomplete, dumps, library, loads
from cassettes import cli as cassettes_cli
from conformance import cli as conformance_cli
from streamfns import cli

ROOT = Path(__file__).resolve().parents[2]
GET_MODEL = re.compile(r'get_model\(\s*"([^"]+)",\s*"([^"]+)"\s*\)')
MODEL_OPTION = re.compile(r"--model\s+([a-z0-9.-]+)/([A-Za-z0-9._:-]+)")
# docs/models.md shows what a typo gets: the one id named on purpose that must not resolve.
DELIBERATE_TYPOS = {("anthropic", "claude-sonet-4-5")}


def _main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        status = cli.main(list(argv))
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 1
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def _named_models() -> dict[tuple[str, str], list[str]]:
    """(provider, id) -> where it is named: the README, every documentation page, the command's help."""
    texts = {str(path.relative_to(ROOT)): path.read_text(encoding="utf-8") for path in ROOT.glob("docs/**/*.md")}
    texts["README.md"] = (ROOT / "README.md").read_text(encoding="utf-8")
    texts["streamfns.cli"] = str(cli.__doc__) + cli._parser().format_help()  # pyright: ignore[reportPrivateUsage]
    found: dict[tuple[str, str], list[str]] = {}
    for where, text in texts.items():
        for match in [*GET_MODEL.finditer(text), *MODEL_OPTION.finditer(text)]:
            found.setdefault((match.group(1), match.group(2)), []).append(where)
    return found


def test_every_model_the_docs_name_is_in_the_catalog_and_in_the_models_listing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    named = _named_models()
    assert ("anthropic", "claude-haiku-4-5") in named  # the pattern finds what the README shows
    missing = set[tuple[str, str]]()
    for provider, model_id in named:
        try:
            streamfns.get_model(provider, model_id)
        except KeyError:
            missing.add((provider, model_id))
    assert missing == DELIBERATE_TYPOS, {key: named[key] for key in missing}
    status, out, _err = _main(capsys, "models")
    assert status == 0
    listed: set[tuple[str, str]] = set()
    for line in out.splitlines()[1:]:
        cells = line.split()
        provider, model_id = cells[0].split("/", 1)
        listed.add((provider, model_id))
        listed.update((provider, alias) for alias in cells[-1].split(",") if alias != "-")
    unlisted = {key: where for key, where in named.items() if key not in listed and key not in DELIBERATE_TYPOS}
    assert unlisted == {}, "a name --model accepts that `streamfns models` does not show"


def test_the_readme_example_uses_an_id_the_listing_shows_as_a_model() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (provider, model_id), *_ = [m.groups() for m in GET_MODEL.finditer(readme)]
    assert streamfns.get_model(provider, model_id).id == model_id  # canonical, not an alias


def test_replay_of_a_near_miss_name_offers_the_close_recordings(capsys: pytest.CaptureFixture[str]) -> None:
    status, _out, err = _main(capsys, "replay", "llma__text_haiku")
    assert status == 2
    assert err == (
        "streamfns: error: llma__text_haiku: no such file, nor a bundled recording name; did you mean: "
        "llma__text_haiku45?\n"
    )
    status, _out, err = _main(capsys, "replay", "zzzz")
    assert (status, err) == (
        2,
        "streamfns: error: zzzz: no such file, nor a bundled recording name; `cassettes library --names` lists those\n",
    )


def test_replay_of_a_near_miss_path_offers_the_cassettes_beside_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "weather_tool.jsonl").write_text(dumps(library.load("llma__text_haiku45")), encoding="utf-8")
    status, _out, err = _main(capsys, "replay", str(tmp_path / "weather_tol.jsonl"))
    expected = (
        f"streamfns: error: {tmp_path / 'weather_tol.jsonl'}: no such file; did you mean: "
        f"{tmp_path / 'weather_tool.jsonl'}?\n"
    )
    assert (status, err) == (2, expected)
    status, _out, err = _main(capsys, "replay", str(tmp_path / "other.jsonl"))
    assert (status, err) == (2, f"streamfns: error: {tmp_path / 'other.jsonl'}: no such file\n")


def test_replay_of_a_directory_says_so_and_names_its_cassettes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    status, _out, err = _main(capsys, "replay", str(tmp_path))
    assert (status, err) == (2, f"streamfns: error: {tmp_path} is a directory; it holds no cassette (*.jsonl)\n")
    for name in ("b.jsonl", "a.jsonl"):
        (tmp_path / name).write_text(dumps(library.load("llma__text_haiku45")), encoding="utf-8")
    status, _out, err = _main(capsys, "replay", str(tmp_path))
    assert (status, err) == (
        2,
        f"streamfns: error: {tmp_path} is a directory; name one of its cassettes: a.jsonl, b.jsonl\n",
    )


@pytest.fixture
def cut_recording(tmp_path: Path) -> Path:
    """A recording whose recorder was killed: no completion footer."""
    text = dumps(library.load("llma__text_haiku45"))
    path = tmp_path / "cut.jsonl"
    path.write_text(text[: text.rindex('{"type":"footer"')], encoding="utf-8")
    return path


def test_an_incomplete_recording_gets_the_command_lines_advice_in_every_command(
    capsys: pytest.CaptureFixture[str], cut_recording: Path
) -> None:
    reason = "incomplete recording: no completion footer (the recorder stopped before it finished, e.g. it was killed)"
    advice = f"record it again, or see what it holds with `cassettes show {cut_recording}`"
    status, _out, err = _main(capsys, "replay", str(cut_recording))
    assert (status, err) == (2, f"streamfns: error: {cut_recording}: {reason}; {advice}\n")
    assert cassettes_cli.main(["mutate", str(cut_recording), "--op", "rechunk:1", "-o", "-"]) == 2
    assert capsys.readouterr().err == f"cassettes: error: {cut_recording}: {reason}; {advice}\n"
    argv = ["run", "tests.conformance._fakes:well_behaved", "--api", "anthropic-messages"]
    assert conformance_cli.main([*argv, "--cassettes", str(cut_recording)], program=False) == 2
    err = capsys.readouterr().err
    assert err == f"conformance: error: cannot load the cassette {cut_recording}: {cut_recording}: {reason}; {advice}\n"
    assert cassettes_cli.main(["show", str(cut_recording)]) == 0, "the advice works"
    assert "INCOMPLETE RECORDING" in capsys.readouterr().out
    # From Python the advice stays the Python one.
    with pytest.raises(CassetteIncomplete) as caught:
        loads(cut_recording.read_text(encoding="utf-8"), source=str(cut_recording))
    assert str(caught.value).endswith("record it again, or load it with allow_incomplete=True to inspect it")


def test_the_harness_names_the_program_the_user_typed(capsys: pytest.CaptureFixture[str]) -> None:
    status, _out, err = _main(capsys, "conformance", "explain", "Z9")
    assert (status, err) == (2, "streamfns: error: unknown check id 'Z9' (see `streamfns conformance list`)\n")
    status, _out, err = _main(capsys, "conformance", "run", "no.such.module:TARGET")
    assert status == 2
    assert err.startswith("streamfns: error: cannot import 'no.such.module'"), err
    assert conformance_cli.main(["explain", "Z9"], program=False) == 2
    assert capsys.readouterr().err == "conformance: error: unknown check id 'Z9' (see `conformance list`)\n"
