"""use_cassette modes: none never touches the network, once/new_episodes/all/rewrite record as documented."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from cassettes import (
    CassetteMissing,
    CassetteSession,
    Mode,
    RequestNotRecorded,
    UnplayedInteractions,
    library,
    load,
    save,
    use_cassette,
)
from conformance.loopback import LoopbackServer
from tests.cassettes._helpers import SSE_EVENTS


class ExplodingTransport(httpx.AsyncBaseTransport):
    """A 'network' that fails the test if anything reaches it."""

    def __init__(self) -> None:
        self.calls = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.calls += 1
        raise AssertionError(f"the network was used: {request.method} {request.url}")


async def _record(path: Path, server: LoopbackServer, *bodies: dict[str, object]) -> None:
    async with use_cassette(path, mode="once") as http:
        for body in bodies:
            await http.post(server.base_url + "/v1/messages", json=body)


async def _known_then_unknown(
    path: Path,
    url: str,
    replayed: list[httpx.Response],
    *,
    mode: Mode,
    real_transport: ExplodingTransport | None = None,
) -> None:
    """Send the recorded request {"n": 1}, then {"n": 2}, whose `RequestNotRecorded` is swallowed."""
    async with use_cassette(path, mode=mode, real_transport=real_transport) as http:
        replayed.append(await http.post(url, json={"n": 1}))
        with pytest.raises(RequestNotRecorded):
            await http.post(url, json={"n": 2})


async def test_mode_none_never_touches_the_network(server: LoopbackServer, tmp_path: Path) -> None:
    path = tmp_path / "none.jsonl"
    await _record(path, server, {"n": 1})
    url = server.base_url + "/v1/messages"
    await server.close()  # from here on nothing listens on the recorded port
    network = ExplodingTransport()
    replayed: list[httpx.Response] = []
    # The unrecorded request raises where it is sent and, swallowed there, again on exit.
    with pytest.raises(RequestNotRecorded, match=r"body \$\.n: recorded 1, sent 2"):
        await _known_then_unknown(path, url, replayed, mode="none", real_transport=network)
    assert replayed[0].content == b"".join(SSE_EVENTS)
    assert network.calls == 0


async def test_missing_cassette_and_unrecorded_request_are_distinct_errors(tmp_path: Path) -> None:
    with pytest.raises(CassetteMissing, match=r"mode is 'none'.*mode='once'"):
        async with use_cassette(tmp_path / "absent.jsonl"):
            pass
    assert not issubclass(CassetteMissing, RequestNotRecorded)
    assert not issubclass(RequestNotRecorded, CassetteMissing)


async def test_once_records_when_missing_then_replays_without_recording_more(
    server: LoopbackServer, tmp_path: Path
) -> None:
    path = tmp_path / "once.jsonl"
    await _record(path, server, {"n": 1})
    assert len(server.requests) == 1
    recorded = path.read_bytes()
    replayed: list[httpx.Response] = []
    with pytest.raises(RequestNotRecorded, match="sent 2"):
        await _known_then_unknown(path, server.base_url + "/v1/messages", replayed, mode="once")
    assert replayed[0].content == b"".join(SSE_EVENTS)
    assert len(server.requests) == 1
    assert path.read_bytes() == recorded


async def test_new_episodes_replays_matches_and_records_the_rest(server: LoopbackServer, tmp_path: Path) -> None:
    path = tmp_path / "episodes.jsonl"
    await _record(path, server, {"n": 1})
    async with use_cassette(path, mode="new_episodes") as http:
        await http.post(server.base_url + "/v1/messages", json={"n": 1})
        await http.post(server.base_url + "/v1/messages", json={"n": 2})
    assert [r.body for r in server.requests] == [b'{"n":1}', b'{"n":2}']
    assert [i.request.body for i in load(path).interactions] == [b'{"n":1}', b'{"n":2}']


async def test_all_always_sends_and_appends(server: LoopbackServer, tmp_path: Path) -> None:
    path = tmp_path / "all.jsonl"
    await _record(path, server, {"n": 1})
    async with use_cassette(path, mode="all") as http:
        await http.post(server.base_url + "/v1/messages", json={"n": 1})
    assert len(server.requests) == 2
    assert [i.request.body for i in load(path).interactions] == [b'{"n":1}', b'{"n":1}']


async def test_rewrite_replaces_the_file(server: LoopbackServer, tmp_path: Path) -> None:
    path = tmp_path / "rewrite.jsonl"
    await _record(path, server, {"n": 1}, {"n": 2})
    async with use_cassette(path, mode="rewrite") as http:
        await http.post(server.base_url + "/v1/messages", json={"n": 3})
    assert [i.request.body for i in load(path).interactions] == [b'{"n":3}']


async def test_unplayed_interactions_fail_a_clean_exit_unless_allowed(server: LoopbackServer, tmp_path: Path) -> None:
    path = tmp_path / "stale.jsonl"
    await _record(path, server, {"n": 1}, {"n": 2})
    with pytest.raises(UnplayedInteractions, match=r"1 of 2 recorded interactions .* never requested") as caught:
        async with use_cassette(path) as http:
            await http.post(server.base_url + "/v1/messages", json={"n": 1})
    assert caught.value.unplayed == (1,)
    async with use_cassette(path, allow_unplayed=True) as http:
        await http.post(server.base_url + "/v1/messages", json={"n": 2})


async def test_an_error_inside_the_block_is_not_hidden_by_the_unplayed_check(
    server: LoopbackServer, tmp_path: Path
) -> None:
    path = tmp_path / "hidden.jsonl"
    await _record(path, server, {"n": 1})
    with pytest.raises(KeyError, match="the test's own failure"):
        async with use_cassette(path):
            raise KeyError("the test's own failure")


async def test_library_cassettes_replay_with_match_any(tmp_path: Path) -> None:
    path = tmp_path / "lib.jsonl"
    save(library.load("pai__text_gemini20flashexp"), path)
    async with use_cassette(path, match="any") as http:
        response = await http.post("http://127.0.0.1:9/my-adapter-url", json={"whatever": True})
    assert response.content == library.load("pai__text_gemini20flashexp").interactions[0].response.body


async def test_ignored_paths_let_volatile_fields_differ(server: LoopbackServer, tmp_path: Path) -> None:
    path = tmp_path / "volatile.jsonl"
    await _record(path, server, {"n": 1, "metadata": {"user_id": "first-run"}})
    async with use_cassette(path, ignore_paths=["metadata.user_id"]) as http:
        response = await http.post(server.base_url + "/v1/messages", json={"n": 1, "metadata": {"user_id": "other"}})
    assert response.status_code == 200


def test_an_unknown_mode_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="mode must be one of"):
        CassetteSession(tmp_path / "x.jsonl", mode="sometimes")  # type: ignore[arg-type]


async def test_a_changed_request_swallowed_by_the_adapter_surfaces_its_diff_on_exit(tmp_path: Path) -> None:
    """An adapter turns every error into an error event, so `RequestNotRecorded` never reaches the
    test; the session raises it (with the diff it computed) instead of `UnplayedInteractions`."""
    from conformance.plans import plan
    from normalize import Context, Model, StreamOptions, UserMessage
    from streamfns.anthropic import stream_anthropic

    path = tmp_path / "adapter.jsonl"
    source = library.load("llma__text_haiku45")

    async def ask(prompt: str, base_url: str, mode: Mode) -> str | None:
        model = Model(id="claude-haiku-4-5", api="anthropic-messages", provider="anthropic", base_url=base_url)
        async with use_cassette(path, mode=mode) as http:
            options = StreamOptions(api_key="test-key-not-a-secret", http_client=http)
            message = await stream_anthropic(model, Context(messages=[UserMessage(content=prompt)]), options).result()
        return message.error_message

    async with LoopbackServer(plan(source)) as server:
        assert await ask("Say hello.", server.base_url, "once") is None
        with pytest.raises(RequestNotRecorded, match=r"text: recorded \"Say hello\.\", sent \"Say goodbye\.\""):
            await ask("Say goodbye.", server.base_url, "none")
