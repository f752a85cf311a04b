"""Cassette files on disk: reading within limits, and writing that is exclusive and atomic.

Promises:

* `load(path)` reads only a regular file: a FIFO, a directory, a socket or a device raises
  `NotACassetteFile` (a `CassetteError`) before anything is read, and the open never blocks (see
  `cassettes.regular_files`). It checks the file's size before reading it (`MAX_FILE_BYTES`), then
  parses it with `cassettes.format.loads`; a missing or unreadable file raises the `OSError`.
* Every writer of `path` (`save`, the recorder) first creates and locks `<path>.partial` with an
  exclusive, non-blocking `flock`. A second writer — another task, thread or process — fails at
  once with `CassetteLocked`; it never waits and never interleaves its records with the first.
* The new content goes into `<path>.partial`, which is flushed to disk and then renamed over
  `path`: a reader sees the old file or the new one, never half of one.
* A writer that is abandoned (a secret was found, nothing was recorded) deletes its partial file
  and leaves `path` exactly as it was. A rename that fails leaves the finished partial file in
  place (nothing is lost) and raises.
* A process killed while recording leaves its `<path>.partial` behind: the cut-off recording,
  which has no completion footer and so loads only with `allow_incomplete=True`. `path` itself is
  untouched; the next writer replaces the stale partial file.
* The partial file is opened without following a symbolic link, and must be a regular file with
  no other name (a hard link): a `<path>.partial` planted as a link (a hostile checkout, another
  user in a shared directory) makes the writer refuse with `CassetteError` before anything is
  truncated or written, so no write ever lands in a file other than the writer's own.
* `save` serializes the cassette once, secret-scans that text, the decoded bodies and the payloads
  inside the envelopes the api's wire profile declares (`cassettes.secret_scan.scan_payloads`: one
  that does not open is reported as unchecked), and writes nothing when it finds anything
  (`SecretFound`).

The lock is POSIX `flock` (on Windows, `msvcrt.locking`, released just before the rename).
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat
import sys
from collections.abc import Mapping
from pathlib import Path

from cassettes.errors import CassetteError, CassetteFormatError, CassetteLocked
from cassettes.format import MAX_FILE_BYTES, MAX_LINE_BYTES, dumps, loads
from cassettes.model import Cassette
from cassettes.regular_files import open_regular
from cassettes.secret_scan import raise_if_secrets, scan_cassette

if sys.platform == "win32":
    import msvcrt
else:
    import fcntl

__all__ = ["PARTIAL_SUFFIX", "PartialFile", "load", "save"]

#: Appended to a cassette's file name for the file being written.
PARTIAL_SUFFIX = ".partial"


def load(
    path: str | os.PathLike[str],
    *,
    allow_incomplete: bool = False,
    max_line_bytes: int = MAX_LINE_BYTES,
    max_file_bytes: int = MAX_FILE_BYTES,
) -> Cassette:
    """Read and validate the cassette file at `path` (errors name the path and line; see
    `cassettes.format.loads` for `allow_incomplete` and the limits).

    Raises `NotACassetteFile` when `path` is not a regular file (a FIFO is refused, never waited
    on), the `OSError` when it is missing or unreadable."""
    source = str(path)
    with open_regular(path) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > max_file_bytes:
            raise CassetteFormatError(source, 0, f"{size} bytes is more than the limit of {max_file_bytes} bytes")
        data = handle.read(max_file_bytes + 1)  # a file still growing is cut by `loads`' own check
    return loads(
        data,
        source=source,
        allow_incomplete=allow_incomplete,
        max_line_bytes=max_line_bytes,
        max_file_bytes=max_file_bytes,
    )


def _try_lock(fd: int) -> bool:
    """Take the exclusive lock on `fd` without waiting; False when someone else holds it."""
    try:
        if sys.platform == "win32":
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        else:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except (BlockingIOError, PermissionError):
        return False
    except OSError as exc:
        if sys.platform == "win32":  # msvcrt reports a held lock as a generic OSError
            return False
        raise exc from None
    return True


def _is_current(fd: int, path: Path) -> bool:
    """True when `path` itself (not a link's target) still names the file open as `fd` (it may
    have been renamed, removed, or replaced by a link)."""
    try:
        named = path.lstat()
    except FileNotFoundError:
        return False
    opened = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (opened.st_dev, opened.st_ino)


# No link is followed; O_NONBLOCK keeps a FIFO planted under the name from blocking the open (it is
# then refused as not a regular file, and regular files ignore the flag).
_PARTIAL_FLAGS = (
    os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
)


def _refuse_partial(partial: Path, what: str) -> CassetteError:
    return CassetteError(
        f"refusing to write through {partial}: it is {what}, not a file this recorder made; "
        "remove it (or record to another path)"
    )


def _check_own_file(fd: int, partial: Path) -> None:
    """Raise unless `fd` is a regular file with one name (a hard link would share its content)."""
    opened = os.fstat(fd)
    if not stat.S_ISREG(opened.st_mode):
        raise _refuse_partial(partial, "not a regular file")
    if opened.st_nlink != 1:
        raise _refuse_partial(partial, f"a file with {opened.st_nlink} names (a hard link)")


def _open_partial(partial: Path) -> int:
    """A descriptor of `partial`, created if missing, and certainly a regular file of its own."""
    if not hasattr(os, "O_NOFOLLOW") and partial.is_symlink():  # Windows: no O_NOFOLLOW, check first
        raise _refuse_partial(partial, "a symbolic link")
    try:
        fd = os.open(partial, _PARTIAL_FLAGS, 0o644)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK) or partial.is_symlink():  # EMLINK: O_NOFOLLOW on BSD
            raise _refuse_partial(partial, "a symbolic link") from None
        if exc.errno == errno.EISDIR:
            raise _refuse_partial(partial, "a directory") from None
        raise
    try:
        _check_own_file(fd, partial)
        if sys.platform != "win32":
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


class PartialFile:
    """`<target>.partial`, created and exclusively locked; `commit()` renames it over the target.

    Use `acquire`; then `write`, and finally exactly one of `commit` or `discard` (both release
    the lock; further calls do nothing).
    """

    def __init__(self, target: Path, partial: Path, fd: int) -> None:
        self.target = target
        self.path = partial
        # A file object (not a bare descriptor) so that a writer nobody closed still releases its
        # descriptor, and with it the lock, when it is collected.
        self._file: io.FileIO | None = io.FileIO(fd, "r+", closefd=True)

    @classmethod
    def acquire(cls, target: str | os.PathLike[str]) -> PartialFile:
        """Create (or take over a stale) `<target>.partial`, locked and empty.

        Raises `CassetteLocked` when another writer holds it, and `CassetteError` when the name is
        taken by something that is not a plain file of its own (a link, a directory, a FIFO).
        """
        target = Path(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + PARTIAL_SUFFIX)
        while True:
            fd = _open_partial(partial)
            try:
                # Between our open and our lock the previous holder may have renamed the file over
                # the target (or deleted it): then we locked a file nobody writes any more; retry.
                locked = _try_lock(fd)
                if locked and _is_current(fd, partial):
                    os.ftruncate(fd, 0)
                    return cls(target, partial, fd)  # owns fd from here on
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)
            if not locked:
                raise CassetteLocked(
                    f"cassette {target} is being written by another recorder right now (it holds "
                    f"{partial.name}); wait for it to finish, or record to another file"
                )

    @property
    def active(self) -> bool:
        """True until `commit` or `discard`."""
        return self._file is not None

    def write(self, data: bytes) -> None:
        """Append `data` (all of it) to the partial file."""
        if self._file is None:
            raise ValueError(f"{self.path} is no longer being written")
        view = memoryview(data)
        while view:
            view = view[self._file.write(view) or 0 :]

    def read(self) -> bytes:
        """Everything written so far."""
        if self._file is None:
            raise ValueError(f"{self.path} is no longer being written")
        self._file.seek(0)
        try:
            return self._file.readall()
        finally:
            self._file.seek(0, os.SEEK_END)

    def commit(self) -> None:
        """Flush the partial file to disk and rename it over the target, then release the lock."""
        if self._file is None:
            return
        try:
            os.fsync(self._file.fileno())
            if sys.platform == "win32":  # Windows can not rename an open file
                self._release()
            # The content is on disk before it becomes visible under the target's name. The rename
            # itself is not synced (a directory fsync per recording): after a power cut the target is
            # then the old file or the new one, never a mix.
            os.replace(self.path, self.target)
        except BaseException:
            # The partial file holds the whole new content: keep it rather than lose a recording.
            self._release()
            raise
        self._release()

    def discard(self) -> None:
        """Delete the partial file (the target stays as it was) and release the lock."""
        if self._file is None:
            return
        with contextlib.suppress(OSError):
            if _is_current(self._file.fileno(), self.path):
                self.path.unlink()
        self._release()

    def release(self) -> None:
        """Release the lock and keep the partial file as it is (for a writer that failed unexpectedly:
        what it wrote stays readable with `allow_incomplete=True`)."""
        self._release()

    def _release(self) -> None:
        if self._file is not None:
            file, self._file = self._file, None
            file.close()  # closing the descriptor releases the lock


def save(
    cassette: Cassette, path: str | os.PathLike[str], *, scan: bool = True, env: Mapping[str, str] | None = None
) -> None:
    """Write `cassette` to `path`: locked, atomically, and only after the secret scan.

    With `scan` (the default) the text is secret-scanned (known key shapes and the values of
    credential-like environment variables, `env` defaulting to `os.environ`) and `SecretFound` is
    raised before anything touches the disk. Raises `CassetteLocked` while another writer holds
    the file.
    """
    data = dumps(cassette).encode("utf-8")
    if scan:
        raise_if_secrets(scan_cassette(cassette, env=env, serialized=data))
    partial = PartialFile.acquire(path)
    try:
        partial.write(data)
    except BaseException:
        partial.discard()
        raise
    partial.commit()
