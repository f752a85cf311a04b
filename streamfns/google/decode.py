"""Gemini / Vertex ``streamGenerateContent?alt=sse`` chunks → builder calls. Pure: no I/O, no clock.

Every event is one ``GenerateContentResponse``; only candidate 0 is read. Its parts become blocks:

- a ``text`` part is thinking when ``thought`` is true and text otherwise; consecutive parts of one
  kind form one block, and a new block starts whenever the kind changes. ``thoughtSignature`` never
  makes a part thinking: it may sit on any part, and the last non-empty one is kept on the block it
  arrived with (the text or thinking signature, or the tool call's ``thought_signature``). An empty
  part that carries only a signature still lands on its block (Gemini requires it echoed back);
- a ``functionCall`` ends the current text or thinking block and becomes a tool call: its ``id`` is
  kept unless missing or already used (the builder then derives a unique one), ``args`` missing is
  ``{}``; a complete call is emitted as start, one delta with its JSON, end;
- a **streamed** function call (Vertex ``streamFunctionCallArguments``: ``willContinue`` and
  ``partialArgs`` across parts) starts with the part that names it, receives one argument delta per
  partial argument as it arrives (:mod:`streamfns.google.args` writes them as JSON text), and ends with
  the first part without ``willContinue``; its arguments are then parsed strictly. A call still open
  when the stream stops never runs: ``STOP`` makes it a ``truncated`` error, ``MAX_TOKENS`` keeps a
  preview under ``length``;
- Google-side tools (``executableCode``, ``codeExecutionResult``), model-generated media
  (``inlineData``, ``fileData``) and grounding, URL-context and citation metadata are not part of the
  normalized message: they are left out and take no content index (the text around them stays one
  block), so a transcript replays as plain text.

Gemini has no terminal event: ``finishReason`` (or a blocked prompt's ``blockReason``) is the marker.
The message finishes at the chunk that carries it — whatever the reason — when that chunk also
carries the final usage (``usageMetadata`` with counts, as the last chunk of every recorded Gemini 2+
and Vertex stream does), no streamed call is still open and only candidate 0 has been seen: nothing
that follows could change the message, so the read stops there, and a server that keeps the
connection open afterwards cannot turn a complete answer into a ``timeout``. Otherwise (the usage
still to come, a streamed call to be closed, several candidates) the stop is recorded and the
message finishes at the end of the body (:meth:`GoogleDecoder.on_eof`); a body that ends without a
finish reason is ``truncated``.
The finish reasons map as :data:`FINISH_REASONS` says; an error reason, once seen, is never
overridden by a later one. ``promptFeedback.blockReason`` with no candidates is a ``content_filter``
error. An ``{"error": {...}}`` event is a vendor error (:data:`~streamfns.google.errors.ERRORS`).

Usage is cumulative: the last ``usageMetadata`` that carries counts wins, applied once per network
read (:meth:`GoogleDecoder.on_batch_end`: the events of a read reach the consumer together, so this
is what they would see per chunk, at a fraction of the cost) and before any terminal. ``input`` =
prompt − cached (+ tool-use prompt tokens, which Google bills as input); ``output`` = candidates +
thoughts; ``cache_read`` = cached; ``reasoning`` = thoughts. ``responseId`` becomes ``response_id``
and ``modelVersion`` ``response_model``.
"""

from __future__ import annotations

import json
from typing import Any

from normalize import ErrorInfo, MessageBuilder, Model, StopReason
from streamfns.google.args import ArgumentsConflict, ArgumentsWriter
from streamfns.google.errors import ERRORS, VENDOR
from streamfns.kit import (
    SHAPE_LEARNS,
    Decoder,
    EventShape,
    HolePath,
    ServerSentEvent,
    Shortcut,
    StopTable,
    StreamFailure,
    load_event,
)

__all__ = ["CONTENT_FILTER_REASONS", "FINISH_REASONS", "GoogleDecoder"]

