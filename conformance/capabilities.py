"""``Capabilities``: what an adapter declares it can do, as data (never guessed by introspection).

The harness reads it to pick recordings, to shape injected error bodies like the vendor's, and to
mark checks the adapter cannot take part in as ``unsupported``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

__all__ = ["KNOWN_APIS", "Capabilities", "Need"]

#: Wire apis the harness knows: it has their error-body shapes, terminal markers and recordings.
KNOWN_APIS: tuple[str, ...] = ("anthropic-messages", "openai-completions", "openai-responses", "google-generative-ai")

#: What a check may need: a capability flag, an HTTP transport, or a known wire api.
Need = Literal["http", "api", "tool_calls", "parallel_tool_calls", "thinking", "usage_in_stream", "images", "retries"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Capabilities:
    """The adapter's declaration.

    - ``api``: the wire api when it is one of :data:`KNOWN_APIS`, else None (then bring your own
      recordings; checks that need the api's terminal marker are ``unsupported``).
    - ``http``: the adapter sends its requests over HTTP to ``model.base_url``. When False (a scripted
      provider such as faux) every check that needs the loopback server is ``unsupported`` — and,
      since such an adapter has no transport to be limited in, those do not lower the verdict.
    - ``tool_calls`` / ``parallel_tool_calls`` / ``thinking``: the adapter emits tool-call blocks
      (several in one message) / thinking blocks from the vendor's stream.
    - ``usage_in_stream``: token usage is reported on a successful stream.
    - ``images``: user messages may carry images.
    - ``retries``: the adapter retries failed requests itself before any output (honouring
      ``retry-after``); without it, a 429 must end the stream as ``rate_limit``.
    """

    api: str | None = None
    http: bool = True
    tool_calls: bool = False
    parallel_tool_calls: bool = False
    thinking: bool = False
    usage_in_stream: bool = False
    images: bool = False
    retries: bool = False

    def __post_init__(self) -> None:
        if self.api is not None and self.api not in KNOWN_APIS:
            raise ValueError(
                f"unknown api {self.api!r}: use one of {', '.join(KNOWN_APIS)}, or None for another protocol"
            )
        if self.parallel_tool_calls and not self.tool_calls:
            raise ValueError("parallel_tool_calls=True needs tool_calls=True")

    def lacks(self, need: Need) -> bool:
        """True when this declaration does not provide ``need``."""
        if need == "api":
            return self.api is None
        value: bool = getattr(self, need)
        return not value

    def to_json(self) -> dict[str, Any]:
        """The declaration as a JSON object (for reports)."""
        return asdict(self)
