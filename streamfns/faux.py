"""A scripted, deterministic provider for tests, demos and conformance self-checks (api ``faux``).

Script responses as assistant messages (or factories producing them); each call streams the next
one through the real :class:`normalize.MessageBuilder`, split into token-sized chunks, optionally
paced in tokens per second, honouring abort between chunks. Usage is estimated at four characters
per token. When the script runs out, the call ends with an ``error`` ("no more scripted responses").

    faux = FauxProvider()
    faux.set_responses([faux_message([faux_thinking("…"), faux_text("Hello")])])
    faux.register()
    message = await streamfns.complete(faux.model(), context)
"""

from __future__ import annotations

import copy
import hashlib
import inspect
import json
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from normalize import (
    AssistantContent,
    AssistantMessage,
    AssistantMessageEvent,
    AssistantMessageEventStream,
    Context,
    ErrorInfo,
    MessageBuilder,
    Model,
    StopReason,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ToolCall,
    sleep_unless_aborted,
)
from streamfns._registry import register_api, unregister_api

__all__ = [
    "FauxProvider",
    "FauxResponse",
    "FauxState",
    "faux_message",
    "faux_text",
    "faux_thinking",
    "faux_tool_call",
]

_CHARS_PER_TOKEN = 4


def faux_text(text: str) -> TextContent:
    """A text block for a scripted message."""
    return TextContent(text=text)


def faux_thinking(thinking: str, signature: str | None = None) -> ThinkingContent:
    """A thinking block for a scripted message."""
    return ThinkingContent(thinking=thinking, thinking_signature=signature)


def faux_tool_call(name: str, arguments: dict[str, Any], *, id: str | None = None) -> ToolCall:
    """A tool call for a scripted message (a deterministic id is made when none is given)."""
    digest = hashlib.sha256(f"{name}:{json.dumps(arguments, sort_keys=True)}".encode()).hexdigest()[:10]
    return ToolCall(id=id or f"faux_{digest}", name=name, arguments=arguments)


def faux_message(
    content: str | AssistantContent | Sequence[AssistantContent],
    *,
    stop_reason: StopReason = "stop",
    error_message: str | None = None,
    error_info: ErrorInfo | None = None,
    response_id: str | None = None,
) -> AssistantMessage:
    """A scripted assistant message; ``content`` may be a string, a block or a list of blocks."""
    blocks: list[AssistantContent]
    if isinstance(content, str):
        blocks = [TextContent(text=content)]
    elif isinstance(content, TextContent | ThinkingContent | ToolCall):
        blocks = [content]
    else:
        blocks = list(content)
    return AssistantMessage(
        content=blocks,
        api="faux",
        provider="faux",
        model="faux-1",
        stop_reason=stop_reason,
        error_message=error_message,
        error_info=error_info,
        response_id=response_id,
    )


@dataclass(slots=True)
class FauxState:
    """What the provider has seen: calls made so far."""

    call_count: int = 0


FauxResponse = (
    AssistantMessage
    | Callable[[Context, StreamOptions | None, FauxState, Model], AssistantMessage | Awaitable[AssistantMessage]]
)


