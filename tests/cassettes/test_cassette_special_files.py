"""Only a regular file is a cassette: a FIFO, a directory, a socket or a device under a cassette's name
is refused with `NotACassetteFile` before it is read, by every reader (`load`, the bundled library, the
secret scan, the command line, `use_cassette` and the pytest plugin), and no open can block.

Before the fix a FIFO blocked its reader for ever. The in-process tests run the reader on a thread
and, should it still be blocked after a generous bound, release it (a writer opens and closes the
FIFO, so the reader sees end of file) and fail: a regression fails the test instead of hanging the
suite. The bound is not a measurement: the refusal does not wait for anything.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from cassettes import CassetteError, CassetteSession, NotACassetteFile, library, load, save
from cassettes.cli import main
from cassettes.regular_files import open_regular
from cassettes.secret_scan import scan_file
from tests.cassettes._helpers import make_cassette

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs, sockets and /dev are POSIX")
pytest_plugins = ["pytester"]

#: How long a reader may take before it counts as blocked. The refusal itself waits on nothing.
_BLOCKED_AFTER_S = 30.0
_FIFO_MESSAGE = "not a cassette file: it is a FIFO (named pipe), and only a regular file is read as a cassette"


def _release(fifo: Path) -> None:
    """End a reader blocked opening `fifo`: a writer that comes and goes gives it end of file."""
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:  # no reader is waiting on it (ENXIO)
        return
    os.close(fd)


def _unblocked(call: Callable[[], Any], fifo: Path) -> BaseException | None:
    """Run `call` on a thread; the exception it raised (None if it returned). Fails the test if the
    call is still blocked after the bound, once it has been released."""
    outcome: list[BaseException | None] = []

    def target() -> None:
        try:
            call()
        except BaseException as exc:  # handed to the test thread to assert on
            outcome.append(exc)
        else:
            outcome.append(None)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(_BLOCKED_AFTER_S)
    if thread.is_alive():
        while thread.is_alive():
            _release(fifo)
            thread.join(0.1)
        pytest.fail(f"the reader blocked on the FIFO {fifo} (still waiting after {_BLOCKED_AFTER_S:g} s)")
    return outcome[0]


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.jsonl"
    os.mkfifo(path)
    return path


@pytest.fixture
def unix_socket(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "sock.jsonl"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(path))
    except OSError as exc:  # a tmp path too long for sun_path
        server.close()
        pytest.skip(f"cannot bind a unix socket there: {exc}")
    try:
        yield path
    finally:
        server.close()


# -- load ------------------------------------------------------------------------------------------


def test_load_refuses_a_fifo_at_once(fifo: Path) -> None:
    raised = _unblocked(lambda: load(fifo), fifo)
    assert isinstance(raised, NotACassetteFile), raised
    assert isinstance(raised, CassetteError)
    assert str(raised) == f"{fifo}: {_FIFO_MESSAGE}"
    assert (raised.path, raised.kind) == (str(fifo), "a FIFO (named pipe)")


def test_load_refuses_a_directory(tmp_path: Path) -> None:
    folder = tmp_path / "folder.jsonl"
    folder.mkdir()
    with pytest.raises(NotACassetteFile) as raised:
        load(folder)
    assert raised.value.kind == "a directory"


def test_load_refuses_a_socket(unix_socket: Path) -> None:
    with pytest.raises(NotACassetteFile) as raised:
        load(unix_socket)
    assert raised.value.kind == "a socket"


@pytest.mark.parametrize("device", ["/dev/null", "/dev/zero"])
def test_load_refuses_a_device_without_opening_it(device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if not os.path.exists(device):
        pytest.skip(f"no {device} here")
    opened: list[str] = []
    real_open = os.open

    def spy(path: str | os.PathLike[str], flags: int, *args: Any, **kwargs: Any) -> int:
        opened.append(os.fspath(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", spy)
    with pytest.raises(NotACassetteFile) as raised:
        load(device)
    assert raised.value.kind == "a character device"
    assert opened == [], "a device is refused on its stat, never opened"


def test_a_symlink_to_a_fifo_is_refused_and_one_to_a_cassette_loads(tmp_path: Path, fifo: Path) -> None:
    real = tmp_path / "real.jsonl"
    save(make_cassette([b"data: hi\n\n"]), real)
    to_real, to_fifo = tmp_path / "to-real.jsonl", tmp_path / "to-fifo.jsonl"
    to_real.symlink_to(real)
    to_fifo.symlink_to(fifo)
    assert load(to_real).interactions[0].response.body == b"data: hi\n\n"
    raised = _unblocked(lambda: load(to_fifo), fifo)
    assert isinstance(raised, NotACassetteFile), raised
    assert raised.kind == "a FIFO (named pipe)"


def test_a_fifo_swapped_in_after_the_stat_is_refused_on_the_descriptor(
    tmp_path: Path, fifo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race: the name was a regular file when stat'ed and is a FIFO when opened. The open does not
    block (O_NONBLOCK) and the fstat of what was opened refuses it."""
    regular = tmp_path / "regular.jsonl"
    save(make_cassette([b"data: hi\n\n"]), regular)
    real_stat = os.stat

    def stale_stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        return real_stat(regular if os.fspath(path) == str(fifo) else path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stale_stat)
    raised = _unblocked(lambda: load(fifo), fifo)
    assert isinstance(raised, NotACassetteFile), raised
    assert raised.kind == "a FIFO (named pipe)"


