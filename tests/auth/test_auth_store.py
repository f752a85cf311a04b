"""The credential store: where it lives, how it is written, what it refuses (and never quotes)."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
import time
from pathlib import Path

import pytest

from streamfns.auth import Credential, CredentialStore, StoreError
from streamfns.auth import store as store_module

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes and ownership")

ACCESS = "fake-access-token-store-0123456789"
REFRESH = "fake-refresh-token-store-9876543210"


EXPIRES = time.time() + 3600


def credential(provider: str = "openai-codex", access: str = ACCESS) -> Credential:
    return Credential(
        provider=provider,
        access=access,
        refresh=REFRESH,
        expires=EXPIRES,
        account="someone@example.test",
        data={"account_id": "acct-1", "session_secret": "fake-extra-secret-abcdef"},
    )


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_default_path_follows_env_then_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("STREAMFNS_AUTH_FILE", str(tmp_path / "x.json"))
    assert CredentialStore().path == tmp_path / "x.json"
    monkeypatch.delenv("STREAMFNS_AUTH_FILE")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert CredentialStore().path == tmp_path / "xdg" / "streamfns" / "auth.json"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert CredentialStore().path == tmp_path / "home" / ".config" / "streamfns" / "auth.json"


def test_save_creates_private_file_and_directory_atomically(store: CredentialStore) -> None:
    old_umask = os.umask(0o022)
    try:
        store.save(credential())
    finally:
        os.umask(old_umask)
    assert mode(store.path) == 0o600
    assert mode(store.path.parent) == 0o700
    # Only the store and its lock: no temporary file left behind.
    assert sorted(p.name for p in store.path.parent.iterdir()) == ["auth.json", "auth.json.lock"]
    document = json.loads(store.path.read_text())
    assert document["version"] == 1
    assert document["credentials"]["openai-codex"]["access"] == ACCESS
    assert store.load("openai-codex") == credential()


def test_round_trip_delete_and_credentials(store: CredentialStore) -> None:
    first, second = credential(), credential("github-copilot", "fake-copilot-token-abcdefgh")
    store.save(first)
    store.save(second)
    assert store.credentials() == {"openai-codex": first, "github-copilot": second}
    assert store.delete("openai-codex") is True
    assert store.delete("openai-codex") is False
    assert store.load("openai-codex") is None
    assert store.load("github-copilot") == second


def test_missing_file_is_empty(store: CredentialStore) -> None:
    assert store.load("openai-codex") is None
    assert store.credentials() == {}
    assert not store.path.exists()


def test_failed_write_leaves_old_file_and_no_temp(store: CredentialStore, monkeypatch: pytest.MonkeyPatch) -> None:
    store.save(credential())
    before = store.path.read_bytes()

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store_module.os, "replace", broken_replace)
    with pytest.raises(StoreError, match="cannot be written"):
        store.save(credential(access="fake-access-token-second-000000"))
    assert store.path.read_bytes() == before
    assert sorted(p.name for p in store.path.parent.iterdir()) == ["auth.json", "auth.json.lock"]


def _assert_no_token(message: str) -> None:
    for secret in (ACCESS, REFRESH, "fake-extra-secret-abcdef"):
        assert secret not in message


def test_corrupt_json_is_refused_without_quoting(store: CredentialStore) -> None:
    store.save(credential())
    text = store.path.read_text()
    store.path.write_text(text[: len(text) // 2])
    with pytest.raises(StoreError) as caught:
        store.load("openai-codex")
    message = str(caught.value)
    assert str(store.path) in message
    assert "not valid JSON" in message
    assert "log in again" in message
    _assert_no_token(message)


@pytest.mark.parametrize(
    ("document", "says"),
    [
        ([1, 2], "not a JSON object"),
        ({"version": 2, "credentials": {}}, "format version 2"),
        ({"version": 1}, '"credentials"'),
        ({"version": 1, "credentials": {"openai-codex": "x"}}, "not an object"),
        ({"version": 1, "credentials": {"openai-codex": {"access": ACCESS, "expires": "soon"}}}, "'expires'"),
        ({"version": 1, "credentials": {"openai-codex": {"access": 5, "expires": 1}}}, "'access'"),
        ({"version": 1, "credentials": {"openai-codex": {"access": ACCESS, "expires": 1, "data": {"a": 1}}}}, "'data'"),
    ],
)
def test_wrong_shape_is_refused(store: CredentialStore, document: object, says: str) -> None:
    store.save(credential())  # creates the directory and a good file first
    store.path.write_text(json.dumps(document))
    with pytest.raises(StoreError, match=r"credential store .*auth\.json") as caught:
        store.credentials()
    assert says in str(caught.value)
    _assert_no_token(str(caught.value))


def test_group_readable_file_is_refused_with_chmod_fix(store: CredentialStore) -> None:
    store.save(credential())
    store.path.chmod(0o640)
    with pytest.raises(StoreError) as caught:
        store.load("openai-codex")
    assert f"chmod 600 {store.path}" in str(caught.value)
    _assert_no_token(str(caught.value))
    store.path.chmod(0o600)
    assert store.load("openai-codex") is not None


def test_world_writable_file_is_refused(store: CredentialStore) -> None:
    store.save(credential())
    store.path.chmod(0o602)
    with pytest.raises(StoreError, match="chmod 600"):
        store.credentials()


def test_file_owned_by_another_user_is_refused(store: CredentialStore, monkeypatch: pytest.MonkeyPatch) -> None:
    store.save(credential())
    real = os.geteuid()
    # Seen from another uid, the (real) owner of the file is someone else.
    monkeypatch.setattr(store_module.os, "geteuid", lambda: real + 1)
    with pytest.raises(StoreError) as caught:
        store.load("openai-codex")
    message = str(caught.value)
    assert "owned by another user" in message
    assert str(store.path) in message
    _assert_no_token(message)


def test_symlink_is_refused_even_to_a_good_file(store: CredentialStore, tmp_path: Path) -> None:
    elsewhere = CredentialStore(tmp_path / "elsewhere" / "auth.json")
    elsewhere.save(credential())
    store.path.parent.mkdir(parents=True)
    store.path.symlink_to(elsewhere.path)
    with pytest.raises(StoreError, match="symbolic link"):
        store.load("openai-codex")
    with pytest.raises(StoreError, match="symbolic link"):
        store.save(credential())
    # The target was not touched.
    assert elsewhere.load("openai-codex") == credential()


def test_directory_or_fifo_in_place_of_file_is_refused(store: CredentialStore) -> None:
    store.path.mkdir(parents=True)
    with pytest.raises(StoreError, match="not a regular file"):
        store.load("openai-codex")
    store.path.rmdir()
    os.mkfifo(store.path, 0o600)
    with pytest.raises(StoreError, match="not a regular file"):
        store.load("openai-codex")


def test_lock_times_out_while_another_holder_has_it(store: CredentialStore) -> None:
    other = CredentialStore(store.path)
    # A second open file description is a second holder, as another process would be.
    with other.lock(), pytest.raises(StoreError, match="stayed locked"), store.lock(timeout_s=0.05):
        pass
    with store.lock(timeout_s=0.05):
        pass


async def test_async_lock_waits_without_blocking_the_loop(store: CredentialStore) -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    holder = store.lock()
    holder.__enter__()
    task = asyncio.create_task(ticker())
    try:

        async def take() -> None:
            async with store.alock(timeout_s=5):
                pass

        waiter = asyncio.create_task(take())
        await asyncio.sleep(0.1)
        assert not waiter.done()
        assert ticks > 10  # the loop kept running while the waiter waited
        holder.__exit__(None, None, None)
        await asyncio.wait_for(waiter, 5)
    finally:
        task.cancel()


async def test_cancelled_async_waiter_leaves_lock_free(store: CredentialStore) -> None:
    with store.lock():

        async def take() -> None:
            async with store.alock(timeout_s=5):
                pass

        waiter = asyncio.create_task(take())
        await asyncio.sleep(0.05)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
    with store.lock(timeout_s=0.05):
        pass


def test_credential_repr_masks_tokens() -> None:
    shown = repr(credential())
    _assert_no_token(shown)
    assert "acct-1" in shown  # a public extra stays readable
    assert set(credential().secrets()) == {ACCESS, REFRESH, "fake-extra-secret-abcdef"}
