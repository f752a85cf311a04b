"""Compat profiles: what an OpenAI-compatible server accepts and sends, as data.

Every server that speaks Chat Completions differs a little: which role carries the system prompt,
which field caps the output, how thinking is switched on, which delta field carries reasoning,
whether it ever sends a ``finish_reason``. Those differences are the fields of
:class:`CompletionsCompat`, a frozen dataclass; the request builder and the decoder read it and
never branch on a provider name. A profile is chosen for each model by :func:`compat_for`:

1. ``Model.compat["profile"]`` names a profile to start from (e.g. ``"deepseek"`` for a self-hosted
   DeepSeek behind another host); otherwise
2. the model's ``provider`` when it names a profile (``openai``, ``groq``, ``xai``, ``deepseek``,
   ``openrouter``, ``mistral``, ``together``, ``fireworks``, ``cerebras``, ``moonshot``, ``zai``,
   ``qwen``, ``vllm``, ``ollama-openai``, ``lmstudio``, ``llamacpp``, ``github-copilot`` …, see :data:`PROFILES` and
   :data:`PROVIDER_ALIASES`); otherwise
3. the host of ``model.base_url`` (``api.groq.com`` → ``groq`` …, see :data:`HOSTS`); otherwise
4. ``local`` for a loopback host (no key needed) or ``generic``.

The remaining keys of ``Model.compat`` then override single fields, checked by
:func:`streamfns.kit.parse_compat`: an unknown key or a value of the wrong type is a ``config``
error before anything is sent. Plugging a new server is therefore data, not code::

    Model(id="my-model", api="openai-completions", provider="acme", base_url="https://llm.acme.test/v1",
          compat={"profile": "vllm", "key_env": ["ACME_API_KEY"], "key_required": True})
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal
from urllib.parse import urlsplit

from normalize import Model
from streamfns.kit import ApiKey, CompatError, parse_compat, provider_key_env

__all__ = [
    "HOSTS",
    "PROFILES",
    "PROVIDER_ALIASES",
    "CompletionsCompat",
    "MaxTokensField",
    "ThinkingBudgetField",
    "ThinkingFormat",
    "ToolCallIdFormat",
    "api_key_for",
    "compat_for",
    "profile_name_for",
]

ThinkingFormat = Literal[
    "openai",
    "openrouter",
    "deepseek",
    "zai",
    "qwen",
    "qwen-chat-template",
    "chat-template",
    "together",
    "string",
    "none",
]
MaxTokensField = Literal["max_completion_tokens", "max_tokens"]
ToolCallIdFormat = Literal["openai", "mistral"]
ThinkingBudgetField = Literal["thinking_token_budget", "thinking_budget", "thinking_budget_tokens"]

_MAPPED_FINISH = frozenset({"stop", "length", "toolUse"})


@dataclass(frozen=True, slots=True, kw_only=True)
class CompletionsCompat:
    """One server's behaviour. Every field is a fact about the server (or a caller's choice where
    said); the defaults describe a conservative generic server.

    Credentials
        ``key_env``: environment variables tried for the key, in order, when ``StreamOptions.api_key``
        is not set. ``key_required``: False for servers that take no key (a local server); the
        ``Authorization`` header is then sent only when a key is found.

    Request
        ``developer_role``: the system prompt goes in a ``developer`` message for reasoning models
        (else ``system``). ``max_tokens_field``: where ``StreamOptions.max_tokens`` goes.
        ``usage_in_stream``: send ``stream_options: {include_usage: true}``. ``store``: send
        ``store: false`` (OpenAI keeps completions otherwise). ``supports_strict_tools``: the server
        accepts ``strict`` on tool definitions; ``strict_tools`` (the caller's choice) sends
        ``strict: true``. ``supports_temperature``: send ``temperature`` when given.
        ``reasoning_effort``: the server takes ``reasoning_effort``. ``thinking_format``: how a
        thinking level is requested (``openai`` reasoning_effort, ``openrouter`` reasoning object,
        ``deepseek``/``zai`` ``thinking`` object, ``qwen`` enable_thinking, ``qwen-chat-template`` and
        ``chat-template`` chat_template_kwargs, ``together`` reasoning.enabled, ``string`` a
        ``thinking`` string, ``none`` nothing). ``thinking_budget_field``: also send a token budget
        (vLLM-style) under this name. ``chat_template_kwargs``: extra static template arguments for
        the chat-template formats. ``prompt_cache_key``: send ``session_id`` as ``prompt_cache_key``;
        ``long_cache_retention``: ``cache_retention="long"`` sends ``prompt_cache_retention: "24h"``.
        ``cache_control``: Anthropic-style ``cache_control`` markers on the system prompt and the last
        user turn (OpenRouter with ``anthropic/*`` models). ``empty_tools_with_history``: send
        ``tools: []`` when the history has tool calls but no tools are given. Off by default:
        OpenAI, DeepSeek and DashScope reject an empty list; on for OpenRouter's ``anthropic/*``
        models, and to be switched on for other proxies in front of Anthropic (LiteLLM-style),
        which need the history's tool calls declared. ``tool_call_id_format``: how foreign tool-call ids are rewritten
        (``mistral``: exactly nine letters and digits). ``requires_tool_result_name``: tool messages
        carry the tool ``name``. ``requires_assistant_after_tool_result``: a short assistant message
        goes between tool results and a following user message. ``replay_thinking``: the model's
        own reasoning goes back in the delta field it arrived in; ``thinking_as_text``: it goes back
        as text in the content instead. ``requires_reasoning_content``: assistant messages of a
        reasoning model always carry ``reasoning_content`` (``""`` when none; DeepSeek).
        ``extra_body``: merged into the payload last (routing preferences, sampling parameters).

    Response
        ``reasoning_fields``: delta fields read as reasoning, in order; the first non-empty one in a
        delta wins (servers that send the same text under two names would otherwise double it).
        ``finish_reason_reliable``: the server always ends with a ``finish_reason``; when False a
        ``[DONE]`` without one ends the stream successfully (never a bare EOF).
        ``finish_reasons``: extra raw finish reasons mapped to ``stop``, ``length`` or ``toolUse``.

    ``profile`` records the named profile the values started from.
    """

    profile: str = "generic"
    key_env: tuple[str, ...] = ()
    key_required: bool = True
    developer_role: bool = False
    max_tokens_field: MaxTokensField = "max_tokens"
    usage_in_stream: bool = True
    store: bool = False
    supports_strict_tools: bool = False
    strict_tools: bool = False
    supports_temperature: bool = True
    reasoning_effort: bool = True
    thinking_format: ThinkingFormat = "openai"
    thinking_budget_field: ThinkingBudgetField | None = None
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict[str, Any])
    prompt_cache_key: bool = False
    long_cache_retention: bool = False
    cache_control: bool = False
    empty_tools_with_history: bool = False
    tool_call_id_format: ToolCallIdFormat = "openai"
    requires_tool_result_name: bool = False
    requires_assistant_after_tool_result: bool = False
    replay_thinking: bool = True
    thinking_as_text: bool = False
    requires_reasoning_content: bool = False
    extra_body: dict[str, Any] = field(default_factory=dict[str, Any])
    reasoning_fields: tuple[str, ...] = ("reasoning_content", "reasoning", "reasoning_text")
    finish_reason_reliable: bool = True
    finish_reasons: dict[str, str] = field(default_factory=dict[str, str])

    def __post_init__(self) -> None:
        if self.strict_tools and not self.supports_strict_tools:
            raise CompatError(
                f"strict_tools needs a server that accepts strict tool definitions "
                f"(supports_strict_tools is False for the {self.profile!r} profile)"
            )
        bad = {raw: mapped for raw, mapped in self.finish_reasons.items() if mapped not in _MAPPED_FINISH}
        if bad:
            raise CompatError(f"finish_reasons must map to stop, length or toolUse, got {bad!r}")
        if not self.reasoning_fields or not all(self.reasoning_fields):
            raise CompatError("reasoning_fields must list at least one non-empty field name")


_BASE = CompletionsCompat()


def _profile(name: str, **changes: Any) -> CompletionsCompat:
    return dataclasses.replace(_BASE, profile=name, **changes)


#: The named profiles, from vendor documentation and the recorded streams. Not verified against the
#: live servers (assumptions, listed in docs/models.md): which servers refuse replayed reasoning fields
#: (``replay_thinking=False``), which accept ``strict`` tools, and Mistral's ``stream_options``.
PROFILES: Final[Mapping[str, CompletionsCompat]] = {
    profile.profile: profile
    for profile in (
        _BASE,
        _profile("local", key_required=False),
        _profile(
            "openai",
            key_env=("OPENAI_API_KEY",),
            developer_role=True,
            max_tokens_field="max_completion_tokens",
            store=True,
            supports_strict_tools=True,
            prompt_cache_key=True,
            long_cache_retention=True,
        ),
        _profile(
            "openrouter",
            key_env=("OPENROUTER_API_KEY",),
            reasoning_effort=False,
            thinking_format="openrouter",
            supports_strict_tools=True,
        ),
        _profile("groq", key_env=("GROQ_API_KEY",), max_tokens_field="max_completion_tokens", replay_thinking=False),
        _profile(
            "xai",
            key_env=("XAI_API_KEY",),
            max_tokens_field="max_completion_tokens",
            reasoning_effort=False,
            supports_strict_tools=True,
            replay_thinking=False,
        ),
        _profile(
            "deepseek",
            key_env=("DEEPSEEK_API_KEY",),
            reasoning_effort=False,
            thinking_format="deepseek",
            requires_reasoning_content=True,
        ),
        _profile(
            "mistral",
            key_env=("MISTRAL_API_KEY",),
            usage_in_stream=False,
            reasoning_effort=False,
            thinking_format="none",
            tool_call_id_format="mistral",
            requires_tool_result_name=True,
            requires_assistant_after_tool_result=True,
            replay_thinking=False,
            # Mistral ends a reply cut by the model's context (not max_tokens) with its own reason.
            finish_reasons={"model_length": "length"},
        ),
        _profile(
            "together",
            key_env=("TOGETHER_API_KEY",),
            reasoning_effort=False,
            thinking_format="together",
            replay_thinking=False,
        ),
        _profile("fireworks", key_env=("FIREWORKS_API_KEY",), replay_thinking=False),
        _profile(
            "cerebras",
            key_env=("CEREBRAS_API_KEY",),
            max_tokens_field="max_completion_tokens",
            supports_strict_tools=True,
            replay_thinking=False,
        ),
        _profile("moonshot", key_env=("MOONSHOT_API_KEY",), reasoning_effort=False, thinking_format="none"),
        _profile("zai", key_env=("ZAI_API_KEY",), reasoning_effort=False, thinking_format="zai"),
        _profile("qwen", key_env=("DASHSCOPE_API_KEY",), reasoning_effort=False, thinking_format="qwen"),
        _profile(
            "vllm",
            key_env=("VLLM_API_KEY",),
            key_required=False,
            reasoning_effort=False,
            thinking_format="chat-template",
        ),
        _profile("ollama-openai", key_env=("OLLAMA_API_KEY",), key_required=False),
        _profile("lmstudio", key_env=("LM_API_TOKEN",), key_required=False),
        _profile(
            "llamacpp",
            key_env=("LLAMA_API_KEY",),
            key_required=False,
            reasoning_effort=False,
            thinking_format="chat-template",
        ),
        _profile("snowflake", key_env=("SNOWFLAKE_PAT",), finish_reason_reliable=False),
        # GitHub Copilot's chat completions (its Gemini, GPT-4 and Grok models): no reasoning effort
        # is taken (those models think by themselves), no developer role, no store. Signed in with a
        # Copilot login (streamfns.auth), which adds Copilot's headers; an explicit key is a Copilot token.
        _profile("github-copilot", reasoning_effort=False, thinking_format="none"),
    )
}

#: Other spellings of provider names, mapped to a profile.
PROVIDER_ALIASES: Final[Mapping[str, str]] = {
    "x-ai": "xai",
    "z-ai": "zai",
    "zhipu": "zai",
    "dashscope": "qwen",
    "alibaba": "qwen",
    "moonshotai": "moonshot",
    "kimi": "moonshot",
    "togetherai": "together",
    "together-ai": "together",
    "llama.cpp": "llamacpp",
    "llama-cpp": "llamacpp",
    "lm-studio": "lmstudio",
    # "ollama" is the native api's provider (streamfns.ollama); a Model built by hand for Ollama's /v1
    # endpoint under that name still gets the /v1 profile.
    "ollama": "ollama-openai",
    "copilot": "github-copilot",
    "github_copilot": "github-copilot",
}

#: Hosts (or parent domains) of ``model.base_url``, mapped to a profile.
HOSTS: Final[tuple[tuple[str, str], ...]] = (
    ("api.openai.com", "openai"),
    ("openrouter.ai", "openrouter"),
    ("api.groq.com", "groq"),
    ("api.x.ai", "xai"),
    ("api.deepseek.com", "deepseek"),
    ("api.mistral.ai", "mistral"),
    ("api.together.xyz", "together"),
    ("api.together.ai", "together"),
    ("api.fireworks.ai", "fireworks"),
    ("api.cerebras.ai", "cerebras"),
    ("api.moonshot.ai", "moonshot"),
    ("api.moonshot.cn", "moonshot"),
    ("api.z.ai", "zai"),
    ("open.bigmodel.cn", "zai"),
    ("dashscope.aliyuncs.com", "qwen"),
    ("dashscope-intl.aliyuncs.com", "qwen"),
    ("snowflakecomputing.com", "snowflake"),
    # api.individual / api.business / api.enterprise: the per-account endpoints of Copilot's token exchange.
    ("githubcopilot.com", "github-copilot"),
)

_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})


def _host(base_url: str) -> str:
    try:
        return (urlsplit(base_url).hostname or "").lower()
    except ValueError:
        return ""


def profile_name_for(model: Model) -> str:
    """The profile a model starts from (before its own ``compat`` overrides), by the rules of the
    module docstring."""
    named = (model.compat or {}).get("profile")
    if isinstance(named, str) and named:
        return named
    provider = model.provider.lower()
    provider = PROVIDER_ALIASES.get(provider, provider)
    if provider in PROFILES and provider not in ("generic", "local"):
        return provider
    host = _host(model.base_url)
    for suffix, name in HOSTS:
        if host == suffix or host.endswith("." + suffix):
            return name
    if host in _LOOPBACK or host.endswith(".localhost"):
        return "local"
    return "generic"


def _refined(name: str, profile: CompletionsCompat, model: Model) -> CompletionsCompat:
    """Model-dependent facts of a profile (applied before the model's own overrides)."""
    changes: dict[str, Any] = {}
    if not profile.key_env:
        # A server without a known variable: ``<PROVIDER>_API_KEY`` (the kit's rule, shared by adapters).
        key_env = provider_key_env(model.provider)
        if key_env:
            changes["key_env"] = key_env
    if name == "openrouter" and model.id.startswith("anthropic/"):
        changes["cache_control"] = True
        changes["empty_tools_with_history"] = True
    return dataclasses.replace(profile, **changes) if changes else profile


def compat_for(model: Model) -> CompletionsCompat:
    """The compat profile of ``model`` with its ``compat`` overrides applied.

    Raises :class:`~streamfns.kit.CompatError` for an unknown profile name, an unknown key or a
    value of the wrong type (the kit turns it into a ``config`` error before sending).
    """
    raw = dict(model.compat or {})
    named = raw.pop("profile", None)
    if named is not None and (not isinstance(named, str) or named not in PROFILES):
        raise CompatError(f"Model.compat['profile'] must be one of {', '.join(sorted(PROFILES))}, got {named!r}")
    name = profile_name_for(model)
    profile = _refined(name, PROFILES[name], model)
    return parse_compat(CompletionsCompat, raw, defaults=profile)


def api_key_for(model: Model) -> ApiKey:
    """The key rule for ``model``: its profile's variables, ``Authorization: Bearer``. The kit asks
    for it after the request was built, so ``compat`` has already been checked there."""
    compat = compat_for(model)
    return ApiKey(env=compat.key_env, required=compat.key_required)
