"""A streamfns adapter run as an adapter process (``streamfns-process/1``, docs/process-protocol.md).

It is the protocol's reference child: any registered StreamFn (chosen by the request's ``model.api``)
behind stdin and stdout, in about forty lines, so the harness can judge it out of process exactly as
it judges it in process::

    streamfns conformance run --exec 'python examples/process_adapter/python_adapter.py' --api anthropic-messages

The options arrive in the protocol's JSON names (``timeoutMs``, ``maxRetries``, …) and become
``StreamOptions``; an ``{"type": "abort"}`` line on stdin, or ``SIGINT``, fires the call's abort signal.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import signal
import sys
from typing import Any

from normalize import AbortController, Context, Model, StreamOptions, event_to_json
from streamfns import stream


def stream_options(data: dict[str, Any] | None, controller: AbortController) -> StreamOptions | None:
    """The request's options as ``StreamOptions`` (seconds from milliseconds), with the abort signal."""
    if data is None:
        return None

    def seconds(key: str) -> float | None:
        value = data.get(key)
        return None if value is None else value / 1000

    return StreamOptions(
        signal=controller.signal,
        api_key=data.get("apiKey"),
        max_tokens=data.get("maxTokens"),
        temperature=data.get("temperature"),
        reasoning=data.get("reasoning"),
        session_id=data.get("sessionId"),
        headers=data.get("headers"),
        timeout=seconds("timeoutMs"),
        connect_timeout=seconds("connectTimeoutMs"),
        total_timeout=seconds("totalTimeoutMs"),
        progress_timeout=seconds("progressTimeoutMs"),
        max_retries=data.get("maxRetries", 2),
        max_retry_delay_s=seconds("maxRetryDelayMs") or 60.0,
    )


async def serve() -> None:
    """Say ready, take the request, write its events, honour an abort."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    # Ready means ready to stream: what `import streamfns` leaves for the first call (the kit's HTTP
    # layer and httpx's stack) is loaded first. On a slow machine that is half a second, in which the
    # first call would read neither its abort nor its clocks.
    for module in ("streamfns.kit.http", "httpx", "httpcore", "anyio", "h11"):
        importlib.import_module(module)
    print(json.dumps({"type": "ready"}), flush=True)
    request = json.loads(await reader.readline())
    controller = AbortController()
    if request.get("aborted"):
        controller.abort("aborted before the call")
    loop.add_signal_handler(signal.SIGINT, controller.abort, "aborted by SIGINT")

    async def watch_stdin() -> None:
        while line := await reader.readline():
            if json.loads(line).get("type") == "abort":
                controller.abort("aborted by the harness")

    watcher = loop.create_task(watch_stdin())
    model = Model.from_json(request["model"])
    options = stream_options(request["options"], controller)
    # streamfns.stream picks the adapter by model.api (an api nobody registered: an error stream).
    async for event in stream(model, Context.from_json(request["context"]), options):
        sys.stdout.write(json.dumps(event_to_json(event)) + "\n")
        sys.stdout.flush()
    watcher.cancel()


if __name__ == "__main__":
    asyncio.run(serve())
