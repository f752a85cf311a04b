"""AWS for the kit: where a Bedrock request goes, and how it is signed.

Two jobs, one per half of the kit's request path:

**Where** (pure but for the environment, read in one place): :func:`bedrock_runtime_url` is the
``bedrock-runtime`` endpoint a model's requests go to, resolved the way the AWS SDKs resolve it —
the model's ``base_url`` when it has one (a proxy, a test server); else ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``
(a VPC endpoint, FIPS, a proxy), else ``AWS_ENDPOINT_URL``; else
``https://bedrock-runtime.{region}.amazonaws.com`` (``.amazonaws.com.cn`` in the China regions) for
the region :func:`bedrock_region` finds. A request builder calls it: it reads the process environment
(and, when botocore is installed, the shared config file's region of ``AWS_PROFILE``), nothing else.
:func:`bedrock_model_path` is a model id as one URL path segment (``:`` and an ARN's ``/`` percent-encoded).

Every part of that endpoint read from outside the code is checked by :mod:`streamfns.kit.hosts` before
it is used: a region (from ``compat["region"]``, ``AWS_REGION``, ``AWS_DEFAULT_REGION`` or a profile)
must be one lowercase host label — stricter than botocore's ``validate_region_name``, so
``us-east-1.attacker.invalid#`` or ``x@127.0.0.1:9/`` never becomes part of a host —, an endpoint
variable must be a plain ``http(s)`` URL (no user info, query, fragment or dot segment), and a model id
that is empty or a dot segment (``.``, ``..``: ``/model/../converse-stream`` is ``/converse-stream``)
is refused. Each raises :class:`~streamfns.kit.CompatError` naming the variable or flag: the stream
ends ``config`` before anything is signed or sent.

**How** (the signing step, :mod:`streamfns.kit.signing`): :func:`aws_signer` makes a kit
:data:`~streamfns.kit.Signer` that authenticates each attempt on the final bytes, with either

- a **Bedrock API key** (``service="bedrock"`` only): ``StreamOptions.api_key`` when given, else
  ``AWS_BEARER_TOKEN_BEDROCK``, sent as ``Authorization: Bearer <key>``; or
- **SigV4** over the method, URL, headers and exact body, with credentials from botocore's own chain
  (environment, shared config and credentials files and their profiles incl. SSO, web identity,
  container and instance roles; session tokens; refreshed when they near expiry). The region is the
  one the URL's host names (``bedrock-runtime.eu-west-1.amazonaws.com``, a VPC or FIPS host), else
  :func:`bedrock_region` of the model. Credential resolution may block on the network (STS, the
  instance metadata service, an SSO cache): it runs in a thread, so an abort or the total timeout still
  lands, and the botocore session is made once per profile and kept.

What the signer promises: botocore is imported only when a request is signed with SigV4 (``import
streamfns`` never imports it); without it the stream ends ``config`` saying
``pip install 'streamfns[bedrock]'``; no credentials, or credentials that expired and could not be
refreshed, end it ``auth`` naming where credentials are looked for — before anything is sent, and
never quoting a credential. The :class:`~streamfns.kit.Signature` it returns lists the secret key, the
session token, the signature and the Bearer key as secrets: every error message is redacted of them
and the cassette recorder never writes them (the ``Authorization`` and ``X-Amz-Security-Token`` headers
are never stored, by the recorder's own name rule).
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import importlib
import os
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, cast
from urllib.parse import urlsplit

from normalize import Model
from streamfns.kit.failure import StreamFailure
from streamfns.kit.hosts import endpoint_url, host_label, path_segment
from streamfns.kit.signing import Signature, Signer, SigningRequest

__all__ = [
    "BEDROCK_API_KEY_ENV",
    "BEDROCK_ENDPOINT_ENV",
    "BEDROCK_EXTRA_HINT",
    "DEFAULT_AWS_REGION",
    "aws_signer",
    "bedrock_model_path",
    "bedrock_region",
    "bedrock_runtime_url",
    "clear_aws_sessions",
    "region_from_arn",
    "region_from_host",
    "sigv4_headers",
]

#: The Bedrock API key variable (a long- or short-term key sent as a Bearer token).
BEDROCK_API_KEY_ENV: Final = "AWS_BEARER_TOKEN_BEDROCK"
#: The endpoint overrides, most specific first (AWS's service-specific and global ``AWS_ENDPOINT_URL``).
BEDROCK_ENDPOINT_ENV: Final = ("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "AWS_ENDPOINT_URL")
#: The region when nothing names one (as the reference library and the AWS console default).
DEFAULT_AWS_REGION: Final = "us-east-1"
#: What a missing optional extra tells the user.
BEDROCK_EXTRA_HINT: Final = "pip install 'streamfns[bedrock]'"

# A region as AWS spells them: us-east-1, eu-central-2, us-gov-west-1, cn-north-1, us-iso-east-1, ap-southeast-7.
_REGION: Final = re.compile(r"[a-z]{2}(?:-gov|-iso[a-z]?)?-[a-z]+-\d{1,2}")
# arn:aws:bedrock:us-east-1:123456789012:inference-profile/... (aws-cn, aws-us-gov partitions too).
_ARN: Final = re.compile(r"arn:aws[a-z-]*:bedrock:([a-z0-9-]+):")
# The headers a SigV4 signature adds to a request.
_SIGNED_OUTPUT: Final = ("authorization", "x-amz-date", "x-amz-security-token")
_TIMESTAMP: Final = "%Y%m%dT%H%M%SZ"


def region_from_host(url: str) -> str | None:
    """The AWS region a URL's host names (its first label that is a region: ``bedrock-runtime.us-west-2
    .amazonaws.com``, ``bedrock-runtime-fips.us-east-1…``, ``vpce-….bedrock-runtime.eu-west-1.vpce
    .amazonaws.com``); None for a host that names none (``localhost``, a proxy)."""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return None
    return next((label for label in host.split(".") if _REGION.fullmatch(label)), None)


def region_from_arn(model_id: str) -> str | None:
    """The region of a Bedrock ARN model id (an inference profile, a provisioned model); None otherwise."""
    match = _ARN.match(model_id)
    region = match.group(1) if match else None
    return region if region and _REGION.fullmatch(region) else None


_REGION_NAME: Final = "an AWS region name such as us-east-1"


def _region(value: str, source: str) -> str:
    """A region read from ``source``, checked: it becomes a label of the endpoint's host."""
    return host_label(value, source=source, what=_REGION_NAME)


