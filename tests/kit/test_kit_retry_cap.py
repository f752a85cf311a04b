"""``max_retry_delay_s`` caps every wait before a retry, and no value switches the cap off.

0 used to pass validation and switch the cap off (``if cap and requested > cap``): a 429 asking for
``retry-after: 1e12`` then slept 1e12 s. 0 now means "never wait": a server asking for any delay ends
the stream at once (with its ``retry_after_s``), and without one the retry goes at once.
"""

from __future__ import annotations

import asyncio
import math

import pytest

from conformance.loopback import LoopbackServer
from normalize import ErrorInfo, StreamOptions
from streamfns.kit.http import retry_delay
from tests.kit._fake import HELLO, error_reply, options, reply, run

# Every behaviour here holds on each of the kit's transports (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("each_transport")

#: A hang shows as this running out, not as a test that never ends.
_BOUND_S = 10.0


@pytest.mark.parametrize(("cap", "said"), [(0.0, "0s"), (60.0, "60s")])
async def test_a_huge_retry_after_ends_the_stream_at_once_whatever_the_cap(cap: float, said: str) -> None:
    async with LoopbackServer(error_reply(429, "rate", "later", [("retry-after", "1e12")])) as server:
        async with asyncio.timeout(_BOUND_S):
            _, result = await run(server.base_url, options(max_retry_delay_s=cap))
        assert len(server.requests) == 1
    assert result.error_info is not None
    assert (result.error_info.kind, result.error_info.status, result.error_info.retry_after_s) == (
        "rate_limit",
        429,
        1e12,
    )
    assert result.error_message == (
        f"Echo API error 429 rate: later (the server asked to retry after 1e+12s, over the {said} cap)"
    )


async def test_a_zero_cap_retries_at_once_when_no_delay_is_asked() -> None:
    async with LoopbackServer(error_reply(503, "overloaded", "busy")) as server:
        async with asyncio.timeout(_BOUND_S):
            _, result = await run(server.base_url, options(max_retry_delay_s=0, max_retries=2))
        assert len(server.requests) == 3
    assert result.error_info is not None
    assert (result.error_info.kind, result.error_info.status) == ("overloaded", 503)


async def test_a_zero_cap_still_retries_a_zero_retry_after_into_a_reply() -> None:
    plans = iter([error_reply(429, "rate", "now", [("retry-after", "0")]), reply(*HELLO)])
    async with LoopbackServer(lambda _request: next(plans)) as server:
        async with asyncio.timeout(_BOUND_S):
            _, result = await run(server.base_url, options(max_retry_delay_s=0))
        assert len(server.requests) == 2
    assert result.stop_reason == "stop", result.error_message


def test_our_own_backoff_is_capped_too() -> None:
    info = ErrorInfo.of("overloaded")
    for attempt in range(2):
        assert retry_delay(info, attempt, StreamOptions(max_retry_delay_s=0)) == (0.0, "")
        delay, note = retry_delay(info, attempt, StreamOptions(max_retry_delay_s=0.2))
        assert (delay is not None and 0 < delay <= 0.2, note) == (True, "")


def test_a_requested_delay_that_orders_nothing_falls_back_to_the_backoff() -> None:
    nan = ErrorInfo.of("rate_limit", retry_after_s=math.nan)
    negative = ErrorInfo.of("rate_limit", retry_after_s=-5.0)
    assert retry_delay(nan, 0, StreamOptions(max_retry_delay_s=0)) == (0.0, "")
    assert retry_delay(negative, 0, StreamOptions(max_retry_delay_s=0)) == (0.0, "")


@pytest.mark.parametrize("value", [-1.0, math.nan, math.inf])
async def test_a_cap_that_is_not_a_finite_non_negative_number_is_refused(value: float) -> None:
    async with LoopbackServer(reply(*HELLO)) as server:
        _, result = await run(server.base_url, options(max_retry_delay_s=value))
        assert server.requests == []
    assert result.error_info is not None
    assert result.error_message == (
        f"Echo request not sent: options.max_retry_delay_s must be a non-negative number, not {value!r}"
    )
