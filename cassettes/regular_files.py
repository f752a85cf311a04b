"""Opening a cassette file for reading: regular files only, and never an open that can block.

Only a regular file is a cassette. A FIFO (named pipe), a directory, a socket or a device under a
cassette's name would otherwise block the reader (a FIFO waits for a writer forever), read without
end (``/dev/zero``), or fail half-way with an error that does not say what is wrong.

Promises of `open_regular` (every reader in this package goes through it: `cassettes.load`, the
bundled library, the secret scan, hence every CLI command and the pytest plugin's cassettes; a
`use_cassette` session also refuses such a path up front with `is_cassette_file`, in every mode):

* A path whose `stat` (links followed: a link to a regular file is fine) is not a regular file is
  refused with `NotACassetteFile` before it is opened, so opening a device has no side effect.
* The open itself cannot block: it uses ``O_NONBLOCK`` (and ``O_NOCTTY``), and the opened
  descriptor is checked again with `fstat`, so something swapped in between the `stat` and the open
  (a FIFO planted by a race) is refused too, never read.
* A missing or unreadable file raises the `OSError` (`FileNotFoundError`, `PermissionError`) as
  before; the caller decides what that means.
"""

from __future__ import annotations

import errno
import io
import os
import stat

from cassettes.errors import NotACassetteFile

__all__ = ["file_kind", "is_cassette_file", "open_regular", "refuse_unless_regular"]

# O_NONBLOCK: opening a FIFO for reading waits for a writer without it (regular files ignore the
# flag). O_NOCTTY: a terminal device must never become our controlling terminal on the way to being
# refused. Both are absent on Windows, which has no FIFOs to block on.
_READ_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_BINARY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
)

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def file_kind(mode: int) -> str:
    """What a `st_mode` names, in words ("a regular file", "a FIFO (named pipe)", …)."""
    if stat.S_ISREG(mode):
        return "a regular file"
    for test, kind in _KINDS:
        if test(mode):
            return kind
    return f"a special file (mode {stat.S_IFMT(mode):#o})"


def refuse_unless_regular(mode: int, path: str) -> None:
    """Raise `NotACassetteFile` unless `mode` (a `st_mode`) is a regular file's."""
    if not stat.S_ISREG(mode):
        raise NotACassetteFile(path, file_kind(mode))


def is_cassette_file(path: str | os.PathLike[str]) -> bool:
    """True when `path` is a regular file (links followed), False when nothing is there (a dangling
    link included); `NotACassetteFile` when something else is (a FIFO, a directory, a device), so a
    caller deciding between replaying and recording never treats such a path as either."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return False
    refuse_unless_regular(mode, os.fspath(path))
    return True


def open_regular(path: str | os.PathLike[str]) -> io.BufferedReader:
    """`path` opened for binary reading, certainly a regular file (see the module docstring).

    Raises `NotACassetteFile` for anything else, and the `OSError` for a missing or unreadable file.
    The caller closes the returned file (it is a context manager).
    """
    source = os.fspath(path)
    refuse_unless_regular(os.stat(path).st_mode, source)  # before the open: a device is never opened
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError as exc:
        # ENXIO: a socket (or a FIFO opened for writing elsewhere) swapped in after the stat. Say
        # what the name holds now rather than quote the bare errno.
        if exc.errno in (errno.ENXIO, errno.ENODEV, errno.EISDIR):
            try:
                now = os.stat(path).st_mode
            except OSError:
                raise exc from None
            refuse_unless_regular(now, source)
        raise
    try:
        # The check that counts: what was opened, whatever the name pointed at when it was stat'ed.
        refuse_unless_regular(os.fstat(fd).st_mode, source)
        raw = io.FileIO(fd, "rb", closefd=True)
    except BaseException:
        os.close(fd)
        raise
    # O_NONBLOCK stays set: on a regular file it changes nothing (reads never block on one).
    return io.BufferedReader(raw)
