"""What the author hands the harness: a StreamFn or a factory, what it can do, and both as a :class:`Target`.

:class:`Capabilities` is the adapter's declaration, as data (never guessed by introspection): the
harness reads it to mark checks the adapter cannot take part in as ``unsupported``. What the api's
bytes look like — framing, terminal marker, error bodies, which recordings show what — is its
:class:`~normalize.wire.WireProfile`: the target's own, or the one an installed adapter declares for
``Capabilities.api``.

A :class:`Target` is an adapter together with its declared capabilities (and, for an api no installed
adapter declares, its wire profile) — handy for the CLI (``python -m conformance run pkg.module:TARGET``
needs no capability flags) and for collecting the adapters a project ships (see
:mod:`conformance.targets`). An adapter package's own declaration (:class:`streamfns.kit.Adapter`)
already says all of that, so the harness takes it as is: :meth:`Target.from_adapter` is the target it
gives, and wherever a target is accepted (``run``, the CLI's ``pkg:ADAPTER``, the pytest class) an
``Adapter`` is too.

The callable is either a StreamFn or a factory that returns one. They are told apart by signature:
a StreamFn takes ``(model, context, options=None)`` and so has required parameters; a callable
whose signature accepts a call with **no arguments** (a zero-argument function, a class whose
constructor has defaults, …) is a factory, called once per run (it may be ``async``). A callable
whose signature cannot be read is taken as a StreamFn. A string ``"pkg.module:attr"`` names
either, or a Target or an Adapter, importable from ``sys.path`` (:func:`load_target`;
:func:`import_target` bounds the import in time, for the command line).
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import os
import re
import reprlib
import sys
import threading
import types
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal, TypeAlias, TypeGuard

from cassettes import Cassette, library
from conformance.clock import ThreadClock
from conformance.text import class_name, describe_exception, kind_of
from normalize.wire import WireProfile
from streamfns.kit import Adapter

__all__ = [
    "Capabilities",
    "CassetteSource",
    "Need",
    "Target",
    "adapter_name",
    "import_target",
    "is_adapter",
    "is_factory",
    "is_target",
    "load_target",
]

#: A cassette directory, one cassette file, or a list of files and loaded cassettes: the adapter's own
#: recordings, as :attr:`Target.cassettes` and ``run(cassettes=...)`` take them.
CassetteSource: TypeAlias = str | os.PathLike[str] | Sequence[str | os.PathLike[str] | Cassette]

#: An api name, as reports and the ``cassettes mutate`` grammar carry it.
_API_NAME = re.compile(r"[^\s,+=]+")

#: What a check may need: a capability flag, an HTTP transport, or a wire profile that says how the
#: api's stream ends (and how to take that out of a recording).
Need = Literal[
    "http",
    "terminal",
    "stream_error",
    "tool_calls",
    "parallel_tool_calls",
    "thinking",
    "usage_in_stream",
    "images",
    "retries",
    "process",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Capabilities:
    """The adapter's declaration.

    - ``api``: the wire api (``model.api``), any name. When an installed adapter declares its wire
      profile (``normalize.wire.profile_for``), the harness reads the framing, the terminal marker, the
      error bodies and the bundled recordings from it; a target may bring its own
      (:attr:`Target.profile`). None: an api nobody declares (then bring your own recordings; the
      check that needs the terminal marker is ``unsupported``).
    - ``http``: the adapter sends its requests over HTTP to ``model.base_url``. When False (a scripted
      provider such as faux) every check that needs the loopback server is ``unsupported`` — and,
      since such an adapter has no transport to be limited in, those do not lower the verdict.
    - ``tool_calls`` / ``parallel_tool_calls`` / ``thinking``: the adapter emits tool-call blocks
      (several in one message) / thinking blocks from the vendor's stream.
    - ``usage_in_stream``: token usage is reported on a successful stream.
    - ``images``: user messages may carry images.
    - ``retries``: the adapter retries failed requests itself before any output (honouring
      ``retry-after``); without it, a 429 must end the stream as ``rate_limit``.
    """

    api: str | None = None
    http: bool = True
    tool_calls: bool = False
    parallel_tool_calls: bool = False
    thinking: bool = False
    usage_in_stream: bool = False
    images: bool = False
    retries: bool = False

    def __post_init__(self) -> None:
        if self.api is not None and (not isinstance(self.api, str) or not _API_NAME.fullmatch(self.api)):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(f"api must be a name (no spaces, commas, plus or equal signs) or None, not {self.api!r}")
        if self.parallel_tool_calls and not self.tool_calls:
            raise ValueError("parallel_tool_calls=True needs tool_calls=True")

    @classmethod
    def every_feature(cls, api: str | None) -> Capabilities:
        """An HTTP adapter of ``api`` that declares every feature (as a full vendor adapter does)."""
        return cls(
            api=api,
            tool_calls=True,
            parallel_tool_calls=True,
            thinking=True,
            usage_in_stream=True,
            images=True,
            retries=True,
        )

    def lacks(self, need: Need) -> bool:
        """True when this declaration does not provide ``need``. ``terminal`` and ``stream_error`` are the
        wire profile's to say (``Session.lacks``); without an api there is none."""
        if need in ("terminal", "stream_error"):
            return self.api is None
        if need == "process":  # the target's to say (an adapter run as a process), not a declaration's
            return True
        value: bool = getattr(self, need)
        return not value

    def to_json(self) -> dict[str, Any]:
        """The declaration as a JSON object (for reports)."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Target:
    """``stream_fn`` is a StreamFn or a zero-argument factory returning one; ``name`` labels it in
    reports (default: its ``module.qualname``); ``cassettes`` are the adapter's own recordings (as
    ``run(cassettes=...)`` takes them), replayed when the run is given none — for an api whose bundled
    recordings do not show every declared feature (each shows the feature its header name, else its
    file name, says — or the name the profile's ``recordings`` map gives it; a declared feature none
    shows is not examined, and the report says so); ``profile`` is the api's wire profile (its
    ``WireApi.profile``) when no installed adapter declares the api, or to override the one that
    does."""

    stream_fn: Callable[..., Any]
    capabilities: Capabilities
    name: str | None = None
    cassettes: CassetteSource | None = None
    profile: WireProfile | None = None

    @classmethod
    def from_adapter(
        cls, adapter: Adapter, *, capabilities: Capabilities | None = None, name: str | None = None
    ) -> Target:
        """The target an adapter's declaration gives, so that an adapter package needs no conformance
        module of its own.

        It runs ``adapter.stream_fn`` with every feature of ``adapter.api`` declared
        (:meth:`Capabilities.every_feature`, as a full vendor adapter has; pass ``capabilities`` to
        declare less), ``adapter.profile`` as the wire profile, and the recordings the adapter
        declares (``Adapter.cassettes``: a file or directory of its package, else a bundled
        recording's name), or none — then the bundled ones its profile names. ``name`` defaults to
        the name the adapter's package exports its StreamFn under (``streamfns.anthropic.stream_anthropic``),
        else the StreamFn's ``module.qualname``.

        Raises ``ValueError`` when a declared cassette is neither in the package nor bundled.
        """
        return cls(
            adapter.stream_fn,
            capabilities if capabilities is not None else Capabilities.every_feature(adapter.api),
            name=name if name is not None else _exported_name(adapter),
            cassettes=_declared_cassettes(adapter) or None,
            profile=adapter.profile,
        )


def _same_callable(exported: object, stream_fn: object) -> bool:
    """The same StreamFn: the object itself, or the same method of the same object (each read of a
    method makes a new bound method). Identity only: no ``__eq__`` of the adapter's runs."""
    if exported is stream_fn:
        return True
    return (
        isinstance(exported, types.MethodType)
        and isinstance(stream_fn, types.MethodType)
        and exported.__self__ is stream_fn.__self__
        and exported.__func__ is stream_fn.__func__
    )


def _exported_name(adapter: Adapter) -> str:
    """``package.attr`` for the name in the package's ``__all__`` that holds the StreamFn itself (not an
    equal object: nothing of the adapter's runs here but attribute reads), else ``module.qualname``."""
    package = sys.modules.get(adapter.package)
    try:
        for attr in getattr(package, "__all__", ()):
            if _same_callable(getattr(package, attr, None), adapter.stream_fn):
                return f"{adapter.package}.{attr}"
    except Exception:  # the package's own __getattr__ failing: the qualified name still says who it is
        pass
    return adapter_name(adapter.stream_fn)


def _declared_cassettes(adapter: Adapter) -> tuple[Path, ...]:
    """``Adapter.cassettes`` as paths: a file or directory of the package, else a bundled recording."""
    if not adapter.cassettes:
        return ()
    root = resources.files(adapter.package)
    found: list[Path] = []
    for entry in adapter.cassettes:
        local = root.joinpath(entry)
        if isinstance(local, Path) and local.exists():
            found.append(local)
        elif entry in library.names():
            found.append(library.path(entry))
        else:
            raise ValueError(
                f"the {adapter.api} adapter declares the cassette {entry!r}, which is neither a file or "
                f"directory of {adapter.package} (installed as plain files) nor a bundled recording"
            )
    return tuple(found)


def is_target(value: object) -> TypeGuard[Target]:
    """True when ``value`` is a :class:`Target`, asked of its ``type()`` only (``isinstance`` could run
    a ``__class__`` property of the adapter's object)."""
    return issubclass(type(value), Target)


def is_adapter(value: object) -> TypeGuard[Adapter]:
    """True when ``value`` is a :class:`streamfns.kit.Adapter` declaration, asked of its ``type()`` only
    (as :func:`is_target`)."""
    return issubclass(type(value), Adapter)


def is_factory(obj: Callable[..., Any]) -> bool:
    """True when ``obj`` can be called with no arguments (see the module docstring)."""
    try:
        signature = inspect.signature(obj)
        signature.bind()
    except BaseException:  # an unreadable signature (its code may raise anything), or one needing arguments
        return False
    return True


def adapter_name(obj: object) -> str:
    """``module.qualname`` of a function or class, or of an instance's class; a bound method adds
    the object it is bound to (``WireApi._stream of WireApi('my-api')``: the method alone names no
    adapter). Never raises."""
    try:
        named = obj if inspect.isfunction(obj) or inspect.isclass(obj) or inspect.ismethod(obj) else type(obj)
        module = str.__str__(str(getattr(named, "__module__", None) or ""))
        qualname = str.__str__(str(getattr(named, "__qualname__", None) or class_name(type(obj))))
        bound = f" of {reprlib.repr(obj.__self__)}" if inspect.ismethod(obj) else ""
    except BaseException:  # the adapter's object may raise anything on any attribute (or in its repr)
        return class_name(type(obj))
    return f"{module}.{qualname}{bound}" if module else f"{qualname}{bound}"


def load_target(spec: str) -> Any:
    """Import ``"pkg.module:attr"`` (``attr`` may be dotted): a StreamFn, a factory or a
    :class:`Target`; an :class:`~streamfns.kit.Adapter` comes back as :meth:`Target.from_adapter`
    gives it. Raises ``ValueError`` with a readable message when the spec is malformed or cannot be
    imported — whatever the module's code raises while it is imported or read, even ``SystemExit`` —
    or when an adapter's declared cassettes cannot be found, and ``TypeError`` when it names
    something else."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"expected 'pkg.module:attr', got {spec!r}")
    try:
        value: Any = importlib.import_module(module_name)
    except BaseException as exc:  # the module's code ran: any failure of it means it cannot be used
        raise ValueError(f"cannot import {module_name!r}: {describe_exception(exc)}") from None
    for part in attr.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise ValueError(f"{module_name!r} has no attribute {attr!r}") from None
        except BaseException as exc:  # a module __getattr__ or a property of the adapter's
            raise ValueError(f"reading {attr!r} of {module_name!r} raised {describe_exception(exc)}") from None
    if is_adapter(value):
        return Target.from_adapter(value)
    if not callable(value) and not is_target(value):
        raise TypeError(f"{spec} is a {class_name(kind_of(value))}, not a StreamFn, a factory, a Target or an Adapter")
    return value


def import_target(spec: str, *, within_s: float) -> Any:
    """:func:`load_target` in a daemon thread of its own, given ``within_s`` seconds on that thread's
    :class:`~conformance.clock.ThreadClock` (a loaded machine does not shorten them): a module whose
    import hangs cannot hang the caller. Raises what :func:`load_target` raises, and ``ValueError``
    when the import did not finish in time (the thread is then left behind, still importing).

    The thread has an event loop set, as the main thread would give one, so a module may ask for it
    at import; a module that must run in the main thread (one that installs signal handlers) cannot
    be imported this way.
    """
    outcome: list[Any] = []
    failure: list[ValueError | TypeError] = []

    def work() -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            outcome.append(load_target(spec))
        except (ValueError, TypeError) as exc:
            failure.append(exc)
        except BaseException as exc:  # load_target promises otherwise; never let it pass unexplained
            failure.append(ValueError(f"cannot import {spec!r}: {describe_exception(exc)}"))
        finally:
            if not asyncio.all_tasks(loop):
                loop.close()

    thread = threading.Thread(target=work, name="conformance-import", daemon=True)
    thread.start()
    clock = ThreadClock(thread.native_id)
    deadline = clock.now() + within_s
    # The wall clock runs at least as fast as the thread's: a join of the time left is never late.
    while thread.is_alive() and (left := deadline - clock.now()) > 0:
        thread.join(left)
    if failure:
        raise failure[0]
    if not outcome:
        module_name = spec.partition(":")[0]
        raise ValueError(f"importing {module_name!r} did not finish within {within_s:g} s")
    return outcome[0]
