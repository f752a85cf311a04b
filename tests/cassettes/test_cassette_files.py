"""Cassette files under concurrent and interrupted writers: locked, atomic, and honest about being cut."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import httpx
import pytest

import cassettes
from cassettes import CassetteIncomplete, CassetteLocked, load, save, use_cassette
from cassettes.files import PartialFile
from conformance.loopback import LoopbackServer
from tests.cassettes._helpers import SSE_EVENTS, make_cassette, upstream

_REPO = str(Path(cassettes.__file__).resolve().parents[1])


def _partial(path: Path) -> Path:
    return path.with_name(path.name + ".partial")


async def _post(path: Path, url: str, n: int, *, mode: cassettes.Mode = "all") -> None:
    async with use_cassette(path, mode=mode) as http:
        await http.post(url, json={"n": n})


async def test_a_second_recorder_of_the_same_file_fails_clearly_and_the_first_one_completes(tmp_path: Path) -> None:
    path = tmp_path / "shared.jsonl"
    async with LoopbackServer(upstream()) as server:
        url = server.base_url + "/v1/messages"
        async with use_cassette(path, mode="all") as http:
            with pytest.raises(CassetteLocked, match="being written by another recorder"):
                await _post(path, url, 2)
            await http.post(url, json={"n": 1})
        await _post(path, url, 3)  # once the first one is done, the file is free again
    assert [i.request.body for i in load(path).interactions] == [b'{"n":1}', b'{"n":3}']
    assert not _partial(path).exists()


_RACER = """
import asyncio, sys
import cassettes

async def main(url: str, path: str, n: int) -> None:
    async with cassettes.use_cassette(path, mode="all") as http:
        await http.post(url, json={"n": n})

try:
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
except cassettes.CassetteLocked as exc:
    print("locked:", exc)
    sys.exit(3)
"""


@pytest.mark.slow
async def test_recorders_in_separate_processes_never_lose_an_interaction_silently(tmp_path: Path) -> None:
    path = tmp_path / "raced.jsonl"
    env = {**os.environ, "PYTHONPATH": _REPO}
    async with LoopbackServer(upstream(delay=0.1)) as server:
        children = [
            await asyncio.create_subprocess_exec(
                sys.executable, "-c", _RACER, server.base_url + "/v1/messages", str(path), str(n), env=env
            )
            for n in range(3)
        ]
        codes = [await child.wait() for child in children]
    assert set(codes) <= {0, 3}, codes
    succeeded = sorted(f'{{"n":{n}}}'.encode() for n, code in enumerate(codes) if code == 0)
    assert succeeded, "at least one recorder got the file"
    # Every recorder that reported success is in the file; every other one said it was locked out.
    assert sorted(i.request.body for i in load(path).interactions) == succeeded
    assert not _partial(path).exists()


async def test_readers_see_the_old_file_until_the_new_recording_is_complete(tmp_path: Path) -> None:
    path = tmp_path / "atomic.jsonl"
    save(make_cassette([b"data: old\n\n"]), path)
    before = path.read_bytes()
    async with (
        LoopbackServer(upstream(delay=0.05)) as server,
        use_cassette(path, mode="rewrite") as http,
        http.stream("POST", server.base_url + "/v1/messages", json={"n": 1}) as response,
    ):
        async for _ in response.aiter_raw():
            assert path.read_bytes() == before, "the old cassette stays whole while the new one is recorded"
    assert load(path).interactions[0].response.body == b"".join(SSE_EVENTS)


_CHILD = """
import asyncio, sys
import cassettes

async def main(url: str, path: str) -> None:
    async with cassettes.use_cassette(path, mode="rewrite") as http:
        async with http.stream("POST", url, json={"model": "m"}) as response:
            async for _ in response.aiter_raw():
                pass

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def _chunk_lines(path: Path) -> int:
    return path.read_text(encoding="utf-8").count('"type":"chunk"') if path.exists() else 0


