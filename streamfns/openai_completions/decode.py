"""Chat Completions chunks → builder calls. Pure: no I/O, no clock.

What is read, and how it lands in the normalized message:

- A ``data:`` value that is ``null`` or not an object is skipped; SSE comments (OpenRouter's
  ``: OPENROUTER PROCESSING``) never reach the decoder, nor do ``event: ping`` keep-alives.
  ``[DONE]`` ends the stream.
- A choice's ``delta`` must be an object (or absent/``null``); anything else, and a choice carrying
  the non-streaming ``message`` instead of a delta, is a ``protocol`` error: its content cannot be
  placed, and dropping it would end a shortened answer as ``done``.
- Only choice ``index`` 0 is read: with ``n > 1`` the other choices are ignored (one assistant
  message per call).
- ``delta.content`` is text; a content *list* (Mistral's magistral) holds ``text`` and ``thinking``
  parts. ``<think>`` tags inside plain content stay text: they are the model's words, and only a
  server-side reasoning parser can tell them apart reliably.
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
  the last call. An id that changes mid-stream keeps the first; a missing id is generated (unique).
  A new id *and* name at an index whose arguments already look complete is a new call (servers
  that number every call 0). A call's arguments are raw JSON fragments, parsed strictly once at
  the end; fragments that arrive before the call's name are held until it comes, and a call that
  never gets a name is a ``protocol`` error. The legacy ``delta.function_call`` is one more call, in a
  slot of its own (no ``tool_calls`` index, ``-1`` included, reaches it).
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
message as that failure, whatever ``stop`` or content follows it. EOF after the ``finish_reason``
but before any usage is ``truncated`` when the profile asked for usage in the stream
(``usage_in_stream``: the usage chunk was cut off); a ``[DONE]`` still ends such a stream ``done``
(a server may ignore the request). ``[DONE]`` without a ``finish_reason`` is ``truncated`` — unless
the profile says the server never sends one (``finish_reason_reliable=False``); EOF without either
is ``truncated`` (the kit reports it).
Finish reasons: ``stop``/``end`` (and ``eos``, ``eos_token``, ``stop_sequence``, ``end_turn``) →
``stop``; ``length``/``max_tokens`` → ``length``; ``tool_calls``/``function_call``/``tool_use`` →
``toolUse``; the profile's ``finish_reasons`` add more; ``content_filter`` → error
``content_filter``; ``network_error`` → error ``network``; ``error`` → error ``server``; anything
else → error ``protocol`` naming the raw value. A mid-stream ``{"error": …}`` chunk, a flat
``{"object": "error"}`` chunk or an ``event: error`` ends the stream with the kind of its code or
type.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import Any, Final, cast

import jiter

from normalize import ErrorInfo, MessageBuilder, Model, StopReason
from streamfns.kit import (
    SHAPE_LEARNS,
    CompatError,
    Decoder,
    EventShape,
    HolePath,
    ServerSentEvent,
    StopTable,
    StreamFailure,
    VendorError,
    array,
    changed,
    load_json,
    obj,
    text,
)
from streamfns.openai_completions.compat import PROFILES, compat_for
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


def _choice(choices: object) -> dict[str, Any] | None:
    """Choice 0 of a chunk (``index`` 0, or no index), wherever it sits in the list."""
    if type(choices) is not list or not choices:
        return None
    for item in cast("list[Any]", choices):
        choice = _dict(item)
        if choice is not None and choice.get("index", 0) in (0, None):
            return choice
    return None


def _fragment(arguments: object) -> str:
    if isinstance(arguments, str):
        return arguments
    if arguments is None:
        return ""
    # Some servers send the arguments as an object; the builder still parses them strictly.
    return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))


class CompletionsDecoder(Decoder[ServerSentEvent]):
    """Feeds one response's chunks to a :class:`MessageBuilder` (see the module docstring)."""

    __slots__ = (
        "_block",
        "_builder",
        "_by_id",
        "_by_index",
        "_calls",
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
    )

    def __init__(self, builder: MessageBuilder, model: Model) -> None:
        self._builder = builder
        try:
            compat = compat_for(model)
        except (CompatError, TypeError, ValueError):
            compat = PROFILES["generic"]  # the request builder has reported the mistake already
        self._fields = compat.reasoning_fields
        self._reliable = compat.finish_reason_reliable
        #: The request asked for usage in the stream (``stream_options.include_usage``).
        self._usage_expected = compat.usage_in_stream
        self._usage_seen = False
        # The profile's values were checked to be stop reasons (CompletionsCompat.__post_init__).
        self._stops = STOP_REASONS.with_stops(cast("dict[str, StopReason]", compat.finish_reasons))
        #: The raw finish reason of choice 0 once it came ("" for a [DONE] that stands in for it).
        self._finish: str | None = None
        #: The first finish reason that is not a normal stop (an error or an unknown word); it stands.
        self._failure: str | None = None
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
        # The layout of the last chunk read whole that carried one piece (text, reasoning or one call's
        # arguments) and nothing else, and the handler it went to: until another chunk is read whole
        # (which may change what a chunk means), a chunk whose bytes differ from it only in that piece
        # (and in OpenAI's random ``obfuscation`` padding, once seen changing) goes to the same handler,
        # read off the bytes (kit.shapes).
        self._shape: EventShape | None = None
        self._shape_sink: Callable[[str], None] = self._text_piece
        self._shape_call: _Call | None = None
        self._shape_value: Any = None
        self._learns = SHAPE_LEARNS

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
            self._shape = None
            self._learns += shape.hits > 0  # a learn that paid is given back (kit.SHAPE_LEARNS)
        if (not data or data[0] != _OPEN_BRACE) and data.strip() == _DONE:  # not an object: [DONE]?
            self._on_done()
            return
        try:
            value: Any = _from_json(data)
        except ValueError:
            value = load_json(data, VENDOR)  # repairs what it can, else a protocol error
        if value.__class__ is not dict:
            return  # null or a non-object: nothing to place (some servers send `data: null`)
        chunk: dict[str, Any] = value
        if chunk.get("error"):
            # An error chunk may carry the usage so far (OpenRouter): it is kept with the partial reply.
            self._chunk_usage(chunk, None)
            raise ERRORS.from_event(chunk)
        if self._need_id:
            self._response_id(chunk.get("id"), chunk.get("model"))
        choices: Any = chunk.get("choices")
        choice: Any = None
        if choices.__class__ is list and choices:
            choice = choices[0]
            # Choice 0 is nearly always first; look further only when it is not.
            if choice.__class__ is not dict or choice.get("index", 0) not in (0, None):
                choice = _choice(choices)
        if choice is None:
            # A usage-only chunk, or another choice's, or vLLM's flat error object.
            if chunk.get("object") == "error":
                raise ERRORS.from_event(chunk)
            self._chunk_usage(chunk, None)
            return
        delta: Any = choice.get("delta")
        if delta.__class__ is dict and delta:
            if self._finish is not None and self._carries_content(delta) and self._after_finish(chunk):
                return
            self._delta(delta)
        elif (delta is not None and delta.__class__ is not dict) or choice.get("message") is not None:
            raise self._unplaceable(choice)
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

    def _learn(self, data: bytes, chunk: dict[str, Any], delta: dict[str, Any]) -> None:
        """Learn the layout of a chunk whose choice 0 carried one piece and nothing else (see __init__);
        the state checked by the caller is what would make the same bytes read otherwise."""
        field, piece = next(iter(delta.items()))
        if piece.__class__ is str:
            path: HolePath = ("choices", 0, "delta", field)
            if field == "content":
                sink = self._text_piece
            elif field in self._fields:
                sink = partial(self._thinking_piece, field_name=field)
            else:
                return
        else:
            call = self._started_call(piece)
            if call is None:
                return
            path = ("choices", 0, "delta", "tool_calls", 0, "function", "arguments")
            sink = self._call_fragment
            self._shape_call = call
        self._learns -= 1
        holes: list[HolePath] = [path, *changed(self._shape_value, chunk, _PADDING)]
        self._shape = EventShape.learn(data, chunk, holes)
        self._shape_value = chunk
        self._shape_sink = sink

    def _started_call(self, calls: Any) -> _Call | None:
        """The started call that ``calls`` (a ``tool_calls`` value) continues with an argument fragment
        and nothing else, as ``{"index": i, "function": {"arguments": "…"}}``; else None."""
        if calls.__class__ is not list or len(calls) != 1:
            return None
        entry: Any = calls[0]
        if entry.__class__ is not dict or len(entry) != 2 or entry.get("index").__class__ is not int:
            return None
        function: Any = entry.get("function")
        if function.__class__ is not dict or len(function) != 1 or function.get("arguments").__class__ is not str:
            return None
        call = self._by_index.get(entry["index"])
        return call if call is not None and call.started else None

    def _text_piece(self, piece: str) -> None:
        if piece:
            self._text(piece)

    def _thinking_piece(self, piece: str, field_name: str) -> None:
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

    def _unplaceable(self, choice: dict[str, Any]) -> StreamFailure:
        delta = choice.get("delta")
        if delta is None or isinstance(delta, dict):
            what = f"a non-streaming choice.message instead of a delta: {choice.get('message')!r:.100}"
        else:
            what = f"a delta that is not an object: {delta!r:.100}"
        return StreamFailure.protocol(f"{VENDOR} sent {what}")

    def _finish_reason(self, raw: str) -> None:
        """Record choice 0's finish reason. The first failure wins: a ``content_filter`` or ``error``
        followed by a bare ``stop`` (or a usage chunk saying ``stop``) still ends the message as that
        failure — a later word must never turn a failed response into success."""
        if self._failure is None and raw not in self._stops.stops:
            self._failure = raw
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

    def on_eof(self) -> None:
        """The body ended without ``[DONE]``: a stream whose choice finished is complete, unless the
        usage it asked for never came (the body was cut before the usage chunk: ``truncated``);
        otherwise nothing is concluded (the kit reports ``truncated``). A failure reason, once sent,
        ends the stream as that failure whatever followed it."""
        if self._finish is None and self._failure is None:
            return
        if self._failure is None and self._usage_expected and not self._usage_seen:
            raise StreamFailure.of(
                "truncated", f"{VENDOR} stream ended after the finish_reason but before the usage it was asked for"
            )
        self._complete()

    # -- chunk parts --------------------------------------------------------------------------------

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
                f"{VENDOR} sent delta.content that is neither text nor a list of parts: {content!r:.100}"
            )
        refusal = delta.get("refusal")
        if type(refusal) is str and refusal:
            self._refusal_text(refusal)
        tool_calls = delta.get("tool_calls")
        if type(tool_calls) is list:
            for entry in cast("list[Any]", tool_calls):
                self._tool_delta(entry)
        elif tool_calls is not None:
            raise StreamFailure.protocol(f"{VENDOR} sent delta.tool_calls that is not a list: {tool_calls!r:.100}")
        function_call = _dict(delta.get("function_call"))
        if function_call:
            # The legacy single-function protocol: one call, no id, continued by name-less deltas.
            self._tool_delta({"index": _LEGACY, "function": function_call})

    def _content_parts(self, parts: list[Any]) -> None:
        for part in parts:
            item = obj(part)
            kind = item.get("type")
            if kind == "text":
                piece = text(item.get("text"))
                if piece:
                    self._text(piece)
            elif kind == "thinking":
                inner = item.get("thinking")
                piece = inner if isinstance(inner, str) else "".join(text(obj(p).get("text")) for p in array(inner))
                if piece:
                    self._thinking(piece, None)
            # Other parts (Mistral's "reference" ids …) carry no text of the message.

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

    # -- text and thinking --------------------------------------------------------------------------

    def _open(self, kind: int, signature: str | None = None) -> int:
        builder = self._builder
        if self._kind:
            builder.block_end(self._block)
        self._seq += 1
        self._kind = kind
        if kind == _THINKING:
            self._block = self._seq
            builder.thinking_start(self._block, signature=signature)
        else:
            self._block = self._seq
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
            raise StreamFailure.protocol(f"{VENDOR} sent a tool-call delta that is not an object: {value!r:.100}")
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
                f"{VENDOR} sent a custom (grammar) tool call, which this adapter does not request"
            )
        call_id = text(entry.get("id"))
        fields = obj(entry.get("function"))
        name = text(fields.get("name"))
        fragment = _fragment(fields.get("arguments"))

        if index is not None:
            if call is not None and call_id and call.id and call_id != call.id and name and call.closed:
                call = None  # a server numbering every call 0: a new call at the same index
        elif call_id:
            call = self._by_id.get(call_id)
        elif not name:
            call = self._last_call
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
            builder.tool_call_start(
                call.key, call.id, call.name, thought_signature=self._signatures.pop(call.id, None) if call.id else None
            )
            call.started = True
            for held in call.pending:
                builder.tool_call_delta(call.key, held)
                call.last = held
            call.pending.clear()
        if fragment:
            builder.tool_call_delta(call.key, fragment)
            call.last = fragment

    # -- usage --------------------------------------------------------------------------------------

    def _usage(self, usage: dict[str, Any]) -> None:
        self._usage_seen = True
        self._builder.usage(**usage_fields(usage))

    # -- the end ------------------------------------------------------------------------------------

    def _on_done(self) -> None:
        if self._finish is None and self._failure is None:
            if self._reliable:
                raise StreamFailure.of(
                    "truncated",
                    f"{VENDOR} stream sent [DONE] without a finish_reason (set the model's compat "
                    "finish_reason_reliable=false for a server that never sends one)",
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
            raise StreamFailure.protocol(f"{VENDOR} sent a tool call ({unnamed.id or 'no id'}) that never got a name")
        raw = self._failure or self._finish or ""
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
            value = load_json(sse.data, VENDOR)
        except StreamFailure:
            value = None
        if ERRORS.extract(value) is None:
            value = VendorError(message=sse.text.strip()[:300] or "no message")
        return ERRORS.from_event(value)
