"""The conformance harness over every adapter this project ships: each must be conformant."""

from __future__ import annotations

import pytest

import conformance
import conformance.targets
from conformance.targets import FAUX_CAPABILITIES, builtin_targets, faux, faux_target
from streamfns._adapters import builtin_adapters, builtin_packages

BUILTIN_APIS = sorted(builtin_adapters())


def test_every_builtin_adapter_declares_a_conformance_target_for_its_api() -> None:
    targets = builtin_targets()
    assert set(targets) == {"faux", *BUILTIN_APIS}
    for api in BUILTIN_APIS:
        assert targets[api].capabilities.api == api
    for package in builtin_packages():
        target = getattr(conformance.targets, package)
        assert target in targets.values(), f"conformance.targets:{package} names the package's declared target"


@pytest.mark.slow
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


@pytest.mark.slow
async def test_the_faux_factory_is_told_apart_from_a_stream_fn() -> None:
    report = await conformance.run(faux_target, capabilities=FAUX_CAPABILITIES, checks=["P1", "D1"])
    assert report.ids("pass") == ["P1", "D1"], report.to_text()


@pytest.mark.slow
@pytest.mark.parametrize("api", BUILTIN_APIS)
async def test_every_builtin_adapter_is_conformant(api: str) -> None:
    report = await conformance.run(builtin_targets()[api])
    assert report.failing == [], report.to_text()
    assert report.ids("unsupported") == [], report.to_text()
    assert report.ids("xfail") == [], report.to_text()
    assert report.verdict == "conformant", report.to_text()
