"""``CredentialStore``: the logins of this user, in one JSON file only they can read.

**The file.** ``{"version": 1, "credentials": {"<provider>": {"access", "refresh", "expires",
"account", "data"}}}`` at ``$STREAMFNS_AUTH_FILE``, else ``$XDG_CONFIG_HOME/streamfns/auth.json``, else
``~/.config/streamfns/auth.json`` (Windows: ``%APPDATA%\\streamfns\\auth.json``). Its directory is
created with mode 0700 and the file with 0600.

**Writes are atomic.** A write goes to a temporary file in the same directory (created 0600), is
flushed and fsynced, replaces the file with :func:`os.replace` and the directory is fsynced: a reader
(another process) sees the old file or the new one, never half of one, and a crash leaves no partial
file behind.

**One writer at a time.** :meth:`CredentialStore.lock` takes an exclusive ``fcntl.flock`` on
``<path>.lock`` (created 0600, never deleted: deleting a lock file races) and waits at most
``timeout_s`` for it; :meth:`CredentialStore.alock` waits the same way without blocking the event
loop (it polls the lock between ``asyncio.sleep`` calls, so cancelling the waiter leaves nothing held).
:meth:`save` and :meth:`delete` take it themselves; a refresh holds it around its read, its request and
its write (:func:`streamfns.auth.fresh_credential`).

**Refusals.** Before it is read, the file is checked (on the open descriptor, so it cannot be swapped
between check and read): a symbolic link, something that is not a regular file, a file owned by
another user, or one readable or writable by group or others is refused with a :class:`StoreError`
naming the file and the fix; so is a file that is not JSON or not of the shape above. No message
quotes the file's content. On Windows the POSIX ownership and mode checks are skipped (the file lives
in the user's own profile, which its ACLs protect) and the lock is ``msvcrt.locking``.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import stat
import sys
import tempfile
import time
from collections.abc import AsyncGenerator, Generator
from pathlib import Path
from typing import Any, Final, cast

from streamfns.auth.credential import Credential
from streamfns.auth.errors import StoreError

if sys.platform == "win32":
    import msvcrt
else:
    import fcntl

__all__ = ["AUTH_FILE_ENV", "STORE_VERSION", "CredentialStore", "default_store_path"]

#: The environment variable naming the store file (wins over the config directory).
AUTH_FILE_ENV: Final = "STREAMFNS_AUTH_FILE"
#: The format version written; a file of another version is refused.
STORE_VERSION: Final = 1
#: A store is a few kilobytes; a larger file is not ours.
_MAX_FILE_BYTES: Final = 4 * 1024 * 1024
#: The latest expiry a stored credential may name (the year 5138): past it the entry reads as expired.
_LATEST_EXPIRY: Final = 1e11
#: How often a waiter retries a held lock.
_LOCK_POLL_S: Final = 0.02
_WINDOWS: Final = sys.platform == "win32"


def default_store_path() -> Path:
    """Where the store lives when no path is given (see the module docstring)."""
    explicit = os.environ.get(AUTH_FILE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    if _WINDOWS:
        base = os.environ.get("APPDATA")
        return (Path(base) if base else Path.home() / "AppData" / "Roaming") / "streamfns" / "auth.json"
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base_dir = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".config"
    return base_dir / "streamfns" / "auth.json"


def _try_lock(fd: int) -> bool:
    if sys.platform == "win32":
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        if error.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            return False
        raise
    return True


def _unlock(fd: int) -> None:
    if sys.platform == "win32":
        with contextlib.suppress(OSError):
            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        return
    fcntl.flock(fd, fcntl.LOCK_UN)


class CredentialStore:
    """The credential file at ``path`` (default: :func:`default_store_path`). See the module docstring
    for its format, atomic writes, lock and refusals. Every method but :meth:`alock` blocks briefly on
    the file system; none ever puts a token in an exception message."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path: Path = Path(path).expanduser() if path is not None else default_store_path()

    def __repr__(self) -> str:
        return f"CredentialStore({str(self.path)!r})"

    @property
    def lock_path(self) -> Path:
        """The lock file beside the store: ``<path>.lock``."""
        return self.path.with_name(self.path.name + ".lock")

    # -- reading --------------------------------------------------------------------------------

    def load(self, provider: str) -> Credential | None:
        """The credential stored for ``provider``, or None. Raises :class:`StoreError` for a file
        that is refused (see the module docstring)."""
        return self.credentials().get(provider)

    def credentials(self) -> dict[str, Credential]:
        """Every stored credential, by provider name. Raises :class:`StoreError` as :meth:`load`."""
        raw = self._read()
        return {name: self._credential(name, entry) for name, entry in raw["credentials"].items()}

    def _refuse(self, problem: str, fix: str) -> StoreError:
        return StoreError(f"the credential store {self.path} {problem}: {fix}")

    def _check(self, info: os.stat_result) -> None:
        if not stat.S_ISREG(info.st_mode):
            raise self._refuse("is not a regular file", "remove it, then log in again")
        if _WINDOWS:
            return
        uid = os.geteuid()
        if info.st_uid != uid:
            raise self._refuse(
                f"is owned by another user (uid {info.st_uid}, you are uid {uid}) and is not trusted",
                "remove it (or point STREAMFNS_AUTH_FILE at a file of your own), then log in again",
            )
        if stat.S_IMODE(info.st_mode) & 0o077:
            raise self._refuse(
                f"is readable or writable by other users (mode {stat.S_IMODE(info.st_mode):04o})",
                f"run `chmod 600 {self.path}`, and log in again if others may have read it",
            )

    def _read(self) -> dict[str, Any]:
        try:
            link = os.lstat(self.path)
        except FileNotFoundError:
            return {"version": STORE_VERSION, "credentials": {}}
        except OSError as error:
            raise self._refuse(f"cannot be read ({error.strerror})", "check the path and its permissions") from None
        if stat.S_ISLNK(link.st_mode):
            raise self._refuse("is a symbolic link", "replace it with the file itself (or remove it and log in again)")
        self._check(link)
        # O_NONBLOCK: a FIFO swapped in after the check must not hang the open (no effect on a file).
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
        try:
            fd = os.open(self.path, flags)
        except FileNotFoundError:
            return {"version": STORE_VERSION, "credentials": {}}
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise self._refuse("is a symbolic link", "replace it with the file itself") from None
            raise self._refuse(f"cannot be read ({error.strerror})", "check its permissions") from None
        try:
            # Checked on the descriptor just opened: the file cannot be swapped after the check.
            self._check(os.fstat(fd))
        except BaseException:
            os.close(fd)
            raise
        with os.fdopen(fd, "rb") as file:
            data = file.read(_MAX_FILE_BYTES + 1)
        if len(data) > _MAX_FILE_BYTES:
            raise self._refuse("is too large to be a credential store", "remove it, then log in again")
        return self._parse(data)

    def _parse(self, data: bytes) -> dict[str, Any]:
        fix = "remove it (or restore a backup), then log in again"
        try:
            document = json.loads(data.decode("utf-8"))
        except UnicodeDecodeError:
            raise self._refuse("is not UTF-8 text", fix) from None
        except json.JSONDecodeError as error:
            # The position only: the decoder's message never quotes the document, but be explicit.
            raise self._refuse(f"is not valid JSON (line {error.lineno}, column {error.colno})", fix) from None
        if not isinstance(document, dict):
            raise self._refuse("is not a JSON object", fix)
        root = cast("dict[str, Any]", document)
        version = root.get("version")
        if version != STORE_VERSION:
            shown = version if isinstance(version, int) and not isinstance(version, bool) else "missing"
            raise self._refuse(f"has format version {shown}, not {STORE_VERSION}", fix)
        credentials = root.get("credentials")
        if not isinstance(credentials, dict):
            raise self._refuse('has no "credentials" object', fix)
        for name, entry in cast("dict[str, Any]", credentials).items():
            self._credential(name, entry)
        return root

    def _credential(self, name: str, entry: object) -> Credential:
        fix = f"remove the {name!r} entry (or the file), then log in again"
        if not isinstance(entry, dict):
            raise self._refuse(f"has a {name!r} entry that is not an object", fix)
        item = cast("dict[str, Any]", entry)
        for key in ("access", "refresh", "account"):
            if not isinstance(item.get(key, ""), str):
                raise self._refuse(f"has a {name!r} entry whose {key!r} is not a string", fix)
        expires = item.get("expires")
        if isinstance(expires, bool) or not isinstance(expires, int | float):
            raise self._refuse(f"has a {name!r} entry whose 'expires' is not a number", fix)
        extras = item.get("data", {})
        if not isinstance(extras, dict) or not all(
            isinstance(value, str) for value in cast("dict[str, Any]", extras).values()
        ):
            raise self._refuse(f"has a {name!r} entry whose 'data' is not an object of strings", fix)
        access = cast("str", item.get("access", ""))
        if not access:
            raise self._refuse(f"has a {name!r} entry without an access token", fix)
        when = float(expires)
        if not 0.0 <= when <= _LATEST_EXPIRY:
            # NaN, an infinity or a time no clock or calendar can show (a hand-edited file): read as
            # expired, so the next use renews it and saves a real time, and `auth status` can say so.
            when = 0.0
        return Credential(
            provider=name,
            access=access,
            refresh=cast("str", item.get("refresh", "")),
            expires=when,
            account=cast("str", item.get("account", "")),
            data=dict(cast("dict[str, str]", extras)),
        )

    # -- writing --------------------------------------------------------------------------------

    def save(self, credential: Credential) -> None:
        """Store ``credential`` (replacing the provider's previous one), atomically, under the lock."""
        with self.lock():
            self.save_locked(credential)

    def delete(self, provider: str) -> bool:
        """Remove the credential of ``provider``, under the lock; True when there was one."""
        with self.lock():
            return self.delete_locked(provider)

    def save_locked(self, credential: Credential) -> None:
        """:meth:`save` for a caller that already holds :meth:`lock` (a refresh)."""
        document = self._read()
        document["credentials"][credential.provider] = credential.to_json()
        self._write(document)

    def delete_locked(self, provider: str) -> bool:
        """:meth:`delete` for a caller that already holds :meth:`lock`."""
        document = self._read()
        if provider not in document["credentials"]:
            return False
        del document["credentials"][provider]
        self._write(document)
        return True

    def _ensure_dir(self) -> None:
        directory = self.path.parent
        if directory.is_dir():
            self._check_directory(directory)
            return
        try:
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            if not _WINDOWS:
                # mkdir's mode is filtered by the umask; say exactly what we mean.
                directory.chmod(0o700)
        except OSError as error:
            raise self._refuse(
                f"cannot be created ({error.strerror})", f"check that {directory} can be created"
            ) from None

    def _write(self, document: dict[str, Any]) -> None:
        self._ensure_dir()
        text = json.dumps({"version": STORE_VERSION, "credentials": document["credentials"]}, indent=2, sort_keys=True)
        directory = self.path.parent
        try:
            # mkstemp creates the file 0600 (O_EXCL), in the same directory so os.replace is atomic.
            fd, temp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=directory)
        except OSError as error:
            raise self._refuse(f"cannot be written ({error.strerror})", f"check that {directory} is writable") from None
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(text.encode("utf-8") + b"\n")
                file.flush()
                os.fsync(file.fileno())
            os.replace(temp, self.path)
        except BaseException as error:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            if isinstance(error, OSError):
                raise self._refuse(
                    f"cannot be written ({error.strerror})", f"check that {directory} is writable"
                ) from None
            raise
        if not _WINDOWS:
            # The rename itself must survive a crash: fsync the directory entry.
            with contextlib.suppress(OSError):
                dir_fd = os.open(directory, os.O_RDONLY)
                try:
                    os.fsync(dir_fd)
                finally:
                    os.close(dir_fd)

    # -- locking --------------------------------------------------------------------------------

    def _check_directory(self, directory: Path) -> None:
        """The store's own directory must not let another user replace the file or hold its lock:
        owned by us, writable by nobody else (its parents are the user's business)."""
        if _WINDOWS:
            return
        info = os.stat(directory)
        uid = os.geteuid()
        if info.st_uid != uid or stat.S_IMODE(info.st_mode) & 0o022:
            raise StoreError(
                f"the directory of the credential store {self.path} is owned by another user or writable by "
                f"other users (uid {info.st_uid}, mode {stat.S_IMODE(info.st_mode):04o}): run "
                f"`chmod 700 {directory}` if it is yours, or point STREAMFNS_AUTH_FILE at a file in a "
                "directory of your own"
            )

    def _open_lock(self) -> int:
        self._ensure_dir()
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(self.lock_path, flags, 0o600)
        except OSError as error:
            raise StoreError(
                f"the lock file {self.lock_path} cannot be opened ({error.strerror}): "
                "check that it is a regular file you own in a directory you can write"
            ) from None
        if not _WINDOWS:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or stat.S_IMODE(info.st_mode) & 0o022:
                os.close(fd)
                # Another user's lock file could be held forever: every refresh would wait on it.
                raise StoreError(
                    f"the lock file {self.lock_path} is not a regular file of your own that only you can write: "
                    "remove it (it holds nothing; it is made again)"
                )
        return fd

    def _timed_out(self, timeout_s: float) -> StoreError:
        return StoreError(
            f"the credential store {self.path} stayed locked for {timeout_s:g} s "
            f"(another process holds {self.lock_path}, most likely refreshing a login): try again, "
            "and stop that process if it hangs"
        )

    @contextlib.contextmanager
    def lock(self, timeout_s: float = 30.0) -> Generator[None]:
        """Hold the store's cross-process lock (see the module docstring), waiting at most
        ``timeout_s`` seconds; :class:`StoreError` when it stays held. Not re-entrant: a holder calls
        :meth:`save_locked` / :meth:`delete_locked`, never :meth:`save`."""
        fd = self._open_lock()
        try:
            deadline = time.monotonic() + timeout_s
            while not _try_lock(fd):
                if time.monotonic() >= deadline:
                    raise self._timed_out(timeout_s)
                time.sleep(_LOCK_POLL_S)
            try:
                yield
            finally:
                _unlock(fd)
        finally:
            os.close(fd)

    @contextlib.asynccontextmanager
    async def alock(self, timeout_s: float = 30.0) -> AsyncGenerator[None]:
        """:meth:`lock` for a coroutine: waiting never blocks the event loop, and a waiter cancelled
        while waiting leaves the lock untouched."""
        fd = self._open_lock()
        try:
            deadline = time.monotonic() + timeout_s
            while not _try_lock(fd):
                if time.monotonic() >= deadline:
                    raise self._timed_out(timeout_s)
                await asyncio.sleep(_LOCK_POLL_S)
            try:
                yield
            finally:
                _unlock(fd)
        finally:
            os.close(fd)
