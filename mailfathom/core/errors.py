"""The one error type MailFathom raises on purpose, and the one table of its codes.

Codes 51000-58999 are written for callers and are published as they stand at a boundary.
Every other code describes MailFathom's internals and collapses to 54001 when it crosses
one (docs/errors.md, which a test checks against `Code`). Messages name the argument and its
limit, never the refused value; the only value a message may carry is an account identifier
a caller wrote.
"""

from __future__ import annotations

from enum import IntEnum

CALLER_CATEGORY = range(51000, 59000)

# How the MCP bridge shows a code: as a tool result with isError whose text is
# `MailFathom error NNNNN: <sentence>`, or (an internal code) as 54001 with no detail.
MCP_TOOL_ERROR = "tool error"
MCP_AS_UNDESCRIBED = "shown as 54001"


class Code(IntEnum):
    """Every error code MailFathom raises: its sentence, its HTTP status and how MCP shows it.

    `sentence` is the caller-safe sentence, or its template where a raiser fills in the
    argument and its limit ({argument}, {minimum}, ...); raisers whose refusal names a
    particular requirement write that sentence in the code's terms. `http_status` is what a
    REST boundary answers (an internal code is answered as 54001, so 500); `mcp` is how the
    MCP bridge shows it.
    """

    sentence: str
    http_status: int
    mcp: str

    def __new__(cls, value: int, sentence: str, http_status: int = 400, mcp: str = MCP_TOOL_ERROR) -> Code:
        member = int.__new__(cls, value)
        member._value_ = value
        member.sentence = sentence
        member.http_status = http_status if value in CALLER_CATEGORY else 500
        member.mcp = mcp if value in CALLER_CATEGORY else MCP_AS_UNDESCRIBED
        return member

    @property
    def is_published(self) -> bool:
        return self.value in CALLER_CATEGORY

    def message(self, **values: object) -> str:
        """The sentence with its placeholders filled in."""
        return self.sentence.format(**values)

    # 51xxx: an argument refused.
    PAGE_SIZE_OUT_OF_RANGE = (
        51001,
        "The {argument} argument must be a whole number from {minimum} to {maximum}.",
    )
    FILTER_REFUSED = 51002, "The {argument} argument must be {requirement}."
    RESULT_LIMIT_OUT_OF_RANGE = (
        51003,
        "The {argument} argument must be a whole number from {minimum} to {maximum}.",
    )
    EMAIL_ID_REFUSED = (
        51004,
        "{subject} must be a UUID of at most {maximum} characters that this system issued.",
    )
    EMAIL_COUNT_REFUSED = 51005, "The storedEmailIds argument must name 1 to {maximum} emails."
    EMAIL_REPEATED = 51006, "The storedEmailIds argument may name each email only once."
    # 52xxx: a continuation cursor refused.
    CURSOR_NOT_ISSUED = 52001, "The cursor argument is not a continuation cursor this server issued."
    CURSOR_FOR_OTHER_SELECTION = (
        52002,
        ("The cursor argument was issued for {other}; start again without a cursor."),
    )
    # 53xxx: something named that is not held, or not in the caller's scope.
    UNKNOWN_ACCOUNT = 53001, "Mail account '{name}' is not accessible."
    UNKNOWN_EMAIL = 53002, "No email with this storedEmailId is held in the caller's scope."
    UNKNOWN_FOLDER_ROLE = (
        53003,
        ("The folders argument names a role that no readable folder in scope is mapped with."),
    )
    ERASURE_REQUEST_NOT_OPEN = 53004, "The requestId argument names no erasure request this deployment holds."
    # 54xxx: the server, not the request.
    UNDESCRIBED = 54001, "The request failed for a reason this server does not describe.", 500
    # {state}: "is in use" (no wait), "stayed in use for 5 s" (waited), or "is in use and
    # the queue for one is full" (mailfathom.mcp.execution).
    SERVER_BUSY = (
        54002,
        (
            "Every tool-call slot of this server {state}, so the call was not started; "
            "send it again in a moment."
        ),
        503,
    )
    # A dependency (the database, Redis) could not be reached: nothing was done, and the same
    # request may succeed in a few seconds (docs/errors.md, docs/operations/mcp-endpoint.md).
    DEPENDENCY_UNAVAILABLE = (
        54003,
        (
            "This server cannot reach a service it depends on right now, so the request was not served; "
            "send it again in a few seconds."
        ),
        503,
    )
    # 55xxx: stored content.
    CONTENT_UNAVAILABLE = 55001, "The stored content of this email is missing or damaged."
    # 56xxx: answering or drafting inactive, or not able to right now.
    CAPABILITY_UNAVAILABLE = 56001, "This deployment {does} but cannot right now; try again in a minute."
    # 57xxx: an allowance spent or a run's ceiling reached.
    SPEND_REFUSED = 57001, "This deployment has spent what it may spend on {purpose} in the current period."
    # 58xxx: compliance refusals (an act a compliance rule forbids as asked; docs/operations/compliance.md).
    LEGAL_HOLD = (
        58001,
        (
            "Refused: legal hold {hold} covers {what}, so nothing was changed; "
            "compliance staff must release it first."
        ),
        409,
    )
    SAME_PERSON = (
        58002,
        (
            "The person who requested this erasure may not also execute it; another person "
            "holding the execute permission must."
        ),
        403,
    )
    # Shown to compliance staff on the case export page.
    CASE_EXPORT_TOO_LARGE = (
        58003,
        "The selection holds more stored mail than one case export may hold "
        "(MAILFATHOM_CASE_EXPORT_MAX_BYTES, {maximum} bytes); narrow it by account, person or dates.",
    )
    # 61xxx (internal): synchronization, recorded per folder (docs/synchronization.md).
    CANNOT_CONNECT = 61001, "The server could not be reached."
    LOGIN_REFUSED = 61002, "The server refused the login."
    TIMED_OUT = 61003, "The server did not answer in time."
    TLS_FAILED = 61004, "The TLS handshake failed."
    UNEXPECTED_ANSWER = 61005, "The server answered in a way MailFathom did not expect."
    FOLDER_MISSING = 61006, "The folder does not exist on the server."
    LEASE_LOST = 61007, "Another run took over the folder's lease."
    CONNECTION_LOST = 61008, "The connection was lost mid-run."
    INTERNAL_FAILURE = 61009, "An internal error; the worker's log names where."
    # 61010-61020 (internal): signing in to a provider, and what a provider refuses or limits
    # (accounts.services.provider_refusals; docs/operations/mailbox-providers.md).
    SIGN_IN_NEEDED = (
        61010,
        (
            "The mailbox's sign-in was withdrawn or has expired; synchronization waits until "
            "someone signs in again on the account page."
        ),
    )
    REGISTRATION_REFUSED = (
        61011,
        (
            "The provider refused this deployment's OAuth registration (client ID or secret); "
            "correct it under OAuth registrations, then synchronization resumes."
        ),
    )
    PROVIDER_LIMIT = (
        61012,
        "The provider asked MailFathom to slow down; synchronization resumes at the time shown.",
    )
    DOWNLOAD_PACE_SPENT = (
        61013,
        (
            "Today's download pace for this account is spent; synchronization resumes after "
            "midnight (UTC), or raise the pace on the account."
        ),
    )
    PASSWORDS_REFUSED = (
        61014,
        (
            "The provider no longer accepts passwords for this mailbox; switch the account's "
            "authentication to OAuth 2.0 and sign in."
        ),
    )
    APP_PASSWORD_REQUIRED = (
        61015,
        (
            "Google wants an app password for this mailbox; create one in the Google Account's "
            "security settings and store it, or switch the account to OAuth 2.0."
        ),
    )
    WEB_LOGIN_REQUIRED = (
        61016,
        (
            "Google wants the mailbox's owner to sign in once in a web browser before it "
            "accepts this login; do that, or switch the account to OAuth 2.0."
        ),
    )
    TOKEN_REFUSED = (
        61017,
        (
            "The server refused a freshly issued access token; check that the registration has "
            "the IMAP permission and that it was granted for this mailbox."
        ),
    )
    MAILBOX_NOT_CONNECTED = (
        61018,
        (
            "The sign-in was accepted but may not open this mailbox; give the registration "
            "access to the mailbox, sign in as the IMAP user name, or switch IMAP on for it."
        ),
    )
    IMAP_SWITCHED_OFF = (
        61019,
        "IMAP is switched off for this mailbox; switch it on in the provider's settings.",
    )
    CONSENT_MISSING = (
        61020,
        (
            "The provider has no consent for MailFathom's permission; an administrator must "
            "grant consent to the registration, then someone signs in again."
        ),
    )
    TOKEN_ENDPOINT_UNAVAILABLE = (
        61021,
        "The provider's sign-in service could not be reached or failed; MailFathom tries again later.",
    )
    # 62xxx (internal): import.
    IMPORT_TARGET_UNKNOWN = 62001, "No account or mapped folder by that name."
    # 63xxx (internal): draft delivery and review, and drafting's reference documents.
    DRAFTS_FOLDER_UNMAPPED = 63001, "The account maps no folder with the Drafts role."
    DRAFTS_FOLDER_MISSING = (
        63002,
        ("The folder mapped with the Drafts role cannot be opened on the server; check the mapping."),
    )
    WRITE_REFUSED = 63003, "The server refused a write in the Drafts folder."
    SERVER_UNAVAILABLE = (
        63004,
        "The mail server could not be reached, refused the login or dropped the connection.",
    )
    DELIVERY_BUSY = 63005, "Another delivery of this draft is running; try again once it has finished."
    REVIEW_REFUSED = 63006, "A draft that is {status} cannot be reviewed that way."
    BODY_REFUSED = 63007, "The draft's body is limited to {maximum} characters."
    ACKNOWLEDGEMENT_REQUIRED = 63008, "This draft needs review: acknowledge each of its open reasons."
    # 63009 (internal): a reference document's file refused; drafting's admin shows the sentence.
    REFERENCE_FILE_NOT_READ = 63009, "The file was not read and nothing was stored: {reason}"
    # 7xxxx (internal): model providers (mailfathom.providers.errors).
    PROVIDER_CREDENTIAL_REFUSED = 71001, "The {role} provider refused the configured credential."
    PROVIDER_NO_ANSWER_IN_BUDGET = 72001, "The {role} provider gave no answer within its budget."
    PROVIDER_NO_USABLE_ANSWER = 73001, "The {role} provider answered with something that could not be used."
    # 8xxxx (internal): credentials and sensitive-content scanning.
    CREDENTIAL_UNREADABLE = (
        81001,
        "A stored credential cannot be decrypted with any key of MAILFATHOM_KEYRING.",
    )
    SCAN_FAILED = 82001, "Sensitive-content scanning failed, so no content was returned."


