"""The adapter kit: the public way to write a StreamFn for any wire protocol, used by every built-in adapter.

An adapter declares what is its vendor's and nothing else, then the kit turns that into a StreamFn
that keeps the whole streamfns contract (never raises; abort before sending and mid-stream; key
checks that never echo the key; request signing; retries before output; idle, connect and total
timeouts; the content-type check; EOF before the terminal marker → ``truncated``; the response closed
on every path; every error message and code cut and redacted of every credential)::

    from streamfns.kit import NDJSON, Adapter, ApiKey, Ending, WireApi

    WIRE = WireApi(
        api="my-api",
        vendor="My Vendor",
        key=ApiKey(env=("MY_API_KEY",)),          # Authorization: Bearer <key>
        build_request=build_request,               # (model, context, options) -> WireRequest, pure
        framing=NDJSON,                            # SSE (the default), NDJSON, AWS_EVENTSTREAM, or your own
        decoder=MyDecoder,                         # (builder, model) -> on_event(frame) / on_eof()
        errors=ERRORS,                             # ErrorTable: error bodies, headers and events -> kinds
        ending=Ending("done", strip=strip_done),   # how the stream ends (and how to take that out)
    )
    stream_my_api = WIRE.stream_fn                 # the StreamFn (its one name)
    ADAPTER = Adapter.from_wire(WIRE, package=__name__)  # lists it: registry, catalog, harness

Pieces for the vendor parts: :class:`WireRequest`; the framings :data:`SSE`, :data:`NDJSON` and
:data:`AWS_EVENTSTREAM` and the frames they deliver (:class:`ServerSentEvent`, a line's ``bytes``,
:class:`EventStreamMessage`); the :class:`Decoder` protocol; :class:`Ending`, :data:`DROP` and
:class:`FrameView` to declare the terminal marker; :data:`Signer`, :class:`SigningRequest` and
:class:`Signature` for request signing (a signature may move the attempt to another ``origin``; a signer may renew its
login after a 401 with ``unauthorized`` and say how to log in again with ``login_hint``);
:func:`register_provider_signer` / :func:`provider_signer` (:class:`ProviderSignerError`) for a login chosen by the
model's provider rather than the api (``openai-codex``, ``github-copilot``: :mod:`streamfns.kit.provider_auth`);
:func:`load_event` (:func:`load_json` for any JSON value) and
the accessors :func:`obj`, :func:`array`, :func:`int_or_none`, :func:`str_or_none`, :func:`text` for
untrusted JSON; :class:`StreamFailure`; :class:`ErrorTable`, :class:`VendorError` and
:class:`ErrorSample`; :func:`parse_compat` for typed ``Model.compat`` flags; :func:`provider_key_env`
(a provider's ``<PROVIDER>_API_KEY``) and :func:`prompt_cache_key` (a session id capped for a
prompt-cache key); :func:`effort_for` and :func:`thinking_budget` (a thinking level as an effort name
or a token budget); :func:`host_label`, :func:`host_name`, :func:`endpoint_url` and :func:`path_segment`,
the one check for a host part or a path segment read from the environment or the model's flags (a
value that could move the request is a ``config`` error, nothing sent); :class:`Adapter`, the
declaration that lists a package in the registry, the catalog and ``conformance.targets``. The HTTP
seam: :class:`Transport` (with :class:`HttpRequest`, :class:`HttpResponse`, :class:`DirectRead` and
:class:`TransportError`) to bring another HTTP library, and
:func:`set_default_transport` / :func:`default_transport` (or :data:`TRANSPORT_ENV`) to choose httpx
or aiohttp for the whole process. None of these import httpx: a decoder stays pure and cheap to
import.
"""

