"""``ErrorTable.statuses``: a vendor's own meaning of an HTTP status (issue 35, item 11).

A table maps a status to a kind when the body names no code or type it knows: after ``kinds``, before
the generic status rule. Cohere documents 499 as a cancelled request; a vendor may call its 503
overloaded.
"""

from __future__ import annotations

import json

import httpx
import pytest

from normalize import ErrorKind
from streamfns.kit import ErrorTable, VendorError

STATUSES = ErrorTable(
    vendor="Vendor",
    kinds={"invalid_api_key": "auth"},
    overflow=("too many tokens",),
    statuses={499: "network", 503: "overloaded", 422: "invalid_request"},
)
PLAIN = ErrorTable(vendor="Vendor", kinds={"invalid_api_key": "auth"})


def _body(message: str, code: str | None = None) -> bytes:
    return json.dumps({"error": {"message": message, "code": code}}).encode()


def test_a_status_the_vendor_documents_gets_its_kind_and_that_kinds_retryability() -> None:
    failure = STATUSES.from_body(499, httpx.Headers(), _body("request cancelled"))
    assert (failure.info.kind, failure.info.status, failure.info.retryable) == ("network", 499, True)
    assert failure.message == "Vendor API error 499: request cancelled"
    # Without the mapping the generic rule reads any other 4xx as a bad request, never repeated.
    plain = PLAIN.from_body(499, httpx.Headers(), _body("request cancelled"))
    assert (plain.info.kind, plain.info.retryable) == ("invalid_request", False)


def test_the_mapping_comes_before_the_generic_rule() -> None:
    assert STATUSES.from_body(503, httpx.Headers(), _body("busy")).info.kind == "overloaded"
    assert PLAIN.from_body(503, httpx.Headers(), _body("busy")).info.kind == "server"


def test_a_known_code_or_type_comes_before_the_status() -> None:
    failure = STATUSES.from_body(499, httpx.Headers(), _body("bad key", code="invalid_api_key"))
    assert (failure.info.kind, failure.info.code) == ("auth", "invalid_api_key")


def test_an_unmapped_status_keeps_the_generic_rule() -> None:
    assert STATUSES.from_body(429, httpx.Headers(), _body("slow down")).info.kind == "rate_limit"
    assert STATUSES.kind_for(VendorError(message="gone"), 404) == "not_found"


def test_a_retryable_status_stays_retryable_whatever_kind_it_maps_to() -> None:
    table = ErrorTable(vendor="Vendor", kinds={}, statuses={500: "invalid_request"})
    failure = table.from_body(500, httpx.Headers(), _body("odd"))
    assert (failure.info.kind, failure.info.retryable) == ("invalid_request", True)


def test_overflow_wording_still_upgrades_a_status_mapped_to_invalid_request() -> None:
    failure = STATUSES.from_body(422, httpx.Headers(), _body("too many tokens: size limit exceeded"))
    assert failure.info.kind == "context_overflow"


def test_events_carry_no_status_so_the_mapping_does_not_apply() -> None:
    assert STATUSES.from_event(VendorError(message="stream broke")).info.kind == "server"


@pytest.mark.parametrize(
    "statuses",
    [{99: "network"}, {600: "server"}, {499: "cancelled"}, {True: "network"}],
)
def test_a_mapping_that_cannot_apply_is_refused_when_declared(statuses: dict[int, ErrorKind]) -> None:
    with pytest.raises(ValueError, match="error table maps statuses it cannot"):
        ErrorTable(vendor="Vendor", kinds={}, statuses=statuses)