UNDESCRIBED = Code.UNDESCRIBED
UNDESCRIBED_MESSAGE = Code.UNDESCRIBED.sentence
DEPENDENCY_UNAVAILABLE = Code.DEPENDENCY_UNAVAILABLE
DEPENDENCY_UNAVAILABLE_MESSAGE = Code.DEPENDENCY_UNAVAILABLE.sentence


class MailFathomError(Exception):
    """A failure with a stable five-digit code and a sentence safe to show its caller."""

    def __init__(self, code: int, message: str, *, argument: str | None = None) -> None:
        if not 10000 <= code <= 99999:
            raise ValueError("a MailFathom error code has five digits")
        super().__init__(message)
        self.code = int(code)  # a Code or a plain number: held as the plain number either way
        self.message = message
        # The published name of the argument refused, where one was (ask_mail's lookups tell
        # the model which argument to correct without parsing the sentence).
        self.argument = argument

    @property
    def is_published(self) -> bool:
        """Whether a boundary may show this failure to its caller as it stands."""
        return self.code in CALLER_CATEGORY

    def __str__(self) -> str:
        return f"MailFathom error {self.code}: {self.message}"


def code_of(value: int | None) -> Code | None:
    """The table's member for a stored or received number, or None for one it does not declare."""
    member = Code._value2member_map_.get(value) if value is not None else None
    return member if isinstance(member, Code) else None


