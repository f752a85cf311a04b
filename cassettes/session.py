"""`use_cassette`: one call that gives an `httpx.AsyncClient` replaying or recording a cassette.

Modes (the vcrpy / pytest-recording vocabulary):

=================  ===================================================================================
``none`` (default) Replay only; the network is never touched. A missing file raises `CassetteMissing`,
                   an unmatched request `RequestNotRecorded` (raised again on a clean exit, with the
                   request diff, if the code under test swallowed it), and on a clean exit
                   interactions that were never requested raise `UnplayedInteractions` (unless
                   `allow_unplayed=True`).
``once``           Record everything when the file does not exist; otherwise behave exactly like
                   ``none``.
``new_episodes``   Replay what matches; send and record (appended to the file) what does not.
``all``            Never replay: send every request and append it to the file. As in vcrpy, the
                   interactions already in the file are kept (use ``rewrite`` for a fresh file).
``rewrite``        Never replay: the file is replaced by the interactions recorded in this session
                   (an existing file is left alone when nothing is recorded).
=================  ===================================================================================

In every mode a path that exists but is not a regular file (a FIFO, a directory, a device) raises
`NotACassetteFile` when the session is made, before anything is replayed, sent or recorded.

Matching is on method + URL + canonical JSON body, ignoring `ignore_paths` (e.g.
``["metadata.user_id"]``); `match="any"` plays interactions in order whatever the request.
Recording goes through `real_transport` (default: a fresh `httpx.AsyncHTTPTransport`), which is
closed with the client.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Literal, TypeAlias

import httpx

from cassettes.errors import CassetteMissing, RequestNotRecorded, SecretFound
from cassettes.files import load
from cassettes.model import JSONValue
from cassettes.recorder import CassetteWriter, RecordingTransport
from cassettes.regular_files import is_cassette_file
from cassettes.replay import Match, ReplayTransport, Timing
from cassettes.scrub import DEFAULT_SCRUB, ScrubPolicy

__all__ = ["MODES", "CassetteSession", "Mode", "use_cassette"]

Mode: TypeAlias = Literal["none", "once", "new_episodes", "all", "rewrite"]
MODES: tuple[Mode, ...] = ("none", "once", "new_episodes", "all", "rewrite")


class CassetteSession:
    """The transports behind `use_cassette`, for callers who build their own client.

    Pass `session.transport` to any `httpx.AsyncClient`; call `await session.aclose()` (or close
    the client) when done, then `session.check()` to apply the end-of-session rules.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        mode: Mode = "none",
        match: Match = "request",
        ignore_paths: Sequence[str] = (),
        timing: Timing = "instant",
        allow_unplayed: bool = False,
        allow_repeats: bool = False,
        real_transport: httpx.AsyncBaseTransport | None = None,
        scrub: ScrubPolicy = DEFAULT_SCRUB,
        api: str | None = None,
        model: str | None = None,
        source: Mapping[str, JSONValue] | None = None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        self.path = Path(path)
        self.mode: Mode = mode
        self.allow_unplayed = allow_unplayed
        self.replay: ReplayTransport | None = None
        self.writer: CassetteWriter | None = None
        # A FIFO, a directory or a device is neither a cassette to replay nor a file to record over:
        # refused here in every mode (NotACassetteFile), not after a whole recording was made.
        exists = is_cassette_file(self.path)
        replaying = mode in ("none", "once", "new_episodes") and exists
        if mode == "none" and not exists:
            raise CassetteMissing(
                f"cassette {self.path} does not exist and mode is 'none' (replay only, no network); "
                "record it with mode='once' (pytest: --cassette-mode=once)"
            )

        def recorder(writer_mode: Literal["new", "append"]) -> RecordingTransport:
            self.writer = CassetteWriter(self.path, mode=writer_mode, api=api, model=model, source=source, scrub=scrub)
            return RecordingTransport(real_transport or httpx.AsyncHTTPTransport(), self.writer, scrub=scrub)

        try:
            if replaying:
                cassette = load(self.path)  # before the recorder takes the file's lock
                fallback = recorder("append") if mode == "new_episodes" else None
                self.replay = ReplayTransport(
                    cassette,
                    match=match,
                    timing=timing,
                    ignore_paths=ignore_paths,
                    allow_repeats=allow_repeats,
                    scrub=scrub,
                    fallback=fallback,
                    name=str(self.path),
                )
                self.transport: httpx.AsyncBaseTransport = self.replay
            else:
                self.transport = recorder("append" if mode == "all" else "new")
        except BaseException:
            if self.writer is not None:
                self.writer.discard()  # release the file this session will not record to
            raise

    async def aclose(self) -> None:
        """Close the transports (and with them the real transport and the cassette file).

        A replay-only session never touched `real_transport`, so it holds nothing to release.
        """
        await self.transport.aclose()

    def check(self) -> None:
        """End-of-session rules, most precise first: a refused secret re-raises `SecretFound`; a
        request that matched no recording raises `RequestNotRecorded` with its diff (the code under
        test may have caught the first one, e.g. an adapter that turns every error into an error
        event); in replay-only sessions (`none`, `once` on an existing file) unplayed interactions
        raise `UnplayedInteractions` unless `allow_unplayed`."""
        if self.writer is not None and self.writer.failure is not None:
            raise self.writer.failure
        if self.replay is not None and self.replay.misses:
            first = self.replay.misses[0]
            more = len(self.replay.misses) - 1
            note = f"\n({more} more request(s) matched no recording)" if more else ""
            raise RequestNotRecorded(f"{first}{note}")
        if self.replay is not None and self.mode in ("none", "once") and not self.allow_unplayed:
            self.replay.assert_all_played()


@asynccontextmanager
async def use_cassette(
    path: str | os.PathLike[str],
    *,
    mode: Mode = "none",
    match: Match = "request",
    ignore_paths: Sequence[str] = (),
    timing: Timing = "instant",
    allow_unplayed: bool = False,
    allow_repeats: bool = False,
    real_transport: httpx.AsyncBaseTransport | None = None,
    scrub: ScrubPolicy = DEFAULT_SCRUB,
    api: str | None = None,
    model: str | None = None,
    http_timeout: httpx.Timeout | float | None = 60.0,
) -> AsyncGenerator[httpx.AsyncClient]:
    """An `httpx.AsyncClient` that replays or records the cassette at `path` (see the module docs).

    `http_timeout` is the client's timeout (a replayed stall longer than its read timeout raises
    `httpx.ReadTimeout`, as a real socket would). The end-of-session checks run only when the
    block exits without an exception, so they never hide the original error.
    """
    session = CassetteSession(
        path,
        mode=mode,
        match=match,
        ignore_paths=ignore_paths,
        timing=timing,
        allow_unplayed=allow_unplayed,
        allow_repeats=allow_repeats,
        real_transport=real_transport,
        scrub=scrub,
        api=api,
        model=model,
    )
    client = httpx.AsyncClient(transport=session.transport, timeout=http_timeout)
    failed = False
    try:
        yield client
    except BaseException:
        failed = True
        raise
    finally:
        try:
            await client.aclose()  # closes session.transport, which completes a recording
        except SecretFound:
            if not failed:
                raise
            # The block's own error wins; the refusal stays in session.writer.failure.
    session.check()
