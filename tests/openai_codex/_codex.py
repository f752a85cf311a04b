"""The Codex adapter as its tests drive it: the model, its synthetic cassettes, a fake login."""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

import cassettes
from cassettes import Cassette
from streamfns import openai_codex
from streamfns.kit import Signature, Signer, SigningRequest, provider_signers, register_provider_signer
from streamfns.openai_codex import ADAPTER, PROVIDER
from tests.adapters import AdapterUnderTest

#: Where the package keeps its cassettes.
PACKAGE = Path(openai_codex.__file__).parent

#: The adapter's bundled synthetic cassettes (successful streams), by what each shows.
STREAMS = {
    "text": "codex_text_SYNTHETIC",
    "tool": "codex_function_call_SYNTHETIC",
    "parallel": "codex_parallel_function_calls_SYNTHETIC",
    "thinking": "codex_reasoning_summary_SYNTHETIC",
}
USAGE_LIMIT = "codex_usage_limit_429_SYNTHETIC"

CODEX = AdapterUnderTest(
    ADAPTER,
    {
        "id": "gpt-5.4",
        "provider": PROVIDER,
        "base_url": "https://chatgpt.com/backend-api/codex",
        "reasoning": True,
        "input": ["text", "image"],
        "context_window": 272000,
        "max_tokens": 128000,
    },
)


def cassette(name: str) -> Cassette:
    """One of the package's cassettes, by name."""
    return cassettes.load(PACKAGE / f"{name}.jsonl")


class FakeLogin:
    """A stand-in for the ``openai-codex`` login: one token per renewal, the hint the real one gives."""

    login_hint = "run `streamfns login openai-codex`"

    def __init__(self, *tokens: str, renews: bool = True) -> None:
        self.tokens = tokens
        self.index = 0
        self.renews = renews
        self.renewals = 0
        self.signed: list[SigningRequest] = []

    async def __call__(self, request: SigningRequest) -> Signature:
        self.signed.append(request)
        token = self.tokens[self.index]
        return Signature({"authorization": f"Bearer {token}", "chatgpt-account-id": "acct-test-0001"})

    async def unauthorized(self, request: SigningRequest) -> bool:
        self.renewals += 1
        if self.renews and self.index + 1 < len(self.tokens):
            self.index += 1
            return True
        return False


@contextmanager
def codex_login(signer: Signer | None) -> Generator[None]:
    """Register ``signer`` as the ``openai-codex`` login for the block (None: no login at all), then
    put back what was registered (the built-in factory, or what it made)."""
    before = provider_signers().get(PROVIDER)
    register_provider_signer(PROVIDER, signer)
    try:
        yield
    finally:
        register_provider_signer(PROVIDER, before)
