"""Fake Google Cloud credentials for the real google-auth library: a service-account key made for the test
(a throwaway RSA key, never a real account) and a loopback OAuth token endpoint that checks the signed
assertion it is sent, as Google's does, before it issues a token."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from conformance.loopback import ReceivedRequest, Scripted
from streamfns.kit import CLOUD_PLATFORM_SCOPE, GOOGLE_ADC

__all__ = [
    "ADC_ENV",
    "TokenEndpoint",
    "assert_cloud_platform_grant",
    "fresh_adc",
    "make_key",
    "write_service_account",
]

#: Every variable that could point google-auth (or the adapters) somewhere else than the test says.
ADC_ENV = (
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_CLOUD_ACCESS_TOKEN",
    "GOOGLE_CLOUD_API_KEY",
    "GOOGLE_CLOUD_PROJECT",
    "GCLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
)


def fresh_adc(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """For a fixture to ``yield from``: a clean environment and no credentials in hand before and after
    the test (gcloud's own config folder is an empty one, so a developer's login is never found)."""
    for name in ADC_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    GOOGLE_ADC.forget()
    yield
    GOOGLE_ADC.forget()


def _b64url(data: str) -> bytes:
    return base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))


@dataclass
class TokenEndpoint:
    """Google's token endpoint, played on a loopback server: ``POST /token`` with a JWT-bearer grant signed
    by the test key gets ``tokens[n]`` (the n-th grant); a bad signature or any other request a 400
    ``invalid_grant``. ``fail`` makes every grant fail that way. Other paths get ``stream``."""

    key: rsa.RSAPrivateKey
    stream: Scripted
    tokens: list[str] = field(default_factory=lambda: ["ya29.adc-token-first-0001", "ya29.adc-token-second-002"])
    expires_in: int = 3600
    fail: bool = False
    grants: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])

    def __call__(self, request: ReceivedRequest) -> Scripted:
        if not request.path.startswith("/token"):
            return self.stream
        form = {name: values[0] for name, values in parse_qs(request.body.decode()).items()}
        claims = self._verified(form.get("assertion", ""))
        if self.fail or claims is None or form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer":
            error = {"error": "invalid_grant", "error_description": "Invalid JWT Signature."}
            return _json(400, error)
        self.grants.append(claims)
        token = self.tokens[min(len(self.grants), len(self.tokens)) - 1]
        return _json(200, {"access_token": token, "expires_in": self.expires_in, "token_type": "Bearer"})

    def _verified(self, assertion: str) -> dict[str, Any] | None:
        parts = assertion.split(".")
        if len(parts) != 3:
            return None
        try:
            self.key.public_key().verify(
                _b64url(parts[2]), f"{parts[0]}.{parts[1]}".encode(), padding.PKCS1v15(), hashes.SHA256()
            )
        except Exception:
            return None
        claims: dict[str, Any] = json.loads(_b64url(parts[1]))
        return claims


def _json(status: int, value: object) -> Scripted:
    return Scripted(
        status=status, headers=[("content-type", "application/json")], chunks=[(0.0, json.dumps(value).encode())]
    )


def make_key() -> rsa.RSAPrivateKey:
    """A fresh throwaway RSA key (made at run time: no key is stored anywhere)."""
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def write_service_account(folder: Path, token_uri: str, key: rsa.RSAPrivateKey) -> Path:
    """A service-account key file for a made-up account whose key is ``key``."""
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    info = {
        "type": "service_account",
        "project_id": "adc-test-project",
        "private_key_id": "test-key-id",
        "private_key": pem,
        "client_email": "streamfns-test@adc-test-project.iam.gserviceaccount.com",
        "client_id": "1234567890",
        "token_uri": token_uri,
    }
    path = folder / "service-account.json"
    path.write_text(json.dumps(info), encoding="utf-8")
    return path


def assert_cloud_platform_grant(claims: dict[str, Any]) -> None:
    """The assertion asks for the cloud-platform scope, as the test's service account."""
    assert claims["scope"] == CLOUD_PLATFORM_SCOPE
    assert claims["iss"] == "streamfns-test@adc-test-project.iam.gserviceaccount.com"
