"""The MAILFATHOM_* settings: one declaration each, read from the environment.

Each setting is a field of MailFathomSettings that states its type, default and allowed
range here and nowhere else; its environment variable is the field's name in capitals after
MAILFATHOM_. Code reads `settings.MAILFATHOM.chat_model`, never a string key. Reading never
raises: a value that does not parse or falls outside its range is recorded as a problem, the
default stands in so imports keep working, and the system check in mailfathom.checks refuses
to start with a message naming the setting and its range. README.md's configuration table
is checked against this list by a test.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T", bound="DataclassInstance")

TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"0", "false", "no", "off"}
CHAT_APIS = ("chat-completions", "responses")  # the chat endpoint's, and each drafting role's
DRAFTING_PROVIDERS = ("openai", "none")  # for each drafting role; unset means the chat endpoint's
EMAIL_SECURITIES = ("starttls", "tls", "none")  # how notification mail reaches its SMTP server
# The most the search's lexical arm reads of a text handed to it on its own (a whole email),
# and so the most of the answered mail drafting may be built from.
MAX_LEXICAL_QUERY_CHARACTERS = 8000
# The most quick MCP call slots MAILFATHOM_MCP_MAX_CONCURRENT_CALLS=0 gives (one per CPU up
# to this; mailfathom.mcp.execution): in a container held to a few CPUs by a quota the process
# still sees every core of its host, and each slot holds a database connection.
MOST_QUICK_SLOTS_BY_DEFAULT = 8


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
    attribute: str = ""  # the field of MailFathomSettings / DeploymentSettings it fills

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


def _declared(kind: str, default: Any, help: str, **options: Any) -> Any:
    """A field of MailFathomSettings and the Setting it is read from (named after the field)."""
    return field(default=default, metadata={"kind": kind, "help": help, **options})


def _whole(default: int, minimum: int, maximum: int, help: str, unit: str = "") -> Any:
    return _declared("int", default, help, minimum=minimum, maximum=maximum, unit=unit)


def _decimal(default: float | None, minimum: float, maximum: float, help: str) -> Any:
    return _declared("decimal", default, help, minimum=minimum, maximum=maximum)


def _flag(default: bool, help: str) -> Any:
    return _declared("bool", default, help)


def _text(default: str, help: str) -> Any:
    return _declared("str", default, help)


def _choice(default: str, choices: tuple[str, ...], help: str) -> Any:
    return _declared("choice", default, help, choices=choices)


@dataclass(frozen=True, slots=True)
class MailFathomSettings:
    """Every MAILFATHOM_* setting, typed; `settings.MAILFATHOM` is one of these.

    The attribute `chat_model` is read from MAILFATHOM_CHAT_MODEL, and so on for each field.
    Code reads `settings.MAILFATHOM.<attribute>`; a name that is not declared here is refused
    at startup by mailfathom.checks (check_settings_are_declared).
    """

    keyring: str = _text(
        "",
        "Comma-separated Fernet keys, newest first, that encrypt account credentials and sign "
        "links and cursors. Unset on the embedded default: one is generated under var/.",
    )
    admin_password: str = _text(
        "",
        "Password for the `admin` user `make run` ensures. Unset: one is generated and printed once.",
    )
    var_dir: str = _text(
        "var",
        "Folder for the embedded servers' data, the generated key ring and secret key.",
    )
    http_host: str = _text(
        "127.0.0.1",
        "Address `make run` binds the web server to.",
    )
    log_level: str = _choice(
        "INFO",
        ("DEBUG", "INFO", "WARNING", "ERROR"),
        "Lowest level written to the log.",
    )
    http_port: int = _whole(
        8000,
        1,
        65535,
        "Port `make run` binds the web server to.",
    )
    https: bool = _flag(
        False,
        "Browsers reach this server over HTTPS: secure session and CSRF cookies, HSTS, and a "
        "redirect of plain HTTP to HTTPS. Off on the embedded default (loopback HTTP).",
    )
    trust_x_forwarded_proto: bool = _flag(
        False,
        "Take the reverse proxy's X-Forwarded-Proto header as the request's scheme. Only behind a "
        "proxy that sets (or strips) that header on every request.",
    )
    hsts_seconds: int = _whole(
        31536000,
        0,
        63072000,
        "How long browsers keep to HTTPS for this host once MAILFATHOM_HTTPS is true; 0 sends no "
        "HSTS header.",
        unit="seconds",
    )
    hsts_include_subdomains: bool = _flag(
        False,
        "Extend HSTS to every subdomain of this host (only when they all serve HTTPS).",
    )
    hsts_preload: bool = _flag(
        False,
        "Mark HSTS as eligible for the browsers' preload list (a commitment that is slow to undo).",
    )
    admin_login_failures_per_user: int = _whole(
        5,
        1,
        1000,
        "Failed admin logins for one user name, from any address, after which that name is locked "
        "for the lockout window.",
    )
    admin_login_failures_per_address: int = _whole(
        20,
        1,
        10000,
        "Failed admin logins from one client address, for any user name, after which that address "
        "is locked for the lockout window.",
    )
    admin_login_lockout_seconds: int = _whole(
        900,
        1,
        86400,
        "How long a locked user name or address is refused admin login, even with the right password.",
        unit="seconds",
    )
    sync_enabled: bool = _flag(
        True,
        "Whether this deployment synchronizes mail at all; false leaves the local copy as it is.",
    )
    imap_ca_file: str = _text(
        "",
        "A PEM file of extra certificate authorities to trust for IMAP over TLS (an in-house CA).",
    )
    bulk_sender_local_parts: str = _text(
        "noreply,no-reply,donotreply,do-not-reply,mailer-daemon,postmaster,newsletter,newsletters,notifications,notification,bounce,bounces",
        "Sender local parts that mark mail as bulk, compared whole and without regard to case.",
    )
    sync_lease_seconds: int = _whole(
        300,
        10,
        3600,
        "How long a synchronization run holds a folder without progress before another run may "
        "take it over (a crashed worker's folder is free again after this).",
        unit="seconds",
    )
    celery_visibility_timeout: int = _whole(
        3600,
        5,
        86400,
        "How long Redis keeps a task a worker took but never acknowledged (it died) before "
        "handing it to another worker.",
        unit="seconds",
    )
    content_body_character_limit: int = _whole(
        100000,
        1000,
        10000000,
        "Characters of one email's plain text (or sanitized HTML) one content read returns; "
        "longer bodies are cut and say bodyCharacterLimit.",
    )
    content_read_character_budget: int = _whole(
        200000,
        1000,
        20000000,
        "Characters one content read returns across all the emails it names; emails past the "
        "budget are cut and say readCharacterBudget.",
    )
    public_base_url: str = _text(
        "",
        "The address clients reach this server at (https://mail.example.org). Unset: attachment "
        "download links are unavailable.",
    )
    attachment_link_minutes: int = _whole(
        10,
        1,
        30,
        "How long an attachment download link works.",
        unit="minutes",
    )
    sensitive_scan_enabled: bool = _flag(
        False,
        "Whether card numbers, IBANs, phone numbers and national identifiers are redacted from "
        "what content reads and searches return.",
    )
    sensitive_scan_ceiling: int = _whole(
        200000,
        1000,
        10000000,
        "Characters of one body the scanner analyses; the rest is withheld, never served unscanned.",
    )
    attachment_text_kinds: str = _text(
        "pdf,docx,xlsx,pptx,odt,ods,odp,rtf,html,csv,text,message,image",
        "Comma-separated kinds of attachment whose text is extracted (pdf, docx, xlsx, pptx, odt, "
        "ods, odp, rtf, html, csv, text, message, image); empty: none is. Other attachments are "
        "recorded as unsupported. Images (PNG, JPEG, TIFF, GIF, BMP, WebP) and scanned PDF pages "
        "are read by OCR where Tesseract is installed; without it an image is unsupported.",
    )
    attachment_text_max_bytes: int = _whole(
        26214400,
        1024,
        104857600,
        "Largest attachment whose text is extracted; a larger one is recorded as too large "
        "without being opened.",
        unit="bytes",
    )
    embedding_window_characters: int = _whole(
        2000,
        200,
        100000,
        "Characters of each email embedded: the subject and the start of the body. The cost of "
        "embedding grows with it; a change takes `manage.py reembed --all`.",
    )
    embedding_max_characters_per_hour: int = _whole(
        50000000,
        1000,
        10000000000,
        "Characters the embedding sweep may send to the provider per hour, counted in the "
        "database so a restarting worker cannot start the hour over.",
    )
    mcp_enabled: bool = _flag(
        False,
        "Whether `/mcp` serves the MCP tools; while false the path answers 404.",
    )
    answering_max_passages_per_retrieval: int = _whole(
        20,
        1,
        20,
        "Passages one lookup of ask_mail may return; capped by what one search ranks.",
    )
    answering_max_characters_per_passage: int = _whole(
        1200,
        100,
        20000,
        "Characters ask_mail may draw from one message per passage.",
    )
    answering_max_retrieved_characters_per_run: int = _whole(
        20000,
        1000,
        1000000,
        "Mail characters one question may send to the chat model in all.",
    )
    answering_max_provider_calls_per_run: int = _whole(
        8,
        1,
        100,
        "Chat model calls one question may make.",
    )
    answering_max_tokens_per_run: int = _whole(
        80000,
        1000,
        10000000,
        "Tokens one question may spend.",
    )
    answering_max_runs_per_period: int = _whole(
        30,
        1,
        100000,
        "Questions the deployment admits per aggregate period.",
    )
    answering_max_tokens_per_period: int = _whole(
        300000,
        1000,
        1000000000,
        "Tokens the deployment may spend per aggregate period.",
    )
    answering_aggregate_period: int = _whole(
        3600,
        60,
        604800,
        "Length of the period the two allowances above renew over.",
        unit="seconds",
    )
    answering_max_answer_characters: int = _whole(
        20000,
        100,
        1000000,
        "Characters of the model's answer one response carries; longer answers are cut.",
    )
    answering_max_citations: int = _whole(
        20,
        1,
        100,
        "Emails one answer may cite; more are cut.",
    )
    chat_provider: str = _choice(
        "none",
        ("none", "openai"),
        "The chat endpoint ask_mail is conducted through: openai (any OpenAI-compatible endpoint:"
        " OpenAI, Ollama, vLLM, llama.cpp) or none (ask_mail is not offered).",
    )
    chat_alias: str = _text(
        "chat",
        "The operator's name for the chat endpoint; logs and telemetry carry it instead of the URL.",
    )
    chat_base_url: str = _text(
        "",
        "Base URL of the OpenAI-compatible chat endpoint (http://127.0.0.1:11434/v1). Unset: OpenAI's own.",
    )
    chat_model: str = _text(
        "",
        "Chat model name; it must accept function tools. Required when a chat provider is set.",
    )
    chat_api_key: str = _text(
        "",
        "Secret key sent to the chat endpoint. Unset: none is sent that means anything.",
    )
    chat_api: str = _choice(
        "chat-completions",
        CHAT_APIS,
        "Which of the endpoint's APIs to call: chat-completions (/v1/chat/completions) or "
        "responses (/v1/responses, for reasoning models that refuse tools beside a reasoning "
        "effort on the other).",
    )
    chat_temperature: float | None = _decimal(
        None,
        0.0,
        2.0,
        "Sampling temperature sent with every chat call. Unset: none is sent (reasoning models refuse one).",
    )
    chat_max_output_tokens: int = _whole(
        2048,
        16,
        200000,
        "Most tokens one chat call may generate.",
    )
    chat_reasoning_effort: str = _choice(
        "default",
        ("default", "minimal", "low", "medium", "high"),
        "Reasoning effort sent with every chat call: minimal, low, medium or high; default sends none.",
    )
    chat_timeout_seconds: int = _whole(
        300,
        1,
        3600,
        "Deadline of one chat call, retries included.",
        unit="seconds",
    )
    chat_max_retries: int = _whole(
        2,
        0,
        10,
        "Retries of a chat call that failed transiently (timeout, 429, 5xx, unreachable).",
    )
    chat_concurrency: int = _whole(
        4,
        1,
        256,
        "Chat calls one process keeps in flight; further calls are refused, not queued.",
    )
    chat_circuit_failures: int = _whole(
        5,
        1,
        1000,
        "Consecutive failed chat calls that open the circuit (calls then fail fast).",
    )
    chat_circuit_seconds: int = _whole(
        60,
        1,
        3600,
        "How long an open chat circuit fails calls fast before one probe call goes through.",
        unit="seconds",
    )
    chat_relevance_filter_enabled: bool = _flag(
        False,
        "Whether each passage a lookup retrieves is first judged by the chat model (one call per "
        "candidate) and dropped below the threshold.",
    )
    chat_relevance_filter_threshold: int = _whole(
        50,
        0,
        100,
        "Score (0 to 100) below which the relevance pass drops a passage.",
    )
    chat_relevance_filter_max_candidates: int = _whole(
        20,
        1,
        100,
        "Passages of one lookup the relevance pass judges; the rest keep their place unjudged. At"
        " most MAILFATHOM_ANSWERING_MAX_PASSAGES_PER_RETRIEVAL.",
    )
    drafting_utility_provider: str = _choice(
        "",
        DRAFTING_PROVIDERS,
        "The endpoint reply drafting classifies and condenses mail through (temperature 0): openai"
        " or none. Unset: the chat endpoint's provider.",
    )
    drafting_utility_alias: str = _text(
        "",
        "The operator's name for the drafting utility endpoint. Unset: the chat endpoint's alias.",
    )
    drafting_utility_base_url: str = _text(
        "",
        "Base URL of the drafting utility endpoint. Unset: the chat endpoint's.",
    )
    drafting_utility_model: str = _text(
        "",
        "Model that classifies and condenses mail for drafting (a small one will do). Unset: the chat model.",
    )
    drafting_utility_api_key: str = _text(
        "",
        "Secret key sent to the drafting utility endpoint. Unset: the chat endpoint's.",
    )
    drafting_utility_api: str = _choice(
        "",
        CHAT_APIS,
        "Which API the drafting utility endpoint is called through. Unset: MAILFATHOM_CHAT_API.",
    )
    drafting_utility_max_output_tokens: int = _whole(
        256,
        16,
        4096,
        "Most tokens one classification or condensation may generate.",
    )
    drafting_provider: str = _choice(
        "",
        DRAFTING_PROVIDERS,
        "The endpoint reply drafts are written through: openai or none (no drafting). Unset: the "
        "chat endpoint's provider.",
    )
    drafting_alias: str = _text(
        "",
        "The operator's name for the drafting endpoint; drafts record it. Unset: the chat alias.",
    )
    drafting_base_url: str = _text(
        "",
        "Base URL of the drafting endpoint. Unset: the chat endpoint's.",
    )
    drafting_model: str = _text(
        "",
        "Model that writes reply drafts. Unset: the chat model.",
    )
    drafting_api_key: str = _text(
        "",
        "Secret key sent to the drafting endpoint. Unset: the chat endpoint's.",
    )
    drafting_api: str = _choice(
        "",
        CHAT_APIS,
        "Which API the drafting endpoint is called through. Unset: MAILFATHOM_CHAT_API.",
    )
    drafting_max_reply_tokens: int = _whole(
        800,
        64,
        8000,
        "Most tokens one reply draft may generate; a reply that reaches it is refused, not kept.",
    )
    drafting_max_condensed_query_characters: int = _whole(
        200,
        20,
        512,
        "Characters of the condensed query drafting sends to the vector arm; longer ones are cut.",
    )
    # At most what the lexical arm reads of a separate text (MAX_LEXICAL_QUERY_CHARACTERS,
    # which mailbox.services.search reads): condense and the lexical arm must be handed
    # exactly the same string.
    drafting_max_answered_characters: int = _whole(
        6000,
        500,
        MAX_LEXICAL_QUERY_CHARACTERS,
        "Characters of the answered mail (subject and body) a draft is built from; the rest is cut.",
    )
    drafting_sources_per_draft: int = _whole(
        8,
        1,
        20,
        "Messages one draft retrieves from the mailbox as sources; the prompt budget grows with it.",
    )
    drafting_characters_per_source: int = _whole(
        1200,
        100,
        20000,
        "Characters drafting draws from one retrieved message.",
    )
    drafting_thread_tail_messages: int = _whole(
        4,
        1,
        20,
        "Earlier messages of the answered mail's thread a draft carries, newest first.",
    )
    drafting_characters_per_thread_message: int = _whole(
        1500,
        100,
        20000,
        "Characters drafting draws from one earlier message of the thread.",
    )
    drafting_source_scope: str = _choice(
        "correspondent",
        ("mailbox", "correspondent"),
        "What drafting may gather sources from: correspondent (only mail exchanged with the answered "
        "mail's sender or organisation, the firm's internal mail, and its own letters that name "
        "nobody else's facts) or mailbox (every folder tools may read, junk never). The verdict "
        "guards the draft in either.",
    )
    drafting_rerank_enabled: bool = _flag(
        False,
        "Whether drafting's sources pass the relevance judgement (one utility call per source, "
        "MAILFATHOM_CHAT_RELEVANCE_FILTER_THRESHOLD) before they are fitted.",
    )
    # Drafting's own allowance, counted apart from ask_mail's (answering.ledger), so a busy
    # drafting run cannot refuse questions and questions cannot hold drafts back.
    drafting_max_runs_per_period: int = _whole(
        60,
        1,
        100000,
        "Drafts the deployment admits per drafting period, scheduled runs and draft_reply together.",
    )
    drafting_max_tokens_per_period: int = _whole(
        1000000,
        1000,
        1000000000,
        "Tokens drafting may spend per drafting period.",
    )
    drafting_aggregate_period: int = _whole(
        3600,
        60,
        604800,
        "Length of the period drafting's two allowances renew over.",
        unit="seconds",
    )
    embedding_provider: str = _choice(
        "local",
        ("local", "openai", "none"),
        "Where embeddings come from: local (a bundled model, run in-process), openai (an "
        "OpenAI-compatible endpoint, such as a GPU server), or none (search is lexical only).",
    )
    embedding_base_url: str = _text(
        "",
        "Base URL of the OpenAI-compatible embedding endpoint (http://127.0.0.1:11434/v1). Unset:"
        " OpenAI's own.",
    )
    embedding_model: str = _text(
        "universal-sentence-encoder-multilingual-3",
        "Embedding model name. The local provider serves universal-sentence-encoder-multilingual-3"
        " (512 dimensions) and multilingual-e5-small (384). A name containing e5 gets the "
        "query:/passage: prefixes.",
    )
    embedding_api_key: str = _text(
        "",
        "Secret key sent to the embedding endpoint. Unset: none is sent that means anything "
        "(local servers need none).",
    )
    embedding_dimensions: int = _whole(
        512,
        1,
        16000,
        "Length of the vectors the embedding model returns; a reply of another length is refused "
        "as a model mismatch.",
    )
    embedding_timeout_seconds: int = _whole(
        10,
        1,
        600,
        "Deadline of one embedding call, retries included; loading the local model is never part of it.",
        unit="seconds",
    )
    embedding_warm_start: bool = _flag(
        True,
        "Whether the web server and each worker load the local embedding model as they start, "
        "before taking work (each then holds it, about 130 MB). Off: a process loads it on its "
        "first embedding call or hybrid search, which waits for it.",
    )
    embedding_max_retries: int = _whole(
        2,
        0,
        10,
        "Retries of an embedding call that failed transiently (timeout, 429, 5xx, unreachable).",
    )
    embedding_concurrency: int = _whole(
        4,
        1,
        256,
        "Embedding calls one process keeps in flight; further calls are refused, not queued.",
    )
    embedding_circuit_failures: int = _whole(
        5,
        1,
        1000,
        "Consecutive failed embedding calls that open the circuit (calls then fail fast).",
    )
    embedding_circuit_seconds: int = _whole(
        60,
        1,
        3600,
        "How long an open embedding circuit fails calls fast before one probe call goes through.",
        unit="seconds",
    )
    mcp_auth: str = _choice(
        "",
        ("api-key", "oauth", "oauth+api-key", "none"),
        "How MCP clients authenticate: api-key (a key from admin or create_mcp_key, sent as "
        "Authorization: Bearer), oauth (a person signs in and consents; MailFathom is the "
        "authorization server), oauth+api-key (either) or none. Required once "
        "MAILFATHOM_MCP_ENABLED is true.",
    )
    mcp_oauth_access_token_minutes: int = _whole(
        60,
        5,
        1440,
        "How long an OAuth access token for /mcp works; the client then uses its refresh token.",
        unit="minutes",
    )
    mcp_oauth_refresh_token_days: int = _whole(
        30,
        1,
        365,
        "How long an unused OAuth refresh token for /mcp works; each use replaces it with a new one.",
        unit="days",
    )
    mcp_oauth_dynamic_registration: bool = _flag(
        True,
        "Whether MCP clients may register themselves (RFC 7591 dynamic client registration).",
    )
    mcp_oauth_client_metadata_hosts: str = _text(
        "*",
        "Comma-separated host names whose client ID metadata documents (a client_id that is an "
        "https URL) are accepted; * accepts any public host, empty accepts none.",
    )
    mcp_oauth_loopback_client_metadata: bool = _flag(
        False,
        "Accept client ID metadata documents served from a loopback address (over http too); for "
        "development and tests only.",
    )
    mcp_allow_unauthenticated_nonloopback: bool = _flag(
        False,
        "Allow MAILFATHOM_MCP_AUTH=none while the server is bound to an address other than "
        "loopback (anyone who reaches it then reads the mail).",
    )
    mcp_allowed_hosts: str = _text(
        "127.0.0.1:*,localhost:*,[::1]:*",
        "Comma-separated Host header values /mcp answers (host:* allows any port); others get 421.",
    )
    mcp_allowed_origins: str = _text(
        "http://127.0.0.1:*,http://localhost:*,http://[::1]:*",
        "Comma-separated Origin header values /mcp accepts (scheme://host:* allows any port); a "
        "request from another origin gets 403. Requests without an Origin are accepted.",
    )
    mcp_request_timeout: int = _whole(
        600,
        1,
        3600,
        "How long one /mcp request may take before it is abandoned with 504.",
        unit="seconds",
    )
    mcp_body_timeout: int = _whole(
        30,
        1,
        300,
        "How long a client may take to send one /mcp request body before it is cut with 408.",
        unit="seconds",
    )
    mcp_max_concurrent_calls: int = _whole(
        0,
        0,
        256,
        "Calls of the quick tools (list_accounts, list_emails, get_email_content, search_emails) "
        "one process runs at once, each on a database connection; 0 means one per CPU the "
        f"process may run on, at most {MOST_QUICK_SLOTS_BY_DEFAULT}. A call past the limit waits for a slot "
        "(MAILFATHOM_MCP_SLOT_WAIT_SECONDS) or is refused with 54002 (retryable). tools/list and "
        "initialize take no slot; ask_mail and draft_reply take the model slots.",
    )
    mcp_max_concurrent_model_calls: int = _whole(
        4,
        1,
        256,
        "ask_mail and draft_reply calls one process runs at once, each holding a database "
        "connection while its models answer. They wait for these slots, or are refused with "
        "54002, by the same rules as the quick tools, whose slots they never take.",
    )
    mcp_slot_wait_seconds: float = _decimal(
        5.0,
        0.0,
        60.0,
        "How long a tool call finding every call slot busy waits for one, first come first "
        "served, before it is refused with 54002; 0 refuses it at once. The wait counts within "
        "the request timeout.",
    )
    mcp_max_waiting_calls: int = _whole(
        64,
        0,
        4096,
        "Tool calls one process lets wait for a call slot at once, for each kind of slot (quick "
        "and model); a call arriving while this many of its kind wait is refused at once with "
        "54002, so a flood cannot pile up.",
    )
    mcp_max_body_bytes: int = _whole(
        1048576,
        1024,
        67108864,
        "Largest /mcp request body accepted; a larger one is refused with 413.",
        unit="bytes",
    )
    api_read_requests_per_minute: int = _whole(
        120,
        1,
        100000,
        "Requests one credential (an API token, or a signed-in person) may make per minute to the "
        "compliance API's reading routes; more get 429 with Retry-After.",
    )
    api_export_requests_per_hour: int = _whole(
        30,
        1,
        10000,
        "Exports one credential may start per hour from the compliance API; more get 429.",
    )
    api_erasure_requests_per_hour: int = _whole(
        20,
        1,
        10000,
        "Erasure requests and executions one credential may send per hour; more get 429.",
    )
    erasure_single_operator: bool = _flag(
        False,
        "This deployment has one person to answer erasure requests, who may then both request "
        "and execute one; every statement executed under it says so. Off: two people.",
    )
    api_export_chunk_rows: int = _whole(
        2000,
        100,
        100000,
        "Rows an export reads from the database per round trip; memory stays constant whatever "
        "the export's length.",
    )
    # Case exports by compliance staff (docs/operations/compliance.md, Case exports).
    case_export_max_bytes: int = _whole(
        2147483648,
        1024,
        1099511627776,
        "Most stored raw mail one case export may select; a larger selection is refused with "
        "58003 before anything is written.",
        unit="bytes",
    )
    case_export_retention_days: int = _whole(
        7,
        1,
        365,
        "Days a case export's zip is kept before beat deletes it; its record stays.",
        unit="days",
    )
    case_export_dir: str = _text(
        "",
        "Folder case export zips are written to, shared by workers and web processes. Unset: "
        "case-exports/ under MAILFATHOM_VAR_DIR.",
    )
    # Notifications (docs/operations/notifications.md): counts and links, never mail content.
    notifications_digest_minutes: int = _whole(
        60,
        5,
        10080,
        "Least time between two digests of drafts waiting for review sent to one person.",
        unit="minutes",
    )
    notifications_sync_failing_minutes: int = _whole(
        60,
        5,
        10080,
        "How long an account's synchronization must have been failing before its people are told.",
        unit="minutes",
    )
    notifications_webhook_timeout_seconds: int = _whole(
        10,
        1,
        60,
        "Deadline of one webhook delivery; one that fails is tried again on the next pass.",
        unit="seconds",
    )
    email_host: str = _text(
        "",
        "SMTP server notifications are sent through (smtp.example.org). Unset: no notification "
        "is sent by mail.",
    )
    email_port: int = _whole(587, 1, 65535, "Port of the SMTP server.")
    email_security: str = _choice(
        "starttls",
        EMAIL_SECURITIES,
        "How the SMTP connection is protected: starttls, tls (implicit, port 465) or none (a "
        "loopback host only).",
    )
    email_user: str = _text("", "User name for the SMTP server. Unset: no login.")
    email_password: str = _text("", "Password for the SMTP server.")
    email_from: str = _text(
        "",
        "The From address of notification mail (MailFathom <mailfathom@example.org>); required "
        "with an SMTP server.",
    )

    def replace(self, **changes: Any) -> MailFathomSettings:
        """A copy with `changes` (attribute names); an undeclared name raises TypeError."""
        return dataclasses.replace(self, **changes)

    def endpoint(self, role: str) -> Endpoint:
        """The chat or embedding endpoint's settings as one record (role: "chat" or "embedding")."""
        if role == "chat":
            return Endpoint(
                role=role,
                provider=self.chat_provider,
                base_url=self.chat_base_url,
                model=self.chat_model,
                api_key=self.chat_api_key,
                timeout_seconds=self.chat_timeout_seconds,
                max_retries=self.chat_max_retries,
                concurrency=self.chat_concurrency,
                circuit_failures=self.chat_circuit_failures,
                circuit_seconds=self.chat_circuit_seconds,
            )
        if role == "embedding":
            return Endpoint(
                role=role,
                provider=self.embedding_provider,
                base_url=self.embedding_base_url,
                model=self.embedding_model,
                api_key=self.embedding_api_key,
                timeout_seconds=self.embedding_timeout_seconds,
                max_retries=self.embedding_max_retries,
                concurrency=self.embedding_concurrency,
                circuit_failures=self.embedding_circuit_failures,
                circuit_seconds=self.embedding_circuit_seconds,
            )
        if role in DRAFTING_ROLES:
            chat = self.chat_endpoint(role)
            return Endpoint(
                role=role,
                provider=chat.provider,
                base_url=chat.base_url,
                model=chat.model,
                api_key=chat.api_key,
                timeout_seconds=self.chat_timeout_seconds,
                max_retries=self.chat_max_retries,
                concurrency=self.chat_concurrency,
                circuit_failures=self.chat_circuit_failures,
                circuit_seconds=self.chat_circuit_seconds,
            )
        raise ValueError("role is chat, embedding, utility or drafting")

    def chat_endpoint(self, role: str) -> ChatEndpoint:
        """A chat-shaped role's settings: "chat", or a drafting role falling back to chat's.

        The drafting roles (docs/operations/drafting.md) take each unset value from the chat
        endpoint; the utility role always runs at temperature 0 and the drafting role's
        output bound is MAILFATHOM_DRAFTING_MAX_REPLY_TOKENS.
        """
        chat = ChatEndpoint(
            role="chat",
            provider=self.chat_provider,
            alias=self.chat_alias,
            base_url=self.chat_base_url,
            model=self.chat_model,
            api_key=self.chat_api_key,
            api=self.chat_api,
            temperature=self.chat_temperature,
            max_output_tokens=self.chat_max_output_tokens,
            reasoning_effort=self.chat_reasoning_effort,
            timeout_seconds=self.chat_timeout_seconds,
        )
        if role == "chat":
            return chat
        temperature: float | None
        if role == UTILITY_ROLE:
            prefix, temperature, output = "drafting_utility_", 0.0, self.drafting_utility_max_output_tokens
        elif role == DRAFTING_ROLE:
            prefix, temperature, output = "drafting_", self.chat_temperature, self.drafting_max_reply_tokens
        else:
            raise ValueError("role is chat, utility or drafting")

        def own(name: str, fallback: str) -> str:
            value = getattr(self, prefix + name)
            return value if value.strip() else fallback

        return dataclasses.replace(
            chat,
            role=role,
            provider=own("provider", chat.provider),
            alias=own("alias", chat.alias),
            base_url=own("base_url", chat.base_url),
            model=own("model", chat.model),
            api_key=own("api_key", chat.api_key),
            api=own("api", chat.api),
            temperature=temperature,
            max_output_tokens=output,
        )


