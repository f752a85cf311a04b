"""The one check for host parts and path segments read from outside the code (``streamfns.kit.hosts``):
what an attacker may put in a region, a location, an endpoint variable or a model id never moves the
request, and every refusal is a ``CompatError`` naming where the value came from."""

from __future__ import annotations

import pytest
from botocore.exceptions import InvalidRegionError  # pyright: ignore[reportMissingTypeStubs]
from botocore.utils import validate_region_name  # pyright: ignore[reportMissingTypeStubs, reportUnknownVariableType]
from hypothesis import given
from hypothesis import strategies as st

from streamfns.kit import CompatError, endpoint_url, host_label, host_name, path_segment

pytestmark = pytest.mark.parallel  # pure: no I/O

REGIONS = [
    "us-east-1",
    "eu-central-2",
    "us-gov-west-1",
    "cn-north-1",
    "us-iso-east-1",
    "us-isob-east-1",
    "ap-southeast-7",
    "il-central-1",
    "global",
    "us",
    "eu",
    "us-central1",
    "europe-west4",
]

#: Values an attacker (or a typo) may put where one host label goes.
NOT_LABELS = [
    "",
    "   ",
    "us-east-1.attacker.invalid#",
    "x@127.0.0.1:9/",
    "us-east-1/",
    "us-east-1?x=1",
    "us-east-1#",
    "us-east-1:443",
    "US-EAST-1",
    "Us-east-1",
    "us-east-1.",
    ".us-east-1",
    "us\u3002east-1",
    "us\uff0eeast-1",
    "us%2eeast-1",
    "us%2Eeast-1",
    "us-east-1%00",
    "us east 1",
    "us-east-1\nhost: evil",
    "us-east-1\x00",
    "-us-east-1",
    "us-east-1-",
    "1234",
    "1us-east",
    "ü-east-1",
    "a" * 64,
    "..",
]


@pytest.mark.parametrize("region", REGIONS)
def test_every_region_and_location_name_is_a_host_label(region: str) -> None:
    assert host_label(region, source="AWS_REGION", what="a region") == region
    assert host_label(f"  {region}\n", source="AWS_REGION", what="a region") == region, "whitespace around it drops"


@pytest.mark.parametrize("value", NOT_LABELS)
def test_anything_that_could_leave_the_label_is_refused_naming_the_source(value: str) -> None:
    with pytest.raises(CompatError, match=r"^AWS_REGION .* is not an AWS region name such as us-east-1"):
        host_label(value, source="AWS_REGION", what="an AWS region name such as us-east-1")


def test_a_refusal_never_quotes_user_info() -> None:
    with pytest.raises(CompatError) as caught:
        host_label("admin:hunter2-hunter2@127.0.0.1:9/", source="AWS_REGION", what="a region")
    assert "hunter2" not in str(caught.value)
    assert "[user info]@127.0.0.1:9/" in str(caught.value)


def _botocore_accepts(value: str) -> bool:
    try:
        validate_region_name(value)
    except InvalidRegionError:
        return False
    return True


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyzABC0123456789-._@#/:%\u3002 \n", max_size=70))
def test_every_label_accepted_is_a_region_botocore_accepts(value: str) -> None:
    try:
        accepted = host_label(value, source="AWS_REGION", what="a region")
    except CompatError:
        return
    assert _botocore_accepts(accepted)


@pytest.mark.parametrize("value", [*REGIONS, *NOT_LABELS])
def test_the_label_rule_is_never_looser_than_botocores(value: str) -> None:
    try:
        accepted = host_label(value, source="AWS_REGION", what="a region")
    except CompatError:
        return
    assert _botocore_accepts(accepted)


@pytest.mark.parametrize(
    ("value", "host"),
    [
        ("localhost", "localhost"),
        ("gpu-box", "gpu-box"),
        ("ollama_server", "ollama_server"),
        ("Example.COM", "example.com"),
        ("0.0.0.0", "0.0.0.0"),
        ("10.0.0.2", "10.0.0.2"),
        ("::1", "::1"),
        ("fe80::1", "fe80::1"),
        ("bedrock-runtime.us-east-1.amazonaws.com", "bedrock-runtime.us-east-1.amazonaws.com"),
    ],
)
def test_host_names_and_addresses_pass(value: str, host: str) -> None:
    assert host_name(value, source="OLLAMA_HOST") == host


