"""``catalog.model_from_spec``: the ``provider/model-id`` a command line names, for every command that
takes ``--model`` (the ``streamfns`` CLI and the agent-loop example share it)."""

from __future__ import annotations

import pytest

from streamfns.catalog import get_model, model_from_spec

pytestmark = pytest.mark.parallel  # clock-blind: no socket, sleep or timeout


def test_a_spec_names_the_catalog_model_and_a_base_url_replaces_its_endpoint() -> None:
    assert model_from_spec("anthropic/claude-haiku-4-5") == get_model("anthropic", "claude-haiku-4-5")
    proxied = model_from_spec("anthropic/claude-haiku-4-5", base_url="http://127.0.0.1:8080")
    assert proxied.base_url == "http://127.0.0.1:8080"
    assert get_model("anthropic", "claude-haiku-4-5").base_url != proxied.base_url  # a fresh model each time


@pytest.mark.parametrize(
    ("spec", "base_url", "said"),
    [
        ("claude-haiku-4-5", None, "--model must look like provider/model-id, not 'claude-haiku-4-5'"),
        ("anthropic/", None, "--model must look like provider/model-id, not 'anthropic/'"),
        ("anthropic/claude-haiku-4-5", "ftp://x", "--base-url must be an http:// or https:// URL, not 'ftp://x'"),
    ],
)
def test_what_a_command_cannot_use_is_a_value_error_it_can_print(spec: str, base_url: str | None, said: str) -> None:
    with pytest.raises(ValueError) as caught:
        model_from_spec(spec, base_url=base_url)
    assert str(caught.value) == said


def test_an_unknown_id_names_the_close_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown anthropic model 'claude-haiku-4-6'.*claude-haiku-4-5"):
        model_from_spec("anthropic/claude-haiku-4-6")
