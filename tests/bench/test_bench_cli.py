"""``python -m bench``'s command line: suite names, ``--json``, and arguments passed to the suites;
the load server's framing helpers."""

from __future__ import annotations

import pytest

from bench.__main__ import _split, suites  # pyright: ignore[reportPrivateUsage]
from bench._load_server import framer_for
from bench.load_bench import LoadFigure, _record  # pyright: ignore[reportPrivateUsage]

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


def test_every_suite_file_is_found() -> None:
    found = suites()
    assert {"anthropic", "openai-completions", "openai-responses", "google", "ollama", "load"} <= set(found)
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
