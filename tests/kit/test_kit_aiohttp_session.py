"""The aiohttp transport's own session: one per event loop, shared by the calls in flight on it, made
by the first and closed by the last; nothing of one call (a cookie) rides along on another; and no
ending of a call — done, error, abort, a consumer that leaves, a cancelled task — leaves a session
open (over real loopback sockets)."""

from __future__ import annotations

import asyncio
import gc
import warnings
from typing import Any

import pytest

from conformance.loopback import LoopbackServer, ReceivedRequest, Scripted
from normalize import AbortController, AbortSignal
from streamfns.kit import transport_aiohttp
from tests.kit._fake import CONTEXT, HELLO, WIRE, model, options, run

#: A stream that takes its time after its first event, so calls started together overlap.
_SLOW = [(0.0, HELLO[0]), (0.3, HELLO[1]), (0.0, HELLO[2]), (0.0, HELLO[3])]


class _Counting:
    """A plan that plays ``_SLOW`` (with ``headers``) and lets a test wait for the n-th request."""

    def __init__(self, headers: list[tuple[str, str]] | None = None) -> None:
        self.headers = headers or [("content-type", "text/event-stream")]
        self.seen = 0
        self._arrived = asyncio.Condition()

    async def __call__(self, request: ReceivedRequest) -> Scripted:
        async with self._arrived:
            self.seen += 1
            self._arrived.notify_all()
        return Scripted(headers=self.headers, chunks=_SLOW)

    async def requests(self, count: int) -> None:
        async with self._arrived:
            await self._arrived.wait_for(lambda: self.seen >= count)


def _lease_of_this_loop() -> Any:
    return transport_aiohttp._leases.get(asyncio.get_running_loop())  # pyright: ignore[reportPrivateUsage]


async def test_calls_in_flight_share_one_session_and_the_last_one_closes_it() -> None:
    plan = _Counting()
    async with LoopbackServer(plan) as server:
        calls = [asyncio.ensure_future(run(server.base_url, options(transport="aiohttp"))) for _ in range(3)]
        await asyncio.wait_for(plan.requests(3), 10)
        lease = _lease_of_this_loop()
        assert lease is not None, "the calls in flight hold the loop's session"
        assert lease.holders == 3, "three calls, one session"
        session = lease.session
        results = await asyncio.gather(*calls)
        assert [result.stop_reason for _, result in results] == ["stop"] * 3
        assert _lease_of_this_loop() is None, "the last call out let the session go"
        assert session.closed, "and closed it"
        # The next call makes a session of its own again, and closes it too.
        _, again = await run(server.base_url, options(transport="aiohttp"))
        assert again.stop_reason == "stop"
        assert _lease_of_this_loop() is None


async def test_a_cookie_one_call_was_set_is_never_sent_on_another() -> None:
    # Calls share the session: a vendor's cookie (a load balancer's, a session id) must not ride along
    # on every other call the process makes, to that vendor or to another.
    plan = _Counting([("content-type", "text/event-stream"), ("set-cookie", "affinity=call-one; Path=/")])
    async with LoopbackServer(plan) as server:
        # By name: aiohttp's cookie jar keeps no cookie a bare IP address set.
        base_url = server.base_url.replace("127.0.0.1", "localhost")
        first = asyncio.ensure_future(run(base_url, options(transport="aiohttp")))
        await asyncio.wait_for(plan.requests(1), 10)
        await asyncio.sleep(0.1)  # the first call's head, with its cookie, has come (its body takes 0.3 s)
        _, second = await run(base_url, options(transport="aiohttp"))
        _, first_result = await first
    assert first_result.stop_reason == second.stop_reason == "stop"
    assert len(server.requests) == 2
    assert all("cookie" not in request.headers for request in server.requests), server.requests[1].headers


async def _abandoned(base_url: str) -> None:
    stream = WIRE.stream_fn(model(base_url), CONTEXT, options(transport="aiohttp"))
    async for _event in stream:
        break  # the consumer leaves after the first event


async def _stop_reason(base_url: str, signal: AbortSignal | None = None) -> str:
    _, result = await run(base_url, options(transport="aiohttp", signal=signal))
    return result.stop_reason


async def test_no_ending_of_a_call_leaves_a_session_open() -> None:
    reports: list[dict[str, Any]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _loop, context: reports.append(context))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with LoopbackServer(Scripted(chunks=_SLOW)) as server:
            url = server.base_url
            assert await _stop_reason(url) == "stop"
            # aborted mid-stream
            controller = AbortController()
            aborting = asyncio.ensure_future(_stop_reason(url, controller.signal))
            await asyncio.sleep(0.1)
            controller.abort()
            assert await aborting == "aborted"
            # a consumer that leaves its loop
            await _abandoned(url)
            # a task cancelled while it reads
            reading = asyncio.ensure_future(_stop_reason(url))
            await asyncio.sleep(0.1)
            reading.cancel()
            with pytest.raises(asyncio.CancelledError):
                await reading
            # overlapping calls that end every way at once
            controller = AbortController()
            done = asyncio.ensure_future(_stop_reason(url))
            aborted = asyncio.ensure_future(_stop_reason(url, controller.signal))
            left = asyncio.ensure_future(_abandoned(url))
            await asyncio.sleep(0.1)
            controller.abort()
            assert [await done, await aborted] == ["stop", "aborted"]
            await left
            for _ in range(50):  # an abandoned stream closes its producer on a later turn of the loop
                if _lease_of_this_loop() is None:
                    break
                await asyncio.sleep(0.02)
            assert _lease_of_this_loop() is None, "every call gave the session back"
            assert await server.all_connections_closed(timeout=2.0)
        gc.collect()
        await asyncio.sleep(0)
    unclosed = [report for report in reports if "Unclosed" in str(report.get("message", ""))]
    assert unclosed == [], unclosed
    resource = [str(warning.message) for warning in caught if issubclass(warning.category, ResourceWarning)]
    assert not any("session" in message or "connector" in message for message in resource), resource


async def test_each_threads_loop_has_a_session_of_its_own() -> None:
    # A sync caller may run each call under asyncio.run in a worker thread: every loop leases and closes
    # its own session, and no thread's bookkeeping touches another's.
    async with LoopbackServer(Scripted(chunks=_SLOW)) as server:

        def in_a_thread() -> tuple[str, bool]:
            async def call() -> tuple[str, bool]:
                reason = await _stop_reason(server.base_url)
                return reason, _lease_of_this_loop() is None

            return asyncio.run(call())

        outcomes = await asyncio.gather(*(asyncio.to_thread(in_a_thread) for _ in range(4)))
        assert outcomes == [("stop", True)] * 4
        assert _lease_of_this_loop() is None
        assert await server.all_connections_closed(timeout=2.0)
