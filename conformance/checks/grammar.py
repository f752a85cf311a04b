"""G1–G7: the event grammar of ``normalize.validate_events``, on every stream the run consumed.

Each observation that was consumed to its end (no raise, no cancellation, no early break) is
validated once; a stream that had to be cancelled at the scenario deadline (or that blocked the
event loop), or that the harness stopped reading at its cap, counts as a G2 violation (it never
ended), something yielded that is not a plain event is a G3 one, and ``result()`` not returning the
terminal's message is a G7 one. The events validated are the harness's own copies
(:mod:`conformance.reading`); should their values still defeat the validator, that is a G3 violation
too (the events could not be read as a stream).
"""

from __future__ import annotations

from conformance.check import Check, Outcome
from conformance.observe import Observation, Scenario, Unreadable
from conformance.report import Level
from conformance.session import Session
from conformance.text import describe_exception
from normalize import RULES, AssistantMessageEvent, Violation, validate_events

__all__ = ["GRAMMAR_CHECKS", "GrammarCheck", "violations"]

_TERMINAL = ("done", "error")

#: The rules of pi's own event protocol (one terminal, last; the block grammar; deltas that add up;
#: reasons that match; tool calls only when complete): the ``pi`` level. G1 (``start`` first, always)
#: and G7 (the usage contract, ``result()``) are streamfns' own.
_PI_RULES = frozenset({"G2", "G3", "G4", "G5", "G6"})
#: Within a pi rule, the parts only streamfns promises: an ``ErrorInfo`` on every error (G5); tool-call
#: ids that are never empty and never repeat (pi leaves an id empty when a server sends none), and
#: arguments that are the strict parse of the deltas (pi repairs them) (G6).
_STRICTER = ("errorInfo", "empty id", "duplicate id", "strict parse")


def violation_level(rule: str, message: str, obs: Observation | None = None) -> Level:
    """The contract level a violation of ``rule`` described by ``message`` (in ``obs``) breaks. A hang
    in a scenario that exists to test the idle timeout (a silent server, its own ``idle_timeout_s``,
    nothing aborted) breaks only streamfns' promise of that timeout — C3's — which pi never made; a
    hang anywhere else (after an abort, at the end of a body) breaks pi's "exactly one terminal"."""
    if rule not in _PI_RULES or any(part in message for part in _STRICTER):
        return "streamfns"
    if (
        rule == "G2"
        and obs is not None
        and obs.hung
        and obs.scenario.idle_timeout_s is not None
        and obs.scenario.abort == "none"
    ):
        return "streamfns"
    return "pi"


_TROUBLESHOOTING = {
    "G1": "Emit exactly one `start`, first — also when the request fails before any byte arrives, and "
    "only once across internal retries. With normalize.MessageBuilder, call `start()` (it is idempotent) "
    "and never construct StartEvent yourself.",
    "G2": "End every stream with exactly one `done` or `error` and emit nothing after it. A hang (no "
    "terminal before the scenario deadline) is reported here: check that every read has a timeout and "
    "that EOF without the vendor's terminal marker ends the stream as an `error`.",
    "G3": "Open a block at `contentIndex == len(partial.content)`, send deltas and the end only to that "
    "open block, with its own kind; end each block once; on `done` every block has ended; on `error` "
    "leave incomplete blocks open. Map vendor block keys to content indexes in one place (the builder).",
    "G4": "The concatenated deltas of a block must equal its `*_end` content and the final message's "
    "block. Do not drop, reorder or re-send deltas; accumulate in the order the vendor sent them.",
    "G5": "`done.reason` is stop|length|toolUse and equals `message.stopReason`, with no errorMessage; "
    "`error.reason` is error|aborted and equals it, with a non-empty errorMessage and an ErrorInfo.",
    "G6": "`toolUse` only with a complete tool call; tool-call ids non-empty and unique; `arguments` is "
    "the strict parse of the concatenated argument deltas — never salvaged or invented (no default "
    "values filled in, no repaired JSON).",
    "G7": "Usage counts are non-negative ints with totalTokens = input + output + cacheRead + cacheWrite "
    "and cost.total = the sum of its parts; `await stream.result()` returns the terminal's message.",
}


def violations(obs: Observation) -> list[Violation]:
    """The grammar violations of one consumed stream (empty for streams not consumed to the end)."""
    if obs.violations is not None:
        return obs.violations
    found: list[Violation] = []
    if obs.scenario.consumer != "iterate" or obs.call_error is not None or obs.iteration_error is not None:
        obs.violations = found
        return found
    events: list[AssistantMessageEvent] = []
    for index, item in enumerate(obs.events):
        if isinstance(item, Unreadable):
            found.append(Violation("G3", index, item.description))
        else:
            events.append(item)
    try:
        checked = validate_events(events)
    except Exception as exc:  # values of the right family that still do not fit together
        checked = [Violation("G3", -1, f"the events could not be validated: {describe_exception(exc)}")]
    if obs.hung or obs.cut_off is not None:
        why = obs.blocked or obs.cut_off or f"the stream did not end within {obs.deadline_s:g} s (hang)"
        found.append(Violation("G2", -1, why if obs.cut_off is None else f"the stream did not end: {why}"))
        checked = [v for v in checked if not (v.rule == "G2" and v.index == -1)]
    found.extend(checked)
    if obs.result_problem is not None:
        found.append(Violation("G7", -1, obs.result_problem))
    elif obs.result_json is not None:
        final = next(
            (data.get("message", data.get("error")) for data in reversed(obs.event_json) if data["type"] in _TERMINAL),
            None,
        )
        if final is not None and obs.result_json != final:
            found.append(Violation("G7", -1, "result() returned a different message than the terminal event"))
    obs.violations = found
    return found


class GrammarCheck(Check):
    """One grammar rule, over every consumed stream of the run."""

    def __init__(self, rule: str) -> None:
        self.id = rule
        self.title = RULES[rule]
        self._doc = _TROUBLESHOOTING[rule]
        self.level = "pi" if rule in _PI_RULES else "streamfns"

    @property
    def troubleshooting(self) -> str:
        """What to look at when this rule is broken."""
        return self._doc

    def scenarios(self, session: Session) -> list[Scenario]:
        """The unmutated replays, so the rule is checked even when no other check runs."""
        return session.golden()

    async def evaluate(self, session: Session, observed: list[Observation]) -> Outcome:
        """Flag every violation of this rule in every observation."""
        del observed
        outcome = Outcome()
        for obs in session.observations:
            endless = obs.hung or obs.cut_off is not None
            if not obs.complete and not endless:
                continue
            # A stream that never ended is searched for violations but is no case examined: a rule
            # is not shown to hold by streams that all hung.
            outcome.checked += 0 if endless else 1
            for violation in violations(obs):
                if violation.rule == self.id:
                    index = violation.index if violation.index >= 0 else None
                    level = violation_level(self.id, violation.message, obs)
                    outcome.flag(obs, violation.message, index=index, excerpt=violation.excerpt, level=level)
        return outcome


GRAMMAR_CHECKS: tuple[GrammarCheck, ...] = tuple(GrammarCheck(rule) for rule in RULES)
