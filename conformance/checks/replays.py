"""P1–P4, U1, I1: the recordings themselves come out right (success, tools, thinking, usage, images).

Without these, an adapter that ended every stream in ``error`` would satisfy every fault check. P2–P4
each judge only the recordings picked for their own feature (:mod:`conformance.recordings`): P2
``tool``, P3 ``parallel``, P4 ``thinking``. With none, the check is ``unsupported`` with the reason
(not examined), never passed on whatever other replay happens to show a tool call or a thinking
block — P2 included: a parallel-calls recording is P3's, and serves P2 only when it is named for
``tool`` too (one recording may serve several features).
"""

from __future__ import annotations

from conformance.check import Check, Outcome
from conformance.checks._common import golden_served, text_recording_name
from conformance.observe import Observation, Scenario
from conformance.recordings import Feature, unserved
from conformance.session import Session
from normalize import Context, ImageContent, TextContent, ThinkingContent, ToolCall, UserMessage

__all__ = [
    "ParallelToolCallsReplay",
    "RecordingsReplayToDone",
    "ReportsUsage",
    "SendsImages",
    "ThinkingReplays",
    "ToolCallsEndToolUse",
]

#: A 1×1 transparent PNG.
_PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


def _tool_calls(obs: Observation) -> list[ToolCall]:
    message = obs.message
    if message is None or obs.terminal is None or obs.terminal.type != "done":
        return []
    return [block for block in message.content if isinstance(block, ToolCall) and block.name]


def _featured(session: Session, observed: list[Observation], feature: Feature) -> list[Observation]:
    names = {r.name for r in session.recordings if feature in r.features}
    return [obs for obs in observed if obs.scenario.recording in names]


class _GoldenCheck(Check):
    """A check that judges the unmutated replays."""

    def scenarios(self, session: Session) -> list[Scenario]:
        """The unmutated replays."""
        return session.golden()


class _FeatureCheck(_GoldenCheck):
    """A check of the recordings picked for ``feature``: unsupported (not examined) without one."""

    feature: Feature = "text"

    def unexamined(self, session: Session) -> str | None:
        """Why no recording serves this check's feature (None when one does)."""
        if not session.http:
            return None
        return unserved(session.recordings, session.capabilities, session.declared, self.feature)


class RecordingsReplayToDone(_GoldenCheck):
    """Every successful recording must replay to a ``done`` with content. If a replay ends in
    ``error``, read its errorMessage in the evidence: usually the adapter rejects a vendor event it
    does not know (ignore unknown events instead), insists on a header the loopback server does not
    send, or builds its URL from something other than ``model.base_url``. For an adapter without HTTP,
    the plain call must succeed. A recording of a refusal or a vendor error is not a success: leave it
    out of ``cassettes`` (or xfail P1 with the reason)."""

    id = "P1"
    level = "pi"
    title = "every successful recording replays to done with content"

    async def evaluate(self, session: Session, observed: list[Observation]) -> Outcome:
        """Each replay ends ``done`` with at least one block."""
        outcome = Outcome()
        for obs in observed:
            message = obs.message
            ok = (
                obs.terminal is not None
                and obs.terminal.type == "done"
                and message is not None
                and bool(message.content)
            )
            outcome.expect(obs, ok, f"expected done with content, got {obs.outcome()}")
        return outcome


class ToolCallsEndToolUse(_FeatureCheck):
    """The tool-call recording must end ``toolUse`` with complete tool calls (non-empty name, dict
    arguments). Map the vendor's tool-call blocks to ``toolcall_start/_delta/_end`` and its stop
    reason (``tool_use``, ``tool_calls``, a function call part) to ``toolUse``. Unsupported (not
    examined) when no recording is picked for ``tool`` — a parallel-calls recording is not, unless it
    is named for ``tool`` too: name a cassette ``tool`` (its header name or its file name), or as the
    api's ``WireApi(recordings=...)`` map names it (the same name for ``tool`` and ``parallel``
    serves both)."""

    id = "P2"
    level = "pi"
    title = "the tool-call recording ends toolUse with its tool calls"
    needs = ("tool_calls",)
    feature = "tool"

    async def evaluate(self, session: Session, observed: list[Observation]) -> Outcome:
        """The tool recording ends toolUse with a tool call (only it: see the module docstring)."""
        return _expect_calls(session, observed, self.feature, 1, "a complete tool call")


