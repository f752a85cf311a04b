"""One helper for every adapter's tests, parameterised by api.

An :class:`AdapterUnderTest` is an adapter as its tests drive it: a :class:`~normalize.Model` of its
api with the test defaults, its bundled recordings (successful streams and HTTP error bodies), a
loopback plan replaying one of them, and the real StreamFn (kit, framing, decoder, builder) run over an
in-process transport — on a cassette (:meth:`~AdapterUnderTest.replay`) or on a body given as network
reads (:meth:`~AdapterUnderTest.run_reads`). The built-in adapters are declared at the bottom; a new
adapter's tests declare theirs the same way (its ``Adapter`` and its model defaults) and keep in their
own helper module only what is truly theirs (the vendor's chunk builders, an SDK oracle).

The module-level functions read a final message (:func:`texts`, :func:`thinking`, :func:`calls`,
:func:`first_text`) or compare two runs' events (:func:`untimed_json`).
"""

from __future__ import annotations

import copy
import functools
import random
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeAlias, cast

import httpx

from cassettes import Cassette, ReplayTransport, library
from cassettes.model import RecordedResponse
from conformance.loopback import Scripted, ScriptedEnd
from normalize import (
    AssistantMessage,
    AssistantMessageEvent,
    AssistantMessageEventStream,
    Context,
    Model,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ToolCall,
    UserMessage,
    event_to_json,
)
from streamfns.anthropic import ADAPTER as ANTHROPIC_ADAPTER
from streamfns.anthropic_bedrock import ADAPTER as ANTHROPIC_BEDROCK_ADAPTER
from streamfns.anthropic_vertex import ADAPTER as ANTHROPIC_VERTEX_ADAPTER
from streamfns.google import ADAPTER as GOOGLE_ADAPTER
from streamfns.kit import Adapter
from streamfns.ollama import ADAPTER as OLLAMA_ADAPTER
from streamfns.openai_completions import ADAPTER as OPENAI_COMPLETIONS_ADAPTER
from streamfns.openai_responses import ADAPTER as OPENAI_RESPONSES_ADAPTER

__all__ = [
    "ANTHROPIC",
    "ANTHROPIC_BEDROCK",
    "ANTHROPIC_VERTEX",
    "CHUNKINGS",
    "CONTEXT",
    "GOOGLE",
    "OLLAMA",
    "OPENAI_COMPLETIONS",
    "OPENAI_RESPONSES",
    "AdapterUnderTest",
    "Reads",
    "Replayed",
    "calls",
    "cut",
    "first_text",
    "reads_client",
    "response_of",
    "scripted_chunks",
    "texts",
    "thinking",
    "untimed_json",
]

#: The conversation every replay answers (a fixed timestamp: two runs build the same request).
CONTEXT = Context(messages=[UserMessage(content="Say hello.", timestamp=0)])

#: What a run gives: every event, then the final message.
Replayed: TypeAlias = tuple[list[AssistantMessageEvent], AssistantMessage]


@functools.cache
def response_of(name: str) -> RecordedResponse:
    """The recorded response of bundled recording ``name`` (its one interaction), read once per process:
    parametrizations and module constants ask for every recording of an api."""
    return library.load(name).interactions[0].response


def scripted_chunks(chunks: Iterable[bytes], *, delay_s: float = 0.0, end: ScriptedEnd = "eof") -> Scripted:
    """A loopback plan sending ``chunks`` (each after ``delay_s``), then ending as ``end`` says."""
    return Scripted(chunks=[(delay_s, chunk) for chunk in chunks], end=end)


#: The cuts a differential test reads each body in: whole, one byte per read, and seeded random reads.
CHUNKINGS = ("whole", "bytes", "random")


def cut(body: bytes, how: str, seed: str) -> list[bytes]:
    """``body`` as the reads of one response, cut as ``how`` (one of :data:`CHUNKINGS`) says; the random
    cuts (1-97 bytes) are seeded by ``seed`` (a recording's name), so every run reads the same ones."""
    if how == "whole":
        return [body]
    if how == "bytes":
        return [body[i : i + 1] for i in range(len(body))]
    rng, reads, at = random.Random(seed), list[bytes](), 0
    while at < len(body):
        step = rng.randint(1, 97)
        reads.append(body[at : at + step])
        at += step
    return reads


class Reads(httpx.AsyncByteStream):
    """A response body that arrives as exactly ``reads`` (an httpx stream, for a mock transport)."""

    def __init__(self, reads: Sequence[bytes]) -> None:
        self._reads = list(reads)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self._reads:
            yield piece


