"""The Performance page, generated from a committed bench result (``docs/perf/bench.json``).

``python -m bench --json docs/perf/bench.json`` writes the result; at docs build time
:func:`markdown` turns it into tables (µs per event per adapter and stream kind, the same beside a
minimal decoder where one was measured, the judged ratios, the load figure, the machine) and
:func:`chart_svg` into a bar chart of events/s for the bare parse, ours and the vendor SDK per
adapter. The chart is drawn by matplotlib — in the ``docs`` extra only — as SVG with text kept as
text (no font is embedded or fetched) and fixed ids and metadata, so the same JSON always gives the
same bytes. A fresh clone builds the page without running the bench.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

__all__ = ["BENCH_JSON", "CHART_PATH", "chart_svg", "load", "markdown"]

BENCH_JSON = Path(__file__).resolve().parents[1] / "perf" / "bench.json"
#: Where the chart is served in the site (relative to the docs directory).
CHART_PATH = "perf/events-per-second.svg"

_ROLES = ("bare", "ours", "sdk")
_KINDS = ("text", "tool", "thinking")
_KIND_NAMES = {"text": "text", "tool": "tool args", "thinking": "thinking"}


def load(path: Path = BENCH_JSON) -> dict[str, Any]:
    """The bench result at ``path``; ``ValueError`` when it is not one."""
    document: Any = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(document, dict) or document.get("schema") != 1 or "suites" not in document:
        raise ValueError(f"{path}: not a bench result (schema 1, written by python -m bench --json)")
    return dict(document)


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]], align: str = "") -> str:
    marks = [("---:" if kind == "r" else "---") for kind in align.ljust(len(header), "l")]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(marks) + " |"]
    lines += ["| " + " | ".join(_cell(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _comparisons(document: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(adapter suite, comparison) in the order measured."""
    return [
        (suite, comparison)
        for suite, sections in document["suites"].items()
        for comparison in sections.get("comparisons", [])
    ]


def _us(comparison: dict[str, Any], role: str) -> float | None:
    return next((s["us_per_event"] for s in comparison["stacks"] if s["role"] == role), None)


