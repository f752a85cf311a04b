"""A ``conformance.Target`` may carry the adapter's own recordings; a run uses them unless given others."""

from __future__ import annotations

import conformance
from cassettes import library
from conformance import Capabilities, Target
from conformance.targets import FAUX_CAPABILITIES, faux_target
from streamfns.anthropic import stream_anthropic

ANTHROPIC = Capabilities(api="anthropic-messages", tool_calls=True, usage_in_stream=True)


async def test_a_targets_own_recordings_replace_the_library_picks() -> None:
    own = library.path("llma__thinking_sonnet45")
    target = Target(stream_anthropic, ANTHROPIC, cassettes=[own])
    report = await conformance.run(target, checks=["P1"])
    assert report.ids("pass") == ["P1"], report.to_text()
    assert report.to_json()["recordings"] == ["llma__thinking_sonnet45"]


async def test_recordings_passed_to_run_win_over_the_targets() -> None:
    target = Target(stream_anthropic, ANTHROPIC, cassettes=[library.path("llma__thinking_sonnet45")])
    report = await conformance.run(target, cassettes=[library.path("llma__text_haiku45")], checks=["P1"])
    assert report.to_json()["recordings"] == ["llma__text_haiku45"]


async def test_a_target_without_recordings_still_uses_the_library_picks() -> None:
    report = await conformance.run(Target(stream_anthropic, ANTHROPIC), checks=["P1"])
    assert "llma__text_haiku45" in report.to_json()["recordings"]
    assert (await conformance.run(Target(faux_target, FAUX_CAPABILITIES), checks=["P1"])).ids("pass") == ["P1"]
