"""Replaying a cassette as an httpx transport.

`ReplayTransport` is both an `httpx.AsyncBaseTransport` and an `httpx.BaseTransport`: pass it as
`transport=` to an `httpx.AsyncClient` (or `httpx.Client`). It promises:

* the response body yields exactly the recorded chunks, boundaries included;
* timing `"instant"` (default) never sleeps except for explicit stalls, `"recorded"` sleeps to
  reach each chunk's `t_ms`, a float scales the recorded times (0.5 = twice as fast);
* a body that ended in `reset` raises `httpx.ReadError`, one that ended in `timeout` raises
  `httpx.ReadTimeout`, after the chunks before it were delivered; both carry the request; `eof`
  and `client_closed` end the body cleanly;
* a silence longer than the request's read timeout (`httpx.Timeout(read=...)`) raises
  `httpx.ReadTimeout` after that timeout, as a real socket would;
* matching (`match="request"`, the default) uses method + URL + canonical body; identical
  requests get identical recordings in recorded order; an unmatched request raises
  `RequestNotRecorded` showing the nearest recording and the differences, and the error is kept
  in `misses` (a client that swallows it can not hide it from `use_cassette`); `match="any"`
  ignores the request and plays the interactions in order;
* `unplayed()` / `assert_all_played()` report interactions nobody asked for;
* bodies can be closed mid-stream; there is nothing to leak.

Sleeping uses asyncio on the async side.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Literal, TypeAlias

import httpx

from cassettes.errors import RequestNotRecorded, UnplayedInteractions
from cassettes.matching import MatchKey, match_key, nearest
from cassettes.model import Cassette, EndKind, Interaction, RecordedRequest
from cassettes.scrub import DEFAULT_SCRUB, ScrubPolicy, capture_request, scrub_recorded

__all__ = ["Match", "ReplayTransport", "Timing", "timing_factor"]

Timing: TypeAlias = Literal["instant", "recorded"] | float
Match: TypeAlias = Literal["request", "any"]

# Replayed bytes are always identity-encoded and their length is whatever the chunks add up
# to, so framing headers from the recording (if someone allow-listed them) would lie.
_FRAMING_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})
# A body the recorded client stopped reading ends where it stopped: that client needed no more.
_CLEAN_ENDS: frozenset[EndKind] = frozenset({"eof", "client_closed"})


def timing_factor(timing: Timing) -> float:
    """The multiplier applied to recorded times: 0 for instant, 1 for recorded, else the float."""
    if timing == "instant":
        return 0.0
    if timing == "recorded":
        return 1.0
    if isinstance(timing, str) or timing < 0:
        raise ValueError(f"timing must be 'instant', 'recorded' or a non-negative factor, got {timing!r}")
    return float(timing)


def _read_timeout(request: httpx.Request) -> float | None:
    timeouts = request.extensions.get("timeout")
    if isinstance(timeouts, dict):
        value = timeouts.get("read")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        if isinstance(value, int | float):
            return float(value)
    return None


class _Player:
    """The schedule of one replayed body: what comes next and how long to wait for it."""

    def __init__(self, interaction: Interaction, request: httpx.Request, factor: float, start: float) -> None:
        self._response = interaction.response
        self.request = request
        self.read_timeout = _read_timeout(request)
        self._factor = factor
        self._start = start
        self._position = 0
        self.done = False

    def _wait(self, t_ms: float, stall_s: float, now: float) -> float:
        target = self._start + t_ms * self._factor / 1000
        return max(0.0, target - now) + stall_s

    def head_wait(self, now: float) -> float:
        return self._wait(self._response.t_ms, 0.0, now)

    def step(self, now: float) -> tuple[float, bytes | EndKind]:
        """(seconds to wait, then the next chunk or the end kind)."""
        chunks = self._response.chunks
        if self._position < len(chunks):
            chunk = chunks[self._position]
            self._position += 1
            return self._wait(chunk.t_ms, chunk.stall_s, now), chunk.data
        self.done = True
        end = self._response.end
        return self._wait(end.t_ms, end.stall_s, now), end.kind

    def failure(self, kind: EndKind) -> httpx.TransportError:
        self.done = True
        if kind == "timeout":
            return httpx.ReadTimeout("replayed read timeout", request=self.request)
        return httpx.ReadError("replayed connection reset", request=self.request)

    def timed_out(self, wait: float) -> bool:
        return self.read_timeout is not None and wait > self.read_timeout


class _AsyncBody(httpx.AsyncByteStream):
    def __init__(self, player: _Player) -> None:
        self._player = player

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self

    async def __anext__(self) -> bytes:
        player = self._player
        if player.done:
            raise StopAsyncIteration
        wait, item = player.step(time.monotonic())
        if player.timed_out(wait):
            await asyncio.sleep(player.read_timeout or 0.0)
            raise player.failure("timeout")
        if wait:
            await asyncio.sleep(wait)
        if isinstance(item, bytes):
            return item
        if item in _CLEAN_ENDS:
            raise StopAsyncIteration
        raise player.failure(item)

    async def aclose(self) -> None:
        self._player.done = True


class _SyncBody(httpx.SyncByteStream):
    def __init__(self, player: _Player) -> None:
        self._player = player

    def __iter__(self) -> Iterator[bytes]:
        player = self._player
        while not player.done:
            wait, item = player.step(time.monotonic())
            if player.timed_out(wait):
                time.sleep(player.read_timeout or 0.0)
                raise player.failure("timeout")
            if wait:
                time.sleep(wait)
            if isinstance(item, bytes):
                yield item
            elif item in _CLEAN_ENDS:
                return
            else:
                raise player.failure(item)

    def close(self) -> None:
        self._player.done = True


class _EitherBody(_AsyncBody, _SyncBody):
    """A body read by an async or a sync client alike (`ReplayTransport.respond` does not know which)."""


class ReplayTransport(httpx.AsyncBaseTransport, httpx.BaseTransport):
    """Serves requests from a `Cassette` (see the module docstring for the promises).

    `fallback`, when given, receives the requests nothing matches instead of raising (this is
    how `new_episodes` records what is new); it is closed with this transport.
    """

    def __init__(
        self,
        cassette: Cassette,
        *,
        match: Match = "request",
        timing: Timing = "instant",
        ignore_paths: Sequence[str] = (),
        allow_repeats: bool = False,
        scrub: ScrubPolicy = DEFAULT_SCRUB,
        fallback: httpx.AsyncBaseTransport | None = None,
        name: str = "<cassette>",
    ) -> None:
        if match not in ("request", "any"):
            raise ValueError(f"match must be 'request' or 'any', got {match!r}")
        self.cassette = cassette
        self.name = name
        self._match = match
        self._factor = timing_factor(timing)
        self._ignore_paths = tuple(ignore_paths)
        self._allow_repeats = allow_repeats
        self._scrub = scrub
        self._fallback = fallback
        # Stored requests are scrubbed again, as live ones are: a cassette recorded under narrower
        # rules (a field that now counts as a credential) still matches.
        self._recorded = [scrub_recorded(i.request, scrub) for i in cassette.interactions]
        self._keys: list[MatchKey] = [match_key(r, self._ignore_paths) for r in self._recorded]
        self._played: list[int] = []
        self.misses: list[RequestNotRecorded] = []
        self._lock = threading.Lock()

    @property
    def played(self) -> tuple[int, ...]:
        """Indexes of the interactions served so far, in serving order (repeats included)."""
        return tuple(self._played)

    def unplayed(self) -> list[int]:
        """Indexes of the recorded interactions that were never served."""
        served = set(self._played)
        return [i for i in range(len(self.cassette.interactions)) if i not in served]

    def assert_all_played(self) -> None:
        """Raise `UnplayedInteractions` if any recorded interaction was never served."""
        missing = self.unplayed()
        if missing:
            lines = [
                f"  #{i} {self.cassette.interactions[i].request.method} {self.cassette.interactions[i].request.url}"
                for i in missing
            ]
            raise UnplayedInteractions(
                f"{len(missing)} of {len(self.cassette.interactions)} recorded interactions in {self.name} "
                "were never requested:\n" + "\n".join(lines),
                missing,
            )

    def _select(self, sent: RecordedRequest) -> int | None:
        """The interaction to serve for `sent`; None when there is none (fallback applies)."""
        with self._lock:
            served = set(self._played)
            if self._match == "any":
                choice = next((i for i in range(len(self._keys)) if i not in served), None)
            else:
                key = match_key(sent, self._ignore_paths)
                matching = [i for i, k in enumerate(self._keys) if k == key]
                choice = next((i for i in matching if i not in served), None)
                if choice is None and matching and self._allow_repeats:
                    choice = matching[-1]
            if choice is not None:
                self._played.append(choice)
            return choice

    def _not_recorded(self, sent: RecordedRequest) -> RequestNotRecorded:
        total = len(self.cassette.interactions)
        head = f"no recorded interaction matches {sent.method} {sent.url} (cassette {self.name}"
        if self._match == "any":
            return RequestNotRecorded(f"{head}: all {total} interactions were already played)")
        served = set(self._played)
        key = match_key(sent, self._ignore_paths)
        repeats = [i for i, k in enumerate(self._keys) if k == key]
        if repeats:
            listed = ", ".join(f"#{i}" for i in repeats)
            return RequestNotRecorded(
                f"{head}): the identical request was recorded {len(repeats)} time(s) ({listed}) and each was "
                "already played; record it again or pass allow_repeats=True"
            )
        candidates = [(i, r) for i, r in enumerate(self._recorded) if i not in served]
        everything = list(enumerate(self._recorded))
        best = nearest(candidates or everything, sent, self._ignore_paths)
        if best is None:
            return RequestNotRecorded(f"{head}, which holds no interactions)")
        index, differences = best
        recorded = self.cassette.interactions[index].request
        lines = [
            f"{head}, {total} interactions, {total - len(served)} unplayed)",
            f"nearest recorded request: #{index} {recorded.method} {recorded.url}",
        ]
        lines.extend(f"  {d}" for d in differences)
        return RequestNotRecorded("\n".join(lines))

    def _miss(self, sent: RecordedRequest) -> RequestNotRecorded:
        error = self._not_recorded(sent)
        with self._lock:
            self.misses.append(error)
        return error

    def _response(
        self, index: int, request: httpx.Request, body: httpx.AsyncByteStream | httpx.SyncByteStream
    ) -> httpx.Response:
        recorded = self.cassette.interactions[index].response
        # As bytes: httpx would encode str values as ASCII and fail on a recorded non-ASCII value.
        headers = [(k.encode("ascii"), v.encode("utf-8")) for k, v in recorded.headers if k not in _FRAMING_HEADERS]
        return httpx.Response(recorded.status, headers=headers, stream=body, request=request)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        start = time.monotonic()
        await request.aread()
        sent = capture_request(request, self._scrub)
        index = self._select(sent)
        if index is None:
            if self._fallback is not None:
                return await self._fallback.handle_async_request(request)
            raise self._miss(sent)
        player = _Player(self.cassette.interactions[index], request, self._factor, start)
        wait = player.head_wait(time.monotonic())
        if player.timed_out(wait):
            await asyncio.sleep(player.read_timeout or 0.0)
            raise player.failure("timeout")
        if wait:
            await asyncio.sleep(wait)
        return self._response(index, request, _AsyncBody(player))

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        start = time.monotonic()
        request.read()
        sent = capture_request(request, self._scrub)
        index = self._select(sent)
        if index is None:
            # The fallback is asynchronous (recording is async-only), so the sync side just fails.
            raise self._miss(sent)
        player = _Player(self.cassette.interactions[index], request, self._factor, start)
        wait = player.head_wait(time.monotonic())
        if player.timed_out(wait):
            time.sleep(player.read_timeout or 0.0)
            raise player.failure("timeout")
        if wait:
            time.sleep(wait)
        return self._response(index, request, _SyncBody(player))

    def respond(self, request: httpx.Request) -> httpx.Response:
        """The recorded response to `request`, returned at once, for a caller that is not this
        transport's client: a respx route's side effect (see `cassettes.respx_mount`), which may
        serve an async or a sync client. The request's body must have been read (respx reads it).

        Matching, `misses` and `played` are as for a request this transport handles; the fallback
        is not used (a miss raises `RequestNotRecorded`). The body keeps the recorded chunks and
        their timing, in either kind of client; the recorded delay before the response head is
        waited before the first chunk instead (the head itself comes at once).
        """
        start = time.monotonic()
        sent = capture_request(request, self._scrub)
        index = self._select(sent)
        if index is None:
            raise self._miss(sent)
        player = _Player(self.cassette.interactions[index], request, self._factor, start)
        return self._response(index, request, _EitherBody(player))

    async def aclose(self) -> None:
        if self._fallback is not None:
            await self._fallback.aclose()

    def close(self) -> None:
        """Nothing to release on the sync side."""