# The two chat-shaped roles reply drafting adds (mailfathom.providers: one handler each).
UTILITY_ROLE = "utility"
DRAFTING_ROLE = "drafting"
DRAFTING_ROLES = (UTILITY_ROLE, DRAFTING_ROLE)


@dataclass(frozen=True)
class ChatEndpoint:
    """What one chat-shaped role (chat, utility, drafting) sends its model."""

    role: str
    provider: str
    alias: str
    base_url: str
    model: str
    api_key: str
    api: str
    temperature: float | None
    max_output_tokens: int
    reasoning_effort: str
    timeout_seconds: int

    @property
    def configured(self) -> bool:
        return self.provider != "none"


@dataclass(frozen=True)
class Endpoint:
    """What the two provider roles (chat, embedding) declare alike."""

    role: str
    provider: str
    base_url: str
    model: str
    api_key: str
    timeout_seconds: int
    max_retries: int
    concurrency: int
    circuit_failures: int
    circuit_seconds: int

    @property
    def configured(self) -> bool:
        return self.provider != "none"


@dataclass(frozen=True, slots=True)
class DeploymentSettings:
    """The deployment's own environment variables (not MAILFATHOM_*), read the same way.

    The attribute `database_url` is read from DATABASE_URL, and so on for each field.
    """

    database_url: str = _text("", "PostgreSQL URL of the database. Unset: the embedded PostgreSQL.")
    redis_url: str = _text("", "Redis URL of Celery's broker and result store. Unset: the embedded Redis.")
    database_conn_max_age: int = _whole(
        60, 0, 86400, "Seconds a database connection is kept for reuse.", unit="seconds"
    )
    django_debug: bool = _flag(False, "Django's debug mode; never in production.")
    django_secret_key: str = _text("", "Django's secret key; required when DATABASE_URL is set.")
    django_allowed_hosts: str = _text(
        "localhost,127.0.0.1,[::1]", "Comma-separated host names the web app answers."
    )
    django_csrf_trusted_origins: str = _text(
        "", "Comma-separated origins (https://mail.example.org) trusted for admin form posts."
    )


