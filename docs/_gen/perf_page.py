"""The Performance page, generated from a committed bench result (``docs/perf/bench.json``).

``python -m bench --json docs/perf/bench.json`` writes the result; at docs build time
:func:`markdown` turns it into tables (µs per event per adapter and stream kind, the same beside a
minimal decoder where one was measured, the judged ratios, the load run, the machine) and
:func:`chart_svg` into a bar chart of events/s for the bare parse, ours and the vendor SDK per
adapter; when the load run was a ``--matrix``, :func:`load_chart_svg` draws client CPU per event and
p99 added latency against the number of streams, a line per HTTP transport × event loop.
:func:`charts` gives every chart the page links, by its path in the site. The charts are drawn by
matplotlib — in the ``docs`` extra only — as SVG with text kept as text (no font is embedded or
fetched) and fixed ids and metadata, so the same JSON always gives the same bytes. A fresh clone
builds the page without running the bench, and its tables without matplotlib.

A load entry written before the load suite measured transports and loops (no ``combinations``)
renders as it always did, with one line more saying it holds no matrix.
"""

from __future__ import annotations

import importlib
import io
import json
import math
import statistics
from pathlib import Path
from typing import Any, cast

__all__ = ["BENCH_JSON", "CHART_PATH", "LOAD_CHART_PATH", "chart_svg", "charts", "load", "load_chart_svg", "markdown"]

BENCH_JSON = Path(__file__).resolve().parents[1] / "perf" / "bench.json"
#: Where the chart is served in the site (relative to the docs directory).
CHART_PATH = "perf/events-per-second.svg"
#: Where the load matrix's chart is served in the site (relative to the docs directory).
LOAD_CHART_PATH = "perf/load-matrix.svg"

_ROLES = ("bare", "ours", "sdk")
_KINDS = ("text", "tool", "thinking")
_KIND_NAMES = {"text": "text", "tool": "tool args", "thinking": "thinking"}
#: The api the load suite compares with the bare transport and the SDK (``bench._load_stacks.ANTHROPIC``).
_ANTHROPIC = "anthropic-messages"
_BUDGET_VERDICTS = {"within": "within", "OVER": "**OVER**", "undecided": "undecided", "not measured": "not measured"}


def load(path: Path = BENCH_JSON) -> dict[str, Any]:
    """The bench result at ``path``; ``ValueError`` when it is not one."""
    parsed: Any = json.loads(path.read_text(encoding="utf-8"))
    document = cast("dict[str, Any]", parsed) if isinstance(parsed, dict) else {}
    if document.get("schema") != 1 or "suites" not in document:
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


def _kind_name(kind: str) -> str:
    return _KIND_NAMES.get(kind, kind)


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
            _kind_name(comparison["kind"]),
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
            _kind_name(comparison["kind"]),
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
        _stack_name(row),
        f"{row['streams']:,}",
        f"{row['events']:,}",
        f"{row['cpu_us_per_event']:.1f}",
        f"{row['latency_p50_ms']:.2f}",
        f"{row['latency_p99_ms']:.2f}",
        "—" if memory is None else f"{memory:.1f}",
        "yes" if row["sustained"] else "**no**",
    )


def _last_load(document: dict[str, Any]) -> dict[str, Any] | None:
    """The last load run the result holds, if any."""
    loads = [entry for sections in document["suites"].values() for entry in sections.get("load", [])]
    return loads[-1] if loads else None


def _single_load_section(load: dict[str, Any]) -> list[str]:
    """A load entry of one transport (written before ``combinations``), as the page always showed it."""
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
    return parts


def _stack_name(row: dict[str, Any]) -> str:
    """The stack as the tables name it: ours, the bare transport by its library, the anthropic SDK."""
    names = {"ours": "ours", "sdk": "anthropic SDK"}
    return names.get(row["stack"], f"{row['stack']} {row.get('transport', '')}".strip())