async def _kill_while_recording(url: str, path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": _REPO}
    child = await asyncio.create_subprocess_exec(sys.executable, "-c", _CHILD, url, str(path), env=env)
    try:
        deadline = time.monotonic() + 15
        while _chunk_lines(_partial(path)) < 2:
            assert time.monotonic() < deadline, "the child never recorded two chunks"
            assert child.returncode is None, "the child exited early"
            await asyncio.sleep(0.02)
    finally:
        child.kill()  # SIGKILL: no cleanup of any kind runs
        await child.wait()


@pytest.mark.slow
async def test_a_recording_cut_by_kill_9_says_so_and_the_old_cassette_survives(tmp_path: Path) -> None:
    path = tmp_path / "killed.jsonl"
    save(make_cassette([b"data: old\n\n"]), path)
    before = path.read_bytes()
    plans = iter([upstream(delay=0.5), upstream()])  # slow for the child, then quick
    async with LoopbackServer(lambda _request: next(plans)) as server:
        await _kill_while_recording(server.base_url + "/v1/messages", path)
        assert path.read_bytes() == before, "the cassette being rewritten is untouched"
        cut = _partial(path)
        with pytest.raises(CassetteIncomplete, match="no completion footer") as caught:
            load(cut)
        assert "have no end record" in str(caught.value), "the interaction that was cut is named"
        salvaged = load(cut, allow_incomplete=True)
        assert salvaged.incomplete is not None
        stored = salvaged.interactions[0].response
        assert [c.data for c in stored.chunks] == SSE_EVENTS[: len(stored.chunks)]
        assert len(stored.chunks) >= 2
        # The next recorder takes over the stale partial file (its writer is dead, the lock is free).
        async with use_cassette(path, mode="rewrite") as http:
            await http.post(server.base_url + "/v1/messages", json={"model": "m"})
    assert load(path).interactions[0].response.body == b"".join(SSE_EVENTS)
    assert not cut.exists()


async def test_a_server_reset_is_a_complete_recording_ending_in_reset(tmp_path: Path) -> None:
    """The counterpart of the kill test: a reset the server sent is recorded, and the file is whole."""
    path = tmp_path / "reset.jsonl"
    async with LoopbackServer(upstream(SSE_EVENTS[:2], end="reset")) as server:
        with pytest.raises(httpx.TransportError):
            async with use_cassette(path, mode="once") as http:
                await http.post(server.base_url + "/v1/messages", json={"n": 1})
    cassette = load(path)
    assert cassette.incomplete is None
    assert cassette.interactions[0].response.end.kind == "reset"


def test_save_is_locked_and_atomic(tmp_path: Path) -> None:
    path = tmp_path / "saved.jsonl"
    save(make_cassette([b"data: 1\n\n"]), path)
    holder = PartialFile.acquire(path)
    try:
        with pytest.raises(CassetteLocked):
            save(make_cassette([b"data: 2\n\n"]), path)
        assert load(path).interactions[0].response.body == b"data: 1\n\n"
    finally:
        holder.discard()
    save(make_cassette([b"data: 3\n\n"]), path)
    assert load(path).interactions[0].response.body == b"data: 3\n\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["saved.jsonl"]


def test_a_failed_rename_keeps_the_finished_recording(tmp_path: Path) -> None:
    path = tmp_path / "target.jsonl"
    path.mkdir()  # nothing can be renamed over a directory
    with pytest.raises(OSError, match="directory"):
        save(make_cassette([b"data: kept\n\n"]), path)
    kept = load(_partial(path))
    assert kept.interactions[0].response.body == b"data: kept\n\n"


# -- a `.partial` name planted by someone else ---------------------------------------------------------


def _plant(kind: str, partial: Path, victim: Path) -> None:
    if kind == "symlink to a file":
        partial.symlink_to(victim)
    elif kind == "dangling symlink":
        partial.symlink_to(victim.with_name("not-there-yet.txt"))
    elif kind == "hard link":
        os.link(victim, partial)
    elif kind == "fifo":
        os.mkfifo(partial)
    else:
        partial.mkdir()


_PLANTED = ["symlink to a file", "dangling symlink", "hard link", "directory"]
if sys.platform != "win32":
    _PLANTED.append("fifo")


@pytest.mark.parametrize("kind", _PLANTED)
def test_a_planted_partial_file_is_refused_and_nothing_outside_is_written(kind: str, tmp_path: Path) -> None:
    """A checked-out `<cassette>.partial` link must not let a write land in (or truncate) its target."""
    victim = tmp_path / "precious.txt"
    victim.write_bytes(b"precious user data\n")
    path = tmp_path / "cassettes" / "hello.jsonl"
    path.parent.mkdir()
    _plant(kind, _partial(path), victim)
    with pytest.raises(cassettes.CassetteError, match=r"refusing to write through .*hello\.jsonl\.partial"):
        save(make_cassette([b"data: x\n\n"]), path)
    assert victim.read_bytes() == b"precious user data\n"
    assert not victim.with_name("not-there-yet.txt").exists()
    assert not path.exists(), "nothing was renamed over the cassette"


def test_the_partial_file_is_judged_by_its_own_name_not_a_link_to_it(tmp_path: Path) -> None:
    """The open-then-lock retry compares the name itself (lstat): a link to our own file is not ours."""
    from cassettes.files import _is_current  # pyright: ignore[reportPrivateUsage]

    real = tmp_path / "real.partial"
    real.write_bytes(b"")
    link = tmp_path / "link.partial"
    link.symlink_to(real)
    fd = os.open(real, os.O_RDONLY)
    try:
        assert _is_current(fd, real)
        assert not _is_current(fd, link)
    finally:
        os.close(fd)
