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


# -- the load run across transports × loops (bench/_load_report.py's record) ---------------------------------

_TRANSPORTS = ("aiohttp", "httpx")
_LOOPS = ("uvloop", "asyncio")


def _figure(stack: str, transport: str, loop: str, streams: int, *, cpu: float, p99: float) -> dict[str, Any]:
    """One phase of the Anthropic body as ``LoadFigure.as_dict`` writes it."""
    return {
        "api": "anthropic-messages",
        "stack": stack,
        "transport": transport,
        "loop": loop,
        "processes": 1,
        "streams": streams,
        "rate": 20.0,
        "events_per_stream": 200,
        "events": streams * 200,
        "ok_streams": streams,
        "cpu_us_per_event": cpu,
        "latency_p50_ms": p99 / 4,
        "latency_p99_ms": p99,
        "memory_kib_per_stream": 30.0,
        "events_per_s": streams * 20.0,
        "server_cpu_share": 0.25,
        "sustained": p99 < 100,
    }


def _matrix_load(transports: tuple[str, ...] = _TRANSPORTS, *, matrix: bool = True) -> dict[str, Any]:
    """A ``--matrix`` load entry: ours and bare per transport × loop at 250 and 500 streams (ours on the
    second transport × asyncio over the latency limit at both), the SDK per loop at 250 and 500 (not
    sustained at 500)."""
    combinations: list[dict[str, Any]] = []
    pairs: list[dict[str, Any]] = []
    for t, transport in enumerate(transports):
        for j, loop in enumerate(_LOOPS):
            ours = [
                _figure(
                    "ours", transport, loop, n, cpu=40.0 + 10 * t + 5 * j + n / 100, p99=3.0 + n / 10 * (1 + 3 * t * j)
                )
                for n in (250, 500)
            ]
            bare = [_figure("bare", transport, loop, n, cpu=30.0 + 10 * t + 5 * j, p99=1.5) for n in (250, 500)]
            combinations.append(
                {"transport": transport, "loop": loop, "adapters": ours, "bare": bare, "ours_tries": list(ours)}
            )
            pairs += [
                {
                    "transport": transport,
                    "loop": loop,
                    "streams": o["streams"],
                    "processes": 1,
                    "ours_cpu_us_per_event": o["cpu_us_per_event"],
                    "bare_cpu_us_per_event": b["cpu_us_per_event"],
                    "difference_us": round(o["cpu_us_per_event"] - b["cpu_us_per_event"], 3),
                }
                for o, b in zip(ours, bare, strict=True)
            ]
    sdk_by_loop = {
        loop: [_figure("sdk", "", loop, 250, cpu=120.0, p99=20.0), _figure("sdk", "", loop, 500, cpu=150.0, p99=400.0)]
        for loop in _LOOPS
    }
    first = combinations[0]
    budgets = [
        (
            "a",
            "1,000 streams × 20/s sustained in one process (p99 < 100 ms)",
            "not measured",
            "no run of ≥ 1,000 streams",
        ),
        ("c", "ours sustains ≥ 2× the streams the anthropic SDK sustains", "within", "ours 500 streams, the SDK 250"),
        ("d", "ours − bare transport ≤ 10 µs an event", "OVER", "largest httpx × asyncio at 500 streams: 15.0 µs"),
    ]
    return {
        "streams": 500,
        "rate": 20.0,
        "seconds": 10.0,
        "transport": first["transport"],
        "loop": first["loop"],
        "processes": 1,
        "matrix": matrix,
        "sdk_client": "anthropic 9.9 AsyncAnthropic(aiohttp)",
        "adapters": first["adapters"],
        "bare": first["bare"],
        "ours_tries": first["ours_tries"],
        "sdk_tries": sdk_by_loop[first["loop"]],
        "ours_sustained_streams": 500,
        "sdk_sustained_streams": 250,
        "compared_at_streams": 250,
        "combinations": combinations,
        "sdk_by_loop": sdk_by_loop,
        "ours_minus_bare": pairs,
        "budgets": [dict(zip(("key", "claim", "verdict", "detail"), budget, strict=True)) for budget in budgets],
        "leaks": {"fds": 0, "tasks": 0, "server_connections": 0, "unfinished_responses": 0, "failed_streams": 0},
    }


def _with_load(entry: dict[str, Any]) -> dict[str, Any]:
    document = _document()
    document["suites"]["load"]["load"] = [entry]
    return document


