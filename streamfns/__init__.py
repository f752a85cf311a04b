"""streamfns: StreamFn implementations that turn every LLM vendor's streaming protocol into one
assistant-message event stream that never raises.

    import streamfns
    from normalize import Context, UserMessage

    model = streamfns.get_model("anthropic", "claude-sonnet-4-5")
    async for event in streamfns.stream(model, Context(messages=[UserMessage(content="Hi")])):
        ...

``stream`` dispatches on ``model.api`` through a registry; built-in adapters load on first use, so
``import streamfns`` imports no adapter (and never a vendor SDK).
"""

from streamfns._registry import (
    StreamFn,
    adapter_problems,
    complete,
    error_stream,
    get_stream_fn,
    guarded_call,
    register_api,
    registered_apis,
    stream,
    unregister_api,
)
from streamfns.catalog import get_model, list_models

__all__ = [
    "StreamFn",
    "adapter_problems",
    "complete",
    "error_stream",
    "get_model",
    "get_stream_fn",
    "guarded_call",
    "list_models",
    "register_api",
    "registered_apis",
    "stream",
    "unregister_api",
]

__version__ = "0.1.0"