def _compat_region(model: Model) -> str | None:
    region = (model.compat or {}).get("region")
    if not isinstance(region, str) or not region.strip():
        return None
    return _region(region, "Model.compat['region']")


def bedrock_region(model: Model, environ: Mapping[str, str] | None = None) -> str:
    """The region a model's requests go to: ``compat["region"]``; else an ARN id's own region; else
    ``AWS_REGION``, ``AWS_DEFAULT_REGION``; else the region of the shared-config profile (``AWS_PROFILE``
    or ``default``, read by botocore when it is installed); else :data:`DEFAULT_AWS_REGION`. Reads the
    environment (``environ``, default ``os.environ``) and the AWS config file, nothing else.

    The first region found is checked (one lowercase host label, see :mod:`streamfns.kit.hosts`): one
    that is not a region name raises :class:`~streamfns.kit.CompatError` naming where it came from,
    instead of falling through to the next source."""
    env = os.environ if environ is None else environ
    found = _compat_region(model) or region_from_arn(model.id)
    if found:
        return found
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        value = env.get(name, "").strip()
        if value:
            return _region(value, name)
    profile = env.get("AWS_PROFILE") or None
    configured = _profile_region(profile)
    if configured is not None:
        return _region(configured, f"the region of the AWS profile {profile or 'default'!r} (shared config file)")
    return DEFAULT_AWS_REGION


