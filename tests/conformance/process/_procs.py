"""Finding the test processes a run may have left: by a token their command lines carry."""

from __future__ import annotations

import os
from pathlib import Path


def processes_with(token: str) -> list[int]:
    """Pids of the processes (not zombies) whose command line carries ``token``."""
    found: list[int] = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            state = Path(f"/proc/{name}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if token.encode() in cmdline and state != b"Z":
            found.append(int(name))
    return found