@pytest.mark.parametrize(
    "value",
    [
        "",
        "a.b.",
        "a..b",
        ".a",
        "1.2.3",
        "0x7f",
        "a.0x7f000001",
        "127.1",
        "fe80::1%eth0",
        "évil.example",
        "evil\u3002example",
        "x@127.0.0.1",
        "evil.example#",
        "evil.example/",
        "evil.example:80",
        "a" * 64 + ".example",
        ".".join(["a" * 60] * 5),
    ],
)
def test_anything_else_is_not_a_host(value: str) -> None:
    with pytest.raises(CompatError, match=r"^OLLAMA_HOST .* is not a host name or an IP address"):
        host_name(value, source="OLLAMA_HOST")


@pytest.mark.parametrize(
    ("value", "url"),
    [
        ("https://bedrock-runtime.us-east-1.amazonaws.com", "https://bedrock-runtime.us-east-1.amazonaws.com"),
        (
            "https://vpce-1.bedrock-runtime.eu-west-1.vpce.amazonaws.com/",
            "https://vpce-1.bedrock-runtime.eu-west-1.vpce.amazonaws.com",
        ),
        ("http://127.0.0.1:9", "http://127.0.0.1:9"),
        ("http://[::1]:8080/proxy/bedrock/", "http://[::1]:8080/proxy/bedrock"),
        ("HTTPS://Gateway.Example/v1", "https://gateway.example/v1"),
        ("  http://localhost:4566\n", "http://localhost:4566"),
        ("http://gw.example/a%20b/..x", "http://gw.example/a%20b/..x"),
    ],
)
def test_endpoint_urls_pass(value: str, url: str) -> None:
    assert endpoint_url(value, source="AWS_ENDPOINT_URL") == url


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("bedrock.example", "not an http or https URL"),
        ("ftp://bedrock.example", "its scheme is 'ftp'"),
        ("file:///etc/passwd", "its scheme is 'file'"),
        ("https://user:pass@bedrock.example", "it has user info"),
        ("https://bedrock.example@127.0.0.1:9", "it has user info"),
        ("https://127.0.0.1:9#@bedrock.example", "it has a query or a fragment"),
        ("https://bedrock.example/?x=1", "it has a query or a fragment"),
        ("https://bedrock.example:0", "its port is not a number"),
        ("https://bedrock.example:70000", "its port is not a number"),
        ("https://bedrock.example:44a", "its port is not a number"),
        ("https://bedrock.example/a/../b", "dot segment"),
        ("https://bedrock.example/a/%2e%2E/b", "dot segment"),
        ("https://bedrock.example/%2E", "dot segment"),
        ("https://bedrock.example/a%zz", "characters a path cannot hold"),
        ("https://bedrock.example/a\\b", "characters a path cannot hold"),
        ("https://bedrock.example./x", "its host is not a host name"),
        ("https://evil\u3002example", "not an http or https URL of printable ASCII"),
        ("https://evil.example\t.amazonaws.com", "not an http or https URL of printable ASCII"),
        ("https://a b.example", "not an http or https URL of printable ASCII"),
        ("http://::1/", "its host is not a host name"),
        ("http://[::1", "its host is not a host name"),
        ("http://[fe80::1%25eth0]:80", "its host is not a host name"),
        ("http://[127.0.0.1]:80", "an IPv6 host must be in brackets"),
        ("http:///x", "its host is not a host name"),
        ("http://:80", "its host is not a host name"),
    ],
)
def test_an_endpoint_that_could_move_or_hide_the_path_is_refused(value: str, why: str) -> None:
    with pytest.raises(CompatError, match=r"^AWS_ENDPOINT_URL .* is not usable as an endpoint") as caught:
        endpoint_url(value, source="AWS_ENDPOINT_URL")
    assert why in str(caught.value)
    assert "pass@" not in str(caught.value), "user info is never quoted"


@pytest.mark.parametrize(
    ("value", "segment"),
    [
        ("anthropic.claude-v2:1", "anthropic.claude-v2%3A1"),
        (
            "arn:aws:bedrock:us-east-1:1:inference-profile/x",
            "arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fx",
        ),
        ("%2e%2e", "%252e%252e"),
        ("%2E", "%252E"),
        ("..a", "..a"),
        ("a/../b", "a%2F..%2Fb"),
        ("a?b#c", "a%3Fb%23c"),
    ],
)
def test_a_path_segment_stays_one_segment(value: str, segment: str) -> None:
    assert path_segment(value, what="a model id") == segment


@pytest.mark.parametrize("value", ["..", ".", "", " ", " .. "])
def test_a_dot_segment_or_nothing_is_refused(value: str) -> None:
    with pytest.raises(CompatError, match="is not a model id: as a path segment it would move the request"):
        path_segment(value, what="a model id")
