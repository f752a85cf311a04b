"""A short run of ``make reliability``: the soak's must-be-zero figures hold on a small scale, on each
transport the kit ships (``--transport httpx``, ``--transport aiohttp``)."""

from __future__ import annotations

import pytest

from bench import reliability


@pytest.mark.slow
@pytest.mark.parametrize("transport", reliability.TRANSPORTS)
def test_a_short_soak_leaks_nothing_and_ends_every_stream_right(
    transport: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # A shorter idle timeout and slow-stream delay than the soak's own: the same faults, in less time.
    argv = ["--streams", "40", "--seed", "3", "--idle-timeout", "0.5", "--slow-ms", "0.5", "--transport", transport]
    status = reliability.main(argv)
    out = capsys.readouterr().out
    assert status == 0, out
    assert f"transport             : {transport}\n" in out
    for label in ("leaked fds", "leaked tasks", "streams with no terminal", "done on a faulted stream"):
        assert f"{label}" in out
    assert "MUST BE 0" not in out
    assert "40 streams × 2,000 deltas" in out