class ParallelToolCallsReplay(_FeatureCheck):
    """The parallel tool-call recording must end with every tool call it holds, each its own block
    with its own id. Key argument fragments by the vendor's call index or id, not by "the last call".
    Unsupported (not examined) when no recording is picked for ``parallel``: name a cassette
    ``parallel``, or as the api's ``WireApi(recordings=...)`` map names it."""

    id = "P3"
    level = "pi"
    title = "the parallel tool-call recording yields several tool calls"
    needs = ("parallel_tool_calls",)
    feature = "parallel"

    async def evaluate(self, session: Session, observed: list[Observation]) -> Outcome:
        """The parallel recording ends with at least two tool calls (only it: see the module docstring)."""
        return _expect_calls(session, observed, self.feature, 2, "two or more complete tool calls")


def _expect_calls(session: Session, observed: list[Observation], feature: Feature, count: int, what: str) -> Outcome:
    """Each replay of a recording picked for ``feature`` (for an adapter without HTTP, its plain call)
    ends ``toolUse`` with ``count`` calls or more. None picked: nothing is counted, so the check cannot
    pass (the runner reports it unexamined)."""
    outcome = Outcome()
    for obs in _featured(session, observed, feature) if session.http else observed:
        calls = _tool_calls(obs)
        ok = len(calls) >= count and getattr(obs.terminal, "reason", None) == "toolUse"
        outcome.expect(obs, ok, f"expected done(toolUse) with {what}, got {obs.outcome()} with {len(calls)}")
    return outcome


class ThinkingReplays(_FeatureCheck):
    """The thinking recording must yield a thinking block (``thinking_start/_delta/_end``) with the
    reasoning text, or a redacted one carrying the vendor's opaque data in ``thinkingSignature``.
    Unsupported (not examined) when no recording is picked for ``thinking``: name a cassette
    ``thinking``, or as the api's ``WireApi(recordings=...)`` map names it."""

    id = "P4"
    level = "pi"
    title = "the thinking recording yields a thinking block"
    needs = ("thinking",)
    feature = "thinking"

    async def evaluate(self, session: Session, observed: list[Observation]) -> Outcome:
        """The thinking recording holds a thinking block (only it: see the module docstring); for an
        adapter without HTTP, its plain call does."""
        outcome = Outcome()
        picked = _featured(session, observed, self.feature) if session.http else observed
        for obs in picked:
            message = obs.message
            found = message is not None and any(
                isinstance(b, ThinkingContent) and (b.thinking or b.thinking_signature) for b in message.content
            )
            outcome.expect(obs, found, f"no thinking block ({obs.outcome()})")
        return outcome


class ReportsUsage(_GoldenCheck):
    """A successful stream must report token usage: input (or cache) tokens and output tokens above
    zero, taken from the vendor's usage fields (Anthropic ``message_start``/``message_delta``, OpenAI's
    final usage chunk — ask for it with ``stream_options.include_usage`` —, Gemini ``usageMetadata``)."""

    id = "U1"
    level = "pi"
    title = "successful streams report input and output token usage"
    needs = ("usage_in_stream",)

    async def evaluate(self, session: Session, observed: list[Observation]) -> Outcome:
        """Every replay that ended ``done`` has non-zero input and output usage."""
        outcome = Outcome()
        for obs in observed:
            message = obs.message
            if message is None or obs.terminal is None or obs.terminal.type != "done":
                continue
            usage = message.usage
            prompt = usage.input + usage.cache_read + usage.cache_write
            outcome.expect(
                obs,
                prompt > 0 and usage.output > 0,
                f"usage input+cache={prompt}, output={usage.output}; expected both > 0",
            )
        return outcome


class SendsImages(Check):
    """A user message with an image must be sent (its base64 data in the request body) and the
    response replayed normally. Render ``ImageContent`` in the vendor's image part shape; do not drop
    it when ``model.input`` includes ``"image"``."""

    id = "I1"
    level = "pi"
    title = "a user image is sent and the reply streams normally"
    needs = ("http", "images")

    def scenarios(self, session: Session) -> list[Scenario]:
        """The text replay, asked with an image."""
        context = Context(
            messages=[
                UserMessage(
                    content=[
                        TextContent(text="What is in this image?"),
                        ImageContent(data=_PIXEL, mime_type="image/png"),
                    ],
                    timestamp=0,
                )
            ]
        )
        name = text_recording_name(session)
        return [Scenario(key="i1:image-input", recording=name, served=golden_served(session), context=context)]

    async def evaluate(self, session: Session, observed: list[Observation]) -> Outcome:
        """The reply is ``done`` and the server saw the image data."""
        obs = observed[0]
        outcome = Outcome()
        outcome.expect(obs, getattr(obs.terminal, "type", None) == "done", f"expected done, got {obs.outcome()}")
        sent = any(_PIXEL.encode() in request.body for request in obs.requests)
        outcome.expect(obs, sent, "the image's base64 data is not in the request body")
        return outcome
