"""MkDocs hooks: fill each ``<!-- generated: NAME -->`` marker with Markdown generated from the code,
and add the Performance page's chart, drawn from the committed bench result, to the site's files.

An unknown marker fails the build (MkDocs runs with ``--strict``), so a page cannot silently keep a
stale table.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File

sys.path.insert(0, str(Path(__file__).resolve().parent))

import perf_page  # found through the path set just above
from generate import GENERATORS

_MARKER = re.compile(r"<!-- generated: ([a-z-]+) -->")


def on_page_markdown(markdown: str, page: Any, **_kwargs: Any) -> str:
    """Replace every marker in ``markdown``; raise for a marker nothing generates."""

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise ValueError(f"{page.file.src_path}: no generator for marker {name!r} (known: {sorted(GENERATORS)})")
        return GENERATORS[name]()

    return _MARKER.sub(fill, markdown)


def on_files(files: Any, config: Any, **_kwargs: Any) -> Any:
    """Add the Performance page's charts (SVG drawn from ``docs/perf/bench.json``: events/s, and the
    many-streams matrix when the result has one) when the page is built."""
    if files.get_file_from_path("performance.md") is None:
        return files
    for path, svg in perf_page.charts(perf_page.load()).items():
        files.append(File.generated(config, path, content=svg))
    return files
