"""Making a stored transcript safe to send to any model (cross-provider replay).

A transcript may hold turns from several models, failed turns, tool calls that never got a result,
images, and text with lone UTF-16 surrogates. :func:`transform_messages` rewrites it into a form that
strict vendors accept; each adapter's request builder then renders its own payload from the result.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Callable, Sequence
from typing import Any, cast

from normalize.content import (
    AssistantContent,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultContent,
    UserContent,
)
from normalize.messages import AssistantMessage, Message, SystemMessage, ToolResultMessage, UserMessage
from normalize.model import Model

__all__ = [
    "IMAGE_OMITTED",
    "NO_RESULT_PROVIDED",
    "TOOL_IMAGE_OMITTED",
    "is_same_model",
    "sanitize_surrogates",
    "transform_messages",
]

#: Replaces a run of images in a user message sent to a text-only model.
IMAGE_OMITTED = "(image omitted: model does not support images)"
#: Replaces a run of images in a tool result sent to a text-only model.
TOOL_IMAGE_OMITTED = "(tool image omitted: model does not support images)"
#: The text of the synthetic error result given to a tool call that never got one.
NO_RESULT_PROVIDED = "No result provided"

# A surrogate pair held as two code points, or a single surrogate code point. Python strings can
# carry either (json.loads of "\ud83d", or a literal "\ud83d\ude00"); neither encodes to UTF-8.
_SURROGATES = re.compile("[\ud800-\udbff][\udc00-\udfff]|[\ud800-\udfff]")
_DROPPED_STOPS = frozenset({"error", "aborted"})


def _join_pair(match: re.Match[str]) -> str:
    pair = match.group()
    if len(pair) == 1:
        return ""
    high, low = ord(pair[0]), ord(pair[1])
    return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))


def sanitize_surrogates(text: str) -> str:
    """Return ``text`` without unpaired UTF-16 surrogates, so it always encodes to UTF-8.

    A lone high or low surrogate is removed. A high surrogate directly followed by a low one (two
    code points that JSON would have joined) becomes the character they encode. Text without
    surrogates is returned as the same object.
    """
    if text.isascii() or _SURROGATES.search(text) is None:
        return text
    return _SURROGATES.sub(_join_pair, text)


def _sanitize_value(value: Any) -> Any:
    # Tool-call arguments are outbound text too: scrub every string inside, keeping identity when
    # nothing changes so an untouched dict is not copied.
    if isinstance(value, str):
        return sanitize_surrogates(value)
    if isinstance(value, dict):
        items = cast("dict[Any, Any]", value)
        cleaned: dict[Any, Any] = {}
        changed = False
        for key, item in items.items():
            new_key, new_item = _sanitize_value(key), _sanitize_value(item)
            changed = changed or new_key is not key or new_item is not item
            cleaned[new_key] = new_item
        return cleaned if changed else items
    if isinstance(value, list):
        elements = cast("list[Any]", value)
        cleaned_list = [_sanitize_value(item) for item in elements]
        changed = any(a is not b for a, b in zip(elements, cleaned_list, strict=True))
        return cleaned_list if changed else elements
    return value


def is_same_model(message: AssistantMessage, target: Model) -> bool:
    """True when ``message`` was produced by ``target``: provider, api and model id all equal."""
    return message.provider == target.provider and message.api == target.api and message.model == target.id


def _content_list(content: object) -> list[Any]:
    # Stored transcripts sometimes carry ``null`` content; treat it as empty.
    if content is None:
        return []
    if isinstance(content, list):
        return cast("list[Any]", content)
    return [content]


def _downgrade_images(blocks: Sequence[UserContent], placeholder: str) -> list[UserContent]:
    out: list[UserContent] = []
    in_run = False
    for block in blocks:
        if isinstance(block, ImageContent):
            if not in_run:
                out.append(TextContent(text=placeholder))
            in_run = True
            continue
        in_run = False
        out.append(block)
    return out


def _clean_user_blocks(blocks: Sequence[UserContent], placeholder: str, images_ok: bool) -> list[UserContent]:
    source = blocks if images_ok else _downgrade_images(blocks, placeholder)
    out: list[UserContent] = []
    for block in source:
        if isinstance(block, TextContent):
            clean = sanitize_surrogates(block.text)
            out.append(block if clean is block.text else dataclasses.replace(block, text=clean))
        else:
            out.append(block)
    return out


def _same_list(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def _transform_user(message: UserMessage, images_ok: bool) -> UserMessage:
    content: Any = message.content
    if isinstance(content, str):
        clean = sanitize_surrogates(content)
        return message if clean is content else dataclasses.replace(message, content=clean)
    blocks = cast("list[UserContent]", _content_list(content))
    cleaned = _clean_user_blocks(blocks, IMAGE_OMITTED, images_ok)
    if content is not None and _same_list(blocks, cleaned):
        return message
    return dataclasses.replace(message, content=cleaned)


class _IdMap:
    """Foreign tool-call ids rewritten for the target, looked up both ways (one dict lookup per call:
    a scan of every earlier mapping per call made long transcripts quadratic)."""

    __slots__ = ("new", "owner")

    def __init__(self) -> None:
        self.new: dict[str, str] = {}
        self.owner: dict[str, str] = {}

    def get(self, original: str, default: str) -> str:
        return self.new.get(original, default)

    def record(self, original: str, new: str) -> None:
        self.new[original] = new
        self.owner[new] = original


def _transform_tool_result(message: ToolResultMessage, images_ok: bool, id_map: _IdMap) -> ToolResultMessage:
    raw: Any = message.content
    blocks = cast("list[ToolResultContent]", _content_list(raw))
    cleaned = _clean_user_blocks(blocks, TOOL_IMAGE_OMITTED, images_ok)
    new_id = id_map.get(message.tool_call_id, message.tool_call_id)
    if raw is not None and _same_list(blocks, cleaned) and new_id == message.tool_call_id:
        return message
    return dataclasses.replace(message, content=cleaned, tool_call_id=new_id)


def _transform_assistant_block(
    block: AssistantContent,
    same: bool,
    normalize_id: Callable[[str], str] | None,
    id_map: _IdMap,
) -> AssistantContent | None:
    if isinstance(block, ThinkingContent):
        if block.redacted:
            # Redacted reasoning is opaque ciphertext only its producer can read.
            return block if same else None
        if same and block.thinking_signature:
            # Signed reasoning replays verbatim, even with empty text (encrypted reasoning).
            clean = sanitize_surrogates(block.thinking)
            return block if clean is block.thinking else dataclasses.replace(block, thinking=clean)
        if not block.thinking.strip():
            return None
        clean = sanitize_surrogates(block.thinking)
        if same:
            return block if clean is block.thinking else dataclasses.replace(block, thinking=clean)
        # Foreign reasoning becomes plain text, untagged so the target does not learn to imitate tags.
        return TextContent(text=clean)
    if isinstance(block, TextContent):
        clean = sanitize_surrogates(block.text)
        if same:
            return block if clean is block.text else dataclasses.replace(block, text=clean)
        return TextContent(text=clean)
    arguments = _sanitize_value(block.arguments)
    if same:
        return block if arguments is block.arguments else dataclasses.replace(block, arguments=arguments)
    new_id = block.id
    if normalize_id is not None:
        new_id = normalize_id(block.id)
        if id_map.owner.get(new_id, block.id) != block.id:
            # Two foreign ids normalized alike (e.g. cut to the same 64-character prefix): keep them
            # apart with a digest of the original, or one call's result would answer the other.
            digest = hashlib.sha256(block.id.encode()).hexdigest()[:8]
            new_id = normalize_id(f"{new_id[: max(1, len(new_id) - 9)]}_{digest}")
        if new_id != block.id:
            id_map.record(block.id, new_id)
    return dataclasses.replace(block, id=new_id, arguments=arguments, thought_signature=None)


def _transform_assistant(
    message: AssistantMessage,
    target: Model,
    normalize_id: Callable[[str], str] | None,
    id_map: _IdMap,
) -> AssistantMessage:
    same = is_same_model(message, target)
    raw: Any = message.content
    blocks = cast("list[AssistantContent]", _content_list(raw))
    out: list[AssistantContent] = []
    for block in blocks:
        replaced = _transform_assistant_block(block, same, normalize_id, id_map)
        if replaced is not None:
            out.append(replaced)
    if raw is not None and _same_list(blocks, out):
        return message
    return dataclasses.replace(message, content=out)


def _call_part(tool_call_id: str) -> str:
    # "<call>|<item>" (the Responses adapter's form) reaches the vendor as its call part: that part
    # is what must be unique.
    return tool_call_id.partition("|")[0]


def _unique_call_ids(
    message: AssistantMessage, used: set[str], normalize_id: Callable[[str], str] | None
) -> tuple[AssistantMessage, dict[str, list[str]]]:
    """Rename tool calls whose id an earlier call already used (in this turn or before).

    Returns the message and, for each original id that was renamed anywhere in this turn, the ids its
    calls now carry, in order: the results that follow answer them in that order. A renamed id is
    ``<call>_<n>`` (through ``normalize_id`` when given) and drops any ``|<item>`` part, which named
    the vendor item of the original call, not of this one.

    Generated ids are derived from the response id, so two turns from a server that sends none can
    carry the same ``call_gen_…`` id; every strict vendor rejects a transcript that reuses one.
    """
    assigned: dict[str, list[str]] = {}
    renamed = False
    blocks = list(message.content)
    for position, block in enumerate(blocks):
        if not isinstance(block, ToolCall):
            continue
        stem = _call_part(block.id)
        new_id, call = block.id, stem
        n = 1
        while call in used and n <= len(used) + 1:
            n += 1
            new_id = f"{stem[:56]}_{n}"
            if normalize_id is not None:
                new_id = normalize_id(new_id)
            call = _call_part(new_id)
        used.add(call)
        assigned.setdefault(block.id, []).append(new_id)
        if new_id != block.id:
            renamed = True
            blocks[position] = dataclasses.replace(block, id=new_id)
    if not renamed:
        return message, {}
    changed = {original: ids for original, ids in assigned.items() if ids != [original]}
    return dataclasses.replace(message, content=blocks), changed


def _synthetic_results(pending: dict[str, ToolCall], timestamp: int) -> list[Message]:
    if not pending:
        return []  # the usual case, at every turn: nothing outstanding
    results: list[Message] = [
        ToolResultMessage(
            tool_call_id=call_id,
            tool_name=call.name,
            content=[TextContent(text=NO_RESULT_PROVIDED)],
            is_error=True,
            timestamp=timestamp,
        )
        for call_id, call in pending.items()
    ]
    pending.clear()
    return results


def transform_messages(
    messages: Sequence[Message],
    target: Model,
    *,
    normalize_tool_call_id: Callable[[str], str] | None = None,
) -> list[Message]:
    """Return a copy of ``messages`` that is safe to send to ``target``.

    The input is never mutated; a message that needs a change is replaced by a new object, an
    unchanged one is returned as is. Rules, in order:

    - ``None`` content is read as empty.
    - For a text-only target (``"image" not in target.input``) each run of consecutive images
      becomes one placeholder text block (:data:`IMAGE_OMITTED` in user messages,
      :data:`TOOL_IMAGE_OMITTED` in tool results).
    - Assistant messages whose ``stop_reason`` is ``error`` or ``aborted`` are dropped whole,
      with their tool calls.
    - An assistant message from the same model (:func:`is_same_model`) keeps its blocks and
      signatures, except empty or whitespace-only unsigned thinking. From another model: redacted
      thinking is dropped, other non-blank thinking becomes a plain text block (signature dropped),
      text loses ``text_signature``, tool calls lose ``thought_signature`` and get their id mapped
      through ``normalize_tool_call_id``; tool results that follow are rewritten to the new id.
    - A tool call whose id (its call part, before any ``|``) an earlier call already used, in an
      earlier kept turn or the same one, gets a fresh one (``<id>_2``, …, through
      ``normalize_tool_call_id`` when given); the tool results that follow are rewritten to match,
      in order.
    - A tool call still without a result when the next assistant message or user message arrives,
      or when the transcript ends, gets a synthetic error result (:data:`NO_RESULT_PROVIDED`)
      inserted right there, after any real results.
    - A tool result that answers no outstanding tool call (its call was dropped, or was already
      answered) is dropped: every strict vendor rejects it.
    - Lone UTF-16 surrogates are scrubbed from every user, assistant, thinking and tool-result
      text and from strings inside tool-call arguments (:func:`sanitize_surrogates`).
    - System messages pass through unchanged.
    """
    images_ok = "image" in target.input
    id_map = _IdMap()
    out: list[Message] = []
    pending: dict[str, ToolCall] = {}
    pending_since = 0
    used_ids: set[str] = set()
    turn_renames: dict[str, list[str]] = {}  # the latest assistant turn's renames: its results follow it

    for message in messages:
        if isinstance(message, SystemMessage):
            out.append(message)
        elif isinstance(message, UserMessage):
            out.extend(_synthetic_results(pending, pending_since))
            out.append(_transform_user(message, images_ok))
        elif isinstance(message, ToolResultMessage):
            result = _transform_tool_result(message, images_ok, id_map)
            renamed = turn_renames.get(result.tool_call_id)
            if renamed:  # the calls that share this id, in order: each result answers the next one
                result = dataclasses.replace(result, tool_call_id=renamed.pop(0))
            if pending.pop(result.tool_call_id, None) is not None:
                out.append(result)
        elif message.stop_reason in _DROPPED_STOPS:
            # A failed turn may hold reasoning with no following item or half-streamed tool calls;
            # replaying it poisons the session, so it goes, and its calls are never awaited.
            continue
        else:
            out.extend(_synthetic_results(pending, pending_since))
            transformed = _transform_assistant(message, target, normalize_tool_call_id, id_map)
            transformed, turn_renames = _unique_call_ids(transformed, used_ids, normalize_tool_call_id)
            out.append(transformed)
            for block in transformed.content:
                if isinstance(block, ToolCall):
                    pending[block.id] = block
            pending_since = transformed.timestamp
    out.extend(_synthetic_results(pending, pending_since))
    return out
