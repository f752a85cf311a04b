"""What redaction costs on hostile text: ``python -m bench redact``.

Issue 35, item 6: a 5 MB in-stream Ollama error line made of ``%2541`` (two levels of URL escapes
per five bytes) once blocked the event loop for 6.1 s and peaked at 610 MB, past ``total_timeout=2``;
at 15 MB, 21 s and 1.7 GB. Three figures, each against its budget:

1. **a 15 MB hostile error, cut and redacted** — :func:`streamfns.kit.redact_message` on a message
   whose error text, raw stop reason and code are each that text with a key at the start: the time
   (best of three) and the peak memory (``tracemalloc``, a run of its own). Budget: under 0.5 s and
   100 MB (the vendor text is cut at ``MAX_ERROR_TEXT`` before it is redacted);
2. **redaction without a cut scales linearly** — :func:`streamfns.kit.redact` on 1 MB and on 4 MB of
   the same text: the time ratio (budget ≤ 5, for 4x the text) and the peak memory of each (the
   output's, a few copies of it, not a record per escape);
3. **the whole stream** — the Ollama adapter reading a 15 MB ``%2541`` error line from an in-process
   transport in 64 KiB pieces with ``total_timeout=2``: how it ended (budget: ``server``, the
   vendor's error, not ``timeout``: nothing blocks the loop past the deadline), the wall time, and the
   length of the error message (the cut, plus its mark).
"""

from __future__ import annotations

import asyncio
import sys
import time
import tracemalloc
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx

_REPO = Path(__file__).resolve().parents[1]
if str(_REPO) not in sys.path:  # allow ``python bench/redact_bench.py`` from a checkout
    sys.path.insert(0, str(_REPO))

from bench import _report  # noqa: E402
from bench._util import best_of, verdict  # noqa: E402
from normalize import (  # noqa: E402
    AssistantMessage,
    AssistantMessageEventStream,
    Context,
    ErrorInfo,
    Model,
    StreamOptions,
    UserMessage,
)
from streamfns.kit import redact, redact_message  # noqa: E402
from streamfns.ollama import ADAPTER as OLLAMA  # noqa: E402

__all__ = ["hostile", "main", "run"]

#: Obviously fake: what the bench plants and redacts.
KEY = "PLANTED-" + "bench-key-" + "0123456789abcdef"
HOSTILE = "%2541"
MB = 1_000_000
TIME_BUDGET_S = 0.5
MEMORY_BUDGET_MB = 100.0
LINEARITY_BUDGET = 5.0
TOTAL_TIMEOUT_S = 2.0


def hostile(size: int) -> str:
    """``size`` bytes of ``%2541`` after a planted key."""
    return KEY + " " + HOSTILE * ((size - len(KEY) - 1) // len(HOSTILE))


def _peak_mb(fn: Any) -> float:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / MB
    finally:
        tracemalloc.stop()


def _cut_message(text: str) -> None:
    message = AssistantMessage(
        stop_reason="error", error_message=text, raw_stop_reason=text, error_info=ErrorInfo.of("server", code=text)
    )
    redact_message(message, [KEY])


class _Line(httpx.AsyncByteStream):
    """One Ollama error line of ``size`` bytes, in 64 KiB reads."""

    def __init__(self, size: int) -> None:
        self._line = b'{"error": "' + hostile(size).encode() + b'"}\n'

    async def __aiter__(self) -> AsyncIterator[bytes]:
        line = self._line
        for start in range(0, len(line), 64 * 1024):
            yield line[start : start + 64 * 1024]


async def _stream(size: int) -> tuple[AssistantMessage, float]:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "application/x-ndjson"}, stream=_Line(size))

    model = Model(id="llama3.2", api=OLLAMA.api, provider="ollama", base_url="http://ollama.invalid")
    context = Context(messages=[UserMessage(content="bench", timestamp=0)])
    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
        options = StreamOptions(api_key=KEY, http_client=client, max_retries=0, total_timeout=TOTAL_TIMEOUT_S)
        started = time.perf_counter()
        made = OLLAMA.stream_fn(model, context, options)
        stream = made if isinstance(made, AssistantMessageEventStream) else await made
        message = await stream.result()
        return message, time.perf_counter() - started


def run() -> dict[str, Any]:
    """The three figures of the module docstring."""
    text = hostile(15 * MB)
    cut_s = best_of(lambda: _cut_message(text))
    cut_mb = _peak_mb(lambda: _cut_message(text))
    one, four = hostile(MB), hostile(4 * MB)
    one_s = best_of(lambda: redact(one, [KEY]))
    four_s = best_of(lambda: redact(four, [KEY]))
    one_mb = _peak_mb(lambda: redact(one, [KEY]))
    four_mb = _peak_mb(lambda: redact(four, [KEY]))
    message, stream_s = asyncio.run(_stream(15 * MB))
    info = message.error_info
    return {
        "cut_15mb_s": cut_s,
        "cut_15mb_peak_mb": cut_mb,
        "redact_1mb_s": one_s,
        "redact_4mb_s": four_s,
        "redact_1mb_peak_mb": one_mb,
        "redact_4mb_peak_mb": four_mb,
        "linearity": four_s / one_s,
        "stream_kind": info.kind if info is not None else message.stop_reason,
        "stream_s": stream_s,
        "stream_message_chars": len(message.error_message or ""),
        "stream_key_left": KEY in (message.error_message or ""),
    }


def main() -> None:
    """Print the figures against their budgets (and record them for ``--json``)."""
    figures = run()
    cut_s, cut_mb = figures["cut_15mb_s"], figures["cut_15mb_peak_mb"]
    print(
        f"15 MB hostile error, cut and redacted: {cut_s * 1000:.0f} ms "
        f"({verdict(cut_s, TIME_BUDGET_S, at_most=True)}), "
        f"peak {cut_mb:.1f} MB ({verdict(cut_mb, MEMORY_BUDGET_MB, at_most=True)})"
    )
    print(
        f"redact without a cut: 1 MB {figures['redact_1mb_s'] * 1000:.0f} ms, "
        f"peak {figures['redact_1mb_peak_mb']:.1f} MB; "
        f"4 MB {figures['redact_4mb_s'] * 1000:.0f} ms, peak {figures['redact_4mb_peak_mb']:.1f} MB; "
        f"4 MB / 1 MB = {figures['linearity']:.2f} ({verdict(figures['linearity'], LINEARITY_BUDGET, at_most=True)})"
    )
    ended = figures["stream_kind"]
    print(
        f"Ollama, a 15 MB error line, total_timeout={TOTAL_TIMEOUT_S:g}: ended {ended} "
        f"({'within budget' if ended == 'server' else 'OVER BUDGET'}: the vendor's error, not the deadline) "
        f"in {figures['stream_s'] * 1000:.0f} ms; message {figures['stream_message_chars']:,} characters, "
        f"key {'LEFT IN IT' if figures['stream_key_left'] else 'redacted'}"
    )
    _report.record("redaction", figures)


if __name__ == "__main__":
    main()
