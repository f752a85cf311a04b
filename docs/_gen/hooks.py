"""MkDocs hooks: fill each ``<!-- generated: NAME -->`` marker with Markdown generated from the code.

An unknown marker fails the build (MkDocs runs with ``--strict``), so a page cannot silently keep a
stale table.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generate import GENERATORS  # found through the path set just above

_MARKER = re.compile(r"<!-- generated: ([a-z-]+) -->")


def on_page_markdown(markdown: str, page: Any, **_kwargs: Any) -> str:
    """Replace every marker in ``markdown``; raise for a marker nothing generates."""

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise ValueError(f"{page.file.src_path}: no generator for marker {name!r} (known: {sorted(GENERATORS)})")
        return GENERATORS[name]()

    return _MARKER.sub(fill, markdown)