def test_a_missing_file_is_still_the_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "missing.jsonl")
    with pytest.raises(FileNotFoundError):
        open_regular(tmp_path / "missing.jsonl")


def test_a_regular_cassette_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "ok.jsonl"
    save(make_cassette([b"data: 1\n\n", b"data: 2\n\n"]), path)
    assert [chunk.data for chunk in load(path).interactions[0].response.chunks] == [b"data: 1\n\n", b"data: 2\n\n"]


# -- the bundled library ---------------------------------------------------------------------------


def _index_with(monkeypatch: pytest.MonkeyPatch, name: str, item: Path) -> None:
    monkeypatch.setattr(library, "_index", lambda: {name: ("anthropic-messages", item)})


def test_library_load_and_synthetic_refuse_a_fifo_in_place_of_a_cassette(
    fifo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _index_with(monkeypatch, "planted", fifo)
    for read in (library.load, library.synthetic):
        raised = _unblocked(lambda read=read: read("planted"), fifo)
        assert isinstance(raised, NotACassetteFile), (read, raised)
        assert raised.kind == "a FIFO (named pipe)"


def test_the_library_lists_only_regular_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "anthropic-messages"
    folder.mkdir()
    save(make_cassette([b"data: hi\n\n"]), folder / "real.jsonl")
    os.mkfifo(folder / "pipe.jsonl")
    (folder / "dir.jsonl").mkdir()

    def files(_name: str) -> Path:
        return tmp_path

    monkeypatch.setattr(library, "files", files)
    index = library._index.__wrapped__()  # pyright: ignore[reportPrivateUsage]
    assert list(index) == ["real"]


# -- the secret scan and the command line ----------------------------------------------------------


def test_scan_file_refuses_a_fifo(fifo: Path) -> None:
    raised = _unblocked(lambda: scan_file(fifo, env={}), fifo)
    assert isinstance(raised, NotACassetteFile), raised


@pytest.mark.parametrize("command", [["show"], ["mutate", "--op", "truncate:at=50%", "-o", "-"]])
def test_cli_show_and_mutate_refuse_a_fifo(command: list[str], fifo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [command[0], str(fifo), *command[1:]]
    status: list[int] = []
    raised = _unblocked(lambda: status.append(main(argv)), fifo)
    assert raised is None
    assert status == [2]
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"cassettes: error: {fifo}: {_FIFO_MESSAGE}\n"


def test_cli_scan_refuses_a_fifo_and_still_scans_the_other_files(
    tmp_path: Path, fifo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.jsonl"
    save(make_cassette([b"data: hi\n\n"]), good, env={})
    status: list[int] = []
    raised = _unblocked(lambda: status.append(main(["scan", str(fifo), str(good)])), fifo)
    assert raised is None
    assert status == [2], "a file that could not be scanned is exit 2"
    captured = capsys.readouterr()
    assert captured.err == f"cassettes: error: {fifo}: {_FIFO_MESSAGE}\n"
    assert captured.out == f"{good}: no secrets found\n"


# -- use_cassette and the pytest plugin ------------------------------------------------------------


@pytest.mark.parametrize("mode", ["none", "once", "new_episodes"])
def test_a_replaying_session_refuses_a_fifo(mode: Any, fifo: Path) -> None:
    raised = _unblocked(lambda: CassetteSession(fifo, mode=mode), fifo)
    assert isinstance(raised, NotACassetteFile), raised


@pytest.mark.parametrize("mode", ["all", "rewrite"])
def test_a_recording_session_refuses_a_fifo_or_a_directory_before_recording(mode: Any, tmp_path: Path) -> None:
    """Before: the session was made, and the rename at its end replaced the FIFO (or failed on the
    directory) after the whole recording had been sent."""
    pipe, folder = tmp_path / "pipe.jsonl", tmp_path / "folder.jsonl"
    os.mkfifo(pipe)
    folder.mkdir()
    for path, kind in ((pipe, "a FIFO (named pipe)"), (folder, "a directory")):
        with pytest.raises(NotACassetteFile) as raised:
            CassetteSession(path, mode=mode)
        assert raised.value.kind == kind
    assert sorted(item.name for item in tmp_path.iterdir()) == ["folder.jsonl", "pipe.jsonl"], "no .partial left"


_PLUGIN_TEST = """
import os
from pathlib import Path

import pytest

os.mkfifo(Path(__file__).parent / "pipe.jsonl")


@pytest.mark.cassette("pipe.jsonl")
async def test_replays_a_fifo(cassette):
    async with cassette.client() as http:
        await http.get("https://api.example.test/")
"""


@pytest.mark.slow
def test_the_pytest_plugin_refuses_a_fifo_cassette(pytester: pytest.Pytester) -> None:
    installed = any(ep.name == "streamfns_cassettes" for ep in entry_points(group="pytest11"))
    pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_fifo=_PLUGIN_TEST)
    args = () if installed else ("-p", "cassettes.pytest_plugin")
    # A subprocess with a timeout: before the fix the inner session blocked on the FIFO for ever.
    result = pytester.runpytest_subprocess(*args, "--tb=line", timeout=120)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*pipe.jsonl: {_FIFO_MESSAGE}*"])
