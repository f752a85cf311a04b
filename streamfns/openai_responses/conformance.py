"""The OpenAI Responses adapter as a conformance target
(``python -m conformance run conformance.targets:openai_responses``).

The target brings its own recordings: real ones from the bundled library (text first, as the
harness takes the first recording for text-only checks; a function call; a reasoning summary; raw
reasoning with items ending out of order and a trailing ``[DONE]``; arguments only in ``.done``;
commentary before a call) and one hand-edited from a real recording for parallel calls, since no
bundled Responses recording holds two calls in one response (see that file's header).
"""

from pathlib import Path

from cassettes import library
from conformance import Capabilities, Target
from streamfns.openai_responses import WIRE, stream_openai_responses

__all__ = ["PARALLEL_RECORDING", "RECORDINGS", "TARGET"]

#: Two function calls in one response, derived from ``pai__function_call_gpt4o``.
PARALLEL_RECORDING = Path(__file__).with_name("pai__parallel_function_calls_gpt4o_HANDEDITED.jsonl")

#: The recordings the target replays, in order.
RECORDINGS: tuple[Path, ...] = (
    library.path("pai__text_gpt4o"),
    library.path("pai__function_call_gpt4o"),
    PARALLEL_RECORDING,
    library.path("mirahar__reasoning_summary_o4mini"),
    library.path("pai__openrouter_raw_cot_gptoss"),
    library.path("vercel__lmstudio_reasoning_function_call"),
    library.path("pai__phase_commentary_gpt55"),
)

TARGET = Target(
    stream_openai_responses,
    Capabilities.every_feature(WIRE.api),
    name="streamfns.openai_responses.stream_openai_responses",
    cassettes=RECORDINGS,
)