@asynccontextmanager
async def reads_client(
    reads: Sequence[bytes], *, status: int = 200, content_type: str = "text/event-stream"
) -> AsyncGenerator[httpx.AsyncClient]:
    """An HTTP client whose every response is ``status`` with a body arriving as exactly ``reads``."""

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, headers={"content-type": content_type}, stream=Reads(reads))

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        yield client


def _no_fields(cassette: Cassette) -> Mapping[str, Any]:
    return {}


@dataclass(frozen=True)
class AdapterUnderTest:
    """An adapter as its tests drive it.

    ``model_fields`` are the :class:`~normalize.Model` fields of :meth:`model` (``api`` is the
    adapter's); ``replay_fields`` gives, per cassette, the fields :meth:`replay` changes on that model
    when no model is passed (the recorded model id, the host it was recorded from, …).
    """

    adapter: Adapter
    model_fields: Mapping[str, Any]
    replay_fields: Callable[[Cassette], Mapping[str, Any]] = _no_fields

    @property
    def api(self) -> str:
        return self.adapter.api

    def model(self, **fields: Any) -> Model:
        """A model of this api: the test defaults, overridden by ``fields`` (any of ``Model``'s)."""
        merged = {**copy.deepcopy(dict(self.model_fields)), **fields}
        return Model(api=self.api, **merged)

    def replay_model(self, cassette: Cassette) -> Model:
        """The model :meth:`replay` streams ``cassette`` with when given none."""
        return self.model(**self.replay_fields(cassette))

    def stream_names(self) -> list[str]:
        """Bundled recordings of this api that are successful (HTTP 200) streams."""
        return [name for name in library.names(self.api) if response_of(name).status == 200]

    def error_names(self) -> list[str]:
        """Bundled recordings of this api that are HTTP error bodies."""
        return [name for name in library.names(self.api) if response_of(name).status != 200]

    def recorded_chunks(self, name: str) -> list[bytes]:
        """The body chunks of bundled recording ``name``, as recorded."""
        return [chunk.data for chunk in response_of(name).chunks]

    def scripted(
        self, name: str, *, delay_s: float = 0.0, end: ScriptedEnd = "eof", keep: int | None = None
    ) -> Scripted:
        """A loopback plan replaying bundled recording ``name`` (only its first ``keep`` chunks if given)."""
        return scripted_chunks(self.recorded_chunks(name)[:keep], delay_s=delay_s, end=end)

    async def replay(
        self, cassette: Cassette, target: Model | None = None, *, context: Context = CONTEXT, **option_overrides: Any
    ) -> Replayed:
        """Run the adapter on ``cassette`` (whatever request it builds), without retries."""
        transport = ReplayTransport(cassette, match="any")
        async with httpx.AsyncClient(transport=transport) as client:
            return await self._drain(target or self.replay_model(cassette), context, client, option_overrides)

    async def run_reads(
        self,
        reads: Sequence[bytes],
        *,
        target: Model | None = None,
        context: Context = CONTEXT,
        status: int = 200,
        content_type: str = "text/event-stream",
        **option_overrides: Any,
    ) -> Replayed:
        """Run the adapter on a response whose body arrives as exactly ``reads``, without retries."""
        async with reads_client(reads, status=status, content_type=content_type) as client:
            return await self._drain(target or self.model(), context, client, option_overrides)

    async def _drain(
        self, target: Model, context: Context, client: httpx.AsyncClient, option_overrides: dict[str, Any]
    ) -> Replayed:
        options = StreamOptions(api_key="test-key", http_client=client, max_retries=0, **option_overrides)
        made = self.adapter.stream_fn(target, context, options)
        stream = made if isinstance(made, AssistantMessageEventStream) else await made
        events = [event async for event in stream]
        return events, await stream.result()


# -- reading a final message; comparing runs ------------------------------------------------------------


def texts(message: AssistantMessage) -> str:
    """The message's text blocks, joined."""
    return "".join(block.text for block in message.content if isinstance(block, TextContent))


def first_text(message: AssistantMessage) -> str:
    """The text of the message's first text block."""
    return next(block.text for block in message.content if isinstance(block, TextContent))


def thinking(message: AssistantMessage) -> str:
    """The message's thinking blocks, joined."""
    return "".join(block.thinking for block in message.content if isinstance(block, ThinkingContent))


def calls(message: AssistantMessage) -> list[ToolCall]:
    """The message's tool calls, in order."""
    return [block for block in message.content if isinstance(block, ToolCall)]