from normalize.wire import (
    AWS_EVENTSTREAM,
    DROP,
    NDJSON,
    SSE,
    Base64Field,
    Drop,
    Ending,
    ErrorSample,
    EventStreamMessage,
    FrameView,
    Framing,
    ServerSentEvent,
    SSEDecoder,
    SSEEventTooLarge,
    WireProfile,
    encode_message,
)
from streamfns.kit.adapter import ENTRY_POINT_GROUP, Adapter
from streamfns.kit.aws import aws_signer, bedrock_model_path, bedrock_region, bedrock_runtime_url
from streamfns.kit.compat import CompatError, parse_compat
from streamfns.kit.decoder import Decoder, DecoderFactory
from streamfns.kit.errors import (
    ErrorTable,
    VendorError,
    error_object,
    error_object_body,
    parse_retry_after,
    retry_hint,
)
from streamfns.kit.failure import StreamFailure
from streamfns.kit.functions import NO_TOOL_OUTPUT, ChatMessage, chat_messages, function_call, function_tool
from streamfns.kit.gcloud import (
    CLOUD_PLATFORM_SCOPE,
    GOOGLE_ADC,
    GoogleAuth,
    VertexPlacement,
    vertex_placement,
    vertex_root,
)
from streamfns.kit.hosts import endpoint_url, host_label, host_name, path_segment
from streamfns.kit.keys import (
    MAX_ERROR_TEXT,
    MAX_ID_TEXT,
    ApiKey,
    prompt_cache_key,
    provider_key_env,
    redact,
    redact_message,
)
from streamfns.kit.payload import array, int_or_none, load_event, load_json, obj, str_or_none, text
from streamfns.kit.provider_auth import (
    ProviderSignerError,
    provider_signer,
    provider_signers,
    register_provider_signer,
)
from streamfns.kit.shapes import MAX_SHAPE_BYTES, SHAPE_LEARNS, EventShape, HolePath, Matcher, Shortcut, changed
from streamfns.kit.signing import Signature, Signer, SigningRequest
from streamfns.kit.stops import StopMapping, StopTable
from streamfns.kit.thinking import DEFAULT_THINKING_BUDGETS, MIN_ANSWER_TOKENS, effort_for, thinking_budget
from streamfns.kit.transport import DirectRead, HttpRequest, HttpResponse, Transport, TransportError
from streamfns.kit.transports import TRANSPORT_ENV, default_transport, set_default_transport
from streamfns.kit.wire import RequestBuilder, WireApi, WireRequest

__all__ = [
    "AWS_EVENTSTREAM",
    "CLOUD_PLATFORM_SCOPE",
    "DEFAULT_THINKING_BUDGETS",
    "DROP",
    "ENTRY_POINT_GROUP",
    "GOOGLE_ADC",
    "MAX_ERROR_TEXT",
    "MAX_ID_TEXT",
    "MAX_SHAPE_BYTES",
    "MIN_ANSWER_TOKENS",
    "NDJSON",
    "NO_TOOL_OUTPUT",
    "SHAPE_LEARNS",
    "SSE",
    "TRANSPORT_ENV",
    "Adapter",
    "ApiKey",
    "Base64Field",
    "ChatMessage",
    "CompatError",
    "Decoder",
    "DecoderFactory",
    "DirectRead",
    "Drop",
    "Ending",
    "ErrorSample",
    "ErrorTable",
    "EventShape",
    "EventStreamMessage",
    "FrameView",
    "Framing",
    "GoogleAuth",
    "HolePath",
    "HttpRequest",
    "HttpResponse",
    "Matcher",
    "ProviderSignerError",
    "RequestBuilder",
    "SSEDecoder",
    "SSEEventTooLarge",
    "ServerSentEvent",
    "Shortcut",
    "Signature",
    "Signer",
    "SigningRequest",
    "StopMapping",
    "StopTable",
    "StreamFailure",
    "Transport",
    "TransportError",
    "VendorError",
    "VertexPlacement",
    "WireApi",
    "WireProfile",
    "WireRequest",
    "array",
    "aws_signer",
    "bedrock_model_path",
    "bedrock_region",
    "bedrock_runtime_url",
    "changed",
    "chat_messages",
    "default_transport",
    "effort_for",
    "encode_message",
    "endpoint_url",
    "error_object",
    "error_object_body",
    "function_call",
    "function_tool",
    "host_label",
    "host_name",
    "int_or_none",
    "load_event",
    "load_json",
    "obj",
    "parse_compat",
    "parse_retry_after",
    "path_segment",
    "prompt_cache_key",
    "provider_key_env",
    "provider_signer",
    "provider_signers",
    "redact",
    "redact_message",
    "register_provider_signer",
    "retry_hint",
    "set_default_transport",
    "str_or_none",
    "text",
    "thinking_budget",
    "vertex_placement",
    "vertex_root",
]