def _declarations(cls: type, prefix: str) -> tuple[Setting, ...]:
    return tuple(
        Setting(
            name=prefix + declared.name.upper(),
            kind=declared.metadata["kind"],
            default=declared.default,
            help=declared.metadata["help"],
            minimum=declared.metadata.get("minimum"),
            maximum=declared.metadata.get("maximum"),
            choices=declared.metadata.get("choices", ()),
            unit=declared.metadata.get("unit", ""),
            attribute=declared.name,
        )
        for declared in dataclasses.fields(cls)
    )


SETTINGS: tuple[Setting, ...] = _declarations(MailFathomSettings, "MAILFATHOM_")
DEPLOYMENT_SETTINGS: tuple[Setting, ...] = _declarations(DeploymentSettings, "")
ATTRIBUTES: frozenset[str] = frozenset(f.name for f in dataclasses.fields(MailFathomSettings))

BY_NAME: dict[str, Setting] = {setting.name: setting for setting in SETTINGS}


def setting_read_by(read: Callable[[MailFathomSettings], Any]) -> Setting:
    """The declared setting that `read` reads: it must read one attribute of the settings it is given.

    Lets code that keeps a reader (a typed `values.<name>`, which config_usage checks) name the
    environment variable behind it without spelling the setting as a string.
    """
    names: list[str] = []

    class _Probe:
        def __getattr__(self, name: str) -> int:
            names.append(name)
            return 0

    read(_Probe())  # type: ignore[arg-type]  # a stand-in that records the attribute read
    return next(setting for setting in SETTINGS if setting.attribute == names[0])