def _page(tmp_path: Path, document: dict[str, Any]) -> str:
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    page: str = _perf_page().markdown(path, chart="perf/chart.svg", load_chart="perf/load.svg")
    return page[page.index("### Many streams at once") :]


def test_a_load_matrix_renders_a_table_per_transport_and_loop_the_differences_and_the_budgets(tmp_path: Path) -> None:
    section = _page(tmp_path, _with_load(_matrix_load()))
    assert "at 250, 500 concurrent streams × 20 text deltas/s × 10 s" in section
    assert "(aiohttp × uvloop, aiohttp × asyncio, httpx × uvloop, httpx × asyncio)" in section
    assert "(`anthropic 9.9 AsyncAnthropic(aiohttp)`)" in section
    assert "![Client CPU per event and p99 added latency" in section
    assert "](perf/load.svg)" in section
    assert "no load matrix" not in section
    header = "| api | stack | streams | events | CPU µs/event | p50 ms | p99 ms | KiB/stream | server CPU | sustained |"
    assert section.count(header) == 4
    tables = {name: section.index(f"#### {name}\n") for name in ("aiohttp × uvloop", "httpx × asyncio")}
    httpx_asyncio = section[tables["httpx × asyncio"] : section.index("#### Ours − bare transport")]
    # ours, then bare, then the SDK at each load, fewer streams first
    rows = [
        "| `anthropic-messages` | ours | 250 | 50,000 | 57.5 | 25.75 | 103.00 | 30.0 | 25% | **no** |",
        "| `anthropic-messages` | bare httpx | 250 | 50,000 | 45.0 | 0.38 | 1.50 | 30.0 | 25% | yes |",
        "| `anthropic-messages` | anthropic SDK | 250 | 50,000 | 120.0 | 5.00 | 20.00 | 30.0 | 25% | yes |",
        "| `anthropic-messages` | ours | 500 | 100,000 | 60.0 | 50.75 | 203.00 | 30.0 | 25% | **no** |",
        "| `anthropic-messages` | bare httpx | 500 | 100,000 | 45.0 | 0.38 | 1.50 | 30.0 | 25% | yes |",
        "| `anthropic-messages` | anthropic SDK | 500 | 100,000 | 150.0 | 100.00 | 400.00 | 30.0 | 25% | **no** |",
    ]
    assert [httpx_asyncio.index(row) for row in rows] == sorted(httpx_asyncio.index(row) for row in rows)
    aiohttp_uvloop = section[tables["aiohttp × uvloop"] : section.index("#### aiohttp × asyncio")]
    assert "| `anthropic-messages` | ours | 250 | 50,000 | 42.5 | 7.00 | 28.00 | 30.0 | 25% | yes |" in aiohttp_uvloop
    assert "bare httpx" not in aiohttp_uvloop
    assert aiohttp_uvloop.count("| ours | 250 |") == 1  # ours_tries repeat the matrix's figures: shown once
    # the SDK ran once per loop: its rows repeat in each transport's table of that loop
    assert section.count("| anthropic SDK | 250 | 50,000 | 120.0 |") == 4
    assert (
        "On asyncio, the largest load sustained at 20 deltas/s per stream, of those tried: ours aiohttp 500, "
        "ours httpx 0 streams; the anthropic SDK 250."
    ) in section
    assert (
        "Per event on uvloop at 250 streams, where the SDK keeps up: ours aiohttp 42.5 µs of CPU, the SDK 120.0 "
        "(2.8× ours), p99 latency 28.00 ms against 20.00 ms; ours httpx 52.5 µs of CPU"
    ) in section
    assert "| transport × loop | streams | ours µs/event | bare µs/event | ours − bare µs |" in section
    assert "| aiohttp × uvloop | 250 | 42.5 | 30.0 | 12.5 |" in section
    assert "| httpx × asyncio | 500 | 60.0 | 45.0 | 15.0 |" in section
    assert section.count(" × asyncio | ") == 4  # an ours − bare line per transport and load
    assert "| (a) 1,000 streams × 20/s sustained in one process (p99 < 100 ms) | not measured | no run of" in section
    assert "| (c) ours sustains ≥ 2× the streams the anthropic SDK sustains | within | ours 500 streams" in section
    assert "| (d) ours − bare transport ≤ 10 µs an event | **OVER** | largest httpx × asyncio at 500" in section
    assert section.rstrip().endswith("streams without exactly their events (each must be 0).")
    assert "This run:" not in section


