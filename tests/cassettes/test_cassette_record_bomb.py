"""A server that ignores ``accept-encoding: identity`` and sends a compression bomb costs the recorder
bounded memory: decoding for the record stops at ``cassettes.recorder.MAX_DECODED_BYTES`` and the
recording fails, instead of inflating the whole body in one call."""

from __future__ import annotations

import gzip
from pathlib import Path

import httpx
import pytest

from cassettes import CassetteError, recorder, use_cassette
from conformance.loopback import LoopbackServer, ReceivedRequest, Scripted

LIMIT = 64 * 1024


def _bomb(_request: ReceivedRequest) -> Scripted:
    packed = gzip.compress(b"\0" * (LIMIT * 40))  # ~2.6 MB of zeros in a few KB
    return Scripted(
        headers=[("content-type", "text/event-stream"), ("content-encoding", "gzip")],
        chunks=[(0.0, packed)],
    )


async def test_a_body_that_decodes_past_the_cap_fails_the_recording(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(recorder, "MAX_DECODED_BYTES", LIMIT)
    grew: list[int] = []
    real = recorder.zlib.decompressobj

    class Watched:
        """zlib's decompressor, noting the size of every piece it produces."""

        def __init__(self, wbits: int) -> None:
            self._inner = real(wbits)

        @property
        def unconsumed_tail(self) -> bytes:
            return self._inner.unconsumed_tail

        def decompress(self, data: bytes, max_length: int = 0) -> bytes:
            out = self._inner.decompress(data, max_length)
            grew.append(len(out))
            return out

        def flush(self, length: int = 16384) -> bytes:
            return self._inner.flush(length)

    monkeypatch.setattr(recorder.zlib, "decompressobj", Watched)
    path = tmp_path / "bomb.jsonl"

    async def record(url: str) -> None:
        async with (
            use_cassette(path, mode="once") as http,
            http.stream("POST", url, json={"model": "m"}) as response,
        ):
            async for _ in response.aiter_raw():
                pass

    async with LoopbackServer(_bomb) as server:
        with pytest.raises(CassetteError, match="decodes to more than"):
            await record(server.base_url + "/v1/x")
    assert grew, "the body was decoded for the record"
    assert max(grew) <= LIMIT + 1  # never one inflation of the whole body
    assert sum(grew) <= LIMIT + 1
    assert not path.exists()


async def test_a_body_under_the_cap_records_decoded(tmp_path: Path) -> None:
    body = b"data: " + b"x" * 1000 + b"\n\n"

    def plain(_request: ReceivedRequest) -> Scripted:
        return Scripted(
            headers=[("content-type", "text/event-stream"), ("content-encoding", "gzip")],
            chunks=[(0.0, gzip.compress(body))],
        )

    path = tmp_path / "ok.jsonl"
    async with LoopbackServer(plain) as server, use_cassette(path, mode="once") as http:
        response = await http.post(server.base_url + "/v1/x", json={"model": "m"})
    assert response.status_code == httpx.codes.OK
    assert response.content == body
