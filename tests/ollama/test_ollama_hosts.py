"""Where an Ollama chat request goes (issue 35, item 4): ``OLLAMA_HOST`` is read as the ``ollama``
command reads it, then checked as every host part from the environment is — an address with user info,
a query or fragment, a dot segment or another scheme ends the stream ``config`` naming ``OLLAMA_HOST``,
and nothing is sent (with ``OLLAMA_API_KEY``). Over real loopback HTTP, on each of the kit's transports."""

from __future__ import annotations

import pytest

from conformance.loopback import LoopbackServer, Scripted
from normalize import StreamOptions
from streamfns.kit import CompatError
from streamfns.ollama import host_from_env, stream_ollama_chat
from tests.adapters import CONTEXT, OLLAMA

# Every behaviour here holds on each of the kit's transports (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("each_transport")

KEY = "ollama-" + "hostsTestKey" * 3


@pytest.mark.parametrize(
    "host",
    [
        "x@127.0.0.1:{port}",
        "http://ollama.com@127.0.0.1:{port}",
        "127.0.0.1:{port}#@ollama.com",
        "127.0.0.1:{port}/?x=",
        "http://127.0.0.1:{port}/api/..",
        "http://127.0.0.1:{port}/%2e%2e",
        "ftp://127.0.0.1:{port}",
    ],
)
async def test_an_ollama_host_that_could_move_the_request_sends_nothing(
    monkeypatch: pytest.MonkeyPatch, host: str
) -> None:
    async with LoopbackServer(Scripted(status=404, headers=[("content-type", "application/json")])) as server:
        port = server.base_url.rsplit(":", 1)[1]
        monkeypatch.setenv("OLLAMA_HOST", host.format(port=port))
        message = await stream_ollama_chat(OLLAMA.model(base_url=""), CONTEXT, StreamOptions(api_key=KEY)).result()
        assert server.requests == []
    assert message.error_info is not None
    assert message.error_info.kind == "config", message.error_message
    assert "OLLAMA_HOST" in (message.error_message or "")
    assert "ollama.com@" not in (message.error_message or ""), "user info is never quoted"


async def test_a_plain_ollama_host_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    async with LoopbackServer(Scripted(status=404, headers=[("content-type", "application/json")])) as server:
        monkeypatch.setenv("OLLAMA_HOST", server.base_url.removeprefix("http://") + "/prefix/")
        await stream_ollama_chat(OLLAMA.model(base_url=""), CONTEXT, StreamOptions(max_retries=0)).result()
        assert [request.path for request in server.requests] == ["/prefix/api/chat"]


@pytest.mark.parametrize("value", ["gpu\u3002box", "gpu-box.", "1.2.3", "0x7f000001", "[fe80::1%eth0]:1", "a b"])
def test_host_names_that_are_not_names_are_refused(value: str) -> None:
    with pytest.raises(CompatError, match="OLLAMA_HOST"):
        host_from_env(value)
