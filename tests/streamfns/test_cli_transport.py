"""``streamfns chat --transport NAME`` and the command lines' event loop (``run_async``: uvloop when it
is installed, else asyncio's own)."""

from __future__ import annotations

import asyncio
import sys

import pytest

from normalize import AssistantMessageEventStream, Context, Model, StreamOptions
from streamfns import _loop, cli
from streamfns.faux import FauxProvider, faux_message

pytestmark = pytest.mark.parallel  # clock-blind: no socket, sleep or timeout

_CHAT = ["chat", "--model", "anthropic/claude-haiku-4-5"]


def _exit_status(argv: list[str]) -> int:
    try:
        return cli.main(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1


# -- run_async ----------------------------------------------------------------------------------------


async def _loop_module() -> str:
    return type(asyncio.get_running_loop()).__module__


def test_run_async_runs_on_uvloop_when_it_is_installed() -> None:
    pytest.importorskip("uvloop")
    assert _loop.uvloop_available()
    assert _loop.run_async(_loop_module()).startswith("uvloop")


def test_run_async_falls_back_to_asyncio_without_uvloop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # `import uvloop` now raises ImportError
    assert not _loop.uvloop_available()
    assert _loop.run_async(_loop_module()).startswith("asyncio")


def test_run_async_returns_the_result_and_raises_what_main_raised() -> None:
    async def answer() -> int:
        await asyncio.sleep(0)
        return 42

    async def broken() -> None:
        raise LookupError("from main")

    assert _loop.run_async(answer()) == 42
    with pytest.raises(LookupError, match="from main"):
        _loop.run_async(broken())


# -- chat --transport ---------------------------------------------------------------------------------


def test_chat_parses_the_transport() -> None:
    parser = cli._parser()  # pyright: ignore[reportPrivateUsage]
    assert parser.parse_args([*_CHAT, "hi"]).transport is None
    assert parser.parse_args([*_CHAT, "--transport", "aiohttp", "hi"]).transport == "aiohttp"
    assert parser.parse_args([*_CHAT, "--transport", "httpx", "hi"]).transport == "httpx"


def test_chat_help_names_the_transport_and_its_extra(capsys: pytest.CaptureFixture[str]) -> None:
    assert _exit_status(["chat", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "--transport {aiohttp,httpx,native}" in out
    assert "streamfns[aiohttp]" in out


def test_an_unknown_transport_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert _exit_status([*_CHAT, "--transport", "carrier-pigeon", "hi"]) == 2
    assert "argument --transport: invalid choice: 'carrier-pigeon'" in capsys.readouterr().err


def test_aiohttp_without_its_extra_is_a_usage_error_before_any_request(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "aiohttp", None)  # `import aiohttp` now raises ImportError

    def never(model: Model, context: Context, options: StreamOptions | None = None) -> AssistantMessageEventStream:
        raise AssertionError("no request may be made")

    monkeypatch.setattr(cli, "stream", never)
    assert _exit_status([*_CHAT, "--transport", "aiohttp", "hi"]) == 2
    out, err = capsys.readouterr()
    assert err == "streamfns: error: --transport aiohttp needs the aiohttp extra: pip install 'streamfns[aiohttp]'\n"
    assert out == ""


@pytest.mark.parametrize("transport", [None, "httpx", "aiohttp"])
def test_chat_sends_the_transport_in_the_calls_options(
    transport: str | None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    faux = FauxProvider()
    faux.set_responses([faux_message("fine")])
    seen: list[tuple[StreamOptions | None, str]] = []

    def scripted(model: Model, context: Context, options: StreamOptions | None = None) -> AssistantMessageEventStream:
        seen.append((options, type(asyncio.get_running_loop()).__module__))
        return faux(faux.model(), context, options)

    monkeypatch.setattr(cli, "stream", scripted)
    argv = [*_CHAT, *(["--transport", transport] if transport else []), "hi"]
    assert _exit_status(argv) == 0
    assert "fine" in capsys.readouterr().out
    ((options, loop),) = seen
    assert options is not None
    assert options.transport == transport
    assert loop.startswith("uvloop" if _loop.uvloop_available() else "asyncio")
