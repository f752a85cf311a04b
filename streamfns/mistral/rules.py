"""What Mistral's chat api requires of a transcript, for every adapter that sends one: this package's
(api ``mistral-conversations``) and ``openai-completions`` with the ``mistral`` compat profile (a gateway
speaking Mistral's dialect), which imports these from here.

- Tool-call ids are exactly nine letters and digits (:func:`mistral_tool_call_id`).
- A user turn may not follow a tool result directly ("Unexpected role 'user' after role 'tool'"): a
  short assistant line, :data:`TOOL_RESULTS_PROCESSED`, goes between them.

This module imports nothing of the adapters, so either may import it without a cycle.
"""

from __future__ import annotations

import hashlib
import re
from typing import Final

__all__ = ["TOOL_RESULTS_PROCESSED", "mistral_tool_call_id"]

#: The assistant line sent between tool results and a following user turn.
TOOL_RESULTS_PROCESSED: Final = "I have processed the tool results."

_NOT_ALNUM: Final = re.compile(r"[^a-zA-Z0-9]")


def mistral_tool_call_id(call_id: str) -> str:
    """A tool-call id as Mistral accepts it: exactly nine letters and digits — the id's own letters and
    digits when there are nine of them, else the first nine hex digits of its SHA-256. The same id
    always maps alike; two ids may too (``abcd_12345``, ``abcd-12345``): a transcript keeps them apart
    itself (:func:`streamfns.mistral.request.build_request`, :func:`normalize.transform_messages`)."""
    letters = _NOT_ALNUM.sub("", call_id)
    if len(letters) == 9:
        return letters
    return hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).hexdigest()[:9]