def test_a_load_run_merged_from_another_run_names_its_own_machine_and_date(tmp_path: Path) -> None:
    entry = _matrix_load(("aiohttp",))
    entry["measured"] = {
        "date": "2026-12-04T10:00:00Z",
        "git_revision": "def456",
        "cpus": 2,
        "cpu_model": "Other CPU",
        "platform": "Linux",
        "python": "3.11.7",
    }
    section = _page(tmp_path, _with_load(entry))
    assert section.startswith(
        "### Many streams at once\n\nThis run: Measured 2026-12-04T10:00:00Z at revision `def456` on 2 × Other CPU"
    )


def test_a_load_split_among_processes_shows_each_process_under_its_figure(tmp_path: Path) -> None:
    entry = _matrix_load(("aiohttp",))
    ours = entry["combinations"][0]["adapters"][0]
    part = {**ours, "streams": 125, "events": 25_000, "processes": 1, "cpu_us_per_event": 41.0}
    ours.update(processes=2, per_process=[part, {**part, "cpu_us_per_event": 44.0, "sustained": False}])
    entry["processes"] = 2
    for pair in entry["ours_minus_bare"]:
        pair["processes"] = 2
    section = _page(tmp_path, _with_load(entry))
    assert "driven from 2 client processes (the streams split evenly)" in section
    assert "| `anthropic-messages` | ours | 250 | 50,000 | 42.5 |" in section
    assert "|  | ↳ process 1/2 | 125 | 25,000 | 41.0 | 7.00 | 28.00 | — | — | yes |" in section
    assert "|  | ↳ process 2/2 | 125 | 25,000 | 44.0 | 7.00 | 28.00 | — | — | **no** |" in section
    assert "| transport × loop | streams | processes | ours µs/event | bare µs/event | ours − bare µs |" in section
    assert "| aiohttp × uvloop | 250 | 2 | 42.5 | 30.0 | 12.5 |" in section


def test_a_load_measured_in_rounds_shows_the_medians_interval_and_verdict_and_charts_the_medians(
    tmp_path: Path,
) -> None:
    entry = _matrix_load(("aiohttp",))
    combo = entry["combinations"][0]  # aiohttp × uvloop: ours 42.5 at 250 streams, then two more rounds
    combo["rounds"] = [
        {**_figure("ours", "aiohttp", "uvloop", 250, cpu=50.0, p99=150.0), "round": 1},
        {**_figure("bare", "aiohttp", "uvloop", 250, cpu=31.0, p99=1.5), "round": 1},
        {**_figure("ours", "aiohttp", "uvloop", 250, cpu=44.0, p99=20.0), "round": 2},
    ]
    first = entry["ours_minus_bare"][0]
    first.update(rounds=3, difference_low_us=11.0, difference_high_us=19.0, verdict="undecided")
    first.update(floor_cpu_us_per_event=35.0, parse_and_build_us=4.5, kit_us=7.5)  # the rounds' own medians
    section = _page(tmp_path, _with_load(entry))
    header = "| transport × loop | streams | ours µs/event | bare µs/event | ours − bare µs |"
    assert f"{header} its interval, rounds and verdict |" in section
    # the split is the rounds' own medians, not 35 − 30 and 42.5 − 35
    assert "| aiohttp × uvloop | 250 | 42.5 | 30.0 | 12.5 | [11.0–19.0], 3 rounds, undecided | 4.5 | 7.5 |" in section
    assert "| aiohttp × uvloop | 500 | 45.0 | 30.0 | 15.0 | 1 round | — | — |" in section
    assert "each figure is the median of its rounds" in section
    # the chart's point at 250 streams: CPU the median of 42.5, 50 and 44, p99 of 28, 150 and 20; not
    # sustained, as one round was not
    lines = _perf_page()._matrix_lines(entry)  # pyright: ignore[reportPrivateUsage]
    point = next(row for transport, loop, rows in lines if (transport, loop) == ("aiohttp", "uvloop") for row in rows)
    assert (point["streams"], point["cpu_us_per_event"], point["latency_p99_ms"], point["sustained"]) == (
        250,
        44.0,
        28.0,
        False,
    )
    # without later rounds the table has no interval column
    assert "its interval" not in _page(tmp_path, _with_load(_matrix_load(("aiohttp",))))


