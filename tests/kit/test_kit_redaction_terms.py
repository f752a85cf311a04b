"""The redactor's search terms are cached per secret (``keys._search_terms``): every stream ends by
redacting its message with its key, and for a real key computing them cost about 80 µs a call.

The cache must change nothing but the cost: the terms it hands back are those computed afresh, for
keys of any shape (non-ASCII, a lone surrogate, base64 and URL metacharacters), a second redaction
with the same key finds every echo the first did, and a key leaving the cache is found all the same.
Planted keys are obviously fake and built at run time.
"""

from __future__ import annotations

import base64

import pytest

from normalize import AssistantMessageEventStream, StreamOptions, validate_events
from normalize.secret_forms import needles
from normalize.wire.tags import HeaderSecret, header_secrets, query_secrets
from streamfns.kit import keys as kit_keys
from streamfns.kit import redact
from tests.adapters import ANTHROPIC, CONTEXT

KEYS = [
    "PLANTED-" + "terms-key-" + "0123456789abcdef",
    "sk-PLANTED-" + "x1Y2" * 22,  # the length of a real Anthropic key
    "PLANTED-" + "clé-ünïcode-" + "ключ",
    "PLANTED-" + "surrogate-\udc80-key",
    "PLANTED-" + 'a+b/c=d&e%f"g\\h',
]


@pytest.mark.parametrize("key", KEYS)
def test_cached_terms_are_those_computed_afresh(key: str) -> None:
    encoded = key.encode("utf-8", "surrogatepass")
    fresh = (
        tuple(needle for needle, _ in needles(encoded)),
        tuple(form.encode("utf-8", "surrogatepass") for form in kit_keys.secret_forms(key)),
    )
    first = kit_keys._search_terms(key)  # pyright: ignore[reportPrivateUsage]
    again = kit_keys._search_terms(key)  # pyright: ignore[reportPrivateUsage]
    assert again is first  # served from the cache
    assert set(first[0]) == set(fresh[0])
    assert len(first[0]) == len(fresh[0])
    assert set(first[1]) == set(fresh[1])
    assert len(first[1]) == len(fresh[1])


@pytest.mark.parametrize("key", KEYS)
def test_every_echo_is_found_on_every_call(key: str) -> None:
    encoded = key.encode("utf-8", "surrogatepass")
    echoes = [
        f"raw {key} end",
        f"upper {encoded.upper().decode('utf-8', 'surrogatepass')} end",  # re-cased as bytes: ASCII letters
        f"base64 {base64.b64encode(encoded).decode()} end",
        f"hex {encoded.hex()} end",
    ]
    for _ in range(3):  # the first call fills the cache, the others read it
        for text in echoes:
            redacted = redact(text, [key])
            assert redacted == f"{text.split(' ', 1)[0]} [redacted] end", text


@pytest.mark.parametrize("key", KEYS)
def test_the_one_scan_that_clears_a_short_text_misses_no_term(key: str) -> None:
    # A short field holding no term is told so by one pattern of every term (_any_term) instead of a
    # search per term. Fail closed: each term alone, and each inside other text, is still blanked;
    # text holding none comes back as it was.
    redactor = kit_keys._Redactor([key])  # pyright: ignore[reportPrivateUsage]
    terms = kit_keys._search_terms(key)  # pyright: ignore[reportPrivateUsage]
    checked = 0
    for term in dict.fromkeys([*terms[0], *terms[1]]):
        spelled = term.decode("utf-8", "surrogatepass")
        for text in (spelled, f"id msg_{spelled}", f"{spelled}.", f"x{spelled}y"):
            out = redactor(text, 512)
            assert spelled not in out, (key, term)
            assert "[redacted]" in out
            checked += 1
    assert checked >= 4 * 8  # the key's raw, re-cased, hex and base64 needles and its spellings
    assert redactor("msg_01XFDUDYJgAACzvnptvVoYEL", 512) == "msg_01XFDUDYJgAACzvnptvVoYEL"


def test_a_key_pushed_out_of_the_cache_is_still_found() -> None:
    kit_keys._search_terms.cache_clear()  # pyright: ignore[reportPrivateUsage]
    first = KEYS[0]
    assert redact(f"a {first} b", [first]) == "a [redacted] b"
    # More keys than the cache holds: the first is pushed out, then computed again when it is wanted.
    for n in range(kit_keys._TERMS_CACHED + 1):  # pyright: ignore[reportPrivateUsage]
        other = f"PLANTED-other-key-{n:04d}-padding"
        assert redact(f"x {other} y", [other]) == "x [redacted] y"
    info = kit_keys._search_terms.cache_info()  # pyright: ignore[reportPrivateUsage]
    assert info.currsize == kit_keys._TERMS_CACHED  # pyright: ignore[reportPrivateUsage]
    misses = info.misses
    assert redact(f"a {first} b", [first]) == "a [redacted] b"
    assert kit_keys._search_terms.cache_info().misses == misses + 1  # pyright: ignore[reportPrivateUsage]


async def test_a_key_with_a_lone_surrogate_ends_its_stream_as_auth_with_a_clear_message() -> None:
    # An environment variable holding a byte that is not UTF-8 reads back with a lone surrogate
    # (surrogateescape). Spelling such a key for redaction once raised UnicodeEncodeError, and the
    # stream ended "protocol" quoting that exception instead of saying what was wrong with the key.
    key = "sk-PLANTED-" + "\udc80" + "-0123456789"
    assert redact(f"a {key} b", [key]) == "a [redacted] b"
    model = ANTHROPIC.model(base_url="http://127.0.0.1:9")  # never reached: the key cannot be sent
    stream = ANTHROPIC.adapter.stream_fn(model, CONTEXT, StreamOptions(api_key=key))
    assert isinstance(stream, AssistantMessageEventStream)
    events = [event async for event in stream]
    validate_events(events)
    message = await stream.result()
    assert message.stop_reason == "error"
    assert message.error_info is not None
    assert message.error_info.kind == "auth"
    assert message.error_message is not None
    assert "key contains characters that cannot be sent" in message.error_message


def test_the_header_and_url_caches_answer_each_value_afresh_and_hand_out_copies() -> None:
    first, second = "PLANTED-" + "header-one-0123456789", "PLANTED-" + "header-two-0123456789"
    assert header_secrets([("Authorization", f"Bearer {first}")]) == [
        HeaderSecret("authorization", "", f"Bearer {first}"),
        HeaderSecret("authorization", "", first),
    ]
    # the same header with another value: its own secrets, never the cached ones of the first
    assert {s.value for s in header_secrets([("authorization", f"Bearer {second}")])} == {f"Bearer {second}", second}
    # a public header holds none, whatever its value; a name that says credential is never public
    assert header_secrets([("anthropic-version", first)]) == []
    assert [s.value for s in header_secrets([("x-stainless-api-key", first)])] == [first]
    # a caller changing the list it was given changes nothing the next caller gets
    given = header_secrets([("x-api-key", first)])
    given.clear()
    assert [s.value for s in header_secrets([("x-api-key", first)])] == [first]
    url = f"https://example.test/v1?key={first}"
    found = query_secrets(url)
    assert found == [("query parameter key", first)]
    found.clear()
    assert query_secrets(url) == [("query parameter key", first)]
    assert query_secrets(f"https://example.test/v1?key={second}") == [("query parameter key", second)]