def http_status(code: int) -> int:
    """What a REST boundary answers for `code`: the table's status, or for an undeclared code
    400 in the caller category and 500 (as 54001) outside it."""
    member = code_of(code)
    if member is not None:
        return member.http_status
    return 400 if code in CALLER_CATEGORY else 500


def published(error: BaseException) -> MailFathomError:
    """Return what a boundary may tell its caller about `error`.

    A caller-category MailFathomError passes through; anything else (another category, an
    unexpected exception) becomes 54001 with no detail, which stays in the server log.
    """
    if isinstance(error, MailFathomError) and error.is_published:
        return error
    return MailFathomError(UNDESCRIBED, UNDESCRIBED_MESSAGE)


# The codes several apps raise, by their names in the table.
PAGE_SIZE_OUT_OF_RANGE = Code.PAGE_SIZE_OUT_OF_RANGE
FILTER_REFUSED = Code.FILTER_REFUSED
UNKNOWN_ACCOUNT = Code.UNKNOWN_ACCOUNT
UNKNOWN_EMAIL = Code.UNKNOWN_EMAIL
UNKNOWN_FOLDER_ROLE = Code.UNKNOWN_FOLDER_ROLE
CONTENT_UNAVAILABLE = Code.CONTENT_UNAVAILABLE
EMAIL_ID_REFUSED = Code.EMAIL_ID_REFUSED
CURSOR_NOT_ISSUED = Code.CURSOR_NOT_ISSUED
CURSOR_FOR_OTHER_SELECTION = Code.CURSOR_FOR_OTHER_SELECTION
CAPABILITY_UNAVAILABLE = Code.CAPABILITY_UNAVAILABLE
