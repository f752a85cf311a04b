"""``streamfns chat --trace``: the reply's span printed to the terminal (stderr), or one line saying how
to install the SDK when it is missing.

Not marked parallel: a real loopback server answers the command. The bound only turns a hang into a
failure."""

from __future__ import annotations

import asyncio
import json
import os
import sys

import pytest

from conformance.loopback import LoopbackServer
from streamfns.catalog import model_from_spec
from streamfns.cli import main
from tests.adapters import ANTHROPIC

pytest.importorskip("opentelemetry.sdk.trace")

_BOUND_S = 120.0


def test_without_the_sdk_it_says_how_to_install_it_and_sends_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)  # import fails as if not installed
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-" + "TEST" * 8)
    with pytest.raises(SystemExit) as raised:
        main(["chat", "--model", "anthropic/claude-haiku-4-5", "--base-url", "http://127.0.0.1:9", "--trace", "hi"])
    assert raised.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "streamfns: error: --trace needs the OpenTelemetry SDK: pip install 'streamfns[otel]' opentelemetry-sdk\n"
    )


async def test_chat_trace_prints_the_span_of_the_reply() -> None:
    key = "sk-ant-" + "TEST" * 8
    async with LoopbackServer(ANTHROPIC.scripted("llma__text_haiku45")) as server:
        env = {**os.environ, "ANTHROPIC_API_KEY": key, "NO_COLOR": "1"}
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "streamfns",
            "chat",
            "--model",
            "anthropic/claude-haiku-4-5",
            "--base-url",
            server.base_url,
            "--max-tokens",
            "64",
            "--trace",
            "Say hello.",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        async with asyncio.timeout(_BOUND_S):
            out, err = await process.communicate()
        assert len(server.requests) == 1
    assert process.returncode == 0, err
    assert out.strip()  # the reply itself, on stdout as without --trace
    model_id = model_from_spec("anthropic/claude-haiku-4-5").id  # the alias names a dated id
    span = json.loads(err)
    assert span["name"] == f"chat {model_id}"
    assert span["kind"] == "SpanKind.CLIENT"
    attributes = span["attributes"]
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.provider.name"] == "anthropic"
    assert attributes["gen_ai.request.model"] == model_id
    assert attributes["gen_ai.request.max_tokens"] == 64
    assert attributes["gen_ai.response.finish_reasons"] == ["end_turn"]
    assert attributes["server.address"] == "127.0.0.1"
    assert "error.type" not in attributes
    assert key.encode() not in err
    assert key[7:].encode() not in err