def test_a_load_run_without_a_matrix_renders_without_its_chart(tmp_path: Path) -> None:
    entry = _matrix_load(("aiohttp",), matrix=False)
    section = _page(tmp_path, _with_load(entry))
    assert "concurrent streams × 20 text deltas/s × 10 s per adapter (ours)" in section
    assert "_This result has no load matrix (run `python -m bench load --matrix`), so no chart of it._" in section
    assert "perf/load.svg" not in section
    assert "#### aiohttp × uvloop" in section
    assert "| aiohttp × asyncio | 500 | 50.0 | 35.0 | 15.0 |" in section
    perf_page = _perf_page()
    assert perf_page.load_chart_svg(_with_load(entry)) is None
    assert perf_page.load_chart_svg(_document()) is None  # an old entry has no matrix either


def test_an_old_load_entry_renders_as_before_with_no_matrix_chart(tmp_path: Path) -> None:
    section = _page(tmp_path, _document())
    assert "10 concurrent streams × 20 text deltas/s × 2 s per adapter" in section
    assert "| `anthropic-messages` | ours | 10 | 400 | 41.5 | 0.70 | 3.25 | 12.0 | yes |" in section
    assert "no load matrix" in section
    assert "####" not in section
    assert "perf/load.svg" not in section


def test_the_load_chart_is_deterministic_svg_with_a_line_per_transport_and_loop() -> None:
    pytest.importorskip("matplotlib", reason="the chart needs the docs extra (matplotlib)")
    perf_page = _perf_page()
    document = _with_load(_matrix_load())
    svg: str = perf_page.load_chart_svg(document)
    assert svg == perf_page.load_chart_svg(document)  # the same JSON, the same bytes
    assert svg.lstrip().startswith("<?xml")
    assert "<image" not in svg
    assert "@font-face" not in svg
    for label in ("client CPU per event", "p99 added latency (server write → consumer event)", "250", "500", "100"):
        assert f">{label}</text>" in svg, label
    # one legend entry per transport × loop, and nothing else in the legend
    labels = [f"{transport} × {loop}" for transport in _TRANSPORTS for loop in _LOOPS]
    for label in labels:
        assert svg.count(f">{label}</text>") == 1, label
    assert svg.count('<g id="legend_') == 1
    fewer: str = perf_page.load_chart_svg(_with_load(_matrix_load(("aiohttp",))))
    assert ">httpx × uvloop</text>" not in fewer
    assert svg.count('<g id="line2d_') > fewer.count('<g id="line2d_')
    charts: dict[str, str] = perf_page.charts(document)
    assert charts == {perf_page.CHART_PATH: perf_page.chart_svg(document), perf_page.LOAD_CHART_PATH: svg}
    assert list(perf_page.charts(_document())) == [perf_page.CHART_PATH]


def test_a_load_run_with_a_floor_splits_ours_minus_bare_into_parse_and_build_and_the_kit(tmp_path: Path) -> None:
    entry = _matrix_load(("aiohttp",))
    combination = entry["combinations"][0]
    for bare in list(combination["bare"]):
        floor = {**bare, "stack": "floor", "cpu_us_per_event": bare["cpu_us_per_event"] + 6.0}
        combination["bare"].append(floor)
    pairs = entry["ours_minus_bare"]
    pairs[0]["floor_cpu_us_per_event"] = pairs[0]["bare_cpu_us_per_event"] + 6.0
    pairs[1]["floor_cpu_us_per_event"] = None  # a pair with no floor at its load: dashes, not a figure
    section = _page(tmp_path, _with_load(entry))
    assert (
        "| transport × loop | streams | ours µs/event | bare µs/event | ours − bare µs | of which parse and build "
        "(floor − bare) | of which the kit (ours − floor) |"
    ) in section
    first, second = pairs[0], pairs[1]
    kit = first["ours_cpu_us_per_event"] - first["bare_cpu_us_per_event"] - 6.0
    assert (
        f"| aiohttp × uvloop | 250 | {first['ours_cpu_us_per_event']:.1f} | {first['bare_cpu_us_per_event']:.1f} | "
        f"{first['difference_us']:.1f} | 6.0 | {kit:.1f} |"
    ) in section
    assert f"| aiohttp × uvloop | 500 | {second['ours_cpu_us_per_event']:.1f} |" in section
    assert f"| {second['difference_us']:.1f} | — | — |" in section
    # the floor's rows sit after the bare transport's at each load
    table = section[section.index("#### aiohttp × uvloop\n") :]
    assert table.index("| floor aiohttp | 250 |") > table.index("| bare aiohttp | 250 |")
    assert table.index("| floor aiohttp | 250 |") < table.index("| ours | 500 |")
