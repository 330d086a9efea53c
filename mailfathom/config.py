"""The MAILFATHOM_* settings: one declaration each, read from the environment.

Each setting states its type, default and allowed range here and nowhere else. Reading never
raises: a value that does not parse or falls outside its range is recorded as a problem, the
default stands in so imports keep working, and the system check in mailfathom.checks refuses
to start with a message naming the setting and its range. README.md's configuration table
is checked against this list by a test.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"0", "false", "no", "off"}


@dataclass(frozen=True)
class Setting:
    """One MAILFATHOM_* environment variable: its type, default and accepted values."""

    name: str
    kind: str  # "int", "decimal", "bool", "str", "choice"
    default: Any
    help: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    unit: str = ""

    def describe_range(self) -> str:
        if self.kind == "int":
            unit = f" {self.unit}" if self.unit else ""
            return f"a whole number from {self.minimum} to {self.maximum}{unit}"
        if self.kind == "decimal":
            return f"a number from {self.minimum:g} to {self.maximum:g}"
        if self.kind == "bool":
            return "true or false"
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        return "text"

    def parse(self, raw: str) -> Any:
        """Return the typed value of `raw`, or raise ValueError naming the allowed range."""
        text = raw.strip()
        if self.kind == "int":
            try:
                value = int(text)
            except ValueError:
                raise ValueError(self.describe_range()) from None
            assert self.minimum is not None and self.maximum is not None
            if not self.minimum <= value <= self.maximum:
                raise ValueError(self.describe_range())
            return value
        if self.kind == "decimal":
            try:
                number = float(text)
            except ValueError:
                raise ValueError(self.describe_range()) from None
            assert self.minimum is not None and self.maximum is not None
            if not self.minimum <= number <= self.maximum:  # NaN fails too
                raise ValueError(self.describe_range())
            return number
        if self.kind == "bool":
            lowered = text.lower()
            if lowered in TRUE_WORDS:
                return True
            if lowered in FALSE_WORDS:
                return False
            raise ValueError(self.describe_range())
        if self.kind == "choice":
            if text not in self.choices:
                raise ValueError(self.describe_range())
            return text
        return raw


def _int(name: str, default: int, minimum: int, maximum: int, help: str, unit: str = "") -> Setting:
    return Setting(name, "int", default, help, minimum=minimum, maximum=maximum, unit=unit)


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "MAILFATHOM_KEYRING",
        "str",
        "",
        "Comma-separated Fernet keys, newest first, that encrypt account credentials and sign "
        "links and cursors. Unset on the embedded default: one is generated under var/.",
    ),
    Setting(
        "MAILFATHOM_ADMIN_PASSWORD",
        "str",
        "",
        "Password for the `admin` user `make run` ensures. Unset: one is generated and printed once.",
    ),
    Setting(
        "MAILFATHOM_VAR_DIR",
        "str",
        "var",
        "Folder for the embedded servers' data, the generated key ring and secret key.",
    ),
    Setting("MAILFATHOM_HTTP_HOST", "str", "127.0.0.1", "Address `make run` binds the web server to."),
    Setting(
        "MAILFATHOM_LOG_LEVEL",
        "choice",
        "INFO",
        "Lowest level written to the log.",
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
    ),
    _int("MAILFATHOM_HTTP_PORT", 8000, 1, 65535, "Port `make run` binds the web server to."),
    Setting(
        "MAILFATHOM_SYNC_ENABLED",
        "bool",
        True,
        "Whether this deployment synchronizes mail at all; false leaves the local copy as it is.",
    ),
    Setting(
        "MAILFATHOM_IMAP_CA_FILE",
        "str",
        "",
        "A PEM file of extra certificate authorities to trust for IMAP over TLS (an in-house CA).",
    ),
    Setting(
        "MAILFATHOM_BULK_SENDER_LOCAL_PARTS",
        "str",
        "noreply,no-reply,donotreply,do-not-reply,mailer-daemon,postmaster,newsletter,"
        "newsletters,notifications,notification,bounce,bounces",
        "Sender local parts that mark mail as bulk, compared whole and without regard to case.",
    ),
    _int(
        "MAILFATHOM_SYNC_LEASE_SECONDS",
        300,
        10,
        3600,
        "How long a synchronization run holds a folder without progress before another run may "
        "take it over (a crashed worker's folder is free again after this).",
        unit="seconds",
    ),
    _int(
        "MAILFATHOM_CELERY_VISIBILITY_TIMEOUT",
        3600,
        5,
        86400,
        "How long Redis keeps a task a worker took but never acknowledged (it died) before "
        "handing it to another worker.",
        unit="seconds",
    ),
    _int(
        "MAILFATHOM_CONTENT_BODY_CHARACTER_LIMIT",
        100000,
        1000,
        10000000,
        "Characters of one email's plain text (or sanitized HTML) one content read returns; "
        "longer bodies are cut and say bodyCharacterLimit.",
    ),
    _int(
        "MAILFATHOM_CONTENT_READ_CHARACTER_BUDGET",
        200000,
        1000,
        20000000,
        "Characters one content read returns across all the emails it names; emails past the "
        "budget are cut and say readCharacterBudget.",
    ),
    Setting(
        "MAILFATHOM_PUBLIC_BASE_URL",
        "str",
        "",
        "The address clients reach this server at (https://mail.example.org). Unset: attachment "
        "download links are unavailable.",
    ),
    _int(
        "MAILFATHOM_ATTACHMENT_LINK_MINUTES",
        10,
        1,
        30,
        "How long an attachment download link works.",
        unit="minutes",
    ),
    Setting(
        "MAILFATHOM_SENSITIVE_SCAN_ENABLED",
        "bool",
        False,
        "Whether card numbers, IBANs, phone numbers and national identifiers are redacted from "
        "what content reads and searches return.",
    ),
    _int(
        "MAILFATHOM_SENSITIVE_SCAN_CEILING",
        200000,
        1000,
        10000000,
        "Characters of one body the scanner analyses; the rest is withheld, never served unscanned.",
    ),
    _int(
        "MAILFATHOM_EMBEDDING_WINDOW_CHARACTERS",
        2000,
        200,
        100000,
        "Characters of each email embedded: the subject and the start of the body, about 512 "
        "tokens by default. Whole bodies of a large mailbox would take hours on a CPU.",
    ),
    _int(
        "MAILFATHOM_EMBEDDING_MAX_CHARACTERS_PER_HOUR",
        50000000,
        1000,
        10000000000,
        "Characters the embedding sweep may send to the provider per hour, counted in the "
        "database so a restarting worker cannot start the hour over.",
    ),
    Setting(
        "MAILFATHOM_MCP_ENABLED",
        "bool",
        False,
        "Whether `/mcp` serves the MCP tools; while false the path answers 404.",
    ),
    _int(
        "MAILFATHOM_ANSWERING_MAX_PASSAGES_PER_RETRIEVAL",
        20,
        1,
        20,
        "Passages one lookup of ask_mail may return; capped by what one search ranks.",
    ),
    _int(
        "MAILFATHOM_ANSWERING_MAX_CHARACTERS_PER_PASSAGE",
        1200,
        100,
        20000,
        "Characters ask_mail may draw from one message per passage.",
    ),
    _int(
        "MAILFATHOM_ANSWERING_MAX_RETRIEVED_CHARACTERS_PER_RUN",
        20000,
        1000,
        1000000,
        "Mail characters one question may send to the chat model in all.",
    ),
    _int(
        "MAILFATHOM_ANSWERING_MAX_PROVIDER_CALLS_PER_RUN",
        8,
        1,
        100,
        "Chat model calls one question may make.",
    ),
    _int(
        "MAILFATHOM_ANSWERING_MAX_TOKENS_PER_RUN",
        80000,
        1000,
        10000000,
        "Tokens one question may spend.",
    ),
    _int(
        "MAILFATHOM_ANSWERING_MAX_RUNS_PER_PERIOD",
        30,
        1,
        100000,
        "Questions the deployment admits per aggregate period.",
    ),
    _int(
        "MAILFATHOM_ANSWERING_MAX_TOKENS_PER_PERIOD",
        300000,
        1000,
        1000000000,
        "Tokens the deployment may spend per aggregate period.",
    ),
    _int(
        "MAILFATHOM_ANSWERING_AGGREGATE_PERIOD",
        3600,
        60,
        604800,
        "Length of the period the two allowances above renew over.",
        unit="seconds",
    ),
    _int(
        "MAILFATHOM_ANSWERING_MAX_ANSWER_CHARACTERS",
        20000,
        100,
        1000000,
        "Characters of the model's answer one response carries; longer answers are cut.",
    ),
    _int(
        "MAILFATHOM_ANSWERING_MAX_CITATIONS",
        20,
        1,
        100,
        "Emails one answer may cite; more are cut.",
    ),
    Setting(
        "MAILFATHOM_CHAT_PROVIDER",
        "choice",
        "none",
        "The chat endpoint ask_mail is conducted through: openai (any OpenAI-compatible "
        "endpoint: OpenAI, Ollama, vLLM, llama.cpp) or none (ask_mail is not offered).",
        choices=("none", "openai"),
    ),
    Setting(
        "MAILFATHOM_CHAT_ALIAS",
        "str",
        "chat",
        "The operator's name for the chat endpoint; logs and telemetry carry it instead of the URL.",
    ),
    Setting(
        "MAILFATHOM_CHAT_BASE_URL",
        "str",
        "",
        "Base URL of the OpenAI-compatible chat endpoint (http://127.0.0.1:11434/v1). Unset: OpenAI's own.",
    ),
    Setting(
        "MAILFATHOM_CHAT_MODEL",
        "str",
        "",
        "Chat model name; it must accept function tools. Required when a chat provider is set.",
    ),
    Setting(
        "MAILFATHOM_CHAT_API_KEY",
        "str",
        "",
        "Secret key sent to the chat endpoint. Unset: none is sent that means anything.",
    ),
    Setting(
        "MAILFATHOM_CHAT_API",
        "choice",
        "chat-completions",
        "Which of the endpoint's APIs to call: chat-completions (/v1/chat/completions) or "
        "responses (/v1/responses, for reasoning models that refuse tools beside a reasoning "
        "effort on the other).",
        choices=("chat-completions", "responses"),
    ),
    Setting(
        "MAILFATHOM_CHAT_TEMPERATURE",
        "decimal",
        None,
        "Sampling temperature sent with every chat call. Unset: none is sent (reasoning models refuse one).",
        minimum=0.0,
        maximum=2.0,
    ),
    _int(
        "MAILFATHOM_CHAT_MAX_OUTPUT_TOKENS",
        2048,
        16,
        200000,
        "Most tokens one chat call may generate.",
    ),
    Setting(
        "MAILFATHOM_CHAT_REASONING_EFFORT",
        "choice",
        "default",
        "Reasoning effort sent with every chat call: minimal, low, medium or high; default sends none.",
        choices=("default", "minimal", "low", "medium", "high"),
    ),
    _int(
        "MAILFATHOM_CHAT_TIMEOUT_SECONDS",
        300,
        1,
        3600,
        "Deadline of one chat call, retries included.",
        unit="seconds",
    ),
    _int(
        "MAILFATHOM_CHAT_MAX_RETRIES",
        2,
        0,
        10,
        "Retries of a chat call that failed transiently (timeout, 429, 5xx, unreachable).",
    ),
    _int(
        "MAILFATHOM_CHAT_CONCURRENCY",
        4,
        1,
        256,
        "Chat calls one process keeps in flight; further calls are refused, not queued.",
    ),
    _int(
        "MAILFATHOM_CHAT_CIRCUIT_FAILURES",
        5,
        1,
        1000,
        "Consecutive failed chat calls that open the circuit (calls then fail fast).",
    ),
    _int(
        "MAILFATHOM_CHAT_CIRCUIT_SECONDS",
        60,
        1,
        3600,
        "How long an open chat circuit fails calls fast before one probe call goes through.",
        unit="seconds",
    ),
    Setting(
        "MAILFATHOM_CHAT_RELEVANCE_FILTER_ENABLED",
        "bool",
        False,
        "Whether each passage a lookup retrieves is first judged by the chat model (one call "
        "per candidate) and dropped below the threshold.",
    ),
    _int(
        "MAILFATHOM_CHAT_RELEVANCE_FILTER_THRESHOLD",
        50,
        0,
        100,
        "Score (0 to 100) below which the relevance pass drops a passage.",
    ),
    _int(
        "MAILFATHOM_CHAT_RELEVANCE_FILTER_MAX_CANDIDATES",
        20,
        1,
        100,
        "Passages of one lookup the relevance pass judges; the rest keep their place unjudged. "
        "At most MAILFATHOM_ANSWERING_MAX_PASSAGES_PER_RETRIEVAL.",
    ),
    Setting(
        "MAILFATHOM_EMBEDDING_PROVIDER",
        "choice",
        "local",
        "Where embeddings come from: local (the bundled multilingual-e5-small), openai (an "
        "OpenAI-compatible endpoint), or none (search is lexical only).",
        choices=("local", "openai", "none"),
    ),
    Setting(
        "MAILFATHOM_EMBEDDING_BASE_URL",
        "str",
        "",
        "Base URL of the OpenAI-compatible embedding endpoint (http://127.0.0.1:11434/v1). "
        "Unset: OpenAI's own.",
    ),
    Setting(
        "MAILFATHOM_EMBEDDING_MODEL",
        "str",
        "multilingual-e5-small",
        "Embedding model name; the local provider serves only multilingual-e5-small. A name "
        "containing e5 gets the query:/passage: prefixes.",
    ),
    Setting(
        "MAILFATHOM_EMBEDDING_API_KEY",
        "str",
        "",
        "Secret key sent to the embedding endpoint. Unset: none is sent that means anything "
        "(local servers need none).",
    ),
    _int(
        "MAILFATHOM_EMBEDDING_DIMENSIONS",
        384,
        1,
        16000,
        "Length of the vectors the embedding model returns; a reply of another length is "
        "refused as a model mismatch.",
    ),
    _int(
        "MAILFATHOM_EMBEDDING_TIMEOUT_SECONDS",
        10,
        1,
        600,
        "Deadline of one embedding call, retries included.",
        unit="seconds",
    ),
    _int(
        "MAILFATHOM_EMBEDDING_MAX_RETRIES",
        2,
        0,
        10,
        "Retries of an embedding call that failed transiently (timeout, 429, 5xx, unreachable).",
    ),
    _int(
        "MAILFATHOM_EMBEDDING_CONCURRENCY",
        4,
        1,
        256,
        "Embedding calls one process keeps in flight; further calls are refused, not queued.",
    ),
    _int(
        "MAILFATHOM_EMBEDDING_CIRCUIT_FAILURES",
        5,
        1,
        1000,
        "Consecutive failed embedding calls that open the circuit (calls then fail fast).",
    ),
    _int(
        "MAILFATHOM_EMBEDDING_CIRCUIT_SECONDS",
        60,
        1,
        3600,
        "How long an open embedding circuit fails calls fast before one probe call goes through.",
        unit="seconds",
    ),
    Setting(
        "MAILFATHOM_MCP_AUTH",
        "choice",
        "",
        "How MCP clients authenticate: api-key (a key from admin or create_mcp_key, sent as "
        "Authorization: Bearer) or none. Required once MAILFATHOM_MCP_ENABLED is true.",
        choices=("api-key", "none"),
    ),
    Setting(
        "MAILFATHOM_MCP_ALLOW_UNAUTHENTICATED_NONLOOPBACK",
        "bool",
        False,
        "Allow MAILFATHOM_MCP_AUTH=none while the server is bound to an address other than "
        "loopback (anyone who reaches it then reads the mail).",
    ),
    Setting(
        "MAILFATHOM_MCP_ALLOWED_HOSTS",
        "str",
        "127.0.0.1:*,localhost:*,[::1]:*",
        "Comma-separated Host header values /mcp answers (host:* allows any port); others get 421.",
    ),
    Setting(
        "MAILFATHOM_MCP_ALLOWED_ORIGINS",
        "str",
        "http://127.0.0.1:*,http://localhost:*,http://[::1]:*",
        "Comma-separated Origin header values /mcp accepts (scheme://host:* allows any port); a "
        "request from another origin gets 403. Requests without an Origin are accepted.",
    ),
    _int(
        "MAILFATHOM_MCP_REQUEST_TIMEOUT",
        600,
        1,
        3600,
        "How long one /mcp request may take before it is abandoned with 504.",
        unit="seconds",
    ),
    _int(
        "MAILFATHOM_MCP_MAX_CONCURRENT_CALLS",
        8,
        1,
        256,
        "Tool calls one process runs at once (each holds a database connection); further calls "
        "wait for a free slot within the request timeout.",
    ),
    _int(
        "MAILFATHOM_MCP_MAX_BODY_BYTES",
        1048576,
        1024,
        67108864,
        "Largest /mcp request body accepted; a larger one is refused with 413.",
        unit="bytes",
    ),
)

BY_NAME: dict[str, Setting] = {setting.name: setting for setting in SETTINGS}


@dataclass
class LoadedConfig:
    """The values read from the environment and what was wrong with any of them."""

    values: dict[str, Any] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)


def load(environ: Mapping[str, str]) -> LoadedConfig:
    """Read every declared setting from `environ`; never raise (see the module docstring)."""
    loaded = LoadedConfig()
    for setting in SETTINGS:
        raw = environ.get(setting.name)
        if raw is None or (raw.strip() == "" and setting.kind != "str"):
            loaded.values[setting.name] = setting.default
            continue
        try:
            loaded.values[setting.name] = setting.parse(raw)
        except ValueError as error:
            loaded.values[setting.name] = setting.default
            loaded.problems[setting.name] = f"{setting.name} must be {error}."
    return loaded
