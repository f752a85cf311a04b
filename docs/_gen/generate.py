"""Markdown generated from the code at docs build time, so each fact has one source.

Each generator returns Markdown for one ``<!-- generated: NAME -->`` marker in a page (see
``hooks.py``): the model catalog, the conformance checks, the event grammar rules, the error kinds,
the adapters, the command-line help and the Performance page (from the committed bench result, see
``perf_page.py``). Nothing here imports MkDocs, so the tests call it directly.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import get_args

import conformance
from normalize import RETRYABLE_KINDS, RULES, ErrorKind
from streamfns._adapters import all_adapters
from streamfns.catalog import list_models, list_providers
from streamfns.cli import main
from streamfns.render import price_cells

if str(Path(__file__).resolve().parent) not in sys.path:  # loaded by path (the docs tests do): find its sibling
    sys.path.insert(0, str(Path(__file__).resolve().parent))

import perf_page  # found through the path set just above

__all__ = ["GENERATORS", "generate"]


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]], align: str = "") -> str:
    marks = [("---:" if kind == "r" else "---") for kind in align.ljust(len(header), "l")]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(marks) + " |"]
    lines += ["| " + " | ".join(_cell(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _price(value: float) -> str:
    return f"${value:g}" if value else "—"


def models() -> str:
    """Every catalog model, grouped by provider."""
    parts: list[str] = []
    for provider in list_providers():
        rows = [
            (
                f"`{model.id}`",
                f"`{model.api}`",
                f"{model.context_window:,}",
                f"{model.max_tokens:,}",
                *price_cells(model.cost, _price),
                "yes" if model.reasoning else "no",
                ", ".join(model.input),
            )
            for model in list_models(provider)
        ]
        header = (
            "id",
            "api",
            "context",
            "max output",
            "input",
            "output",
            "cache read",
            "cache write",
            "reasoning",
            "accepts",
        )
        parts.append(f"### `{provider}`\n\n" + _table(header, rows, align="llrrrrrr"))
    return "\n\n".join(parts)


def adapters() -> str:
    """The wire apis with an adapter: where each lives, how many catalog models use it."""
    rows = [
        (
            f"`{api}`",
            f"`{adapter.package}`",
            str(sum(1 for model in list_models() if model.api == api)),
            ", ".join(f"`{name}`" for name, _what, _prompt in adapter.demo) or "—",
        )
        for api, adapter in sorted(all_adapters().items())
    ]
    return _table(("api", "package", "catalog models", "recordings `make demo` replays"), rows)


def checks() -> str:
    """The conformance checks: a summary table, then each check's troubleshooting text."""
    summary = _table(("id", "what must hold"), [(f"[{c.id}](#{c.id.lower()})", c.title) for c in conformance.CHECKS])
    sections: list[str] = []
    for check in conformance.CHECKS:
        text = getattr(check, "troubleshooting", "") or inspect.getdoc(type(check)) or ""
        sections.append(f"### {check.id}\n\n**{check.title}.**\n\n{inspect.cleandoc(text)}")
    return summary + "\n\n" + "\n\n".join(sections)


def grammar() -> str:
    """The event grammar rules, as ``normalize.validate_events`` checks them."""
    return _table(("rule", "what must hold"), [(rule, text) for rule, text in RULES.items()])


#: What a caller should do about each kind of error. Every ``ErrorKind`` must have an entry.
ERROR_ADVICE: dict[str, str] = {
    "auth": "Fix the key (missing, wrong or revoked). Do not retry.",
    "rate_limit": "Retry after `retry_after_s` when given, else back off exponentially.",
    "overloaded": "The vendor is busy: retry with back-off, or fall back to another model.",
    "context_overflow": "Shorten the transcript (summarize or drop old turns), then send again.",
    "invalid_request": "The request is wrong for this model (a parameter, a schema): fix it; retrying repeats it.",
    "not_found": "The model id or endpoint does not exist for this key: check `model.id` and `base_url`.",
    "content_filter": "The vendor's filter stopped the reply: rephrase; retrying the same input rarely helps.",
    "refusal": "The model declined: rephrase or change the task; not a transport problem.",
    "server": "A 5xx: retry with back-off (the adapter already retried before any output).",
    "network": "The connection failed or dropped: retry; partial content is kept in the message.",
    "timeout": "Nothing arrived within `timeout` (or `total_timeout` ran out): retry, or raise the limit.",
    "protocol": "The bytes did not follow the vendor's protocol: report it with the recording; do not loop.",
    "truncated": "The body ended before the terminal marker: retry; the partial reply is not complete.",
    "aborted": "Your signal aborted the call (or the consumer closed the stream): nothing to retry.",
    "config": "A mistake in the call itself (missing price, bad option, unknown api): fix the code.",
}


def error_kinds() -> str:
    """Every ``ErrorKind``, whether it is retryable and what to do about it."""
    kinds = get_args(ErrorKind)
    missing = [kind for kind in kinds if kind not in ERROR_ADVICE]
    if missing:
        raise ValueError(f"docs/_gen/generate.py: no advice for error kinds {missing}")
    rows = [(f"`{kind}`", "yes" if kind in RETRYABLE_KINDS else "no", ERROR_ADVICE[kind]) for kind in kinds]
    return _table(("kind", "retryable", "what to do"), rows)


def cli_help() -> str:
    """The ``--help`` text of ``streamfns`` and of each of its commands."""
    parts: list[str] = []
    for command in ("", "chat", "models", "replay", "demo", "conformance"):
        out = io.StringIO()
        previous = os.environ.get("COLUMNS")
        os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal: make the page the same everywhere
        try:
            with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
                main([command, "--help"] if command else ["--help"])
        finally:
            if previous is None:
                del os.environ["COLUMNS"]
            else:
                os.environ["COLUMNS"] = previous
        title = f"streamfns {command}".strip()
        parts.append(f"### `{title}`\n\n```text\n{out.getvalue().rstrip()}\n```")
    return "\n\n".join(parts)


def performance() -> str:
    """The Performance page's tables and chart link, from ``docs/perf/bench.json``."""
    return perf_page.markdown()


GENERATORS: dict[str, Callable[[], str]] = {
    "models": models,
    "adapters": adapters,
    "checks": checks,
    "grammar": grammar,
    "error-kinds": error_kinds,
    "cli-help": cli_help,
    "performance": performance,
}


def generate(name: str) -> str:
    """The Markdown for marker ``name``; ``KeyError`` for an unknown marker."""
    return GENERATORS[name]()