def _untimed(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in cast("dict[str, Any]", value).items() if k != "timestamp"}
    if isinstance(value, list):
        return [_untimed(v) for v in cast("list[Any]", value)]
    return value


def untimed_json(events: Iterable[AssistantMessageEvent]) -> list[dict[str, Any]]:
    """The events as pi JSON without any ``timestamp`` (the one thing two runs may differ in)."""
    return [_untimed(event_to_json(event)) for event in events]


# -- the built-in adapters ---------------------------------------------------------------------------


def _recorded_host(cassette: Cassette) -> Mapping[str, Any]:
    """A chat-completions recording's model, on the host it was recorded from (so that host's profile
    applies), with reasoning on."""
    url = cassette.interactions[0].request.url.split("#", 1)[0]
    return {
        "id": cassette.model or "recorded-model",
        "base_url": url.removesuffix("/chat/completions"),
        "provider": "recorded",
        "reasoning": True,
    }


def _recorded_gemini(cassette: Cassette) -> Mapping[str, Any]:
    """The Gemini model a recording answered."""
    return {"id": cassette.model or "gemini-2.5-flash"}


ANTHROPIC = AdapterUnderTest(
    ANTHROPIC_ADAPTER,
    {"id": "claude-haiku-4-5", "provider": "anthropic", "base_url": "https://api.anthropic.com", "max_tokens": 1024},
)
OPENAI_COMPLETIONS = AdapterUnderTest(
    OPENAI_COMPLETIONS_ADAPTER,
    {"id": "gpt-4o", "provider": "openai", "base_url": "https://api.openai.com/v1", "max_tokens": 4096},
    replay_fields=_recorded_host,
)
OPENAI_RESPONSES = AdapterUnderTest(
    OPENAI_RESPONSES_ADAPTER,
    {"id": "gpt-5", "provider": "openai", "base_url": "https://api.openai.com/v1", "reasoning": True},
)
GOOGLE = AdapterUnderTest(
    GOOGLE_ADAPTER,
    {
        "id": "gemini-2.5-flash",
        "provider": "google",
        "base_url": "https://generativelanguage.googleapis.com/v1beta",
        "max_tokens": 8192,
        "input": ["text", "image"],  # Gemini models take images
    },
    replay_fields=_recorded_gemini,
)
OLLAMA = AdapterUnderTest(
    OLLAMA_ADAPTER,
    {"id": "llama3.2", "provider": "ollama", "base_url": "http://localhost:11434", "max_tokens": 8192},
)
#: Claude on Vertex AI (``anthropic-vertex``): a placed model, so no test depends on the environment.
ANTHROPIC_VERTEX = AdapterUnderTest(
    ANTHROPIC_VERTEX_ADAPTER,
    {
        "id": "claude-sonnet-4-5@20250929",
        "provider": "google-vertex",
        "max_tokens": 1024,
        "reasoning": True,
        "compat": {"project": "test-project", "location": "us-east5"},
    },
    replay_fields=lambda cassette: {"id": cassette.model or "claude-sonnet-4-5@20250929"},
)

# -- Amazon Bedrock ConverseStream (appended by its package's tests) ------------------------------------

from streamfns.bedrock import ADAPTER as BEDROCK_ADAPTER  # noqa: E402 - appended with its adapter

__all__ += ["BEDROCK"]
#: Bedrock ConverseStream: an explicit endpoint and region, so no test depends on the environment.
BEDROCK = AdapterUnderTest(
    BEDROCK_ADAPTER,
    {
        "id": "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        "provider": "amazon-bedrock",
        "base_url": "https://bedrock-runtime.us-east-1.amazonaws.com",
        "max_tokens": 8192,
        "reasoning": True,
        "input": ["text", "image"],
    },
    replay_fields=lambda cassette: {"id": cassette.model or "us.anthropic.claude-sonnet-4-5-20250929-v1:0"},
)
#: Claude on Amazon Bedrock (``anthropic-bedrock``): a model in a named region (no test depends on the
#: environment's); the tests' key is sent as a Bedrock API key (Bearer), so nothing is signed with SigV4.
ANTHROPIC_BEDROCK = AdapterUnderTest(
    ANTHROPIC_BEDROCK_ADAPTER,
    {
        "id": "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        "provider": "amazon-bedrock-anthropic",
        "max_tokens": 1024,
        "reasoning": True,
        "compat": {"region": "us-east-1"},
    },
    replay_fields=lambda cassette: {"id": cassette.model or "us.anthropic.claude-sonnet-4-5-20250929-v1:0"},
)