@dataclass(frozen=True)
class LoadedConfig:
    """The values read from the environment and what was wrong with any of them."""

    values: MailFathomSettings
    deployment: DeploymentSettings
    problems: dict[str, str]


def load(environ: Mapping[str, str]) -> LoadedConfig:
    """Read every declared setting from `environ`; never raise (see the module docstring)."""
    problems: dict[str, str] = {}
    values = _read(MailFathomSettings, SETTINGS, environ, problems)
    deployment = _read(DeploymentSettings, DEPLOYMENT_SETTINGS, environ, problems)
    return LoadedConfig(values, deployment, problems)


def _read(
    cls: type[T], declared: tuple[Setting, ...], environ: Mapping[str, str], problems: dict[str, str]
) -> T:
    values: dict[str, Any] = {}
    for attribute, setting in zip(dataclasses.fields(cls), declared, strict=True):
        raw = environ.get(setting.name)
        if raw is None or (raw.strip() == "" and setting.kind != "str"):
            continue
        try:
            values[attribute.name] = setting.parse(raw)
        except ValueError as error:
            problems[setting.name] = f"{setting.name} must be {error}."
    return cls(**values)


def listed(text: str) -> list[str]:
    """The items of a comma-separated setting, stripped, blanks dropped."""
    return [item.strip() for item in text.split(",") if item.strip()]