def bedrock_runtime_url(model: Model, environ: Mapping[str, str] | None = None) -> str:
    """The ``bedrock-runtime`` endpoint (scheme, host, optional path; no trailing ``/``) for ``model``
    (see the module docstring for the order). ``environ`` defaults to ``os.environ``. An endpoint
    variable or a region that fails its check raises :class:`~streamfns.kit.CompatError`."""
    if model.base_url:
        return model.base_url.rstrip("/")
    env = os.environ if environ is None else environ
    for name in BEDROCK_ENDPOINT_ENV:
        value = env.get(name, "").strip()
        if value:
            return endpoint_url(value, source=name)
    region = bedrock_region(model, env)
    suffix = "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"
    return f"https://bedrock-runtime.{region}.{suffix}"


def bedrock_model_path(model_id: str) -> str:
    """A model id as one URL path segment: every reserved character percent-encoded (``:`` of a
    version, the ``:`` and ``/`` of an ARN, ``%``), as the AWS SDKs send it. An id that is empty or a
    dot segment (``.``, ``..``) raises :class:`~streamfns.kit.CompatError`: it would move the request,
    and its signature, to another path."""
    return path_segment(model_id, what="a Bedrock model id")


# --- botocore, loaded on first use ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Botocore:
    session: Any
    auth: Any
    awsrequest: Any
    exceptions: Any


_LOADED: list[_Botocore] = []
_SESSIONS: dict[str | None, Any] = {}
_LOCK = threading.Lock()


def _botocore() -> _Botocore:
    """botocore's modules, imported on first use; a missing extra is a ``config`` failure."""
    if _LOADED:
        return _LOADED[0]
    try:
        loaded = _Botocore(*(importlib.import_module(f"botocore.{name}") for name in _Botocore.__slots__))
    except ImportError:
        raise StreamFailure.of(
            "config",
            f"signing AWS requests with SigV4 needs botocore: {BEDROCK_EXTRA_HINT} "
            f"(or set {BEDROCK_API_KEY_ENV} to use a Bedrock API key)",
        ) from None
    _LOADED.append(loaded)
    return loaded


def _session(profile: str | None) -> Any:
    """The botocore session of ``profile`` (None: botocore's own choice, ``AWS_PROFILE`` or default),
    made once: its credentials are resolved once and refreshed by botocore as they near expiry."""
    with _LOCK:
        found = _SESSIONS.get(profile)
        if found is None:
            found = _botocore().session.Session(profile=profile)
            _SESSIONS[profile] = found
        return found


def clear_aws_sessions() -> None:
    """Forget the cached botocore sessions (tests; a process whose AWS configuration changed)."""
    with _LOCK:
        _SESSIONS.clear()


def _profile_region(profile: str | None) -> str | None:
    """The region the shared config gives ``profile``; None without botocore or without one."""
    try:
        session = _session(profile)
        region = session.get_config_variable("region")
    except Exception:  # no botocore, an unknown profile, a config that does not parse: no region from it
        return None
    return region if isinstance(region, str) and region else None


_NO_CREDENTIALS = (
    "no AWS credentials found (looked in AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, the shared config and "
    "credentials files for the profile{profile}, SSO, web identity, container and instance roles); "
    f"configure one of them, or set {BEDROCK_API_KEY_ENV} to use a Bedrock API key"
)


def _frozen_credentials(session: Any, profile: str | None) -> Any:
    """The session's current credentials (refreshed when due), or a StreamFailure saying why there are
    none. Blocking: runs in a thread."""
    exceptions = _botocore().exceptions
    named = f" {profile!r}" if profile else ""
    try:
        credentials = session.get_credentials()
        frozen = None if credentials is None else credentials.get_frozen_credentials()
    except exceptions.ProfileNotFound as exc:
        raise StreamFailure.of("config", f"AWS profile not found: {exc}") from None
    except (
        exceptions.SSOTokenLoadError,
        exceptions.UnauthorizedSSOTokenError,
        exceptions.TokenRetrievalError,
    ) as exc:
        raise StreamFailure.of(
            "auth", f"the AWS SSO session{named} expired or is missing ({exc}); run `aws sso login`"
        ) from None
    except RuntimeError as exc:
        # botocore: "Credentials were refreshed, but the refreshed credentials are still expired."
        raise StreamFailure.of("auth", f"AWS credentials expired and could not be refreshed: {exc}") from None
    except Exception as exc:
        raise StreamFailure.of("auth", f"AWS credentials could not be resolved: {type(exc).__name__}: {exc}") from None
    if frozen is None or not frozen.access_key or not frozen.secret_key:
        raise StreamFailure.of("auth", _NO_CREDENTIALS.format(profile=named))
    return frozen


