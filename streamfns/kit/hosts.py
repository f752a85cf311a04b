"""Where a request goes, when part of it is read from outside the code: one check for every such part.

An adapter splices some values into its URL as text: an AWS region into
``bedrock-runtime.{region}.amazonaws.com``, a Vertex location into ``{location}-aiplatform.googleapis.com``,
an endpoint URL (``AWS_ENDPOINT_URL``) or a server address (``OLLAMA_HOST``) in front of its path, a
model id into a path segment. Read from the environment, a shared config file or ``Model.compat``,
such a value could move the request — with the key, token or signature it carries — to another host
or path: the region ``us-east-1.attacker.invalid#`` makes the host ``bedrock-runtime.us-east-1.attacker
.invalid`` (the ``#`` hides the rest), ``x@127.0.0.1:9/`` turns the start of the host into user info,
the model id ``..`` turns ``/model/../converse-stream`` into ``/converse-stream``. The functions here
are the one rule every adapter applies; a value that fails raises :class:`~streamfns.kit.CompatError`
naming where it came from (never quoting user info, a query or a fragment), which the kit turns into a ``config`` error
before anything is signed or sent.

- :func:`host_label`: a part that becomes one label of a host name (a region, a location) is one
  lowercase DNS label — ``a``–``z`` first, then ``a``–``z``, ``0``–``9`` and ``-``, not ending in
  ``-``, at most 63 characters. This is stricter than botocore's own region check
  (``botocore.utils.validate_region_name``: a host label not made of digits alone), so every region
  accepted here is one botocore accepts, whether or not botocore is installed; uppercase, any dot
  (``.``, ``\\u3002``), ``%``, ``#``, ``@``, ``/``, ``?``, ``:``, inner whitespace and the empty string
  are refused.
- :func:`host_name`: a whole host is an IPv4 address, an IPv6 address (no zone id), or a DNS name of
  such labels (letters in either case, a digit or ``_`` first allowed: container networks name hosts
  ``ollama_server``) that does not end in a dot or in a label a URL parser would read as a number
  (``1.2.3``, ``0x7f``: IPv4 in disguise); returned lowercased.
- :func:`endpoint_url`: an endpoint URL is ``http`` or ``https``, a host as :func:`host_name` (an IPv6
  one in brackets), an optional port (1–65535) and an optional path of plain segments, none of them a
  dot segment, percent-encoded or not; no user info, query or fragment (each would move, hide or
  re-authenticate the path the adapter appends), nothing outside printable ASCII. Returned without a
  trailing ``/``.
- :func:`path_segment`: a value (a model id) as one path segment: percent-encoded (``/``, ``:``,
  ``%``, ``?``, ``#`` included, so ``%2e`` stays three characters and never decodes to a dot); ``.``,
  ``..`` and the empty string are refused, since a client or a server resolves them as dot segments.

Surrounding whitespace is dropped before a check (a value pasted with a newline); nothing else is
repaired.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Final
from urllib.parse import quote, unquote

from streamfns.kit.compat import CompatError

__all__ = ["endpoint_url", "host_label", "host_name", "path_segment"]

_LABEL: Final = re.compile(r"[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?")
# "_" too: no URL delimiter, and container networks name hosts so (ollama_server).
_NAME_LABEL: Final = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
# What a URL parser reads as a number (the WHATWG "ends in a number" rule): such a last label makes the
# whole name an IPv4 address (1.2.3 → 1.2.0.3, 0x7f.1 → 127.0.0.1).
_NUMBER: Final = re.compile(r"(?:0x[0-9a-f]*|[0-9]+)")
_MAX_NAME: Final = 253
_URL: Final = re.compile(
    r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<authority>[^/?#]*)(?P<path>[^?#]*)(?P<rest>.*)", re.DOTALL
)
_PORT: Final = re.compile(r"[0-9]{1,5}")
# RFC 3986 pchar (unreserved, sub-delims, ":" and "@") and "%" of a percent-encoding.
_PATH_CHARS: Final = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@%]*")
_PERCENT: Final = re.compile(r"%(?![0-9A-Fa-f]{2})")
_DOTS: Final = frozenset({".", ".."})
_SHOWN_MAX: Final = 80
_QUERY_OR_FRAGMENT: Final = re.compile(r"[?#]")


def _shown(value: str) -> str:
    """``value`` as a message quotes it: user info blanked (it may hold a password), a query or a
    fragment shown as ``?…`` / ``#…`` (``?token=``, ``#sig=``: either may carry a credential), at most
    80 characters."""
    if "@" in value:
        scheme, sep, rest = value.partition("://")
        head, tail = (scheme + sep, rest) if sep else ("", value)
        value = head + "[user info]@" + tail.rpartition("@")[2]
    # After the user info: an "@" inside a query is then blanked with everything before it, and a "?"
    # or "#" inside a password never decides where the cut falls.
    found = _QUERY_OR_FRAGMENT.search(value)
    if found is not None:
        value = value[: found.end()] + ("…" if found.end() < len(value) else "")
    return repr(value if len(value) <= _SHOWN_MAX else value[:_SHOWN_MAX] + "…")


def host_label(value: str, *, source: str, what: str) -> str:
    """``value`` (stripped) when it is one lowercase DNS label (see the module docstring); else raises
    :class:`~streamfns.kit.CompatError` saying that ``source`` (the variable or flag it came from) is
    not ``what`` (``"an AWS region name such as us-east-1"``)."""
    stripped = value.strip()
    if not _LABEL.fullmatch(stripped):
        raise CompatError(f"{source} {_shown(value)} is not {what}: nothing was sent")
    return stripped


def _is_name(host: str) -> bool:
    if not host or len(host) > _MAX_NAME:
        return False
    labels = host.split(".")
    return all(_NAME_LABEL.fullmatch(label) for label in labels) and not _NUMBER.fullmatch(labels[-1])


def host_name(value: str, *, source: str) -> str:
    """``value`` (stripped, lowercased) when it is an IPv4 or IPv6 address or a DNS name (see the module
    docstring); else raises :class:`~streamfns.kit.CompatError` naming ``source``."""
    host = value.strip().lower()
    if host.isascii():
        try:
            ipaddress.ip_address(host)  # strict: no zone id (scope_id is refused below), no 0x or octal
        except ValueError:
            if _is_name(host):
                return host
        else:
            if "%" not in host:
                return host
    raise CompatError(f"{source} {_shown(value)} is not a host name or an IP address: nothing was sent")


def _path_problem(path: str) -> str | None:
    """What is wrong with an endpoint's path (None: nothing)."""
    if not _PATH_CHARS.fullmatch(path.replace("/", "")) or _PERCENT.search(path):
        return "its path has characters a path cannot hold as they are"
    segments = path.split("/")[1:]
    if any(unquote(segment) in _DOTS for segment in segments):
        return "its path has a dot segment, which would move the request to another path"
    return None


