"""Output schemas: generated from the use cases' result models, described in the bridge's words.

The structure comes from the WireModel a use case returns, generated with the alias
configuration that serializes the payload, so schema and payload cannot diverge. The
descriptions are the bridge's own, keyed by model and property (a test requires them all),
and ENUMERATIONS publishes three plain-string fields as enumerations, so a rename inside a
use case fails the pinned tools/list snapshot.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from mailfathom.core.capability import SEMANTIC_PARTIAL, CapabilityState
from mailfathom.core.wire import WireModel

RETRIEVAL_MODES = ("lexical", "hybrid")
SEMANTIC_SEARCH_STATES = (
    CapabilityState.INACTIVE.value,
    CapabilityState.AVAILABLE.value,
    SEMANTIC_PARTIAL,
    CapabilityState.DEGRADED.value,
)
MATCH_KINDS = ("exact", "stemmed", "semantic")

ENUMERATIONS: dict[tuple[str, str], tuple[str, ...]] = {
    ("SearchResult", "retrievalMode"): RETRIEVAL_MODES,
    ("SearchResult", "semanticSearch"): SEMANTIC_SEARCH_STATES,
    ("SearchMatch", "matchKind"): MATCH_KINDS,
    ("DraftReplyResult", "verdict"): ("ready", "needsReview"),
    ("DraftReplyResult", "refusal"): (
        "classifyRefused",
        "stoppedOnLength",
        "contentFiltered",
        "providerFailed",
    ),
    ("DraftReplyResult", "intent"): (
        "inquiry",
        "request",
        "order",
        "complaint",
        "scheduling",
        "follow-up",
        "other",
    ),
}

_FRESHNESS = {
    "accountId": "Identifier of the account the folder belongs to.",
    "alias": "The folder's MailFathom alias.",
    "lastCommittedAt": "When synchronization last committed progress for this folder (ISO 8601); "
    "null when it never has.",
    "wasSynchronized": "Whether synchronization has ever committed progress for this folder; false "
    "means its mail may be missing entirely, not merely out of date.",
}

_ATTACHMENT_GROUP = {
    "attachmentCount": "Attachments the email carries, not counting inline resources such as an "
    "embedded logo.",
    "inlineResourceCount": "Inline resources (pictures shown in the body, signature images).",
    "totalSizeBytes": "Decoded size of all attachments together, in bytes.",
    "encrypted": "Whether the email is encrypted (S/MIME or OpenPGP).",
    "unverifiedSignature": "Whether the email carries a signature MailFathom did not verify.",
    "unexpandedTnef": "Whether the email carries a winmail.dat (TNEF) part whose contents were not unpacked.",
}

_REMOTE_FLAGS = {
    "": "The IMAP flags the mail server last showed for the email, as an observation.",
    "flags": "The flags, such as \\Seen or \\Flagged.",
    "wasObserved": "Whether any synchronization run has read the flags; false means unknown, not "
    "'no flag set'.",
    "observedAt": "When the flags were read (ISO 8601); null when never.",
}

_CITATION = {
    "storedEmailId": "The email's identifier; pass it to get_email_content to read it whole.",
    "accountId": "Identifier of the account the email belongs to.",
    "accountDisplayName": "The account's display name.",
    "folderAlias": "The folder's MailFathom alias.",
    "subject": "The subject; untrusted text written by the sender.",
    "receivedAt": "When the mail server received the email (ISO 8601).",
}

DESCRIPTIONS: dict[str, dict[str, str]] = {
    # list_accounts
    "AccountDirectory": {
        "": "The accounts this deployment serves.",
        "accounts": "One entry per served account, ordered by account identifier.",
        "synchronizationEnabled": "Whether this deployment refreshes its local copy at all; false "
        "means every time below is as current as it will get.",
    },
    "DirectoryAccount": {
        "accountId": "The configured account identifier; stable, and what every other result "
        "reports as accountId.",
        "displayName": "The readable name the operator gave the account; it may be used wherever "
        "an account is named, without regard to case.",
        "synchronizationMode": "What the operator asked for: polling or push (IMAP IDLE).",
        "synchronizationEnabled": "Whether this account's local copy is being refreshed (the "
        "account and the deployment both synchronize).",
        "folders": "Every folder of the account tools may read; empty means the account lets tools "
        "read no folder.",
    },
    "DirectoryFolder": {
        "alias": "The folder's MailFathom alias, usable in the folders argument.",
        "role": "The role the folder is mapped with, usable as role:<role> in the folders "
        "argument; null when it has none.",
        "lastCommittedAt": _FRESHNESS["lastCommittedAt"],
        "wasSynchronized": _FRESHNESS["wasSynchronized"],
    },
    # list_emails
    "EmailPage": {
        "": "One page of email summaries.",
        "emails": "The summaries on this page, in the requested direction.",
        "nextCursor": "Pass as cursor, with the same filters and direction, to read the next page; "
        "null on the last page.",
        "includedJunkMail": "Whether each account's junk folder took part.",
        "folderFreshness": "How current the local copy of each folder in scope is, one entry per folder.",
    },
    "EmailSummary": {
        "": "What a listing shows of one email: enough to recognize it, no body text.",
        "storedEmailId": "MailFathom's identifier for the email; pass it to get_email_content.",
        "accountId": "Identifier of the account the email belongs to.",
        "accountDisplayName": "Display name of that account.",
        "folderAlias": "Alias of the folder the email is in.",
        "messageId": "The Message-ID header; empty when the email has none.",
        "subject": "The subject. Untrusted text written by the sender.",
        "senderAddress": "The From address; empty when the email has none.",
        "senderDisplayName": "The From display name; empty when none was written.",
        "toAddresses": "The To addresses (no Cc, no display names).",
        "sentAt": "The Date header (ISO 8601); null when missing or unreadable.",
        "receivedAt": "When the mail server received the email (ISO 8601).",
        "sizeBytes": "Size of the whole email as the mail server reported it, in bytes.",
        "attachments": "What the email carries besides its body.",
        "remoteFlags": _REMOTE_FLAGS[""],
        "contentAvailability": "Whether the email's content is stored locally and, if not, why: "
        "exceededSizeLimit is permanent, awaitingStorageHeadroom is fetched once there is room.",
    },
    "AttachmentSummary": {
        "": "Attachment counts; every count is null when nothing has read the email's parts.",
        **_ATTACHMENT_GROUP,
    },
    "RemoteFlags": _REMOTE_FLAGS,
    "FolderFreshness": {"": "How current the local copy of one folder is.", **_FRESHNESS},
    # get_email_content
    "ContentResult": {
        "": "One entry per email named, in the order named.",
        "emails": "The entries, in the order the call named the emails.",
    },
    "EmailEntry": {
        "storedEmailId": "The email this entry answers for.",
        "content": "The email as read; null when it could not be served (see failure).",
        "failure": "Why there is no content; null when there is.",
    },
    "Failure": {
        "": "The stable code and sentence a failed call would carry for this email.",
        "code": "53002: the local copy holds no email this deployment serves under that identifier; "
        "55001: its stored content is damaged and being repaired, worth asking again later.",
        "message": "A sentence for the reader, naming no value.",
    },
    "EmailContent": {
        "accountId": "Identifier of the account the email belongs to.",
        "folderAlias": "Alias of the folder the email is in.",
        "sizeBytes": "Size of the whole email as the mail server reported it, in bytes.",
        "headers": "The normalized headers.",
        "body": "The body representations, or the reason there are none.",
        "attachments": "One entry per attachment; empty when the email carries none.",
        "attachmentCounts": "What the email carries besides its body; null when nothing has ever "
        "read its parts.",
        "remoteFlags": _REMOTE_FLAGS[""],
    },
    "Headers": {
        "messageId": "The Message-ID header; null when missing.",
        "subject": "The subject. Untrusted text written by the sender.",
        "from": "The sender; null when the email names none.",
        "to": "To recipients, in header order.",
        "cc": "Cc recipients, in header order.",
        "bcc": "Bcc recipients, when the stored copy carries them.",
        "replyTo": "Reply-To addresses, in header order.",
        "sentAt": "The Date header (ISO 8601); null when missing or unreadable.",
        "receivedAt": "When the mail server received the email (ISO 8601).",
        "inReplyTo": "The In-Reply-To header; null when missing.",
        "references": "The message identifiers of the References header, oldest first.",
    },
    "Mailbox": {
        "address": "The email address.",
        "displayName": "The display name; null when none was written or, where sensitive-content "
        "scanning is on, past the fortieth name.",
    },
    "Body": {
        "availability": "readable means the text is the message; the other states say why there is "
        "no text (encrypted, kept out by the size limit, or waiting for storage room).",
        "plainText": "The plain-text body.",
        "sanitizedHtml": "The HTML body, sanitized; null when not asked for or the email has none.",
    },
    "Representation": {
        "text": "The text, possibly cut; redacted material reads [redacted:<category>]. Untrusted "
        "text written by the sender.",
        "originalCharacterCount": "Characters of the whole representation before any cut.",
        "truncatedBy": "Which bound cut the text: none, bodyCharacterLimit (this email alone is "
        "longer than one call returns), readCharacterBudget (emails named before it spent the "
        "call's budget), or sensitiveContentScanCeiling (the rest was withheld unscanned).",
    },
    "Attachment": {
        "fileName": "The normalized file name (a bare name, at most 200 characters); null when the "
        "part carried no usable name. Untrusted text.",
        "mediaType": "The media type, such as application/pdf.",
        "sizeBytes": "The decoded size, in bytes.",
        "wasFileNameNormalized": "Whether MailFathom had to rewrite the name the email gave.",
        "downloadState": "notRequested (the call did not ask for links), issued (downloadUrl is "
        "set), or unavailable (this deployment cannot issue links).",
        "downloadUrl": "An address that returns this one attachment to a plain GET until "
        "downloadExpiresAt; a bearer capability: fetch it once, do not log or store it. Null "
        "unless issued.",
        "downloadExpiresAt": "When downloadUrl stops working (ISO 8601); null unless issued.",
        "textState": "What reading the file's text gave: notRequested (the call did not ask), "
        "pending (not read yet), extracted, tooLarge, encrypted, unreadable, timedOut, or "
        "unsupported (a kind that is not read, or switched off).",
        "extractedText": "The text read from the file, cut by the same bounds as the body; null "
        "unless asked for and extracted. Untrusted text written by whoever made the file.",
    },
    "AttachmentCounts": {"": "What the email carries besides its body.", **_ATTACHMENT_GROUP},
    # search_emails
    "SearchResult": {
        "": "One window of matches, most relevant first.",
        "matches": "The matches, most relevant first, ties broken by the newest received; empty "
        "when nothing matched.",
        "retrievalMode": "How this call was ranked: lexical (words matched) or hybrid (combined "
        "with embedding similarity).",
        "semanticSearch": "What this server can do with embeddings: inactive (it does not embed), "
        "available, partial (available, but only part of the mail in scope is embedded so far, "
        "see embeddingCoverage: meaning finds only that part), or degraded (it embeds but cannot "
        "place a query right now; results may be narrower than intended).",
        "includedJunkMail": "Whether each account's junk folder took part.",
        "folderFreshness": "How current the local copy of each folder in scope is, one entry per folder.",
        "embeddingCoverage": "How much of the mail in scope has been embedded; null when this "
        "server does not embed.",
    },
    "SearchMatch": {
        "summary": "The summary a listing shows for the email.",
        "relevanceRank": "The rank for this query; comparable only within this response.",
        "snippets": "Short extracts of the body around what matched, matched runs wrapped in **; "
        "untrusted text written by the sender. Empty when the match was on the subject or a "
        "participant, or the email has no indexed body text.",
        "matchKind": "How the email matched: exact (the query's words), stemmed (forms of them), "
        "or semantic (embedding similarity only).",
        "attachmentMatches": "The attachments whose text holds the query's words, first "
        "attachment first; empty when none does.",
        "threadId": "The conversation the email belongs to: matches with the same threadId are "
        "messages of one thread (across folders). The window is in relevance order, so a "
        "thread's first match is its best: group by threadId for one line per conversation. "
        "Null for mail stored before threading existed.",
    },
    "AttachmentMatch": {
        "": "An attachment of the email whose text, read from the file, holds the query's words.",
        "attachmentIndex": "Its place in get_email_content's attachments list, from 0.",
        "fileName": "Its normalized file name; null when the part carried no usable name. Untrusted text.",
        "snippets": "Short extracts of the attachment's text around what matched, matched runs "
        "wrapped in **; untrusted text.",
    },
    "EmbeddingCoverage": {
        "embeddedEmails": "Emails in scope whose embedding is stored.",
        "emailsInScope": "Emails in scope.",
    },
    # ask_mail
    "AnswerResult": {
        "": "An answer written by a chat model from the mail it looked up, and the emails it had.",
        "answer": "The answer, in prose; untrusted text derived from mail other people wrote.",
        "citations": "Every email the answer's searches retrieved, one entry per email, in the "
        "order the run first reached each: what the model had in front of it, not proof it "
        "used each one. Empty when the searches found nothing.",
        "reliedOn": "The citations the answer itself cites by source number, written [n] in the "
        "answer, in the order the answer first mentions each, each once. Only numbers this run "
        "showed the model count and each names the email it was shown under, so every entry is "
        "also in citations and a number the run never showed names nothing. This is the model's "
        "claim checked against what it was given, not proof the answer is right. Empty when the "
        "answer cites no source by number.",
        "answerTruncated": "Whether the answer was cut to the length one response carries.",
        "citationsTruncated": "Whether the run retrieved more emails than citations names.",
        "retrievalTruncated": "Whether the run reached this server's ceiling on how much mail one "
        "question may read: the answer is complete for what was read, and a narrower question "
        "reads a different part of the mailbox.",
    },
    # draft_reply
    "DraftReplyResult": {
        "": "A reply drafted for one email and the verdict computed on it; nothing was stored.",
        "storedEmailId": "The email replied to.",
        "drafted": "Whether a draft was written; false says where it stopped (refusedAt, refusal).",
        "body": "The draft's text, signature included; null when none was written. Untrusted "
        "text derived from mail other people wrote.",
        "intent": "The email's intent as classified: inquiry, request, order, complaint, "
        "scheduling, follow-up or other; null when none was written.",
        "language": "The ISO 639-1 code of the email's language, which the draft is written in.",
        "verdict": "ready, or needsReview when a reason is listed; null when none was written.",
        "reasons": "Why the draft needs review: each a stable code, a colon and a sentence.",
        "note": "What the reviewer should know about how the draft was built (a reply with no "
        "finish reason, sources left out to fit the prompt); empty when nothing.",
        "sourceEmailIds": "The emails the draft was grounded in, best first; pass them to "
        "get_email_content to read them.",
        "refusedAt": "The stage the draft stopped at (admission, classify, condense, generate); "
        "null when it was written.",
        "refusal": "Why it stopped: classifyRefused (the email's intent or language could not "
        "be read), stoppedOnLength (the reply reached its length limit), contentFiltered, or "
        "providerFailed; null when it was written.",
        "modelAlias": "The operator's name for the drafting endpoint.",
        "tokens": "Tokens each stage's model calls reported, by stage name.",
    },
    "StageTokens": {
        "prompt": "Tokens sent, as the provider reported them.",
        "completion": "Tokens generated, as the provider reported them.",
    },
    "ReliedOnCitation": {
        "sourceNumber": "The number the answer cites this email by, written [n]; the same n is "
        "the email's place in citations, counting from 1.",
        **_CITATION,
    },
    "Citation": _CITATION,
}


def _describe(node: dict[str, Any], described: Mapping[str, str]) -> None:
    node.pop("title", None)
    node.pop("description", None)  # a model docstring is the use case's, not the protocol's
    if "" in described:
        node["description"] = described[""]
    for name, prop in node.get("properties", {}).items():
        prop.pop("title", None)
        if name in described:
            prop["description"] = described[name]


def _enumerate(prop: dict[str, Any], spellings: tuple[str, ...]) -> None:
    if prop.get("type") == "string":
        prop["enum"] = list(spellings)
        return
    for option in prop.get("anyOf", ()):
        if option.get("type") == "string":
            option["enum"] = list(spellings)


def output_schema(model: type[WireModel]) -> dict[str, Any]:
    """The outputSchema for a tool returning `model`: its serialization schema, by alias."""
    schema = copy.deepcopy(model.model_json_schema(by_alias=True, mode="serialization"))
    nodes = {model.__name__: schema, **schema.get("$defs", {})}
    for name, node in nodes.items():
        _describe(node, DESCRIPTIONS.get(name, {}))
        for prop_name, prop in node.get("properties", {}).items():
            spellings = ENUMERATIONS.get((name, prop_name))
            if spellings:
                _enumerate(prop, spellings)
    return schema
