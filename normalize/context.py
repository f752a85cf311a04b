"""The request context, stream options and thinking levels."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast

from normalize._jsonmodel import JsonModel, adapter_for
from normalize.content import TextContent
from normalize.messages import Message, SystemMessage, Tool
from normalize.secret_forms import MASK, masked_headers, masked_repr
from normalize.transcript import sanitize_surrogates, transform_messages

if TYPE_CHECKING:
    from normalize.abort import AbortSignal
    from normalize.model import Model

__all__ = [
    "DEFAULT_PROGRESS_TIMEOUT_S",
    "THINKING_LEVELS",
    "CacheRetention",
    "Context",
    "EffectiveSystem",
    "SplitTranscript",
    "StreamOptions",
    "ThinkingLevel",
    "effective_system",
    "normalize_context",
    "split_transcript",
    "system_update_text",
    "transcript_for",
]

ThinkingLevel = Literal["off", "minimal", "low", "medium", "high", "xhigh", "max"]
THINKING_LEVELS: tuple[ThinkingLevel, ...] = ("off", "minimal", "low", "medium", "high", "xhigh", "max")
CacheRetention = Literal["none", "short", "long"]
#: How long a response may go without content by default (``StreamOptions.progress_timeout``): longer
#: than the idle timeout, so it only ends streams kept open by keep-alives, and long enough for a model
#: that streams nothing while it thinks behind keep-alives.
DEFAULT_PROGRESS_TIMEOUT_S = 300.0


@dataclass(slots=True, kw_only=True)
class Context(JsonModel):
    """What to send: the transcript, plus the legacy ``system_prompt``/``tools`` fields.

    Adapters read :func:`normalize_context`'s result, where the legacy fields have moved into a
    leading :class:`SystemMessage`.
    """

    messages: list[Message] = field(default_factory=list[Message])
    system_prompt: str | None = None
    tools: list[Tool] | None = None


def normalize_context(context: Context) -> Context:
    """Return a context whose system prompt and tools live in a leading ``SystemMessage``.

    An empty prompt and an empty tool list are dropped. The input is not modified.
    """
    if not context.system_prompt and not context.tools:
        return Context(messages=list(context.messages))
    leading = SystemMessage(
        content=context.system_prompt or None,
        tools_added=list(context.tools) if context.tools else None,
        timestamp=0,
    )
    return Context(messages=[leading, *context.messages])


@dataclass(slots=True)
class EffectiveSystem:
    """The system prompt and tool set in force after replaying system messages."""

    prompt: str
    tools: list[Tool]


def _system_text(content: str | list[TextContent] | None) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(block.text for block in content)


def effective_system(messages: list[Message]) -> EffectiveSystem:
    """Replay every system message in order: append prompt text, replace sections, add/remove tools.

    Sections render after the appended text, in first-seen order, each as its own paragraph.
    """
    parts: list[str] = []
    sections: dict[str, str] = {}
    tools: dict[str, Tool] = {}
    for message in messages:
        if not isinstance(message, SystemMessage):
            continue
        text = _system_text(message.content)
        if text:
            parts.append(text)
        if message.sections:
            sections.update(message.sections)
        for removed in message.tools_removed or ():
            tools.pop(removed.name, None)
        for added in message.tools_added or ():
            tools[added.name] = added
    prompt = "\n\n".join([*parts, *(value for value in sections.values() if value)])
    return EffectiveSystem(prompt=prompt, tools=list(tools.values()))


@dataclass(slots=True)
class SplitTranscript:
    """A transcript as request builders send it: the leading system prompt, the tool set in force
    at the end, and the turns from the first non-system message on (later system messages stay in
    ``turns``, where each vendor renders them its own way — see :func:`system_update_text`)."""

    prompt: str
    tools: list[Tool]
    turns: list[Message]


def split_transcript(messages: Sequence[Message]) -> SplitTranscript:
    """Split ``messages`` (see :class:`SplitTranscript`); the prompt is scrubbed of lone surrogates."""
    first_turn = next((i for i, m in enumerate(messages) if not isinstance(m, SystemMessage)), len(messages))
    leading = effective_system(list(messages[:first_turn]))
    turns = list(messages[first_turn:])
    # The tools in force at the end: the leading ones, unless a later system message changes them.
    later = any(isinstance(message, SystemMessage) for message in turns)
    tools = effective_system(list(messages)).tools if later else leading.tools
    return SplitTranscript(prompt=sanitize_surrogates(leading.prompt), tools=tools, turns=turns)


def transcript_for(
    model: Model, context: Context, *, normalize_tool_call_id: Callable[[str], str] | None = None
) -> SplitTranscript:
    """What a request builder renders for ``model``: ``context`` with its system prompt and tools as
    a leading system message (:func:`normalize_context`), made safe to replay to ``model``
    (:func:`~normalize.transform_messages`, foreign tool-call ids through ``normalize_tool_call_id``),
    then split into prompt, tools and turns (:func:`split_transcript`)."""
    messages = transform_messages(
        normalize_context(context).messages, model, normalize_tool_call_id=normalize_tool_call_id
    )
    return split_transcript(messages)


def system_update_text(message: SystemMessage) -> str:
    """The text a system message adds mid-conversation — its content, then its sections' values —
    as the paragraphs of one string, blank parts dropped and lone surrogates scrubbed."""
    parts: list[str] = []
    content = message.content
    if isinstance(content, str):
        parts.append(content)
    elif content:
        parts.extend(block.text for block in content)
    if message.sections:
        parts.extend(message.sections.values())
    return sanitize_surrogates("\n\n".join(part for part in parts if part.strip()))


def messages_from_json(data: Any) -> list[Message]:
    """Validate a JSON list of pi-shaped messages."""
    adapter = adapter_for(list[Message])
    if isinstance(data, str | bytes):
        return cast("list[Message]", adapter.validate_json(data))
    return cast("list[Message]", adapter.validate_python(data))


@dataclass(slots=True, kw_only=True)
class StreamOptions:
    """Per-call options. A plain dataclass (not pydantic): it carries live objects.

    ``signal`` aborts the call. ``http_client`` is the caller's own HTTP client, whose connection pool
    the call shares and which the adapter never closes: an ``httpx.AsyncClient`` (cassettes pass one),
    an ``httpx2.AsyncClient``, an ``aiohttp.ClientSession`` or a ``streamfns.kit.Transport``. Without
    one, ``transport`` names the HTTP library of the kit's own client (``"httpx"``: one made for the
    call; ``"aiohttp"``: one session per event loop, shared by the calls in flight; ``"native"``: the
    kit's own HTTP/1.1 client on asyncio, a connection per call, for the most streams a process can
    hold; None: the process-wide choice, ``streamfns.kit.set_default_transport``). The bounds,
    in seconds (adapters on the kit honour them all, on every transport):

    - ``timeout``, the idle timeout: the longest wait for the next bytes (None: 120 s);
    - ``connect_timeout`` bounds connecting (None: 15 s, or the idle timeout when shorter);
    - ``progress_timeout`` (default :data:`DEFAULT_PROGRESS_TIMEOUT_S`, 300 s; None turns it off) bounds
      the time a response goes without content — keep-alive comments, ``ping`` frames and other frames
      that give the consumer no event do not extend it, so a server that only keeps the connection
      alive cannot hold a stream open;
    - ``total_timeout`` (off by default) bounds the whole call, retries included — the one bound a
      server that keeps sending content, however slowly, cannot outlast;
    - ``max_retries`` bounds retries before any output (default 2) and ``max_retry_delay_s`` every wait
      before one (default 60): a server asking for a longer wait ends the stream at once; 0 means
      never wait (retry at once when the server asks for no delay, else end the stream).

    ``on_payload`` may inspect or replace the vendor payload; ``on_response`` sees the HTTP status and
    headers before the body is read. ``session_id`` lets vendors that key prompt caches by session
    (OpenAI's ``prompt_cache_key``) route related calls together.
    """

    signal: AbortSignal | None = None
    api_key: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    reasoning: ThinkingLevel | None = None
    thinking_budgets: dict[str, int] | None = None
    session_id: str | None = None
    cache_retention: CacheRetention = "short"
    headers: dict[str, str | None] | None = None
    http_client: object | None = None
    transport: str | None = None
    timeout: float | None = None
    connect_timeout: float | None = None
    total_timeout: float | None = None
    progress_timeout: float | None = DEFAULT_PROGRESS_TIMEOUT_S
    max_retries: int = 2
    max_retry_delay_s: float = 60.0
    on_payload: Callable[[dict[str, Any], Model], dict[str, Any] | Awaitable[dict[str, Any] | None] | None] | None = (
        None
    )
    on_response: Callable[[int, Mapping[str, str], Model], Awaitable[None] | None] | None = None

    def __repr__(self) -> str:
        # People log their options: the key and every credential header show masked, as pydantic's
        # SecretStr shows a secret (the fields themselves are untouched).
        return masked_repr(self, api_key=None if self.api_key is None else MASK, headers=masked_headers(self.headers))
