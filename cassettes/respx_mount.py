"""A cassette as respx routes: real recordings in a test suite that already mocks httpx with respx.

respx (https://lundberg.github.io/respx/) patches httpx for a test and answers requests from routes.
:func:`mount` adds the routes a cassette's recorded requests make and answers them from the
recording, so the code under test keeps the HTTP client it builds itself (an adapter called
without ``StreamOptions.http_client``) and the suite keeps its own routes beside the cassette's::

    import respx
    from cassettes import library
    from cassettes.respx_mount import mount


    async def test_the_haiku_reply(respx_mock: respx.MockRouter) -> None:
        replay = mount(respx_mock, library.load("llma__text_haiku45"), match="any")
        ...  # stream through the adapter as in production: every request is answered from the file
        replay.assert_all_played()

Promises:

* one route per recorded method, scheme, host, port and path, added to ``router`` in recording
  order; a request that reaches none of them is the router's business (its other routes, or
  respx's "not mocked" error);
* a request that reaches a route is answered exactly as :class:`~cassettes.ReplayTransport` answers
  it (the transport :func:`mount` returns: ``match``, ``played``, ``misses``,
  ``assert_all_played()``), through :meth:`~cassettes.ReplayTransport.respond`; a request the
  cassette does not hold raises :class:`~cassettes.RequestNotRecorded` in the client, showing the
  nearest recording;
* the body streams the recorded chunks, boundaries kept, to an async or a sync httpx client; with
  ``timing="recorded"`` (or a factor) they come at their recorded times.

respx is not a dependency of this package: install it (``pip install 'streamfns[respx]'``, or your
test requirements) to use this module; nothing else in ``cassettes`` imports it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import httpx
import respx

from cassettes.files import load
from cassettes.model import Cassette
from cassettes.replay import Match, ReplayTransport, Timing
from cassettes.scrub import DEFAULT_SCRUB, ScrubPolicy

__all__ = ["mount"]


def mount(
    router: respx.Router,
    cassette: Cassette | str | os.PathLike[str],
    *,
    match: Match = "request",
    timing: Timing = "instant",
    ignore_paths: Sequence[str] = (),
    allow_repeats: bool = False,
    scrub: ScrubPolicy = DEFAULT_SCRUB,
) -> ReplayTransport:
    """Add routes to ``router`` (a ``respx.MockRouter``, such as the ``respx_mock`` fixture or the
    router ``respx.mock`` yields) that answer from ``cassette`` (a loaded cassette or a file path);
    the other arguments are :class:`~cassettes.ReplayTransport`'s. Returns the transport that keeps
    the score (``played``, ``misses``, ``assert_all_played()``).

    Library cassettes hold synthetic requests: mount them with ``match="any"``. Their routes are the
    recorded URLs; for a request sent elsewhere, route it yourself with
    ``side_effect=transport.respond``.
    """
    loaded = cassette if isinstance(cassette, Cassette) else load(cassette)
    name = loaded.name or (str(cassette) if not isinstance(cassette, Cassette) else "<cassette>")
    transport = ReplayTransport(
        loaded,
        match=match,
        timing=timing,
        ignore_paths=ignore_paths,
        allow_repeats=allow_repeats,
        scrub=scrub,
        name=name,
    )
    mounted: set[tuple[str, str, str, int | None, str]] = set()
    for interaction in loaded.interactions:
        url = httpx.URL(interaction.request.url)
        key = (interaction.request.method.upper(), url.scheme, url.host, url.port, url.path)
        if key in mounted:
            continue
        mounted.add(key)
        method, scheme, host, port, path = key
        if port is None:  # the scheme's default port, whichever way the client spells it
            route = router.route(method=method, scheme=scheme, host=host, path=path)
        else:
            route = router.route(method=method, scheme=scheme, host=host, port=port, path=path)
        route.mock(side_effect=transport.respond)
    return transport