def _share(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def _combination_rows(row: dict[str, Any]) -> list[tuple[str, ...]]:
    """``row`` as a table row (one column more than the old table: the server's CPU share), then a row
    per client process when the load was split among several."""
    *figures, sustained = _load_row(row)
    rows = [(*figures, _share(row.get("server_cpu_share")), sustained)]
    parts: list[dict[str, Any]] = row.get("per_process", [])
    rows += [
        (
            "",
            f"↳ process {index}/{len(parts)}",
            f"{part['streams']:,}",
            f"{part['events']:,}",
            f"{part['cpu_us_per_event']:.1f}",
            f"{part['latency_p50_ms']:.2f}",
            f"{part['latency_p99_ms']:.2f}",
            "—",
            "—",
            "yes" if part["sustained"] else "**no**",
        )
        for index, part in enumerate(parts, 1)
    ]
    return rows


def _combination_table(load: dict[str, Any], combo: dict[str, Any]) -> str:
    """One transport × loop: ours per api (or, in a matrix, per load), the bare transport, ours at the
    loads tried for the SDK, and the SDK's tries on the same loop; a matrix's rows by load."""
    sdk: list[dict[str, Any]] = load.get("sdk_by_loop", {}).get(combo["loop"], [])
    ours: list[dict[str, Any]] = combo["adapters"]
    tries = [t for t in combo.get("ours_tries", []) if t not in ours]
    every = [*ours, *combo["bare"], *tries, *sdk]
    if load.get("matrix"):
        order = {"ours": 0, "bare": 1, "floor": 2, "sdk": 3}
        every.sort(key=lambda row: (row["streams"], order.get(row["stack"], 3)))
    header = (
        "api",
        "stack",
        "streams",
        "events",
        "CPU µs/event",
        "p50 ms",
        "p99 ms",
        "KiB/stream",
        "server CPU",
        "sustained",
    )
    rows = [line for row in every for line in _combination_rows(row)]
    return f"#### {combo['transport']} × {combo['loop']}\n\n" + _table(header, rows, align="llrrrrrrrl")


def _largest_sustained(tries: list[dict[str, Any]]) -> int:
    return max((t["streams"] for t in tries if t["sustained"]), default=0)


def _sdk_lines(load: dict[str, Any]) -> list[str]:
    """Per loop the SDK ran on: the largest loads sustained, and ours against the SDK per event at the
    SDK's largest sustained load."""
    lines: list[str] = []
    rate = load["rate"]
    for loop, sdk in load.get("sdk_by_loop", {}).items():
        combos = [c for c in load["combinations"] if c["loop"] == loop]
        if not sdk or not combos:
            continue
        ours = ", ".join(f"ours {c['transport']} {_largest_sustained(c.get('ours_tries', [])):,}" for c in combos)
        best = _largest_sustained(sdk)
        lines.append(
            f"On {loop}, the largest load sustained at {rate:g} deltas/s per stream, of those tried: {ours} streams; "
            f"the anthropic SDK {best:,}."
        )
        sdk_row = next((t for t in sdk if t["streams"] == best and t["sustained"]), None)
        compared = [
            (c["transport"], row)
            for c in combos
            for row in [next((t for t in c.get("ours_tries", []) if t["streams"] == best), None)]
            if row is not None
        ]
        if sdk_row is None or not compared:
            continue
        each = "; ".join(
            f"ours {transport} {row['cpu_us_per_event']:.1f} µs of CPU, the SDK {sdk_row['cpu_us_per_event']:.1f} "
            f"({sdk_row['cpu_us_per_event'] / row['cpu_us_per_event']:.1f}× ours), p99 latency "
            f"{row['latency_p99_ms']:.2f} ms against {sdk_row['latency_p99_ms']:.2f} ms"
            for transport, row in compared
        )
        lines.append(f"Per event on {loop} at {best:,} streams, where the SDK keeps up: {each}.")
    return lines


def _overhead_table(load: dict[str, Any]) -> str:
    """Ours − the bare transport, CPU per event, at each transport × loop × load the run paired."""
    found: list[dict[str, Any]] = load.get("ours_minus_bare", [])
    if not found:
        return "_This run measured no bare transport, so no ours − bare figure._"
    processes = any(pair.get("processes", 1) != 1 for pair in found)
    floors = any(pair.get("floor_cpu_us_per_event") is not None for pair in found)
    rounds = any(pair.get("rounds", 1) > 1 for pair in found)
    rows = [
        (
            f"{pair['transport']} × {pair['loop']}",
            f"{pair['streams']:,}",
            *([str(pair.get("processes", 1))] if processes else []),
            f"{pair['ours_cpu_us_per_event']:.1f}",
            f"{pair['bare_cpu_us_per_event']:.1f}",
            f"{pair['difference_us']:.1f}",
            *([_interval(pair)] if rounds else []),
            *(_split(pair) if floors else ()),
        )
        for pair in found
    ]
    header = (
        "transport × loop",
        "streams",
        *(["processes"] if processes else []),
        "ours µs/event",
        "bare µs/event",
        "ours − bare µs",
        *(["its interval, rounds and verdict"] if rounds else []),
        *(["of which parse and build (floor − bare)", "of which the kit (ours − floor)"] if floors else []),
    )
    intro = (
        f"Client CPU per event of the `{_ANTHROPIC}` body, ours against its HTTP library alone at the same "
        "transport, loop and load: what the adapter and the kit add to reading the bytes. Budget (d) below "
        "judges the largest."
    )
    if floors:
        intro += (
            " The floor (the same library with the adapter's own framing, decoder and message builder applied "
            "to each read, and nothing else of the kit) splits the difference into what parsing and building "
            "cost and what the kit's read path, event stream and per-call set-up add."
        )
    if rounds:
        intro += (
            " Measured in paired rounds (ours, the bare library and the floor back to back, every other round in "
            "reverse): each figure is the median of its rounds, ours − bare the median of the rounds' own "
            "differences with its interval, judged by the verdict rule."
        )
    align = "lr" + ("r" if processes else "") + "rrr" + ("l" if rounds else "") + ("rr" if floors else "")
    return intro + "\n\n" + _table(header, rows, align=align)


def _interval(pair: dict[str, Any]) -> str:
    """``[low–high], N rounds, verdict`` of one cell measured in several rounds (one round: the round)."""
    count = pair.get("rounds", 1)
    if count == 1:
        return "1 round"
    low, high = pair["difference_low_us"], pair["difference_high_us"]
    return f"[{low:.1f}–{high:.1f}], {count} rounds, {pair.get('verdict', '—')}"


def _split(pair: dict[str, Any]) -> tuple[str, str]:
    """(floor − bare, ours − floor) of one ours − bare pair, or dashes where no floor ran: the medians of
    the rounds' own differences where the run recorded them (several rounds), else of its one round."""
    floor = pair.get("floor_cpu_us_per_event")
    if floor is None:
        return ("—", "—")
    parse, kit = pair.get("parse_and_build_us"), pair.get("kit_us")
    if parse is None or kit is None:
        parse, kit = floor - pair["bare_cpu_us_per_event"], pair["ours_cpu_us_per_event"] - floor
    return (f"{parse:.1f}", f"{kit:.1f}")


def _said(verdict: str) -> str:
    return _BUDGET_VERDICTS.get(verdict, verdict)


def _budget_table(load: dict[str, Any]) -> str:
    """The budgets' verdicts as the run recorded them."""
    rows = [
        (
            f"({budget['key']}) {budget['claim']}",
            _said(budget["verdict"]),
            budget["detail"],
        )
        for budget in load.get("budgets", [])
    ]
    if not rows:
        return "_This run recorded no budget verdicts._"
    intro = (
        "The load budgets as this run judged them (measured and printed, never asserted; a budget is never "
        "within on a load the run did not drive):"
    )
    return intro + "\n\n" + _table(("budget", "verdict", "measured"), rows)


def _loads_tried(load: dict[str, Any]) -> list[int]:
    return sorted({row["streams"] for combo in load["combinations"] for row in combo["adapters"]})


def _combinations_intro(load: dict[str, Any]) -> str:
    combos = ", ".join(f"{c['transport']} × {c['loop']}" for c in load["combinations"])
    processes = load.get("processes", 1)
    clients = "one client process" if processes == 1 else f"{processes} client processes (the streams split evenly)"
    if load.get("matrix"):
        loads = ", ".join(f"{n:,}" for n in _loads_tried(load))
        what = (
            f"The Anthropic adapter (ours), its HTTP library alone (bare) and the anthropic SDK at {loads} "
            f"concurrent streams × {load['rate']:g} text deltas/s × {load['seconds']:g} s, on each HTTP transport × "
            f"event loop ({combos}), from a loopback server in its own process, driven from {clients}. The SDK "
            "stops at the first load it does not sustain."
        )
    else:
        what = (
            f"{load['streams']:,} concurrent streams × {load['rate']:g} text deltas/s × {load['seconds']:g} s per "
            f"adapter (ours), then the HTTP library alone (bare), on each HTTP transport × event loop ({combos}), "
            f"from a loopback server in its own process, driven from {clients}. Then ours (the Anthropic adapter) "
            "and the anthropic SDK run at half as many streams, and half again, until each sustains the load."
        )
    sdk = f" (`{load['sdk_client']}`)" if load.get("sdk_client") else ""
    return (
        f"{what} CPU is the client processes', per event received; latency is what the client adds, from the "
        "server writing a delta to the consumer receiving its event; memory per stream comes from a separate "
        "short pass under tracemalloc; server CPU is the server process's share of a core over the phase. Ours "
        "is the kit's own client (httpx: one per call; aiohttp: one session per event loop, shared by the calls in "
        "flight, no idle connection kept); bare is one client of the same "
        "library reading each HTTP chunk. A load is sustained when every stream received exactly its deltas and "
        f"p99 latency stayed under the run's threshold (100 ms unless changed). The SDK runs on its own client{sdk}, "
        "once per event loop: its rows repeat in each table of that loop."
    )


def _load_chart_line(load: dict[str, Any], load_chart: str) -> str:
    if not _matrix_lines(load):
        return "_This result has no load matrix (run `python -m bench load --matrix`), so no chart of it._"
    return (
        "![Client CPU per event and p99 added latency against concurrent streams, per HTTP transport × event loop]"
        f"({load_chart})\n\nOurs (the `{_ANTHROPIC}` body) on each transport × loop; a hollow marker is a load "
        "not sustained."
    )


def _load_section(document: dict[str, Any], load_chart: str = LOAD_CHART_PATH) -> str:
    """The last load run: as the page always showed one of a single transport, or a table per transport ×
    loop, the SDK beside ours, ours − bare, the budgets' verdicts and the matrix's chart; its own machine
    line first when it carries one (``measured``: it was merged from another run)."""
    load = _last_load(document)
    if load is None:
        return "_This result has no load figure (run the `load` suite)._"
    if "combinations" not in load:  # written before the suite measured transports × loops
        parts = [*_single_load_section(load), _load_chart_line(load, load_chart)]
    else:
        parts = [
            _combinations_intro(load),
            _load_chart_line(load, load_chart),
            *(_combination_table(load, combo) for combo in load["combinations"]),
            *_sdk_lines(load),
            "#### Ours − bare transport\n\n" + _overhead_table(load),
            "#### Budgets\n\n" + _budget_table(load),
        ]
    if load.get("measured"):  # a load run merged into a result whose other suites ran at another time
        parts.insert(0, f"This run: {_machine(load['measured'])}")
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


def markdown(path: Path = BENCH_JSON, chart: str = CHART_PATH, load_chart: str = LOAD_CHART_PATH) -> str:
    """The page's generated part: every table, the charts (events/s at ``chart``, the load matrix at
    ``load_chart`` when the result has one) and the machine line."""
    document = load(path)
    parts = [
        _machine(document),
        f"`{document['rule']}`",
        f"### Events per second\n\n![Events per second of the bare parse, ours and the vendor SDK]({chart})",
        "### CPU µs per event\n\n" + _per_event_table(document),
        "### What the kit itself costs\n\n" + _minimal_table(document),
        "### Cost ratios\n\n" + _ratio_table(document),
        "### Many streams at once\n\n" + _load_section(document, load_chart),
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


#: matplotlib's settings for every chart, in force while it is drawn and saved.
_STYLE: dict[str, Any] = {
    "svg.hashsalt": "streamfns-performance",  # fixed ids: the same JSON gives the same bytes
    "svg.fonttype": "none",  # text stays text: no glyphs embedded, no font fetched
    "font.family": "sans-serif",
    "font.size": 9,
}


def _matplotlib() -> tuple[Any, Any]:
    """``matplotlib`` and its ``Figure``: the docs extra, imported only when a chart is drawn, so the
    tables need no matplotlib. A bare Figure (no pyplot) touches no global backend state. Both typed
    ``Any``: the page type-checks with or without the extra (whose annotations leave parts unknown)."""
    return importlib.import_module("matplotlib"), importlib.import_module("matplotlib.figure").Figure


def _svg_text(figure: Any) -> str:
    """``figure`` as SVG text with fixed metadata (no date); call it under ``rc_context(_STYLE)``."""
    out = io.StringIO()
    figure.savefig(out, format="svg", metadata={"Date": None, "Creator": "streamfns docs"})
    return out.getvalue()


def chart_svg(document: dict[str, Any]) -> str:
    """Bars of events/s (log scale) for the bare parse, ours and the SDK per adapter, text and tool
    args side by side; deterministic SVG text."""
    matplotlib, Figure = _matplotlib()

    colors = {"bare": "#9e9e9e", "ours": "#3f51b5", "sdk": "#ff9800"}
    labels = {"bare": "bare parse (framing + json.loads)", "ours": "streamfns", "sdk": "vendor SDK"}
    with matplotlib.rc_context(_STYLE):
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
        return _svg_text(figure)


def _matrix_lines(load: dict[str, Any]) -> list[tuple[str, str, list[dict[str, Any]]]]:
    """(transport, loop, ours on the Anthropic body per load, fewest streams first) per transport × loop
    of ``load``, when it was a ``--matrix`` run; none otherwise (an old entry has no ``matrix``)."""
    if not load.get("matrix"):
        return []
    lines: list[tuple[str, str, list[dict[str, Any]]]] = []
    for combo in load.get("combinations", []):
        ours = [row for row in combo["adapters"] if row["stack"] == "ours" and row["api"] == _ANTHROPIC]
        later = [row for row in combo.get("rounds", []) if row["stack"] == "ours" and row["api"] == _ANTHROPIC]
        ours = [_over_rounds(row, [r for r in later if r["streams"] == row["streams"]]) for row in ours]
        if ours:
            lines.append((combo["transport"], combo["loop"], sorted(ours, key=lambda row: row["streams"])))
    return lines


def _over_rounds(first: dict[str, Any], later: list[dict[str, Any]]) -> dict[str, Any]:
    """A load's point measured in several rounds (``first`` and its ``later`` rounds): the medians of
    its CPU per event and p99, sustained only when every round was; ``first`` itself with none later."""
    if not later:
        return first
    every = [first, *later]
    return {
        **first,
        "cpu_us_per_event": statistics.median(row["cpu_us_per_event"] for row in every),
        "latency_p99_ms": statistics.median(row["latency_p99_ms"] for row in every),
        "sustained": all(row["sustained"] for row in every),
    }


def _finite(value: float) -> float:
    """``value``, or NaN (a gap in the line) when the run recorded none (∞: no event received)."""
    return value if math.isfinite(value) and value > 0 else math.nan


def _plain(value: float, _position: int | None = None) -> str:
    """A tick's figure as written (``50``, ``200``, ``0.5``)."""
    return f"{value:g}"


def load_chart_svg(document: dict[str, Any]) -> str | None:
    """When the result's load run was a ``--matrix``: client CPU µs per event (left) and p99 added latency
    (right, log scale) against concurrent streams (log scale), one line per transport × loop of ours on
    the Anthropic body, a hollow marker where a load was not sustained; deterministic SVG text. ``None``
    when the result holds no matrix."""
    load = _last_load(document)
    lines = _matrix_lines(load) if load is not None else []
    if not lines:
        return None
    matplotlib, Figure = _matplotlib()
    ticker = importlib.import_module("matplotlib.ticker")

    transports = list(dict.fromkeys(transport for transport, _, _ in lines))
    loops = list(dict.fromkeys(loop for _, loop, _ in lines))
    colors = ("#3f51b5", "#ff9800", "#009688", "#e91e63")
    dashes = ("-", "--", ":", "-.")
    markers = ("o", "s", "^", "D")
    loads = sorted({row["streams"] for _, _, rows in lines for row in rows})
    panels = (
        ("cpu_us_per_event", "client CPU per event", "µs per event", "linear"),
        ("latency_p99_ms", "p99 added latency (server write → consumer event)", "ms (log scale)", "log"),
    )
    with matplotlib.rc_context(_STYLE):
        figure = Figure(figsize=(10, 4.2))
        axes = figure.subplots(1, 2)
        for ax, (key, title, ylabel, scale) in zip(axes, panels, strict=True):
            for transport, loop, rows in lines:
                color = colors[transports.index(transport) % len(colors)]
                dash = dashes[loops.index(loop) % len(dashes)]
                marker = markers[loops.index(loop) % len(markers)]
                xs = [row["streams"] for row in rows]
                ys = [_finite(float(row[key])) for row in rows]
                ax.plot(xs, ys, color=color, linestyle=dash, marker=marker, label=f"{transport} × {loop}")
                missed = [(x, y) for x, y, row in zip(xs, ys, rows, strict=True) if not row["sustained"]]
                if missed:
                    ax.plot(
                        [x for x, _ in missed],
                        [y for _, y in missed],
                        color=color,
                        linestyle="none",
                        marker=marker,
                        markerfacecolor="white",
                    )
            ax.set_xscale("log", base=2)
            ax.set_xticks(loads, [f"{n:,}" for n in loads])
            ax.minorticks_off()
            ax.set_yscale(scale)
            if scale == "linear":
                ax.set_ylim(bottom=0)
            else:  # plain figures at 1, 2 and 5 of each decade, not powers of ten
                ax.yaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
                ax.yaxis.set_major_formatter(ticker.FuncFormatter(_plain))
                ax.yaxis.set_minor_formatter(ticker.NullFormatter())
            ax.set_xlabel("concurrent streams (log scale)")
            ax.set_ylabel(ylabel)
            ax.set_title(title)
            ax.grid(which="major", alpha=0.3)
        handles, names = axes[0].get_legend_handles_labels()
        figure.legend(handles, names, loc="upper center", ncol=len(names), frameon=False)
        figure.tight_layout(rect=(0, 0, 1, 0.92))
        return _svg_text(figure)


def charts(document: dict[str, Any]) -> dict[str, str]:
    """Every chart the page links, SVG text by its path in the site: the events/s chart at
    :data:`CHART_PATH`, and the load matrix's at :data:`LOAD_CHART_PATH` when the result has one."""
    drawn = {CHART_PATH: chart_svg(document)}
    matrix = load_chart_svg(document)
    if matrix is not None:
        drawn[LOAD_CHART_PATH] = matrix
    return drawn
