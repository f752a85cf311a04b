"""The Performance page is generated from a bench result file: its tables, and its chart as SVG."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.parallel

ROOT = Path(__file__).resolve().parents[2]


def _perf_page() -> Any:
    spec = importlib.util.spec_from_file_location("perf_page", ROOT / "docs" / "_gen" / "perf_page.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _ratio(estimate: float, budget: float | None, verdict: str | None, *, at_most: bool = False) -> dict[str, Any]:
    return {
        "estimate": estimate,
        "low": estimate - 0.1,
        "high": estimate + 0.1,
        "rounds": 7,
        "budget": budget,
        "at_most": at_most,
        "verdict": verdict,
    }


def _comparison(kind: str, bare: float, ours: float, sdk: float | None) -> dict[str, Any]:
    stacks = [
        {"role": "bare", "name": "httpx-sse + json.loads", "us_per_event": bare},
        {"role": "ours", "name": "stream_x", "us_per_event": ours},
    ]
    ratios = {"b/a": _ratio(bare / ours, 2.0 if kind != "thinking" else None, "within" if kind != "thinking" else None)}
    if sdk is not None:
        stacks.append({"role": "sdk", "name": "x SDK", "us_per_event": sdk})
        ratios["b/c"] = _ratio(sdk / ours, 20.0, "over")
    return {"label": f"{kind} body", "kind": kind, "events": 40_000, "bytes": 1, "stacks": stacks, "ratios": ratios}


def _with_minimal(comparison: dict[str, Any], minimal: float, floor_m: float | None = None) -> dict[str, Any]:
    """``comparison`` with a minimal decoder's stack and its two ratios (no budget), and with ``floor_m``
    ours judged against it (b/m, as the Ollama text suite does since issue 34)."""
    bare, ours, sdk = (
        next(s["us_per_event"] for s in comparison["stacks"] if s["role"] == role) for role in ("bare", "ours", "sdk")
    )
    comparison["stacks"].insert(2, {"role": "minimal", "name": "minimal decoder", "us_per_event": minimal})
    comparison["ratios"]["m/a"] = _ratio(bare / minimal, None, None)
    if floor_m is not None:
        comparison["ratios"]["b/m"] = _ratio(minimal / ours, floor_m, "undecided")
    comparison["ratios"]["m/c"] = _ratio(sdk / minimal, None, None)
    return comparison


def _document() -> dict[str, Any]:
    load_row = {
        "api": "anthropic-messages",
        "stack": "ours",
        "streams": 10,
        "rate": 20,
        "events_per_stream": 40,
        "events": 400,
        "ok_streams": 10,
        "cpu_us_per_event": 41.5,
        "latency_p50_ms": 0.7,
        "latency_p99_ms": 3.25,
        "memory_kib_per_stream": 12.0,
        "events_per_s": 200.0,
        "sustained": True,
    }
    return {
        "schema": 1,
        "date": "2026-12-01T00:00:00Z",
        "git_revision": "abc123",
        "cpus": 2,
        "cpu_model": "Test CPU",
        "platform": "Linux",
        "python": "3.11.7",
        "rule": "verdict rule: the test's",
        "suites": {
            "anthropic": {
                "comparisons": [
                    _comparison("text", 4.0, 2.0, 50.0),
                    _comparison("tool", 4.0, 2.5, 300.0),
                    _comparison("thinking", 4.0, 2.2, None),
                ],
                "ratios": [{"label": "tool/text cost", **_ratio(1.2, 1.5, "within", at_most=True)}],
            },
            "ollama": {"comparisons": [_with_minimal(_comparison("text", 2.0, 1.0, 4.0), 0.8, floor_m=0.9)]},
            "load": {
                "load": [
                    {
                        "streams": 10,
                        "rate": 20,
                        "seconds": 2,
                        "adapters": [load_row],
                        "ours_tries": [load_row, {**load_row, "streams": 5, "events": 200}],
                        "sdk_tries": [
                            {**load_row, "stack": "sdk", "cpu_us_per_event": 300.0, "sustained": False},
                            {**load_row, "stack": "sdk", "streams": 5, "events": 200, "cpu_us_per_event": 83.0},
                        ],
                        "ours_sustained_streams": 10,
                        "sdk_sustained_streams": 5,
                        "compared_at_streams": 5,
                        "leaks": {
                            "fds": 0,
                            "tasks": 0,
                            "server_connections": 0,
                            "unfinished_responses": 0,
                            "failed_streams": 0,
                        },
                    }
                ]
            },
        },
    }


def test_the_page_is_generated_from_the_json_file(tmp_path: Path) -> None:
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(_document()), encoding="utf-8")
    page: str = _perf_page().markdown(path, chart="perf/chart.svg")
    assert page.startswith("Measured 2026-12-01T00:00:00Z at revision `abc123` on 2 × Test CPU, Python 3.11.7 (Linux).")
    assert "`verdict rule: the test's`" in page
    assert "![Events per second of the bare parse, ours and the vendor SDK](perf/chart.svg)" in page
    assert (
        "| `anthropic` | text | 40,000 | 4.00 | 2.00 | 50.0 | 2.00 [1.90–2.10] ≥ 2: within | "
        "25.00 [24.90–25.10] ≥ 20: **OVER** |"
    ) in page
    assert "| `anthropic` | thinking | 40,000 | 4.00 | 2.20 | — | 1.82 [1.72–1.92] | — |" in page
    assert "| `anthropic` | tool/text cost | 1.20 [1.10–1.30] ≤ 1.5: within | 7 |" in page
    # the minimal decoder's table holds the one comparison that measured it, its ratios without a budget
    # (a judged b/m beside them, as the Ollama text suite records it, leaves the row as it is)
    assert (
        "| `ollama` | text | 1.00 | 0.80 | 2.00 [1.90–2.10] ≥ 2: within | 2.50 [2.40–2.60] | "
        "4.00 [3.90–4.10] ≥ 20: **OVER** | 5.00 [4.90–5.10] |"
    ) in page
    assert page.count("| `anthropic` | text |") == 1  # measured without a minimal decoder: not in that table
    assert "| `anthropic-messages` | ours | 10 | 400 | 41.5 | 0.70 | 3.25 | 12.0 | yes |" in page
    assert "| `anthropic-messages` | anthropic SDK | 10 | 400 | 300.0 | 0.70 | 3.25 | 12.0 | **no** |" in page
    assert "| `anthropic-messages` | ours | 5 | 200 | 41.5 | 0.70 | 3.25 | 12.0 | yes |" in page
    assert "| `anthropic-messages` | anthropic SDK | 5 | 200 | 83.0 | 0.70 | 3.25 | 12.0 | yes |" in page
    assert page.count("| `anthropic-messages` | ours | 10 |") == 1  # the first try is the adapter's row
    assert "ours 10 streams, the anthropic SDK 5." in page
    assert (
        "Per event at the same load (5 streams, where both keep up): ours 41.5 µs of CPU, the SDK 83.0 (2.0× ours)"
        in page
    )
    assert "0 file descriptors, 0 tasks, 0 server connections, 0 unfinished responses" in page


def test_a_file_that_is_not_a_bench_result_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bench.json"
    path.write_text(json.dumps({"schema": 2, "suites": {}}), encoding="utf-8")
    with pytest.raises(ValueError, match="not a bench result"):
        _perf_page().markdown(path)


def test_the_chart_is_deterministic_svg_with_a_bar_per_stack_and_adapter() -> None:
    pytest.importorskip("matplotlib", reason="the chart needs the docs extra (matplotlib)")
    perf_page = _perf_page()
    svg: str = perf_page.chart_svg(_document())
    assert svg == perf_page.chart_svg(_document())  # the same JSON, the same bytes
    assert svg.lstrip().startswith("<?xml")
    assert "<svg" in svg
    # text kept as text (no glyphs embedded, nothing fetched): the labels are readable in the file
    for label in ("anthropic", "ollama", "streamfns", "vendor SDK", "text stream", "tool args stream"):
        assert f">{label}</text>" in svg, label
    assert "<image" not in svg
    assert "@font-face" not in svg
    # one bar per stack: a tool-args comparison for one more adapter adds exactly three bars
    more = _document()
    more["suites"]["ollama"]["comparisons"].append(_comparison("tool", 3.0, 1.5, 6.0))
    assert perf_page.chart_svg(more).count('id="patch_') - svg.count('id="patch_') == 3


def test_the_committed_result_builds_the_page() -> None:
    perf_page = _perf_page()
    document = perf_page.load()
    page: str = perf_page.markdown()
    for suite, sections in document["suites"].items():
        if sections.get("comparisons"):
            assert f"| `{suite}` |" in page
    assert "### Many streams at once" in page