def _utc_now() -> _dt.datetime:
    return _dt.datetime.now(_dt.UTC)


def sigv4_headers(
    request: SigningRequest, credentials: Any, *, service: str, region: str, when: _dt.datetime
) -> dict[str, str]:
    """The headers SigV4 adds to ``request`` (``authorization``, ``x-amz-date``, and
    ``x-amz-security-token`` with a session token), computed by botocore's own ``SigV4Auth`` at the
    instant ``when`` (UTC)."""
    boto = _botocore()
    aws = boto.awsrequest.AWSRequest(
        method=request.method, url=request.url, data=request.body, headers=dict(request.headers)
    )
    auth = boto.auth.SigV4Auth(credentials, service, region)
    # SigV4Auth.add_auth, with the clock ours: the same steps in the same order.
    aws.context["timestamp"] = when.astimezone(_dt.UTC).strftime(_TIMESTAMP)
    auth._modify_request_before_signing(aws)  # botocore's step: drops a stale signature, adds the date and token
    canonical = auth.canonical_request(aws)
    signature = auth.signature(auth.string_to_sign(aws, canonical), aws)
    auth._inject_signature_to_request(aws, signature)
    sent = cast("Mapping[str, str]", aws.headers)
    return {name.lower(): value for name, value in sent.items() if name.lower() in _SIGNED_OUTPUT}


def _bearer(request: SigningRequest, service: str) -> str | None:
    if service != "bedrock":
        return None
    key = (request.options.api_key or os.environ.get(BEDROCK_API_KEY_ENV, "")).strip()
    return key or None


def aws_signer(
    service: str = "bedrock",
    *,
    profile: str | None = None,
    session: Any = None,
    clock: Callable[[], _dt.datetime] | None = None,
) -> Signer:
    """A kit signer for AWS (see the module docstring): a Bedrock API key as a Bearer token when one is
    given (``service="bedrock"``), else SigV4 for ``service`` with botocore's credential chain.

    ``profile`` picks a shared-config profile (None: ``AWS_PROFILE``, else ``default``); ``session`` is
    a botocore session to take credentials from instead of the cached one (tests, an application's own);
    ``clock`` gives the signing instant (UTC; tests)."""
    now = clock or _utc_now

    async def sign(request: SigningRequest) -> Signature:
        key = _bearer(request, service)
        if key is not None:
            if any(ch in key for ch in "\r\n"):
                raise StreamFailure.of("auth", f"the Bedrock API key ({BEDROCK_API_KEY_ENV}) has a line break")
            return Signature({"authorization": f"Bearer {key}"}, (key,))
        _botocore()  # a missing extra says so before any thread is started
        chosen = session

        def resolve() -> tuple[Any, str]:
            own = chosen if chosen is not None else _session(profile)
            frozen = _frozen_credentials(own, profile)
            region = region_from_host(request.url) or bedrock_region(request.model)
            return frozen, region

        credentials, region = await asyncio.to_thread(resolve)
        headers = sigv4_headers(request, credentials, service=service, region=region, when=now())
        authorization = headers.get("authorization", "")
        signature = authorization.rpartition("Signature=")[2]
        secrets = tuple(
            secret for secret in (credentials.secret_key, credentials.token, signature, authorization) if secret
        )
        return Signature(headers, secrets)

    return sign