def endpoint_url(value: str, *, source: str) -> str:
    """``value`` (stripped, scheme and host lowercased, without a trailing ``/``) when it is an endpoint
    URL (see the module docstring); else raises :class:`~streamfns.kit.CompatError` naming ``source``
    and saying what is wrong."""
    url = value.strip()
    problem: str | None = None
    match = _URL.fullmatch(url) if url.isascii() and url.isprintable() and " " not in url else None
    if match is None:
        problem = "it is not an http or https URL of printable ASCII"
    else:
        scheme, authority, path, rest = match.group("scheme", "authority", "path", "rest")
        scheme = scheme.lower()
        host, port = _split_authority(authority)
        if scheme not in ("http", "https"):
            problem = f"its scheme is {scheme!r}, not http or https"
        elif "@" in authority:
            problem = "it has user info, which would go as credentials to whatever host follows"
        elif rest:
            problem = "it has a query or a fragment, which would swallow the path appended to it"
        elif port is not None and not (_PORT.fullmatch(port) and 0 < int(port) <= 65535):
            problem = "its port is not a number from 1 to 65535"
        else:
            problem = _path_problem(path)
            if problem is None:
                bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
                try:
                    checked = host_name(bare, source=source)
                except CompatError:
                    problem = "its host is not a host name or an IP address"
                else:
                    if host.startswith("[") != (":" in checked):
                        problem = "an IPv6 host must be in brackets, and only an IPv6 host"
                    else:
                        shown = f"[{checked}]" if ":" in checked else checked
                        authority = shown if port is None else f"{shown}:{port}"
                        return f"{scheme}://{authority}{path}".rstrip("/")
    raise CompatError(f"{source} {_shown(value)} is not usable as an endpoint ({problem}): nothing was sent")


def _split_authority(authority: str) -> tuple[str, str | None]:
    """``(host, port)`` of an authority without user info (port None when it names none)."""
    if authority.startswith("["):
        inside, bracket, after = authority.partition("]")
        if bracket and (not after or after.startswith(":")):
            return inside + bracket, after[1:] if after else None
        return authority, None
    host, colon, port = authority.rpartition(":")
    return (host, port) if colon else (authority, None)


def path_segment(value: str, *, what: str) -> str:
    """``value`` percent-encoded as one path segment, every reserved character escaped (``:``, ``/``,
    ``%``, ``?``, ``#``, ``@``); raises :class:`~streamfns.kit.CompatError` when it is empty or a dot
    segment (``.``, ``..``), saying it is not ``what`` (``"a Bedrock model id"``)."""
    if value.strip() in ("", *_DOTS):
        raise CompatError(
            f"{_shown(value)} is not {what}: as a path segment it would move the request to another path; "
            "nothing was sent"
        )
    return quote(value, safe="")
