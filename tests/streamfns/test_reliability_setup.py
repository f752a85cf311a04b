"""The soak's own setup cannot fail it: its connect timeout and backlog are sized for its load, every
stream goes out on the transport it was told (``--transport``, httpx by default), and a stream that
fails a must-be-0 figure is named with how it ended."""

from __future__ import annotations

import random
import sys

import pytest

from bench import reliability
from normalize import AssistantMessageEventStream, Context, Model, StreamOptions
from streamfns.faux import FauxProvider, faux_message


async def _one_faux_stream(index: int, transport: str = "httpx") -> tuple[str, list[StreamOptions]]:
    """One soak stream (plan ``ok``) through the faux provider on ``transport`` (the soak's default,
    httpx, unless named): how it ended, and the options it was given."""
    faux = FauxProvider()
    faux.set_responses([faux_message("fine")])
    seen: list[StreamOptions] = []

    def stream_fn(model: Model, context: Context, options: StreamOptions | None) -> AssistantMessageEventStream:
        assert options is not None
        seen.append(options)
        return faux(faux.model(), context, options)

    outcome = await reliability._one(  # pyright: ignore[reportPrivateUsage]
        stream_fn,
        "faux",
        "long:faux",
        "ok",
        index=index,
        base_url="http://127.0.0.1:9",
        rng=random.Random(0),
        idle_timeout_s=0.5,
        transport=transport,
    )
    assert outcome.problems == []
    return outcome.result, seen


async def test_each_stream_gets_its_own_connect_timeout_not_the_idle_one() -> None:
    result, seen = await _one_faux_stream(4)
    assert result == "stop"
    assert [(options.timeout, options.connect_timeout) for options in seen] == [(0.5, 30.0)]


@pytest.mark.parametrize("transport", reliability.TRANSPORTS)
async def test_each_stream_goes_out_on_the_soaks_transport(transport: str) -> None:
    result, seen = await _one_faux_stream(0, transport)
    assert (result, [options.transport for options in seen]) == ("stop", [transport])


def test_the_transport_option_is_httpx_unless_named_and_refuses_others(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert reliability.TRANSPORTS == ("httpx", "aiohttp", "native")
    with pytest.raises(SystemExit) as exited:
        reliability.main(["--transport", "carrier-pigeon"])
    assert exited.value.code == 2
    assert "argument --transport: invalid choice: 'carrier-pigeon'" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "aiohttp", None)  # `import aiohttp` now raises ImportError
    with pytest.raises(SystemExit) as exited:
        reliability.main(["--transport", "aiohttp"])
    assert exited.value.code == 2
    assert "--transport aiohttp needs the aiohttp extra: pip install 'streamfns[aiohttp]'" in capsys.readouterr().err


def test_the_backlog_holds_every_stream_of_a_phase_twice_over() -> None:
    assert [reliability._backlog(n) for n in (10, 40, 1000)] == [100, 100, 2000]  # pyright: ignore[reportPrivateUsage]


def test_a_failed_stream_is_named_with_how_it_ended() -> None:
    healthy = reliability.Outcome(api="anthropic-messages", fault="retry-429", recording="llma__text", index=17)
    healthy.result = "error"
    healthy.detail = "Anthropic timed out: ConnectTimeout: "
    faulted = reliability.Outcome(api="google-generative-ai", fault="truncate", recording="gem__text", index=3)
    faulted.result = "stop"
    silent = reliability.Outcome(api="openai-completions", fault="ok", recording="long:openai-completions", index=-2)
    silent.problems.append("0 terminal events")
    fine = reliability.Outcome(api="openai-responses", fault="slow", recording="resp__text", index=5, result="stop")
    assert reliability._problems([healthy, faulted, silent, fine]) == [  # pyright: ignore[reportPrivateUsage]
        "openai-completions/ok (long:openai-completions) #-2: 0 terminal events",
        "anthropic-messages/retry-429 (llma__text) #17: ended error: Anthropic timed out: ConnectTimeout: ",
        "google-generative-ai/truncate (gem__text) #3: ended stop on a fault",
        "openai-completions/ok (long:openai-completions) #-2: ended without a result: (no error message)",
    ]
