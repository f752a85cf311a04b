"""No real AWS configuration reaches a test: the one place the suite isolates botocore's credential chain."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamfns.kit.aws import clear_aws_sessions

__all__ = ["AWS_VARIABLES", "isolate_aws"]

#: Every variable botocore's chain or the Bedrock adapters read that could carry a real setting.
AWS_VARIABLES = (
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
)


def isolate_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *, region: str | None = None) -> Path:
    """Unset :data:`AWS_VARIABLES`, point the shared config and credentials files into ``tmp_path`` (empty),
    switch off the instance metadata service, set ``AWS_REGION`` when ``region`` is given, and forget the
    cached sessions. Returns the config file's path (a test may write a profile there). The caller calls
    :func:`~streamfns.kit.aws.clear_aws_sessions` again after the test."""
    for name in AWS_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    config = tmp_path / "config"
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    if region is not None:
        monkeypatch.setenv("AWS_REGION", region)
    clear_aws_sessions()
    return config