_TEXT, _THINKING = 1, 2

#: Finish reasons that mean Google's filters stopped the response.
CONTENT_FILTER_REASONS = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
        "IMAGE_OTHER",
        "MODEL_ARMOR",  # Vertex's Model Armor screened the response
    }
)
#: Gemini's finish reasons: ``STOP`` → ``stop`` (the builder makes it ``toolUse`` when a complete
#: call exists); ``MAX_TOKENS`` → ``length``; safety, recitation, blocklist, prohibited-content, SPII,
#: Model Armor and every image filter (``IMAGE_*``, also future ones) → error ``content_filter``;
#: malformed output → error ``protocol``; anything else → error ``protocol`` naming the reason. The
#: raw reason is the error's code; Google's ``finishMessage`` is quoted when it sent one.
FINISH_REASONS = StopTable(
    vendor=VENDOR,
    stops={"STOP": "stop", "MAX_TOKENS": "length"},
    errors={
        **dict.fromkeys(CONTENT_FILTER_REASONS, "content_filter"),
        "MALFORMED_FUNCTION_CALL": "protocol",
        "UNEXPECTED_TOOL_CALL": "protocol",
        "TOO_MANY_TOOL_CALLS": "protocol",
        "MALFORMED_RESPONSE": "protocol",
        "MISSING_THOUGHT_SIGNATURE": "invalid_request",
        "LANGUAGE": "invalid_request",
    },
    error_prefixes={"IMAGE_": "content_filter"},
    messages={"content_filter": "{vendor} filtered the response ({raw})"},
    unknown_message="{vendor} stopped the response: {raw}",
)
#: The proto default: no finish reason yet.
_UNSPECIFIED = "FINISH_REASON_UNSPECIFIED"
_NO_COUNTS: tuple[Any, ...] = (None, None, None, None, None)
_COUNT_FIELDS = (
    "promptTokenCount",
    "candidatesTokenCount",
    "thoughtsTokenCount",
    "cachedContentTokenCount",
    "toolUsePromptTokenCount",
)


_CANDIDATES = _COUNT_FIELDS.index("candidatesTokenCount")


def _in_range(counts: tuple[Any, ...]) -> tuple[int, int, int, int, int]:
    """The five counts (in _COUNT_FIELDS order) as the usage reads them: a missing, non-integer or
    negative count (a broken server) reads as 0, so reasoning never exceeds output and input never goes
    below 0; the cached count is a part of the prompt (at most it)."""
    prompt, candidates, thoughts, cached, tool_prompt = counts
    prompt = prompt if prompt.__class__ is int and prompt > 0 else 0
    candidates = candidates if candidates.__class__ is int and candidates > 0 else 0
    thoughts = thoughts if thoughts.__class__ is int and thoughts > 0 else 0
    cached = min(cached, prompt) if cached.__class__ is int and cached > 0 else 0
    tool_prompt = tool_prompt if tool_prompt.__class__ is int and tool_prompt > 0 else 0
    return prompt, candidates, thoughts, cached, tool_prompt


def _first_candidate(candidates: list[Any]) -> dict[str, Any] | None:
    """Candidate 0 (the one without an index or with index 0), wherever it is in the list."""
    for item in candidates:
        if item.__class__ is dict and item.get("index", 0) == 0:
            return item
    return None


def _path_filled(shape: EventShape, slot: int, path: str, data: bytes) -> EventShape | None:
    """``shape`` with its hole ``slot`` (a streamed string's path) made fixed bytes: ``path`` as ``data``,
    the learned chunk, spells it (compact JSON with UTF-8 or with escapes, as servers write it); None
    when neither spelling is the one there (the path stays a hole)."""
    for ascii_only in (False, True):
        try:
            literal = json.dumps(path, ensure_ascii=ascii_only).encode()
        except UnicodeEncodeError:  # a lone surrogate: only the escaped spelling is UTF-8
            continue
        filled = shape.filled(slot, literal)
        if filled is not None and filled.match(data) is not None:
            filled.hits = 0  # the check is not an event read
            return filled
    return None


