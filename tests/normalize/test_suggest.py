"""The hint for an unknown name: the close names when there are some, else every known name."""

from __future__ import annotations

from normalize.suggest import close_names, did_you_mean


def test_close_names_come_closest_first_and_at_most_the_limit() -> None:
    known = ["claude-sonnet-4-5", "claude-sonnet-4-6", "claude-haiku-4-5", "gpt-5"]
    assert close_names("claude-sonet-4-5", known) == ["claude-sonnet-4-5", "claude-sonnet-4-6"]
    assert close_names("claude-sonet-4-5", known, limit=1) == ["claude-sonnet-4-5"]
    assert close_names("zzz", known) == []


def test_did_you_mean_offers_close_names_else_lists_every_known_one_sorted() -> None:
    assert did_you_mean("anthropic-message", ["openai-responses", "anthropic-messages"], what="apis") == (
        "did you mean: anthropic-messages?"
    )
    assert did_you_mean("nope", ["b", "a", "b"], what="apis") == "known apis: a, b"
    assert did_you_mean("nope", ["openai", "anthropic"], what="providers") == "known providers: anthropic, openai"
    assert did_you_mean("nope", [], what="recordings") == "known recordings: none"
