"""``python -m bench``'s command line: suite names, ``--json``, and arguments passed to the suites;
the load server's framing helpers."""

from __future__ import annotations

import asyncio

import pytest

from bench.__main__ import _split, main, suites  # pyright: ignore[reportPrivateUsage]
from bench._load_server import COUNT_HOLES, FRAMERS, TEXT_HOLE, _Template, framer_for  # pyright: ignore[reportPrivateUsage]
from bench.load_bench import LoadFigure, _phase, _record  # pyright: ignore[reportPrivateUsage]

pytestmark = pytest.mark.parallel


def test_suite_arguments_pass_through() -> None:
    assert _split(["load", "--streams", "1000", "--rate", "20", "--seconds", "30"]) == (
        ["load"],
        None,
        ["--streams", "1000", "--rate", "20", "--seconds", "30"],
    )
    assert _split(["--json", "out.json", "anthropic", "load", "--", "--streams", "5"]) == (
        ["anthropic", "load"],
        "out.json",
        ["--streams", "5"],
    )
    assert _split(["--json=x.json"]) == ([], "x.json", [])


@pytest.mark.parametrize("argv", [["--help"], ["-h"], ["all", "--help"], ["google", "--help"], ["load", "-h"]])
def test_help_measures_nothing(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Were a suite run, its figures would be printed after its "== name" line; a suite's main that
    # measured anything here fails the test outright.
    measured: list[str] = []
    import bench.google_bench

    def run() -> list[str]:
        measured.append("google")
        return []

    monkeypatch.setattr(bench.google_bench, "run", run)
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "suites: anthropic," in out
    assert "verdict rule" not in out
    assert measured == []
    if "load" in argv:
        assert "--streams STREAMS" in out  # the load suite's own options, from its argparse


def test_an_unknown_suite_is_refused_before_help() -> None:
    assert main(["nonesuch", "--help"]) == 2


def test_every_suite_file_is_found() -> None:
    found = suites()
    assert {"anthropic", "openai-completions", "openai-responses", "google", "ollama", "mistral", "load"} <= set(found)
    assert found["load"] == "bench.load_bench"


def test_an_unknown_path_has_no_framer() -> None:
    assert framer_for("/v1/other") is None
    framer = framer_for("/v1beta/models/m:streamGenerateContent?alt=sse")
    assert framer is not None
    assert framer.media_type == "text/event-stream"


def test_merged_deltas_each_count() -> None:
    figure = LoadFigure("x", "ours", streams=1, rate=1.0, expected=2)
    assert _record(figure, "1 2 ") == 2
    assert figure.events == 2
    assert len(figure.latencies_ns) == 2


def test_text_that_is_no_stamp_is_not_counted() -> None:
    figure = LoadFigure("x", "ours", streams=1, rate=1.0, expected=2)
    assert _record(figure, "12 -3 x1 ") == 1  # a hostile or garbled delta must not pass for one of ours
    assert figure.events == 1


def test_a_stream_that_raises_fails_alone() -> None:
    async def one(figure: LoadFigure) -> bool:
        if figure.ok_streams == 0 and not figure.latencies_ns:
            figure.latencies_ns.append(0)
            raise ConnectionError("the SDK raised")
        return True

    figure = LoadFigure("x", "sdk", streams=3, rate=1.0, expected=0)
    asyncio.run(_phase(figure, one, spread_s=0.0))
    assert figure.ok_streams == 2


def test_a_cancelled_phase_is_not_swallowed() -> None:
    async def one(figure: LoadFigure) -> bool:
        raise asyncio.CancelledError

    figure = LoadFigure("x", "ours", streams=2, rate=1.0, expected=0)
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(_phase(figure, one, spread_s=0.0))


@pytest.mark.parametrize("path", list(FRAMERS))
def test_a_delta_from_the_template_is_the_delta_encoded(path: str) -> None:
    filled, encoded = framer_for(path), framer_for(path)
    assert filled is not None
    assert encoded is not None
    for text in ("1764921600123456789 ", "7 ", "12 34 "):
        assert filled.delta(text) == encoded.encoded_delta(text)
    # Text that JSON must escape is encoded, never put in a template as it is.
    hostile = 'a"b\\c\n\u2028 '
    assert filled.delta(hostile) == encoded.encoded_delta(hostile)
    assert b'a\\"b\\\\c\\n' in filled.delta(hostile) or path in {"/converse-stream", "/invoke-with-response-stream"}


def test_a_template_refuses_a_hole_it_does_not_hold() -> None:
    with pytest.raises(ValueError, match="no"):
        _Template(b'{"text":"x"}', TEXT_HOLE)
    assert (
        _Template(b'{"n":"\\u0001","t":"\\u0000"}', COUNT_HOLES[0], TEXT_HOLE).fill(b"3", b"hi") == b'{"n":3,"t":"hi"}'
    )