class _StreamedCall:
    __slots__ = ("feed", "key", "name", "writer")

    def __init__(self, key: int, name: str) -> None:
        self.key = key
        self.name = name
        self.writer = ArgumentsWriter()
        self.feed = self.writer.feed


class GoogleDecoder(Decoder[ServerSentEvent]):
    """Feeds one response's chunks to a :class:`MessageBuilder` (see the module docstring)."""

    __slots__ = (
        "_block_key",
        "_block_kind",
        "_builder",
        "_call",
        "_counts",
        "_fast_candidates",
        "_fast_from",
        "_has_id",
        "_has_model",
        "_identified",
        "_learned_counts",
        "_learns",
        "_next_key",
        "_other_candidates",
        "_shape",
        "_shape_call",
        "_shape_counts",
        "_shape_fast",
        "_shape_key",
        "_shape_meta",
        "_shape_path",
        "_shape_slots",
        "_stop_is_error",
        "_stopped",
        "_usage_seen",
        "shortcut",
    )

    def __init__(self, builder: MessageBuilder, model: Model | None = None) -> None:
        del model  # the stream needs nothing from the model
        self._builder = builder
        self._next_key = 0
        #: The open text or thinking block (kind 0: none).
        self._block_key = -1
        self._block_kind = 0
        self._call: _StreamedCall | None = None
        self._stopped = False
        self._stop_is_error = False
        self._counts = _NO_COUNTS
        self._usage_seen: Any = None
        self._identified = False
        self._has_id = False
        self._has_model = False
        # The layout of the last chunk read whole that carried one text part continuing the open text
        # block, or one piece of the streamed call's open string argument, and nothing else to act on:
        # until another chunk is read whole (which may change what a chunk means), a chunk whose bytes
        # differ from it only in that piece (and in the usage counts seen changing) is that piece and
        # that usage, read off the bytes (kit.shapes). _shape_call is the call whose string it
        # continues (None: a text piece for the block _shape_key).
        self._shape: EventShape | None = None
        self._shape_key = -1
        self._shape_call: _StreamedCall | None = None
        #: The path of the string _shape_call's layout continues, when the layout spells it as fixed
        #: bytes (see _learn); None: the layout's last hole names it.
        self._shape_path: str | None = None
        #: The learned usage for _usage (its counts, no holes), or None when the learned chunk had none.
        self._shape_meta: tuple[tuple[Any, ...], tuple[()], tuple[()]] | None = None
        # The learned usage's counts (in _COUNT_FIELDS order), and where the shape's count holes go in
        # them: (position, hole), so a matched read's counts are made with no dict (see _usage).
        self._shape_counts: tuple[Any, ...] = _NO_COUNTS
        self._shape_slots: tuple[tuple[int, int], ...] = ()
        # When the candidates count is the only count in a hole (a text stream's usual chunk): that
        # hole and the other counts as _usage reads them, so a read's usage is one compare (see _usage).
        self._shape_fast: tuple[int, int, int, int] | None = None
        # The learned counts and the candidates count the fast path applied last (None: the full path
        # applied the counts since).
        self._fast_from: tuple[Any, ...] | None = None
        self._fast_candidates: Any = None
        # The integer counts of the usage of the last chunk learned (None: none learned yet): a count
        # that changed since is a hole of the next layout learned (see _learn). Kept as a dict of its
        # own rather than the chunk's parse, which would keep every dict and list of that chunk alive
        # for the collector to walk (nine in a text chunk), a thousand streams at a time.
        self._learned_counts: dict[str, int] | None = None
        self._learns = SHAPE_LEARNS
        #: The text layout, for the kit (a text chunk's path depends on nothing but its bytes and name:
        #: see on_event); None while the shape is a call's, whose path depends on the call's state.
        self.shortcut: Shortcut | None = None
        #: A candidate other than 0 was seen (candidateCount > 1): the usage counts them all, so the
        #: message waits for the end of the body.
        self._other_candidates = False

    # -- the decoder protocol -------------------------------------------------------------------------

    def on_event(self, sse: ServerSentEvent) -> None:
        """Apply one chunk; raises :class:`StreamFailure` for vendor errors and malformed chunks."""
        shape = self._shape
        if shape is not None:
            pieces = shape.match(sse.data)
            call = self._shape_call
            path = self._shape_path
            # A text layout holds only until another chunk is read whole. A call's layout names the
            # path of the string it continues (in its fixed bytes, or its last hole): it holds while
            # that call streams, and a match is read so only when the state the learned chunk was read
            # in is still there (no block open, that call, its open string named so), which is all that
            # decides it.
            if pieces is not None and (
                call is None
                or (
                    call is self._call
                    and not self._block_kind
                    and (pieces[-1] if path is None else path) == call.writer.open_string_path
                )
            ):
                if call is None:
                    self._shaped_text(pieces)
                    return
                self._shaped_usage(pieces)
                # What _feed does with the same piece: the writer's open string goes on.
                fragment = call.writer.continue_string(pieces[0])
                if fragment:
                    self._builder.tool_call_delta(call.key, fragment)
                return
            if call is None or call is not self._call:
                self._shape = self.shortcut = None
                self._learns += shape.hits > 0  # a learn that paid is given back (kit.SHAPE_LEARNS)
        data = load_event(sse.data, VENDOR)
        if "error" in data:
            raise ERRORS.from_event(data)
        if not self._identified:
            self._identify(data)
        usage = data.get("usageMetadata")
        if usage is not None:
            self._usage_seen = usage  # cumulative: the last one wins, applied once per read
        candidates = data.get("candidates")
        if not candidates:
            if self._prompt_feedback(data.get("promptFeedback")) and usage is not None:
                self._finish_with(usage)
            return
        if candidates.__class__ is not list:
            raise StreamFailure.protocol(f"{VENDOR} sent candidates that are not a list")
        candidate = candidates[0]
        if len(candidates) != 1 or candidate.__class__ is not dict or candidate.get("index", 0) != 0:
            self._other_candidates = True
            candidate = _first_candidate(candidates)
            if candidate is None:
                return
        content = candidate.get("content")
        if content is not None:
            if content.__class__ is not dict:
                raise StreamFailure.protocol(f"{VENDOR} sent a candidate whose content is not an object")
            parts = content.get("parts")
            if parts is not None:
                if parts.__class__ is not list:
                    raise StreamFailure.protocol(f"{VENDOR} sent content parts that are not a list")
                self._parts(parts)
        raw = candidate.get("finishReason")
        if raw is not None and raw != _UNSPECIFIED:
            if raw.__class__ is not str:
                raise StreamFailure.protocol(f"{VENDOR} sent a finishReason that is not a string: {raw!r}")
            finish_message: Any = candidate.get("finishMessage")
            detail: str = finish_message if finish_message.__class__ is str else ""
            self._record_stop(raw, *FINISH_REASONS.map(raw, detail=detail))
            if usage is not None and self._call is None and not self._other_candidates:
                self._finish_with(usage)
        elif (
            self._learns
            and self._identified
            and candidate is candidates[0]
            and (self._block_kind == _TEXT or (not self._block_kind and self._call is not None))
        ):
            self._learn(sse, data, content, usage)

    def _shaped_usage(self, pieces: list[Any]) -> None:
        """The usage of a chunk the shape read: the learned counts and where this read's go (made into
        counts once per read, by on_batch_end), or the learned usage when no count changed."""
        if self._shape_slots:
            self._usage_seen = (self._shape_counts, self._shape_slots, pieces)
        elif self._shape_meta is not None:
            self._usage_seen = self._shape_meta

    def _shaped_text(self, pieces: list[Any]) -> None:
        """A text chunk the shape read in on_event (``pieces``: its holes, the text first): the text
        continues the open block, and the chunk's usage is the read's latest. The kit calls it too for
        such a chunk in a read of several (the shortcut's ``in_run``), and ends the read's batch after."""
        self._shaped_usage(pieces)
        self._builder.text_delta(self._shape_key, pieces[0])

    def _shortcut_text(self, pieces: list[Any]) -> None:
        """The kit's shortcut (see on_event): a read that is one text chunk of the learned layout, every
        hole given (``whole``). What _shaped_text and the read's end do, at once: the chunk is the read's
        only one, so its usage is the read's (a usage no count of which moved was applied when the
        layout was learned, and nothing has changed it since: a chunk read whole drops the layout)."""
        self._builder.text_delta(self._shape_key, pieces[0])
        fast = self._shape_fast
        if fast is not None:
            self._fast_usage(fast, pieces[fast[0]])
        elif self._shape_slots:
            self._usage((self._shape_counts, self._shape_slots, pieces))

    def _learn(self, sse: ServerSentEvent, data: dict[str, Any], content: Any, usage: Any) -> None:
        """Learn the layout of a chunk whose one part was text continuing the open text block, or the
        next piece of the streamed call's open string (see __init__); the state checked by the caller
        and here is what would make the same bytes read otherwise."""
        parts: Any = content.get("parts") if content.__class__ is dict else None
        if parts.__class__ is not list or len(parts) != 1:
            return
        part: Any = parts[0]
        if part.__class__ is not dict or len(part) != 1:
            return
        call = self._call if not self._block_kind else None
        if call is None:
            if part.get("text").__class__ is not str:
                return
            piece: HolePath = ("candidates", 0, "content", "parts", 0, "text")
            named: list[HolePath] = []
        else:
            # {"functionCall": {"partialArgs": [{"jsonPath", "stringValue", "willContinue": true}],
            # "willContinue": true}}, whose path names the string the writer holds open: the same bytes
            # with another piece take the writer's hot path (ArgumentsWriter.continue_string).
            function: Any = part.get("functionCall")
            if function.__class__ is not dict or len(function) != 2 or function.get("willContinue") is not True:
                return
            partial: Any = function.get("partialArgs")
            if partial.__class__ is not list or len(partial) != 1:
                return
            item: Any = partial[0]
            if (
                item.__class__ is not dict
                or len(item) != 3
                or item.get("willContinue") is not True
                or item.get("stringValue").__class__ is not str
                or item.get("jsonPath") != call.writer.open_string_path
            ):
                return
            if self._shape is not None and self._shape.match(sse.data) is not None:
                return  # the layout in hand: only the string it continued changed (see on_event)
            piece = ("candidates", 0, "content", "parts", 0, "functionCall", "partialArgs", 0, "stringValue")
            named = [(*piece[:-1], "jsonPath")]  # the last hole: which string it continues
        now: dict[str, int] = (
            {name: count for name, count in usage.items() if count.__class__ is int} if usage.__class__ is dict else {}
        )
        # The counts that changed since the last chunk learned (none at the first: fixed bytes).
        before = self._learned_counts
        counts: list[HolePath] = (
            []
            if before is None
            else [("usageMetadata", name) for name, count in now.items() if before.get(name) != count]
        )
        self._learned_counts = now
        self._learns -= 1
        holes = [piece, *counts, *named]
        if self._shape is not None:
            self._learns += self._shape.hits > 0  # the layout replaced paid: given back
        shape = EventShape.learn(sse.data, data, holes)
        self._shape_path = None
        if shape is not None and call is not None:
            # The path learned as a hole finds the layout every string of the call shares (a layout
            # known in the process: no search, no check); made fixed bytes, it leaves one string hole,
            # read with three slices and a parse instead of a pattern of two.
            path = call.writer.open_string_path
            filled = _path_filled(shape, len(holes) - 1, path, sse.data) if path is not None else None
            if filled is not None:
                shape, self._shape_path = filled, path
        self._shape = shape
        self._shape_key = self._block_key
        self._shape_call = call
        self.shortcut = (
            None
            if call is not None
            else Shortcut.of(sse.event, shape, self._shortcut_text, whole=True, in_run=self._shaped_text)
        )
        self._shape_counts = (
            tuple(usage.get(field) for field in _COUNT_FIELDS) if usage.__class__ is dict else _NO_COUNTS
        )
        self._shape_meta = (self._shape_counts, (), ()) if usage.__class__ is dict else None
        # The count holes lie after the piece (holes above); those _usage does not read are left out.
        self._shape_slots = tuple(
            (_COUNT_FIELDS.index(path[1]), hole)
            for hole, path in enumerate(counts, start=1)
            if path[1] in _COUNT_FIELDS
        )
        self._shape_fast = None
        if len(self._shape_slots) == 1 and self._shape_slots[0][0] == _CANDIDATES:
            prompt, _, thoughts, cached, tool_prompt = _in_range(self._shape_counts)
            self._shape_fast = (self._shape_slots[0][1], prompt - cached + tool_prompt, cached, thoughts)

    def _finish_with(self, usage: Any) -> None:
        """Finish at the chunk that carries the finish reason, when it also carries the usage counts
        (see the module docstring): the usage is applied first, as the end of the read would."""
        if usage.__class__ is dict and any(field in usage for field in _COUNT_FIELDS):
            self.on_batch_end()
            self._builder.finish()

    def _identify(self, data: dict[str, Any]) -> None:
        """The first ``responseId`` and ``modelVersion`` name the response (later chunks repeat them)."""
        response_id: Any = data.get("responseId")
        version: Any = data.get("modelVersion")
        if not self._has_id and response_id.__class__ is str and response_id:
            self._builder.response(id=response_id)
            self._has_id = True
        if not self._has_model and version.__class__ is str and version:
            self._builder.response(model=version)
            self._has_model = True
        self._identified = self._has_id and self._has_model

    def on_batch_end(self) -> None:
        """Apply the latest usage, once per network read (the kit calls it; see the kit's Decoder)."""
        meta = self._usage_seen
        if meta is not None:
            self._usage_seen = None
            self._usage(meta)

    def on_eof(self) -> None:
        """The body ended: finish when a finish reason arrived (and the message did not finish at
        it already); otherwise leave the message unfinished (the kit reports ``truncated``)."""
        self.on_batch_end()
        if self._stopped:
            self._builder.finish()

    # -- candidates and parts -------------------------------------------------------------------------

    def _parts(self, parts: list[Any]) -> None:
        builder = self._builder
        for part in parts:
            if part.__class__ is not dict:
                raise StreamFailure.protocol(f"{VENDOR} sent a content part that is not an object")
            if len(part) == 1:
                # The two common parts take a shortcut to the calls the general path below would make:
                # a bare text part continuing the text block, and a bare continuation of the streamed call.
                if self._block_kind == _TEXT:
                    piece = part.get("text")
                    if piece.__class__ is str:
                        builder.text_delta(self._block_key, piece)
                        continue
                elif not self._block_kind and self._call is not None:
                    call = part.get("functionCall")
                    if call.__class__ is dict and len(call) == 2 and call.get("willContinue") is True:
                        partial = call.get("partialArgs")
                        if partial.__class__ is list:
                            self._feed(self._call, partial)
                            continue
            piece = part.get("text")
            signature = part.get("thoughtSignature")
            if signature is not None and signature.__class__ is not str:
                raise StreamFailure.protocol(f"{VENDOR} sent a thoughtSignature that is not a string")
            if piece is not None:
                if piece.__class__ is not str:
                    raise StreamFailure.protocol(f"{VENDOR} sent a text part whose text is not a string")
                if "functionCall" in part:
                    raise StreamFailure.protocol(f"{VENDOR} sent a part that is both text and a functionCall")
                kind = _THINKING if part.get("thought") is True else _TEXT
                key = self._block_key
                if kind != self._block_kind:
                    if not piece and not signature:
                        continue  # an empty part of another kind carries nothing
                    key = self._open_block(kind)
                if piece:
                    if kind == _TEXT:
                        builder.text_delta(key, piece)
                    else:
                        builder.thinking_delta(key, piece)
                if signature:
                    builder.block_signature(key, signature)
                continue
            call = part.get("functionCall")
            if call is not None:
                self._function_call(call, signature or None)
            # Any other part (code execution, media) is Google's own: left out (module docstring).

    def _open_block(self, kind: int) -> int:
        self._end_block()
        key = self._next_key
        self._next_key += 1
        if kind == _TEXT:
            self._builder.text_start(key)
        else:
            self._builder.thinking_start(key)
        self._block_key = key
        self._block_kind = kind
        return key

    def _end_block(self) -> None:
        if self._block_kind:
            self._builder.block_end(self._block_key)
            self._block_key = -1
            self._block_kind = 0

    # -- function calls ---------------------------------------------------------------------------------

    def _function_call(self, call: Any, signature: str | None) -> None:
        builder = self._builder
        if call.__class__ is not dict:
            raise StreamFailure.protocol(f"{VENDOR} sent a functionCall that is not an object")
        fields: dict[str, Any] = call
        self._end_block()
        name = fields.get("name")
        if name is not None and name.__class__ is not str:
            raise StreamFailure.protocol(f"{VENDOR} sent a functionCall whose name is not a string")
        partial = fields.get("partialArgs")
        if partial is not None and partial.__class__ is not list:
            raise StreamFailure.protocol(f"{VENDOR} sent partialArgs that are not a list")
        continues = fields.get("willContinue") is True
        streamed = self._call
        if streamed is not None:
            if name and name != streamed.name:
                raise StreamFailure.protocol(
                    f"{VENDOR} started a call to {name!r} while {streamed.name!r} was still streaming"
                )
            if fields.get("args"):
                raise StreamFailure.protocol(f"{VENDOR} sent whole args inside the streamed call to {streamed.name!r}")
            if signature:
                builder.block_signature(streamed.key, signature)
            self._feed(streamed, partial)
            if not continues:
                self._close(streamed)
            return
        given: Any = fields.get("id")
        call_id: str = given if given.__class__ is str else ""
        if partial or continues:
            if not name:
                raise StreamFailure.protocol(f"{VENDOR} streamed function-call arguments without naming the function")
            if fields.get("args"):
                raise StreamFailure.protocol(f"{VENDOR} sent both args and streamed arguments for {name!r}")
            streamed = self._call = _StreamedCall(self._next_key, name)
            self._next_key += 1
            builder.tool_call_start(
                streamed.key, call_id, name, thought_signature=signature, preview=streamed.writer.arguments
            )
            builder.tool_call_delta(streamed.key, streamed.writer.open())
            self._feed(streamed, partial)
            if not continues:
                self._close(streamed)
            return
        if not name:
            if not fields:
                return  # the empty end marker of a streamed call, repeated: it carries nothing
            raise StreamFailure.protocol(f"{VENDOR} sent a functionCall without a name")
        args: Any = fields.get("args")
        if args is None:
            args = {}
        elif args.__class__ is not dict:
            raise StreamFailure.protocol(f"{VENDOR} sent args for {name!r} that are not a JSON object")
        key = self._next_key
        self._next_key += 1
        # A number JSON cannot hold (NaN, an infinity) fails the stream there, before the call exists.
        builder.tool_call(key, call_id, name, args, thought_signature=signature)

    def _feed(self, streamed: _StreamedCall, partial: list[Any] | None) -> None:
        if not partial:
            return
        feed = streamed.feed
        for item in partial:
            if item.__class__ is not dict:
                raise StreamFailure.protocol(
                    f"{VENDOR} sent a partial argument for {streamed.name!r} that is not an object"
                )
            try:
                fragment = feed(item)
            except ArgumentsConflict as exc:
                raise self._unplaceable(streamed, exc) from None
            if fragment:
                self._builder.tool_call_delta(streamed.key, fragment)

    def _unplaceable(self, streamed: _StreamedCall, exc: ArgumentsConflict) -> StreamFailure:
        return StreamFailure.protocol(
            f"{VENDOR} sent streamed arguments for {streamed.name!r} that cannot be placed: {exc}"
        )

    def _close(self, streamed: _StreamedCall) -> None:
        self._builder.tool_call_delta(streamed.key, streamed.writer.close())
        self._builder.block_end(streamed.key)
        self._call = None

    # -- stop and usage -----------------------------------------------------------------------------------

    def _record_stop(self, raw: str, mapped: StopReason, info: ErrorInfo | None, message: str | None) -> None:
        if self._stop_is_error:
            return  # the first error stands: a later STOP must not turn a filtered response into success
        self._builder.stop(raw, mapped, error=info, error_message=message)
        self._stopped = True
        self._stop_is_error = mapped == "error"

    def _prompt_feedback(self, feedback: Any) -> bool:
        """Record a blocked prompt as a ``content_filter`` stop; True when it was one."""
        if feedback.__class__ is not dict:
            return False
        reason = feedback.get("blockReason")
        if reason.__class__ is not str or not reason or reason == "BLOCK_REASON_UNSPECIFIED":
            return False
        detail = feedback.get("blockReasonMessage")
        suffix = f": {detail.strip()}" if detail.__class__ is str and detail.strip() else ""
        self._record_stop(
            reason,
            "error",
            ErrorInfo.of("content_filter", code=reason),
            f"{VENDOR} blocked the prompt ({reason}){suffix}",
        )
        return True

    def _fast_usage(self, fast: tuple[int, int, int, int], candidates: int) -> None:
        """The usage of a chunk of the learned layout whose only count in a hole is the candidates count
        (``candidates``, digits: a non-negative int); the others are the learned ones, in range already
        (``fast``, see _learn). At one chunk per read this runs per chunk, so it builds no tuple."""
        learned = self._shape_counts
        if self._fast_from is learned and candidates == self._fast_candidates:
            return  # unchanged: nothing to recompute
        self._fast_from, self._fast_candidates, self._counts = learned, candidates, None
        _, prompt, cached, thoughts = fast
        self._builder.usage_counts(prompt, candidates + thoughts, cached, 0, thoughts)

    def _usage(self, meta: Any) -> None:
        counts: tuple[Any, ...]
        if meta.__class__ is tuple:  # (the learned counts, where the holes go, the pieces): see on_event
            learned, slots, pieces = meta
            fast = self._shape_fast
            if fast is not None and learned is self._shape_counts:
                self._fast_usage(fast, pieces[fast[0]])
                return
            filled = list(learned)
            for position, hole in slots:
                filled[position] = pieces[hole]
            counts = tuple(filled)
        elif meta.__class__ is dict:
            counts = tuple(map(meta.get, _COUNT_FIELDS))
        else:
            return
        if counts == self._counts:
            return  # unchanged: nothing to recompute
        self._counts = counts
        self._fast_from = None
        if counts == _NO_COUNTS:
            return  # e.g. only trafficType: no counts yet
        prompt, candidates, thoughts, cached, tool_prompt = _in_range(counts)
        self._builder.usage_counts(prompt - cached + tool_prompt, candidates + thoughts, cached, 0, thoughts)
