"""The bundled library: real vendor streaming bodies as ready-to-replay cassettes.

Every cassette holds one interaction whose response bytes are a real body collected from a
public source (attribution in each header's `source` and in `NOTICE`), cut into one chunk per
server-sent event with synthetic times. The request line is synthetic, so replay library
cassettes with `match="any"`. Each header says so (`"timing": "synthetic"`, `"request":
"synthetic"`; see `cassettes.model.SYNTHETIC_PARTS`), and `synthetic(name)` reads it. Files live
in `cassettes/library/<api>/<name>.jsonl`; a repository checkout regenerates them with
`python -m tools.build_cassette_library` (the tool is not installed).
"""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import IO, cast

from cassettes.errors import CassetteError
from cassettes.format import loads
from cassettes.model import Cassette, JSONValue, synthetic_parts
from cassettes.regular_files import open_regular

__all__ = ["apis", "counts", "load", "names", "path", "synthetic"]


@cache
def _index() -> dict[str, tuple[str, Traversable]]:
    """name -> (api, file) for every bundled cassette."""
    found: dict[str, tuple[str, Traversable]] = {}
    for folder in files(__name__).iterdir():
        if not folder.is_dir() or folder.name.startswith(("_", ".")):
            continue
        for item in folder.iterdir():
            # Only regular files are cassettes: a directory or FIFO named *.jsonl is not listed (and
            # `_read`/`_open` refuse one swapped in later).
            if item.name.endswith(".jsonl") and item.is_file():
                found[item.name.removesuffix(".jsonl")] = (folder.name, item)
    return dict(sorted(found.items()))


def apis() -> list[str]:
    """The wire APIs that have bundled cassettes, sorted."""
    return sorted({api for api, _ in _index().values()})


def names(api: str | None = None) -> list[str]:
    """Names of the bundled cassettes (file stems), sorted; only those of `api` when given."""
    return [name for name, (folder, _) in _index().items() if api is None or folder == api]


def counts() -> dict[str, int]:
    """Number of bundled cassettes per api."""
    return {api: len(names(api)) for api in apis()}


def _entry(name: str) -> tuple[str, Traversable]:
    try:
        return _index()[name]
    except KeyError:
        raise CassetteError(f"no bundled cassette named {name!r} (see cassettes.library.names())") from None


def path(name: str) -> Path:
    """The file of bundled cassette `name` (the package must be installed as plain files)."""
    return Path(str(_entry(name)[1]))


def _open(item: Traversable) -> IO[bytes]:
    """`item` opened for reading; on disk through `open_regular` (a regular file, an open that cannot
    block), inside an archive (a zip import, where no FIFO can exist) through the resource API."""
    if isinstance(item, Path):
        return open_regular(item)
    return item.open("rb")


def load(name: str) -> Cassette:
    """The bundled cassette `name`, loaded and validated (`NotACassetteFile` if its file has been
    replaced by something that is not a regular file)."""
    api, item = _entry(name)
    with _open(item) as file:
        data = file.read()
    return loads(data, source=f"cassettes/library/{api}/{name}.jsonl")


def synthetic(name: str) -> dict[str, str]:
    """What bundled cassette `name` marks as not real (`Cassette.synthetic`), read from its header
    line alone."""
    _, item = _entry(name)
    with _open(item) as file:
        header: object = json.loads(file.readline())
    return synthetic_parts(cast("dict[str, JSONValue]", header) if isinstance(header, dict) else {})
