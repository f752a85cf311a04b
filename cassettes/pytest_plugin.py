"""pytest plugin (entry point `streamfns_cassettes`): the `cassette` fixture and marker.

Inert unless used: it only registers the `cassette` marker and the `--cassette-mode` option;
nothing happens to a test that does not request the `cassette` fixture.

    @pytest.mark.cassette(mode="once", ignore_paths=["metadata.user_id"])
    async def test_hello(cassette):
        async with cassette.client() as http:
            ...  # pass `http` to the adapter as its http_client

The default file is `<test dir>/cassettes/<test module>/<test name>.jsonl`; the marker's `path`
(relative to the test file's directory) overrides it. The mode is, in order of precedence,
`--cassette-mode` on the command line, the marker's `mode`, then `none` (replay only, never
the network).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import httpx
import pytest

from cassettes.replay import Match, Timing
from cassettes.session import MODES, Mode, use_cassette

__all__ = ["CassetteFixture", "cassette", "pytest_addoption", "pytest_configure"]

_MARKER_HELP = (
    "cassette(path=None, *, mode=None, match='request', ignore_paths=(), timing='instant', "
    "allow_unplayed=False, allow_repeats=False, api=None, model=None): the cassette the `cassette` "
    "fixture uses for this test"
)


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add `--cassette-mode`."""
    group = parser.getgroup("cassettes", "streamcassette record / replay")
    group.addoption(
        "--cassette-mode",
        choices=MODES,
        default=None,
        help="record mode for the `cassette` fixture; overrides markers (default: the marker's, else none)",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Register the `cassette` marker."""
    config.addinivalue_line("markers", _MARKER_HELP)


class CassetteFixture:
    """What the `cassette` fixture gives a test: a default path and mode, and `client()`."""

    def __init__(
        self,
        path: Path,
        mode: Mode,
        *,
        match: Match = "request",
        ignore_paths: Sequence[str] = (),
        timing: Timing = "instant",
        allow_unplayed: bool = False,
        allow_repeats: bool = False,
        api: str | None = None,
        model: str | None = None,
    ) -> None:
        self.path = path
        self.mode: Mode = mode
        self.match: Match = match
        self.ignore_paths = tuple(ignore_paths)
        self.timing: Timing = timing
        self.allow_unplayed = allow_unplayed
        self.allow_repeats = allow_repeats
        self.api = api
        self.model = model

    def client(
        self,
        path: str | Path | None = None,
        *,
        real_transport: httpx.AsyncBaseTransport | None = None,
        http_timeout: httpx.Timeout | float | None = 60.0,
    ) -> AbstractAsyncContextManager[httpx.AsyncClient]:
        """`use_cassette` with this test's settings; `path` (relative to the default file's
        folder) picks another cassette."""
        target = self.path if path is None else self.path.parent / path
        return use_cassette(
            target,
            mode=self.mode,
            match=self.match,
            ignore_paths=self.ignore_paths,
            timing=self.timing,
            allow_unplayed=self.allow_unplayed,
            allow_repeats=self.allow_repeats,
            real_transport=real_transport,
            api=self.api,
            model=self.model,
            http_timeout=http_timeout,
        )


def _safe(name: str) -> str:
    # Parametrized ids contain brackets and arbitrary text; keep file names portable.
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "test"


def _mode(value: object, source: str) -> Mode:
    for mode in MODES:
        if value == mode:
            return mode
    raise pytest.UsageError(f"{source}: cassette mode must be one of {', '.join(MODES)}, got {value!r}")


@pytest.fixture
def cassette(request: pytest.FixtureRequest) -> CassetteFixture:
    """The cassette settings for this test (marker, `--cassette-mode`, default path)."""
    marker = request.node.get_closest_marker("cassette")
    kwargs = dict(marker.kwargs) if marker else {}
    positional = marker.args if marker else ()
    test_file = Path(str(request.node.path))
    default = test_file.parent / "cassettes" / test_file.stem / f"{_safe(request.node.name)}.jsonl"
    path_value = kwargs.pop("path", positional[0] if positional else None)
    path = default if path_value is None else test_file.parent / str(path_value)
    cli_mode = request.config.getoption("cassette_mode")
    if cli_mode is not None:
        mode = _mode(cli_mode, "--cassette-mode")
    else:
        mode = _mode(kwargs.pop("mode", "none"), "@pytest.mark.cassette")
    kwargs.pop("mode", None)
    try:
        return CassetteFixture(path, mode, **kwargs)
    except TypeError as exc:
        raise pytest.UsageError(f"@pytest.mark.cassette: {exc}") from None