def _figure(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _verdict(ratio: dict[str, Any] | None) -> str:
    if ratio is None:
        return "—"
    figure = f"{ratio['estimate']:.2f} [{ratio['low']:.2f}–{ratio['high']:.2f}]"
    if ratio.get("budget") is None:
        return figure
    sign = "≤" if ratio["at_most"] else "≥"
    said = {"within": "within", "over": "**OVER**", "undecided": "undecided"}[ratio["verdict"]]
    return f"{figure} {sign} {ratio['budget']:g}: {said}"


def _per_event_table(document: dict[str, Any]) -> str:
    rows = [
        (
            f"`{suite}`",
            _KIND_NAMES.get(comparison["kind"], comparison["kind"]),
            f"{comparison['events']:,}",
            _figure(_us(comparison, "bare")),
            _figure(_us(comparison, "ours")),
            _figure(_us(comparison, "sdk"), 1),
            _verdict(comparison["ratios"].get("b/a")),
            _verdict(comparison["ratios"].get("b/c")),
        )
        for suite, comparison in _comparisons(document)
    ]
    header = (
        "adapter",
        "stream",
        "events",
        "bare µs/event",
        "ours µs/event",
        "SDK µs/event",
        "ours vs bare",
        "ours vs SDK",
    )
    return _table(header, rows, align="llrrrrll")


def _minimal_table(document: dict[str, Any]) -> str:
    """The comparisons measured with a minimal decoder on the kit, beside ours: what no decoder can undercut."""
    rows = [
        (
            f"`{suite}`",
            _KIND_NAMES.get(comparison["kind"], comparison["kind"]),
            _figure(_us(comparison, "ours")),
            _figure(_us(comparison, "minimal")),
            _verdict(comparison["ratios"].get("b/a")),
            _verdict(comparison["ratios"].get("m/a")),
            _verdict(comparison["ratios"].get("b/c")),
            _verdict(comparison["ratios"].get("m/c")),
        )
        for suite, comparison in _comparisons(document)
        if _us(comparison, "minimal") is not None
    ]
    if not rows:
        return "_This result has no measurement with a minimal decoder._"
    intro = (
        "Where a budget is out of reach, the bench also runs the adapter's stack with a minimal decoder: "
        "each frame parsed and handed to the builder as it comes, none of the checks. No decoder on the kit "
        "can be faster, so its ratios (shown without a budget) say how far a budget is from what the framing, "
        "the parse, the builder and the event stream cost by themselves."
    )
    header = (
        "adapter",
        "stream",
        "ours µs/event",
        "minimal µs/event",
        "ours vs bare",
        "minimal vs bare",
        "ours vs SDK",
        "minimal vs SDK",
    )
    return intro + "\n\n" + _table(header, rows, align="llrrllll")


def _ratio_table(document: dict[str, Any]) -> str:
    rows = [
        (f"`{suite}`", ratio["label"], _verdict(ratio), str(ratio["rounds"]))
        for suite, sections in document["suites"].items()
        for ratio in sections.get("ratios", [])
    ]
    return _table(("adapter", "ratio", "measured [interval] and budget", "rounds"), rows, align="lllr")


def _load_row(row: dict[str, Any]) -> tuple[str, ...]:
    memory = row.get("memory_kib_per_stream")
    return (
        f"`{row['api']}`",
        "ours" if row["stack"] == "ours" else "anthropic SDK",
        f"{row['streams']:,}",
        f"{row['events']:,}",
        f"{row['cpu_us_per_event']:.1f}",
        f"{row['latency_p50_ms']:.2f}",
        f"{row['latency_p99_ms']:.2f}",
        "—" if memory is None else f"{memory:.1f}",
        "yes" if row["sustained"] else "**no**",
    )


def _load_section(document: dict[str, Any]) -> str:
    loads = [entry for sections in document["suites"].values() for entry in sections.get("load", [])]
    if not loads:
        return "_This result has no load figure (run the `load` suite)._"
    load = loads[-1]
    first = load["adapters"][0] if load["adapters"] else None
    tries = [t for t in load.get("ours_tries", []) if t != first]
    rows = [_load_row(row) for row in [*load["adapters"], *tries, *load["sdk_tries"]]]
    header = ("api", "stack", "streams", "events", "CPU µs/event", "p50 ms", "p99 ms", "KiB/stream", "sustained")
    intro = (
        f"{load['streams']:,} concurrent streams × {load['rate']:g} text deltas/s × {load['seconds']:g} s per adapter, "
        "from a loopback server in its own process. CPU is the client process's, per event received; latency is "
        "what the client adds, from the server writing a delta to the consumer receiving its event; memory per "
        "stream comes from a separate short pass under tracemalloc. Then ours (the Anthropic adapter) and the "
        "anthropic SDK run at half as many streams, and half again, until each sustains the load (every event "
        "received, p99 latency under 100 ms)."
    )
    parts = [
        intro,
        _table(header, rows, align="llrrrrrrl"),
    ]
    if load["sdk_tries"]:
        parts.append(
            f"Largest load sustained at {load['rate']:g} deltas/s per stream: ours "
            f"{load.get('ours_sustained_streams', 0):,} streams, the anthropic SDK {load['sdk_sustained_streams']:,}."
        )
    compared_at = load.get("compared_at_streams", 0)
    ours_row = next((t for t in load.get("ours_tries", []) if t["streams"] == compared_at), None)
    sdk_row = next((t for t in load["sdk_tries"] if t["streams"] == compared_at), None)
    if compared_at and ours_row and sdk_row:
        parts.append(
            f"Per event at the same load ({compared_at:,} streams, where both keep up): ours "
            f"{ours_row['cpu_us_per_event']:.1f} µs of CPU, the SDK {sdk_row['cpu_us_per_event']:.1f} "
            f"({sdk_row['cpu_us_per_event'] / ours_row['cpu_us_per_event']:.1f}× ours); p99 latency "
            f"{ours_row['latency_p99_ms']:.2f} ms against {sdk_row['latency_p99_ms']:.2f} ms."
        )
    leaks = load["leaks"]
    parts.append(
        f"Leak checks after the run: {leaks['fds']} file descriptors, {leaks['tasks']} tasks, "
        f"{leaks['server_connections']} server connections, {leaks['unfinished_responses']} unfinished responses, "
        f"{leaks['failed_streams']} streams without exactly their events (each must be 0)."
    )
    return "\n\n".join(parts)


def _machine(document: dict[str, Any]) -> str:
    return (
        f"Measured {document['date']} at revision `{document['git_revision']}` on {document['cpus']} × "
        f"{document['cpu_model']}, Python {document['python']} ({document['platform']})."
    )


def markdown(path: Path = BENCH_JSON, chart: str = CHART_PATH) -> str:
    """The page's generated part: every table, the chart (at ``chart``) and the machine line."""
    document = load(path)
    parts = [
        _machine(document),
        f"`{document['rule']}`",
        f"### Events per second\n\n![Events per second of the bare parse, ours and the vendor SDK]({chart})",
        "### CPU µs per event\n\n" + _per_event_table(document),
        "### What the kit itself costs\n\n" + _minimal_table(document),
        "### Cost ratios\n\n" + _ratio_table(document),
        "### Many streams at once\n\n" + _load_section(document),
    ]
    return "\n\n".join(parts)


def _rates(document: dict[str, Any], kind: str) -> tuple[list[str], dict[str, list[float]]]:
    """Adapters with a ``kind`` comparison, and events/s per role (0 where a role was not run)."""
    adapters: list[str] = []
    rates: dict[str, list[float]] = {role: [] for role in _ROLES}
    for suite, comparison in _comparisons(document):
        if comparison["kind"] != kind or suite in adapters:
            continue
        adapters.append(suite)
        for role in _ROLES:
            us = _us(comparison, role)
            rates[role].append(1e6 / us if us else 0.0)
    return adapters, rates


def chart_svg(document: dict[str, Any]) -> str:
    """Bars of events/s (log scale) for the bare parse, ours and the SDK per adapter, text and tool
    args side by side; deterministic SVG text."""
    # The docs extra: imported only when the chart is drawn, so the tables need no matplotlib. A bare
    # Figure (no pyplot) touches no global backend state.
    import matplotlib  # noqa: PLC0415
    from matplotlib.figure import Figure  # noqa: PLC0415

    style = {
        "svg.hashsalt": "streamfns-performance",  # fixed ids: the same JSON gives the same bytes
        "svg.fonttype": "none",  # text stays text: no glyphs embedded, no font fetched
        "font.family": "sans-serif",
        "font.size": 9,
    }
    colors = {"bare": "#9e9e9e", "ours": "#3f51b5", "sdk": "#ff9800"}
    labels = {"bare": "bare parse (framing + json.loads)", "ours": "streamfns", "sdk": "vendor SDK"}
    with matplotlib.rc_context(style):
        figure = Figure(figsize=(10, 4.2))
        axes = figure.subplots(1, 2, sharey=True)
        for ax, kind in zip(axes, ("text", "tool"), strict=True):
            adapters, rates = _rates(document, kind)
            width = 0.27
            for offset, role in enumerate(_ROLES):
                xs = [i + (offset - 1) * width for i in range(len(adapters))]
                ax.bar(xs, rates[role], width, color=colors[role], label=labels[role])
            ax.set_xticks(range(len(adapters)), adapters, rotation=20, ha="right")
            ax.set_yscale("log")
            ax.set_ylim(bottom=1000)
            ax.set_title(f"{_KIND_NAMES[kind]} stream")
            ax.grid(axis="y", which="major", alpha=0.3)
        axes[0].set_ylabel("events/s, CPU-bound (log scale)")
        handles, names = axes[0].get_legend_handles_labels()
        figure.legend(handles, names, loc="upper center", ncol=3, frameon=False)
        figure.tight_layout(rect=(0, 0, 1, 0.92))
        out = io.StringIO()
        figure.savefig(out, format="svg", metadata={"Date": None, "Creator": "streamfns docs"})
    return out.getvalue()
