"""A stream that fails before its request is sent ends through the same choke point as every other
failure (:func:`streamfns.kit.redact_message`): its message is cut to ``MAX_ERROR_TEXT`` bytes and
redacted of the whole secret set — what the caller handed over, the key resolved from the environment
(or, before it is resolved, the key resolving would find) and the credentials in ``model.base_url``.

Before, a hook raising with the environment's key in its message leaked it, a hook quoting a
``?key=`` base URL leaked it, and a 3 MB exception message became a 3 MB ``error_message``; the
argument checks, a bad ``price_multiplier``, a payload that is not JSON and an unusable transport
choice were neither cut nor redacted. Nothing here opens a socket: every case fails before sending.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from normalize import AssistantMessage, Context, Model, StreamOptions
from streamfns.kit import WireRequest, redact
from streamfns.kit.keys import MAX_ERROR_TEXT
from tests.kit._fake import CONTEXT, WIRE, build_request, model

pytestmark = pytest.mark.parallel  # no I/O: nothing is sent

#: Obviously fake, assembled at run time; the Echo fake reads its key from ECHO_API_KEY.
ENV_KEY = "echo_" + "PLANTED_env_key_" + "0123456789abcdef"  # an identifier: a class may be named by it
URL_SECRET = "PLANTED" + "url-secret-0123456789"
HUGE = "x" * 3_000_000
#: "… [cut: N more bytes]" after a cut message: the cut is said.
_CUT_NOTE = 40


@pytest.fixture(autouse=True)
def _env_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ECHO_API_KEY", ENV_KEY)


async def _result(opts: StreamOptions, the_model: Model | None = None, wire: object = WIRE) -> AssistantMessage:
    stream_fn = getattr(wire, "stream_fn")  # noqa: B009 - a replaced WireApi as well as the fake
    return await stream_fn(the_model or model(), CONTEXT, opts).result()


def _assert_clean(message: AssistantMessage, *secrets: str) -> str:
    said = message.error_message or ""
    assert message.stop_reason == "error", said
    for secret in secrets:
        for text in (said, json.dumps(message.to_json()), repr(message)):
            assert secret not in text
            assert redact(text, [secret]) == text, "no other spelling either"
    return said


def _assert_cut(message: AssistantMessage) -> None:
    said = message.error_message or ""
    assert len(said.encode()) <= MAX_ERROR_TEXT + _CUT_NOTE, len(said)
    assert said.endswith(" more bytes]"), "the cut is said"


async def test_an_on_payload_failure_quoting_the_key_from_the_environment_is_redacted() -> None:
    def hook(payload: dict[str, Any], the_model: Model) -> dict[str, Any]:
        raise RuntimeError(f"upstream rejected key {ENV_KEY}")

    message = await _result(StreamOptions(on_payload=hook))
    said = _assert_clean(message, ENV_KEY)
    assert said == "on_payload raised RuntimeError: upstream rejected key [redacted]"


async def test_an_on_payload_failure_quoting_the_base_urls_credential_is_redacted() -> None:
    def hook(payload: dict[str, Any], the_model: Model) -> dict[str, Any]:
        raise RuntimeError(f"cannot POST {the_model.base_url}")

    the_model = model(f"https://gw.example/v1?key={URL_SECRET}")
    message = await _result(StreamOptions(api_key="given-" + "k" * 20, on_payload=hook), the_model)
    said = _assert_clean(message, URL_SECRET)
    assert said == "on_payload raised RuntimeError: cannot POST https://gw.example/v1?key=[redacted]"


async def test_an_on_payload_failure_of_megabytes_is_cut() -> None:
    def hook(payload: dict[str, Any], the_model: Model) -> dict[str, Any]:
        raise RuntimeError(HUGE)

    message = await _result(StreamOptions(on_payload=hook))
    assert message.error_info is not None
    assert message.error_info.kind == "config"
    _assert_cut(message)


async def test_a_builder_failure_quoting_the_environments_key_before_it_is_resolved_is_redacted() -> None:
    def quoting(the_model: Model, context: Context, opts: StreamOptions) -> WireRequest:
        raise ValueError(f"refusing {ENV_KEY}")

    message = await _result(StreamOptions(), wire=replace(WIRE, build_request=quoting))
    assert message.error_info is not None
    assert message.error_info.kind == "invalid_request"
    assert _assert_clean(message, ENV_KEY) == "cannot build the Echo request: ValueError: refusing [redacted]"


async def test_a_builder_failure_of_megabytes_is_cut() -> None:
    def huge(the_model: Model, context: Context, opts: StreamOptions) -> WireRequest:
        raise ValueError(HUGE)

    _assert_cut(await _result(StreamOptions(), wire=replace(WIRE, build_request=huge)))


async def test_a_refused_argument_of_megabytes_is_cut_and_redacted() -> None:
    # The argument checks quote a bad value: the first failure point of all, before anything is built.
    message = await _result(StreamOptions(reasoning=HUGE + ENV_KEY))  # pyright: ignore[reportArgumentType]
    assert message.error_info is not None
    assert message.error_info.kind == "config"
    _assert_cut(message)
    message = await _result(StreamOptions(reasoning=ENV_KEY))  # pyright: ignore[reportArgumentType]
    assert "[redacted]" in _assert_clean(message, ENV_KEY)


async def test_a_bad_price_multiplier_of_megabytes_is_cut() -> None:
    def priced(the_model: Model, context: Context, opts: StreamOptions) -> WireRequest:
        return replace(build_request(the_model, context, opts), price_multiplier=HUGE)  # pyright: ignore[reportArgumentType]

    message = await _result(StreamOptions(), wire=replace(WIRE, build_request=priced))
    assert message.error_info is not None
    assert message.error_info.kind == "config"
    _assert_cut(message)


async def test_a_payload_that_is_not_json_is_reported_through_the_choke_point() -> None:
    class Unsendable:
        pass

    # The type's name is the caller's text, and json quotes it.
    named = type(f"Holder{ENV_KEY}", (Unsendable,), {})
    message = await _result(StreamOptions(on_payload=lambda payload, the_model: {"x": named()}))
    said = _assert_clean(message, ENV_KEY)
    assert said.startswith("the Echo payload is not valid JSON: Object of type Holder[redacted]")


async def test_an_unusable_transport_choice_of_megabytes_is_cut_and_redacted() -> None:
    _assert_cut(await _result(StreamOptions(transport=HUGE)))
    message = await _result(StreamOptions(transport=ENV_KEY))
    assert message.error_info is not None
    assert message.error_info.kind == "config"
    assert "unknown transport '[redacted]'" in _assert_clean(message, ENV_KEY)