@dataclass(slots=True)
class FauxProvider:
    """A scripted provider; register it to make ``streamfns.stream`` use it for its ``api``.

    ``token_size`` is the (min, max) tokens per chunk; ``tokens_per_second`` paces chunks (None:
    one chunk per event-loop turn); ``seed`` makes chunking reproducible per call.
    """

    api: str = "faux"
    provider: str = "faux"
    model_ids: tuple[str, ...] = ("faux-1",)
    tokens_per_second: float | None = None
    token_size: tuple[int, int] = (3, 5)
    seed: int = 0
    state: FauxState = field(default_factory=FauxState)
    _queue: list[FauxResponse] = field(default_factory=list[FauxResponse])

    def model(self, id: str | None = None) -> Model:
        """A model of this provider (the first scripted id by default)."""
        return Model(
            id=id or self.model_ids[0],
            api=self.api,
            provider=self.provider,
            reasoning=True,
            input=["text", "image"],
            context_window=128_000,
            max_tokens=16_384,
        )

    def set_responses(self, responses: Sequence[FauxResponse]) -> None:
        """Replace the script."""
        self._queue = list(responses)

    def append_responses(self, responses: Sequence[FauxResponse]) -> None:
        """Add responses to the end of the script."""
        self._queue.extend(responses)

    @property
    def pending(self) -> int:
        """Scripted responses not yet used."""
        return len(self._queue)

    def register(self) -> FauxProvider:
        """Register this provider's StreamFn for its api; returns self."""
        register_api(self.api, self)
        return self

    def unregister(self) -> None:
        """Remove this provider's api from the registry."""
        unregister_api(self.api)

    def __call__(
        self, model: Model, context: Context, options: StreamOptions | None = None, /
    ) -> AssistantMessageEventStream:
        """The StreamFn: stream the next scripted response.

        A call whose signal is already aborted answers ``aborted`` at once and leaves the script as it
        is: nothing was sent, so no response is used up (``state.call_count`` still counts the call)."""
        self.state.call_count += 1
        already_aborted = options is not None and options.signal is not None and options.signal.aborted
        step = self._queue.pop(0) if self._queue and not already_aborted else None
        rng = random.Random(self.seed * 1_000_003 + self.state.call_count)
        return AssistantMessageEventStream.from_batches(self._run(step, model, context, options, rng), model=model)

    async def _run(
        self,
        step: FauxResponse | None,
        model: Model,
        context: Context,
        options: StreamOptions | None,
        rng: random.Random,
    ) -> AsyncIterator[Sequence[AssistantMessageEvent]]:
        builder = MessageBuilder(model)
        signal = options.signal if options else None
        if signal is not None and signal.aborted:
            builder.abort(signal.reason)
            yield builder.drain()
            return
        if step is None:
            builder.fail(ErrorInfo.of("config"), "no more scripted responses for the faux provider")
            yield builder.drain()
            return
        scripted = step if isinstance(step, AssistantMessage) else step(context, options, self.state, model)
        if inspect.isawaitable(scripted):
            scripted = await scripted
        script = copy.deepcopy(scripted)
        builder.response(id=script.response_id)
        prompt_tokens = _estimate_tokens(json.dumps(context.to_json(), ensure_ascii=False))
        builder.usage(input=prompt_tokens, output=0)
        builder.start()
        yield builder.drain()
        output_chars = 0
        for index, block in enumerate(script.content):
            if signal is not None and signal.aborted:
                break
            for piece in self._pieces(block, rng):
                output_chars += len(piece)
                self._emit(builder, index, block, piece)
                builder.usage(output=_estimate_tokens_from_chars(output_chars))
                yield builder.drain()
                if await self._pause(piece, signal):
                    break
            if signal is not None and signal.aborted:
                break
            if isinstance(block, ThinkingContent) and block.thinking_signature:
                builder.block_signature(index, block.thinking_signature)
            if not builder.is_open(index):  # an empty block never opened through a delta
                self._emit(builder, index, block, "")
            builder.block_end(index)
            yield builder.drain()
        if signal is not None and signal.aborted:
            builder.abort(signal.reason)
        elif script.stop_reason in ("error", "aborted"):
            info = script.error_info or ErrorInfo.of("aborted" if script.stop_reason == "aborted" else "server")
            builder.fail(info, script.error_message or f"scripted {script.stop_reason}")
        elif script.stop_reason == "pending":
            builder.fail(ErrorInfo.of("protocol"), "the scripted response ended without a stop reason")
        else:
            builder.stop(script.stop_reason, script.stop_reason)
            builder.finish()
        yield builder.drain()

    def _pieces(self, block: AssistantContent, rng: random.Random) -> list[str]:
        if isinstance(block, TextContent):
            text = block.text
        elif isinstance(block, ThinkingContent):
            text = block.thinking
        else:
            text = json.dumps(block.arguments, ensure_ascii=False) if block.arguments else ""
        pieces: list[str] = []
        low, high = self.token_size
        position = 0
        while position < len(text):
            size = rng.randint(low, high) * _CHARS_PER_TOKEN
            pieces.append(text[position : position + size])
            position += size
        return pieces

    @staticmethod
    def _emit(builder: MessageBuilder, index: int, block: AssistantContent, piece: str) -> None:
        if isinstance(block, TextContent):
            builder.text_delta(index, piece)
        elif isinstance(block, ThinkingContent):
            if not builder.is_open(index):
                builder.thinking_start(index, redacted=block.redacted)
            builder.thinking_delta(index, piece)
        else:
            if not builder.is_open(index):
                builder.tool_call_start(index, block.id, block.name, thought_signature=block.thought_signature)
            builder.tool_call_delta(index, piece)

    async def _pause(self, piece: str, signal: Any) -> bool:
        delay = 0.0
        if self.tokens_per_second:
            delay = _estimate_tokens_from_chars(len(piece)) / self.tokens_per_second
        return await sleep_unless_aborted(delay, signal)


def _estimate_tokens(text: str) -> int:
    return _estimate_tokens_from_chars(len(text))


def _estimate_tokens_from_chars(chars: int) -> int:
    return (chars + _CHARS_PER_TOKEN - 1) // _CHARS_PER_TOKEN
