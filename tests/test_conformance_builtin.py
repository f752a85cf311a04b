"""The conformance harness over every adapter this project ships: each must be conformant."""

from __future__ import annotations

import pytest

import conformance
from conformance.targets import BUILTIN_TARGETS, FAUX_CAPABILITIES, faux, faux_target
from streamfns._builtin import BUILTIN_APIS


def test_every_builtin_api_has_a_conformance_target() -> None:
    assert set(BUILTIN_APIS) <= set(BUILTIN_TARGETS), "add the new adapter to conformance.targets.BUILTIN_TARGETS"
    for api in BUILTIN_APIS:
        assert BUILTIN_TARGETS[api].capabilities.api == api


async def test_the_faux_provider_is_conformant() -> None:
    report = await conformance.run(faux)
    assert report.failing == [], report.to_text()
    assert report.verdict == "conformant", report.to_text()
    # No HTTP: the HTTP checks are unsupported, but that is not a limitation of the provider.
    unsupported = report.ids("unsupported")
    assert {"T1", "M1", "H1", "C1", "C3", "R1", "L1"} <= set(unsupported)
    assert all(not report.result(check_id).limitation for check_id in unsupported)
    python_level = {"N1", "N2", "A1", "A2", "P1", "P2", "P3", "P4", "U1", "D1", "L2", "S1"}
    assert set(report.ids("pass")) == {f"G{i}" for i in range(1, 8)} | python_level, report.to_text()


async def test_the_faux_factory_is_told_apart_from_a_stream_fn() -> None:
    report = await conformance.run(faux_target, capabilities=FAUX_CAPABILITIES, checks=["P1", "D1"])
    assert report.ids("pass") == ["P1", "D1"], report.to_text()


@pytest.mark.parametrize("api", sorted(BUILTIN_APIS))
async def test_every_builtin_adapter_is_conformant(api: str) -> None:
    report = await conformance.run(BUILTIN_TARGETS[api])
    assert report.failing == [], report.to_text()
    assert report.ids("unsupported") == [], report.to_text()
    assert report.ids("xfail") == [], report.to_text()
    assert report.verdict == "conformant", report.to_text()
