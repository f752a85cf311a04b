"""Chat Completions chunks → builder calls. Pure: no I/O, no clock.

One decoder for every server that streams ``chat.completion.chunk`` objects: this api's
(:class:`CompletionsDecoder`, read per model through its compat profile) and Mistral's native api
(:class:`streamfns.mistral.MistralDecoder`, a subclass naming its own vendor, error table, stop
table and the few things Mistral does differently). What is read, and how it lands in the normalized
message:

- A ``data:`` value that is ``null`` or not an object is skipped; SSE comments (OpenRouter's
  ``: OPENROUTER PROCESSING``) never reach the decoder, nor do ``event: ping`` keep-alives.
  ``[DONE]`` ends the stream.
- What cannot be placed is a ``protocol`` error, never a silent drop (dropping it would end a
  shortened answer as ``done``): ``choices`` that is not a list or holds a non-object, a ``delta``
  that is not an object (or absent/``null``), a choice carrying the non-streaming ``message``
  instead of a delta, ``delta.content`` that is neither text nor a list, a content part that is not
  an object, a ``text`` part whose ``text`` is not a string, a ``thinking`` part whose ``thinking`` is
  neither text nor a list of parts (or holds a non-object, or a text part without string text), and
  ``tool_calls`` or a tool-call ``function`` of the wrong type. The usage such a chunk carries is
  kept with the partial reply.
- Only choice ``index`` 0 is read: with ``n > 1`` the other choices are ignored (one assistant
  message per call).
- ``delta.content`` is text; a content *list* (Mistral's) holds ``text`` and ``thinking`` parts, a
  ``thinking`` part's ``thinking`` being text or a list of ``text`` parts; its ``signature``, when one
  comes, is kept with the thinking block. Other parts (Mistral's ``reference`` ids …) carry no text of
  the message. ``<think>`` tags inside plain content stay text: they are the model's words, and only
  a server-side reasoning parser can tell them apart reliably.
- Reasoning comes from the first non-empty field of the profile's ``reasoning_fields``
  (``reasoning_content``, ``reasoning``, ``reasoning_text``) in each delta, never two (some servers
  send the same text under two names); the thinking block's signature is that field's name, so
  the text is replayed through the same field. Without such a field, the text of
  ``reasoning_details`` entries (``reasoning.text``/``reasoning.summary``) is read instead.
- ``reasoning_details`` entries of type ``reasoning.encrypted`` with an ``id`` are attached, as
  JSON, to the tool call with that id as its thought signature — also when they arrive before the
  call; one matching no call is not kept.
- ``delta.refusal`` (structured-output refusals) is shown as text and ends the stream as an error
  of kind ``refusal`` carrying the refusal text.
- Tool calls are located by ``index``, then by ``id``, then (neither given) as the continuation of
  the last call. An id that changes mid-stream keeps the first; a missing id is generated (unique;
  :meth:`CompletionsDecoder._missing_id`). A new id *and* name at an index whose arguments already
  look complete is a new call (servers that number every call 0). A call's arguments are raw JSON
  fragments (or an object, sent on as its JSON), parsed strictly once at the end; fragments that
  arrive before the call's name are held until it comes, and a call that never gets a name is a
  ``protocol`` error. The legacy ``delta.function_call`` is one more call, in a slot of its own (no
  ``tool_calls`` index, ``-1`` included, reaches it).
- Text and thinking form sequential blocks: a new kind of content (or a tool call) ends the open
  text or thinking block, and later text starts a new one. Tool calls stay open until the end.
- Usage comes from ``chunk.usage``, else — in the chunk that finishes choice 0 or a chunk without
  choice 0 — ``choice.usage`` (Moonshot/Kimi), else ``x_groq.usage`` (Groq); an error chunk's usage
  is kept too. The arithmetic is :func:`~streamfns.openai_completions.usage.usage_fields`.
- Server-side extras are not part of the message: ``annotations`` (citations), Groq's
  ``executed_tools`` and ``channel``, ``logprobs``, moderation and content-filter results.

How the stream ends: ``finish_reason`` of choice 0 is the vendor's terminal marker; the stream then
ends at ``[DONE]`` (usage usually arrives in a chunk between the two) or at EOF, or when content for
a *new* response follows it: a chunk whose ``id`` differs from the response id (a server splicing
two responses into one body). Content after the ``finish_reason`` in a chunk of the *same* (or no)
id means that finish_reason was not final (some gateways put ``"stop"`` on every chunk): it is
forgotten and the content read, so only a finish_reason that no content follows ends the message
(a tool call after a ``"stop"`` needs its own finish_reason). A failure is never forgotten: the first
finish_reason that is not a normal stop (``content_filter``, ``error``, an unknown word) ends the
message as that failure, whatever ``stop`` or content follows it; nor is a truncation: once a
finish_reason said ``length``, the message ends ``length`` (unless a failure came), whatever ``stop``
follows it. EOF after the ``finish_reason`` but before any usage is ``truncated`` when the profile
asked for usage in the stream (``usage_in_stream``: the usage chunk was cut off); a ``[DONE]`` still
ends such a stream ``done`` (a server may ignore the request). ``[DONE]`` without a ``finish_reason``
is ``truncated`` — unless the profile says the server never sends one (``finish_reason_reliable=False``);
EOF without either is ``truncated`` (the kit reports it).
Finish reasons: ``stop``/``end`` (and ``eos``, ``eos_token``, ``stop_sequence``, ``end_turn``) →
``stop``; ``length``/``max_tokens`` → ``length``; ``tool_calls``/``function_call``/``tool_use`` →
``toolUse``; the profile's ``finish_reasons`` add more; ``content_filter`` → error
``content_filter``; ``network_error`` → error ``network``; ``error`` → error ``server``; anything
else → error ``protocol`` naming the raw value. A mid-stream ``{"error": …}`` chunk, a flat
``{"object": "error"}`` chunk or an ``event: error`` ends the stream with the kind of its code or
type.

Chunks that repeat one layout (a text piece, a reasoning piece, one thinking or text part of a
content list, one started call's argument fragment) are read off their bytes after the first
(:mod:`streamfns.kit.shapes`), through the same handlers the full path uses.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import Any, ClassVar, Final, cast

import jiter

from normalize import ErrorInfo, MessageBuilder, Model, StopReason
from streamfns.kit import (
    SHAPE_LEARNS,
    CompatError,
    Decoder,
    ErrorTable,
    EventShape,
    HolePath,
    ServerSentEvent,
    Shortcut,
    StopTable,
    StreamFailure,
    VendorError,
    array,
    changed,
    load_json,
    obj,
    text,
)
from streamfns.openai_completions.compat import PROFILES, CompletionsCompat, compat_for
from streamfns.openai_completions.errors import ERRORS
from streamfns.openai_completions.usage import usage_fields

__all__ = ["STOP_REASONS", "VENDOR", "CompletionsDecoder"]

VENDOR: Final = "Chat Completions"

#: Finish reasons every profile understands (a profile's ``finish_reasons`` add to these).
STOP_REASONS: Final = StopTable(
    vendor=VENDOR,
    stops={
        "stop": "stop",
        "end": "stop",  # Ollama, LM Studio
        "eos": "stop",
        "eos_token": "stop",
        "stop_sequence": "stop",
        "end_turn": "stop",  # Anthropic's word, passed through by proxies
        "length": "length",
        "max_tokens": "length",
        "tool_calls": "toolUse",
        "function_call": "toolUse",
        "tool_use": "toolUse",
    },
    errors={
        "content_filter": "content_filter",
        "network_error": "network",
        "error": "server",  # OpenRouter: the upstream provider failed mid-stream
    },
    error_message="{vendor} stopped the response: finish_reason {raw}",
    unknown_message="{vendor} sent an unknown finish_reason {raw!r} (map it with the model's compat finish_reasons)",
)
_DONE: Final = b"[DONE]"
_from_json = jiter.from_json  # bound once: looked up per chunk otherwise
_OPEN_BRACE: Final = ord("{")
_TEXT, _THINKING, _REFUSAL = 1, 2, 3
#: The slot of the legacy ``delta.function_call``: a key no vendor index can equal (``tool_calls``
#: indexes are ints, -1 included), so the two protocols never share a call.
_LEGACY: Final = "legacy function_call"
#: Members a chunk may change on every chunk that no reading depends on: OpenAI's random padding.
_PADDING: Final[tuple[HolePath, ...]] = (("obfuscation",),)
_CONTENT: Final[HolePath] = ("choices", 0, "delta", "content")
#: The text of a content list's one thinking part holding one text part, and of its one text part.
_PART_THINKING: Final[HolePath] = (*_CONTENT, 0, "thinking", 0, "text")
_PART_TEXT: Final[HolePath] = (*_CONTENT, 0, "text")
_ARGUMENTS: Final[HolePath] = ("choices", 0, "delta", "tool_calls", 0, "function", "arguments")
# The members a part or a tool-call entry read off its bytes may have: those the full path reads the
# same way whatever the other values (a thinking part's ``closed`` flag is not read).
_THINKING_PART_KEYS: Final = frozenset({"type", "thinking", "closed"})
_TEXT_PART_KEYS: Final = frozenset({"type", "text"})
_ENTRY_KEYS: Final = frozenset({"id", "type", "index", "function"})
_FUNCTION_KEYS: Final = frozenset({"name", "arguments"})


class _Call:
    """One tool call being assembled: its builder key and what the vendor has said about it."""

    __slots__ = ("id", "key", "last", "name", "pending", "started")

    def __init__(self, key: int) -> None:
        self.key = key
        self.id = ""
        self.name = ""
        self.started = False
        #: Argument fragments that arrived before the call's name.
        self.pending: list[str] = []
        #: The last argument fragment (kept, not inspected, on the hot path).
        self.last = ""

    @property
    def closed(self) -> bool:
        """Whether the last fragment ended with ``}``: the arguments may be complete."""
        return self.last.rstrip().endswith("}")


def _dict(value: object) -> dict[str, Any] | None:
    """``value`` when it is a JSON object (hot path: no copy, no isinstance walk)."""
    return cast("dict[str, Any]", value) if type(value) is dict else None


def _only_keys(value: Any, allowed: frozenset[str]) -> bool:
    return value.__class__ is dict and value.keys() <= allowed


def _fragment(arguments: object) -> str:
    if isinstance(arguments, str):
        return arguments
    if arguments is None:
        return ""
    # Some servers send the arguments as an object; the builder still parses them strictly.
    return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))


class CompletionsDecoder(Decoder[ServerSentEvent]):
    """Feeds one response's chunks to a :class:`MessageBuilder` (see the module docstring).

    A server with its own api but these chunks subclasses it, naming what differs as the class
    attributes and hooks below (``_vendor``, ``_errors``, ``_stop_table``, ``_done_hint``,
    :meth:`_profile`, :meth:`_entry_id`, :meth:`_missing_id`, :meth:`_usage`): every reading rule
    stays here, once."""

    #: The vendor named in messages.
    _vendor: ClassVar[str] = VENDOR
    #: How error chunks and ``event: error`` read.
    _errors: ClassVar[ErrorTable] = ERRORS
    #: The finish reasons (the profile's ``finish_reasons`` are added to them).
    _stop_table: ClassVar[StopTable] = STOP_REASONS
    #: Advice appended to the message of a ``[DONE]`` without a finish_reason.
    _done_hint: ClassVar[str] = (
        " (set the model's compat finish_reason_reliable=false for a server that never sends one)"
    )

    #: Whether the shape path of :meth:`on_event` depends on nothing but the event's name and bytes,
    #: so the kit may take it itself (see :class:`~streamfns.kit.Shortcut`); a subclass that reads a
    #: chunk otherwise first says False, or gives the kit its own reading (:meth:`_shortcut_for`: Mistral
    #: strips a padding first).
    _SHORTCUTS: ClassVar[bool] = True
    #: The members a vendor fills with a random padding, read by nothing: a learned layout takes one as
    #: a hole once it changed from the chunk learned before (see _install).
    _padding: ClassVar[tuple[HolePath, ...]] = _PADDING

    __slots__ = (
        "_block",
        "_builder",
        "_by_id",
        "_by_index",
        "_calls",
        "_cut",
        "_failure",
        "_fields",
        "_finish",
        "_kind",
        "_last_call",
        "_learns",
        "_need_id",
        "_refusal",
        "_reliable",
        "_seq",
        "_shape",
        "_shape_call",
        "_shape_sink",
        "_shape_value",
        "_signatures",
        "_stops",
        "_usage_expected",
        "_usage_seen",
        "shortcut",
    )

    def __init__(self, builder: MessageBuilder, model: Model) -> None:
        self._builder = builder
        compat = self._profile(model)
        self._fields = compat.reasoning_fields
        self._reliable = compat.finish_reason_reliable
        #: The request asked for usage in the stream (``stream_options.include_usage``).
        self._usage_expected = compat.usage_in_stream
        self._usage_seen = False
        # The profile's values were checked to be stop reasons (CompletionsCompat.__post_init__).
        self._stops = self._stop_table.with_stops(cast("dict[str, StopReason]", compat.finish_reasons))
        #: The raw finish reason of choice 0 once it came ("" for a [DONE] that stands in for it).
        self._finish: str | None = None
        #: The first finish reason that is not a normal stop (an error or an unknown word); it stands.
        self._failure: str | None = None
        #: The first finish reason that means ``length``; it stands over a later ``stop``.
        self._cut: str | None = None
        #: The open text/thinking/refusal block: its kind and builder key.
        self._kind = 0
        # Builder keys are ints (cheap to hash on every delta): text, thinking and refusal blocks
        # count up from 1, tool calls count down from -1.
        self._block = 0
        self._seq = 0
        self._calls: list[_Call] = []
        #: Calls by ``tool_calls`` index (and the legacy call under ``_LEGACY``, matched by identity).
        self._by_index: dict[int | str, _Call] = {}
        self._by_id: dict[str, _Call] = {}
        self._last_call: _Call | None = None
        #: Encrypted reasoning waiting for the tool call it names.
        self._signatures: dict[str, str] = {}
        self._refusal: list[str] = []
        #: No chunk id seen yet (the first non-empty one is the response id).
        self._need_id = True
        # The layout of the last chunk read whole that carried one piece (text, reasoning, one content
        # part's text or one call's arguments) and nothing else, and the handler it went to: until
        # another chunk is read whole (which may change what a chunk means), a chunk whose bytes differ
        # from it only in that piece (and in OpenAI's random ``obfuscation`` padding, once seen
        # changing) goes to the same handler, read off the bytes (kit.shapes).
        self._shape: EventShape | None = None
        self._shape_sink: Callable[[str], None] = self._text_piece
        self._shape_call: _Call | None = None
        self._shape_value: Any = None
        self._learns = SHAPE_LEARNS
        #: The shape, for the kit (see _SHORTCUTS).
        self.shortcut: Shortcut | None = None

    # -- what a subclass may change -----------------------------------------------------------------

    @classmethod
    def _profile(cls, model: Model) -> CompletionsCompat:
        """The compat profile the chunks are read with: the model's (``compat_for``)."""
        try:
            return compat_for(model)
        except (CompatError, TypeError, ValueError):
            return PROFILES["generic"]  # the request builder has reported the mistake already

    def _entry_id(self, entry: dict[str, Any]) -> str:
        """The call id a ``tool_calls`` entry names ("" for none)."""
        return text(entry.get("id"))

    def _missing_id(self, call_position: int) -> str:
        """The id of the ``call_position``-th call (from 0) when the server sent none; "" lets the
        builder derive one from the response id and the content index."""
        return ""

    def _usage(self, usage: dict[str, Any]) -> None:
        self._usage_seen = True
        self._builder.usage(**usage_fields(usage))

    # -- events -------------------------------------------------------------------------------------

    def on_event(self, sse: ServerSentEvent) -> None:
        """Apply one server-sent event; raises :class:`StreamFailure` for vendor errors."""
        # The hot path (one call per token) allocates nothing and tests types with
        # ``x.__class__ is dict``: the fastest exact test, and it leaves ``Any`` values un-narrowed for
        # the type checker (no casts on the way).
        data = sse.data
        event = sse.event
        if event != "message":
            if event == "error":
                raise self._event_error(sse)
            if event == "ping":
                return  # a keep-alive some proxies send as a named event
        shape = self._shape
        if shape is not None:
            pieces = shape.match(data)
            if pieces is not None:
                self._shape_sink(pieces[0])
                return
            self._shape = self.shortcut = None
            self._learns += shape.hits > 0  # a learn that paid is given back (kit.SHAPE_LEARNS)
        if (not data or data[0] != _OPEN_BRACE) and data.strip() == _DONE:  # not an object: [DONE]?
            self._on_done()
            return
        try:
            value: Any = _from_json(data)
        except ValueError:
            value = load_json(data, self._vendor)  # repairs what it can, else a protocol error
        if value.__class__ is not dict:
            return  # null or a non-object: nothing to place (some servers send `data: null`)
        chunk: dict[str, Any] = value
        if chunk.get("error"):
            # An error chunk may carry the usage so far (OpenRouter): it is kept with the partial reply.
            self._chunk_usage(chunk, None)
            raise self._errors.from_event(chunk)
        if self._need_id:
            self._response_id(chunk.get("id"), chunk.get("model"))
        choices: Any = chunk.get("choices")
        choice: Any = None
        if choices.__class__ is list and choices:
            choice = choices[0]
            # Choice 0 is nearly always first; look further only when it is not.
            if choice.__class__ is not dict or choice.get("index", 0) not in (0, None):
                choice = self._choice(chunk, choices)
        if choice is None:
            if choices is not None and choices.__class__ is not list:
                raise self._unreadable(chunk, None, f"choices that are not a list: {choices!r:.100}")
            # A usage-only chunk, or another choice's, or a flat error object (vLLM's, Mistral's).
            self._chunk_usage(chunk, None)
            if chunk.get("object") == "error":
                raise self._errors.from_event(chunk)
            return
        delta: Any = choice.get("delta")
        if delta.__class__ is dict and delta:
            if self._finish is not None and self._carries_content(delta) and self._after_finish(chunk):
                return
            try:
                self._delta(delta)
            except StreamFailure:
                self._chunk_usage(chunk, choice)  # the usage this chunk carries outlives its bad delta
                raise
        elif (delta is not None and delta.__class__ is not dict) or choice.get("message") is not None:
            raise self._unreadable(chunk, choice, self._unplaceable(choice))
        reason: Any = choice.get("finish_reason")
        if reason or chunk.get("usage"):
            self._chunk_usage(chunk, choice)
            if reason:
                self._finish_reason(str(reason))
        elif (
            self._learns
            and choice is choices[0]
            and isinstance(delta, dict)
            and len(cast("dict[str, Any]", delta)) == 1
            and not self._need_id
            and self._finish is None
        ):
            self._learn(data, chunk, cast("dict[str, Any]", delta))
            self.shortcut = self._shortcut_for(event)

    def _shortcut_for(self, event: str) -> Shortcut | None:
        """The kit's shortcut for the layout just learned, from chunks of ``event`` (see _SHORTCUTS)."""
        return Shortcut.of(event, self._shape, self._shape_sink) if self._SHORTCUTS else None

    def on_eof(self) -> None:
        """The body ended without ``[DONE]``: a stream whose choice finished is complete, unless the
        usage it asked for never came (the body was cut before the usage chunk: ``truncated``);
        otherwise nothing is concluded (the kit reports ``truncated``). A failure reason, once sent,
        ends the stream as that failure whatever followed it."""
        if self._finish is None and self._failure is None:
            return
        if self._failure is None and self._usage_expected and not self._usage_seen:
            raise StreamFailure.of(
                "truncated",
                f"{self._vendor} stream ended after the finish_reason but before the usage it was asked for",
            )
        self._complete()

    # -- what a chunk holds -------------------------------------------------------------------------

    def _choice(self, chunk: dict[str, Any], choices: list[Any]) -> dict[str, Any] | None:
        """Choice 0 (``index`` 0, or no index), wherever it sits in the list; a choice that is not an
        object is a ``protocol`` error (whichever one it was, it cannot be read)."""
        for item in choices:
            choice = _dict(item)
            if choice is None:
                raise self._unreadable(chunk, None, f"a choice that is not an object: {item!r:.100}")
            if choice.get("index", 0) in (0, None):
                return choice
        return None

    def _unreadable(self, chunk: dict[str, Any], choice: dict[str, Any] | None, what: str) -> StreamFailure:
        """The ``protocol`` failure for a chunk we cannot place, the usage it carries kept."""
        self._chunk_usage(chunk, choice)
        return StreamFailure.protocol(f"{self._vendor} sent {what}")

    def _unplaceable(self, choice: dict[str, Any]) -> str:
        delta = choice.get("delta")
        if delta is None or isinstance(delta, dict):
            return f"a non-streaming choice.message instead of a delta: {choice.get('message')!r:.100}"
        return f"a delta that is not an object: {delta!r:.100}"

    def _response_id(self, value: object, served_by: object) -> None:
        """The response's id and the model the server says answered, from the first chunk that has an id."""
        if isinstance(value, str) and value:
            self._builder.response(id=value, model=served_by if isinstance(served_by, str) else None)
            self._need_id = False

    def _chunk_usage(self, chunk: dict[str, Any], choice: dict[str, Any] | None) -> None:
        """Usage from the chunk, else (Moonshot/Kimi) its choice, else (Groq) ``x_groq``. Servers
        that put it elsewhere than the chunk do so in the finishing or a usage-only chunk."""
        usage = _dict(chunk.get("usage"))
        if not usage and choice is not None:
            usage = _dict(choice.get("usage"))
        if not usage:
            usage = _dict(obj(chunk.get("x_groq")).get("usage"))
        if usage:
            self._usage(usage)

    def _carries_content(self, delta: dict[str, Any]) -> bool:
        if delta.get("content") or delta.get("refusal") or delta.get("tool_calls") or delta.get("function_call"):
            return True
        return any(delta.get(name) for name in self._fields)

    def _delta(self, delta: dict[str, Any]) -> None:
        """Apply one choice delta: reasoning, then content, refusal and tool calls, in that order.

        Most chunks carry one field — a text piece, or one tool call's argument fragment — and reach
        its handler after one lookup; every other delta takes the walk below. Either way the same
        handlers place the content, so the two cannot disagree."""
        if len(delta) == 1:
            content: Any = delta.get("content")
            if content.__class__ is str:
                if content:
                    self._text(content)
                return
            calls: Any = delta.get("tool_calls")
            if calls.__class__ is list:
                for entry in calls:
                    self._tool_delta(entry)
                return
        reasoning_done = False
        for name in self._fields:
            piece = delta.get(name)
            if type(piece) is str and piece:
                self._thinking(piece, name)
                reasoning_done = True
                break
        details = delta.get("reasoning_details")
        if details:
            detail_text = self._reasoning_details(array(details))
            if detail_text and not reasoning_done:
                self._thinking(detail_text, "reasoning_details")
        content = delta.get("content")
        if type(content) is str:
            if content:
                self._text(content)
        elif type(content) is list:
            self._content_parts(cast("list[Any]", content))
        elif content is not None:
            raise StreamFailure.protocol(
                f"{self._vendor} sent delta.content that is neither text nor a list of parts: {content!r:.100}"
            )
        refusal = delta.get("refusal")
        if type(refusal) is str and refusal:
            self._refusal_text(refusal)
        tool_calls = delta.get("tool_calls")
        if type(tool_calls) is list:
            for entry in cast("list[Any]", tool_calls):
                self._tool_delta(entry)
        elif tool_calls is not None:
            raise StreamFailure.protocol(
                f"{self._vendor} sent delta.tool_calls that is not a list: {tool_calls!r:.100}"
            )
        function_call = _dict(delta.get("function_call"))
        if function_call:
            # The legacy single-function protocol: one call, no id, continued by name-less deltas.
            self._tool_delta({"index": _LEGACY, "function": function_call})

    def _content_parts(self, parts: list[Any]) -> None:
        """A content list: ``text`` and ``thinking`` parts in order; other types carry no text of the
        message (Mistral's ``reference`` ids …). A part of a known type we cannot read is an error."""
        for part in parts:
            item = _dict(part)
            if item is None:
                raise StreamFailure.protocol(f"{self._vendor} sent a content part that is not an object: {part!r:.100}")
            kind = item.get("type")
            if kind == "text":
                piece = item.get("text")
                if type(piece) is not str:
                    raise StreamFailure.protocol(f"{self._vendor} sent a text part without text: {item!r:.100}")
                if piece:
                    self._text(piece)
            elif kind == "thinking":
                self._thinking_part(item)

    def _thinking_part(self, part: dict[str, Any]) -> None:
        inner = part.get("thinking")
        if type(inner) is str:
            piece = inner
        elif type(inner) is list:
            pieces: list[str] = []
            for sub in cast("list[Any]", inner):
                item = _dict(sub)
                if item is None or (item.get("type", "text") == "text" and type(item.get("text")) is not str):
                    raise StreamFailure.protocol(f"{self._vendor} sent a thinking part it cannot read: {part!r:.100}")
                if item.get("type", "text") == "text":
                    pieces.append(item["text"])
                # Other parts inside thinking (references) carry no text of the message.
            piece = "".join(pieces)
        elif inner is None:
            piece = ""  # a part that only carries a signature
        else:
            raise StreamFailure.protocol(f"{self._vendor} sent a thinking part it cannot read: {part!r:.100}")
        if piece:
            self._thinking(piece, None)
        signature = part.get("signature")
        if type(signature) is str and signature:
            key = self._block if self._kind == _THINKING else self._open(_THINKING)
            self._builder.block_signature(key, signature)

    def _reasoning_details(self, details: list[Any]) -> str:
        texts: list[str] = []
        for entry in details:
            item = obj(entry)
            kind = item.get("type")
            if kind == "reasoning.text":
                texts.append(text(item.get("text")))
            elif kind == "reasoning.summary":
                texts.append(text(item.get("summary")))
            elif kind == "reasoning.encrypted":
                detail_id = text(item.get("id"))
                if detail_id and item.get("data"):
                    signature = json.dumps(item, ensure_ascii=False, separators=(",", ":"))
                    call = self._by_id.get(detail_id)
                    if call is not None and call.started:
                        self._builder.block_signature(call.key, signature)
                    else:
                        self._signatures[detail_id] = signature
        return "".join(texts)

    # -- learning a chunk's layout ------------------------------------------------------------------

    def _learn(self, data: bytes, chunk: dict[str, Any], delta: dict[str, Any]) -> None:
        """Learn the layout of a chunk whose choice 0 carried one piece and nothing else (see __init__);
        the state checked by the caller is what would make the same bytes read otherwise. What is
        checked here is that the bytes hold exactly one piece, placed as the full path placed it.

        A piece for the text or thinking block still open goes straight to the builder's verb for it
        (this chunk was placed just now, and chunks read off the bytes change nothing else, so that
        block stays open and stays the one they continue); otherwise through the full path's handler."""
        field, piece = next(iter(delta.items()))
        kind = _TEXT
        field_name: str | None = None
        if piece.__class__ is str:
            path: HolePath = ("choices", 0, "delta", field)
            if field != "content":
                if field not in self._fields:
                    return
                kind, field_name = _THINKING, field
        elif field == "content":
            found = _one_part(piece)
            if found is None:
                return
            path, kind = found
        else:
            call = self._started_call(piece)
            if call is None:
                return
            self._shape_call = call
            self._install(data, chunk, _ARGUMENTS, self._call_fragment)
            return
        builder = self._builder
        sink: Callable[[str], None]
        if self._kind == kind:
            sink = partial(builder.text_delta if kind == _TEXT else builder.thinking_delta, self._block)
        elif kind == _TEXT:
            sink = self._text_piece
        else:
            # Bound positionally: a partial with a keyword merges it into a new dict on every call.
            sink = partial(self._thinking_piece, field_name)
        self._install(data, chunk, path, sink)

    def _install(self, data: bytes, chunk: dict[str, Any], path: HolePath, sink: Callable[[str], None]) -> None:
        self._learns -= 1
        holes: list[HolePath] = [path, *changed(self._shape_value, chunk, self._padding)]
        self._shape = EventShape.learn(data, chunk, holes)
        self._shape_value = chunk
        self._shape_sink = sink

    def _started_call(self, calls: Any) -> _Call | None:
        """The started call that ``calls`` (a ``tool_calls`` value) continues with a string fragment and
        nothing else, placed as the full path places it and changing nothing the full path would
        change (an id or name that is the call's own, or none; an index that already points to it);
        else None."""
        if calls.__class__ is not list or len(calls) != 1:
            return None
        entry: Any = calls[0]
        if not _only_keys(entry, _ENTRY_KEYS) or entry.get("type", "function") != "function":
            return None
        function: Any = entry.get("function")
        if not _only_keys(function, _FUNCTION_KEYS) or function.get("arguments").__class__ is not str:
            return None
        name: Any = function.get("name", "")
        index: Any = entry.get("index")
        if name.__class__ is not str or (index is not None and index.__class__ is not int):
            return None
        call_id = self._entry_id(entry)
        call = self._locate(index, call_id, name)
        if call is None or not call.started or (name and name != call.name) or (call_id and call_id != call.id):
            return None
        return call

    def _text_piece(self, piece: str) -> None:
        if piece:
            self._text(piece)

    def _thinking_piece(self, field_name: str | None, piece: str) -> None:
        if piece:
            self._thinking(piece, field_name)

    def _call_fragment(self, fragment: str) -> None:
        """An argument fragment for the call the shape learned."""
        if self._shape_call is not None:
            self._continue_call(self._shape_call, fragment)

    def _continue_call(self, call: _Call, fragment: str) -> None:
        """The common ``tool_calls`` entry: an argument fragment, and nothing else, for a started call."""
        self._last_call = call
        if fragment:
            self._builder.tool_call_delta(call.key, fragment)
            call.last = fragment

    # -- text and thinking --------------------------------------------------------------------------

    def _open(self, kind: int, signature: str | None = None) -> int:
        builder = self._builder
        if self._kind:
            builder.block_end(self._block)
        self._seq += 1
        self._kind = kind
        self._block = self._seq
        if kind == _THINKING:
            builder.thinking_start(self._block, signature=signature)
        else:
            builder.text_start(self._block)
        return self._block

    def _text(self, piece: str) -> None:
        self._builder.text_delta(self._block if self._kind == _TEXT else self._open(_TEXT), piece)

    def _thinking(self, piece: str, field_name: str | None) -> None:
        key = self._block if self._kind == _THINKING else self._open(_THINKING, field_name)
        self._builder.thinking_delta(key, piece)

    def _refusal_text(self, piece: str) -> None:
        key = self._block if self._kind == _REFUSAL else self._open(_REFUSAL)
        self._refusal.append(piece)
        self._builder.text_delta(key, piece)

    def _close_text(self) -> None:
        if self._kind:
            self._builder.block_end(self._block)
            self._kind = 0

    # -- tool calls ---------------------------------------------------------------------------------

    def _tool_delta(self, value: Any) -> None:
        """Place one entry of ``delta.tool_calls`` (see the module docstring for how calls are found)."""
        if value.__class__ is not dict:
            raise StreamFailure.protocol(f"{self._vendor} sent a tool-call delta that is not an object: {value!r:.100}")
        entry: dict[str, Any] = value
        index: Any = entry.get("index")
        if index.__class__ is not int and index is not _LEGACY:
            index = None
        call = self._by_index.get(index) if index is not None else None
        if call is not None and call.started and len(entry) == 2:
            # The common entry: {"index": i, "function": {"arguments": "..."}} for a call already
            # started. A name beside the fragment changes nothing for it; only a fragment is placed.
            function: Any = entry.get("function")
            fragment: Any = function.get("arguments") if function.__class__ is dict else None
            if fragment.__class__ is str:
                self._continue_call(call, fragment)
                return
        if entry.get("type") == "custom" or "custom" in entry:
            raise StreamFailure.protocol(
                f"{self._vendor} sent a custom (grammar) tool call, which this adapter does not request"
            )
        fields: Any = entry.get("function")
        if fields is None:
            fields = {}
        elif fields.__class__ is not dict:
            raise StreamFailure.protocol(
                f"{self._vendor} sent a tool-call function that is not an object: {fields!r:.100}"
            )
        call_id = self._entry_id(entry)
        name = text(fields.get("name"))
        fragment = _fragment(fields.get("arguments"))

        call = self._locate(index, call_id, name)
        if call is None:
            call = _Call(-1 - len(self._calls))
            self._calls.append(call)
            if index is not None:
                self._by_index[index] = call
        if call_id:
            if not call.id and not call.started:
                call.id = call_id  # ids that change later keep the first
            self._by_id.setdefault(call_id, call)
        if name and not call.name:
            call.name = name
        self._last_call = call

        builder = self._builder
        if not call.started:
            if not call.name:
                if fragment:
                    call.pending.append(fragment)
                return
            self._close_text()
            # A call's key is -1 - its position among the calls.
            call_id = call.id or self._missing_id(-1 - call.key)
            builder.tool_call_start(
                call.key, call_id, call.name, thought_signature=self._signatures.pop(call.id, None) if call.id else None
            )
            call.started = True
            for held in call.pending:
                builder.tool_call_delta(call.key, held)
                call.last = held
            call.pending.clear()
        if fragment:
            builder.tool_call_delta(call.key, fragment)
            call.last = fragment

    def _locate(self, index: int | str | None, call_id: str, name: str) -> _Call | None:
        """The call an entry continues (None: it starts a new one): the one at its index, unless it
        brings a new id and a name where the arguments already look complete; without an index, the
        one its id names; with neither id nor name, the last one."""
        if index is not None:
            call = self._by_index.get(index)
            if call is not None and call_id and call.id and call_id != call.id and name and call.closed:
                return None  # a server numbering every call 0: a new call at the same index
            return call
        if call_id:
            return self._by_id.get(call_id)
        return None if name else self._last_call

    # -- the end ------------------------------------------------------------------------------------

    def _finish_reason(self, raw: str) -> None:
        """Record choice 0's finish reason. The first failure wins: a ``content_filter`` or ``error``
        followed by a bare ``stop`` (or a usage chunk saying ``stop``) still ends the message as that
        failure — a later word must never turn a failed response into success; and a ``length``
        followed by a ``stop`` still ends it ``length`` — a later word must never hide that the
        answer was cut."""
        mapped = self._stops.stops.get(raw)
        if mapped is None:
            if self._failure is None:
                self._failure = raw
        elif mapped == "length" and self._cut is None:
            self._cut = raw
        self._finish = raw

    def _after_finish(self, chunk: dict[str, Any]) -> bool:
        """Content after choice 0 finished. A chunk whose id differs from the response id starts
        another response spliced into this body: this one ends (True). Otherwise the finish_reason
        was not final — some gateways put one on every chunk — so it is forgotten and the content is
        read (False): only a finish_reason that no content follows ends the message."""
        chunk_id: Any = chunk.get("id")
        response_id = self._builder.response_id
        if chunk_id.__class__ is str and chunk_id and response_id and chunk_id != response_id:
            self._complete()
            return True
        self._finish = None
        return False

    def _on_done(self) -> None:
        if self._finish is None and self._failure is None:
            if self._reliable:
                raise StreamFailure.of(
                    "truncated", f"{self._vendor} stream sent [DONE] without a finish_reason{self._done_hint}"
                )
            self._finish = ""
        self._complete()

    def _complete(self) -> None:
        """Record the stop reason and finish (the terminal marker was seen)."""
        builder = self._builder
        if builder.finished:
            return
        unnamed = next((call for call in self._calls if not call.started), None)
        if unnamed is not None:
            raise StreamFailure.protocol(
                f"{self._vendor} sent a tool call ({unnamed.id or 'no id'}) that never got a name"
            )
        raw = self._failure or self._cut or self._finish or ""
        if self._refusal:
            refusal = "".join(self._refusal).strip()
            builder.stop(
                raw or None, "error", error=ErrorInfo.of("refusal"), error_message=f"The model refused: {refusal}"
            )
        elif not raw:
            builder.stop(None, "stop")  # a server that never sends finish_reason (the profile says so)
        else:
            self._stops.stop(builder, raw)
        builder.finish()

    def _event_error(self, sse: ServerSentEvent) -> StreamFailure:
        try:
            value = load_json(sse.data, self._vendor)
        except StreamFailure:
            value = None
        if self._errors.extract(value) is None:
            value = VendorError(message=sse.text.strip()[:300] or "no message")
        return self._errors.from_event(value)


def _one_part(content: Any) -> tuple[HolePath, int] | None:
    """Where the text of a content list lies, and its kind, when the list holds one thinking part of
    one text part, or one text part, and nothing else the full path would read (no signature); else
    None."""
    if content.__class__ is not list or len(content) != 1:
        return None
    part: Any = content[0]
    if _only_keys(part, _THINKING_PART_KEYS) and part.get("type") == "thinking":
        inner: Any = part.get("thinking")
        if inner.__class__ is not list or len(inner) != 1:
            return None
        sub: Any = inner[0]
        if not _only_keys(sub, _TEXT_PART_KEYS) or sub.get("type") != "text" or sub.get("text").__class__ is not str:
            return None
        return _PART_THINKING, _THINKING
    if _only_keys(part, _TEXT_PART_KEYS) and part.get("type") == "text" and part.get("text").__class__ is str:
        return _PART_TEXT, _TEXT
    return None
