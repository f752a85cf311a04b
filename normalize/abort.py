"""Cooperative cancellation of a stream call, in the shape of the web's AbortController.

A controller owns a signal; the signal is handed to a StreamFn in ``StreamOptions.signal``.
``abort()`` may be called from any task, or from another thread; aborting twice is harmless.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

__all__ = ["AbortController", "AbortSignal", "sleep_unless_aborted"]

_DEFAULT_REASON = "Request was aborted"


class AbortSignal:
    """Observes one abort. Await :meth:`wait`, poll :attr:`aborted`, or register a callback."""

    __slots__ = ("_aborted", "_callbacks", "_lock", "_reason", "_waiters")

    def __init__(self) -> None:
        self._aborted = False
        self._reason: str | None = None
        self._callbacks: list[Callable[[AbortSignal], object]] = []
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._lock = threading.Lock()

    @property
    def aborted(self) -> bool:
        """True once the controller has aborted."""
        return self._aborted

    @property
    def reason(self) -> str | None:
        """The reason given to ``abort()`` (a default text when none was given), or None."""
        return self._reason

    def add_callback(self, callback: Callable[[AbortSignal], object]) -> Callable[[], None]:
        """Call ``callback(signal)`` on abort (at once if already aborted). Returns an unregister function."""
        with self._lock:
            if not self._aborted:
                self._callbacks.append(callback)

                def remove() -> None:
                    with self._lock:
                        if callback in self._callbacks:
                            self._callbacks.remove(callback)

                return remove
        callback(self)
        return lambda: None

    async def wait(self) -> None:
        """Return when the signal is aborted (immediately if it already is)."""
        if self._aborted:
            return
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        entry = (loop, future)
        with self._lock:
            if self._aborted:
                return
            self._waiters.append(entry)
        try:
            await future
        finally:
            with self._lock:
                if entry in self._waiters:
                    self._waiters.remove(entry)

    def _fire(self, reason: str | None) -> None:
        with self._lock:
            if self._aborted:
                return
            self._aborted = True
            self._reason = reason or _DEFAULT_REASON
            callbacks, self._callbacks = self._callbacks, []
            waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            if loop.is_closed():
                continue
            # Waking through the loop keeps this safe when abort() runs on another thread.
            loop.call_soon_threadsafe(_resolve, future)
        for callback in callbacks:
            callback(self)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class AbortController:
    """Creates a signal and aborts it."""

    __slots__ = ("_signal",)

    def __init__(self) -> None:
        self._signal = AbortSignal()

    @property
    def signal(self) -> AbortSignal:
        """The signal to pass as ``StreamOptions.signal``."""
        return self._signal

    def abort(self, reason: str | None = None) -> None:
        """Abort the signal; later calls do nothing."""
        self._signal._fire(reason)  # pyright: ignore[reportPrivateUsage]


async def sleep_unless_aborted(delay_s: float, signal: AbortSignal | None) -> bool:
    """Sleep ``delay_s`` seconds unless ``signal`` aborts first; return True if it aborted."""
    if signal is None:
        await asyncio.sleep(delay_s)
        return False
    if signal.aborted:
        return True
    waiter = asyncio.ensure_future(signal.wait())
    try:
        await asyncio.wait({waiter}, timeout=delay_s)
    finally:
        waiter.cancel()
    return signal.aborted
