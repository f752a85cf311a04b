"""A refused host part is quoted without what may be a credential (``streamfns.kit.hosts``): user info is
blanked, and a query or a fragment is never quoted (``?…``, ``#…``): a proxy URL in ``AWS_ENDPOINT_URL``
or ``OLLAMA_HOST`` may carry ``?token=`` or ``#sig=``, and the config error must not show it."""

from __future__ import annotations

import pytest

from streamfns.kit import CompatError, endpoint_url, host_label, host_name
from streamfns.ollama.request import host_from_env

pytestmark = pytest.mark.parallel  # pure: no I/O

SECRET = "FAKEproxyToken0123456789"


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (f"https://proxy.example/?token={SECRET}", "'https://proxy.example/?…'"),
        (f"https://proxy.example/bedrock#sig={SECRET}", "'https://proxy.example/bedrock#…'"),
        (f"https://proxy.example/v1?a=1#sig={SECRET}", "'https://proxy.example/v1?…'"),
        (f"https://user:{SECRET}@proxy.example/?token={SECRET}", "'https://[user info]@proxy.example/?…'"),
        (f"https://proxy.example/?x={SECRET}@elsewhere.example", "'https://[user info]@elsewhere.example'"),
    ],
)
def test_an_endpoint_refused_for_its_query_or_fragment_is_quoted_without_it(value: str, shown: str) -> None:
    with pytest.raises(CompatError) as caught:
        endpoint_url(value, source="AWS_ENDPOINT_URL")
    message = str(caught.value)
    assert SECRET not in message
    assert f"AWS_ENDPOINT_URL {shown} is not usable as an endpoint" in message


def test_a_region_or_host_with_a_fragment_is_quoted_up_to_it() -> None:
    with pytest.raises(CompatError) as caught:
        host_label(f"us-east-1#{SECRET}", source="AWS_REGION", what="a region")
    assert "'us-east-1#…'" in str(caught.value)
    assert SECRET not in str(caught.value)
    with pytest.raises(CompatError) as caught:
        host_name(f"proxy.example?key={SECRET}", source="OLLAMA_HOST")
    assert "'proxy.example?…'" in str(caught.value)
    assert SECRET not in str(caught.value)


def test_a_bare_trailing_mark_is_quoted_as_is() -> None:
    with pytest.raises(CompatError) as caught:
        host_label("us-east-1.evil.example#", source="AWS_REGION", what="a region")
    assert "'us-east-1.evil.example#'" in str(caught.value), "nothing after the mark: nothing elided"


@pytest.mark.parametrize("variable", [f"127.0.0.1:9?key={SECRET}", f"http://127.0.0.1:9/api#sig={SECRET}"])
def test_ollama_host_with_a_query_or_fragment_is_refused_without_quoting_it(variable: str) -> None:
    with pytest.raises(CompatError) as caught:
        host_from_env(variable)
    message = str(caught.value)
    assert message.startswith("OLLAMA_HOST 'http://127.0.0.1:9")
    assert SECRET not in message
    assert "…'" in message
