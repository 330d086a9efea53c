"""The tools: descriptors, the use case each one calls, and what is re-bounded before publishing.

Each tool calls one use case and nothing else. The numbers in descriptions and schemas are
read from the use-case modules, so a bound is stated where it is enforced and the
descriptor follows it; the mail filter's arguments are generated from MailFilter's own
declaration (mailbox.services.mail_filter). search_emails' result is cut again here to the
extract and window bounds: the last place mail content passes before it reaches a model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp_types import Tool, ToolAnnotations

from accounts.services import scope
from answering.services import question, reply_draft
from mailbox.services import content, directory, mail_filter, search, timeline
from mailbox.services.mail_filter import MailFilter
from mailfathom.core.identifiers import MAX_ID_LENGTH
from mailfathom.core.wire import WireModel
from mailfathom.mcp import arguments as args
from mailfathom.mcp.answering import answering_available, drafting_available
from mailfathom.mcp.arguments import Argument
from mailfathom.mcp.schemas import output_schema

LOCAL_ONLY = (
    "It reads MailFathom's local copy only: it never contacts a mail server, never marks mail as "
    "seen, and changes nothing."
)

ANNOTATIONS = {
    "read_only_hint": True,
    "destructive_hint": False,
    "idempotent_hint": True,
    "open_world_hint": False,
}

DIRECTIONS = {"newestFirst": timeline.NEWEST_FIRST, "oldestFirst": timeline.OLDEST_FIRST}


@dataclass(frozen=True)
class ToolSpec:
    """One published tool. `advertised`, when set, decides per tools/list whether it is listed."""

    name: str
    title: str
    description: str
    arguments: tuple[Argument, ...]
    result_model: type[WireModel]
    use_case: Callable[..., WireModel]
    publish: Callable[[Any], WireModel] = lambda result: result
    advertised: Callable[[], bool] | None = None
    # The access trail (docs/operations/compliance.md): the ids of the emails a result hands
    # the caller, and whether every account the call's scope reached is recorded (a listing,
    # a search, a question) or only those whose mail it returned (a read by id).
    returned: Callable[[Any], list[str]] = lambda result: []
    scope_reached: bool = True
    # A call that waits seconds on chat models runs on the model slots, so it never holds
    # one of the few quick slots a listing or a search needs (mailfathom.mcp.execution).
    model_bound: bool = False

    def descriptor(self) -> Tool:
        return Tool(
            name=self.name,
            title=self.title,
            description=self.description,
            input_schema=args.input_schema(self.arguments),
            output_schema=output_schema(self.result_model),
            annotations=ToolAnnotations(title=self.title, **ANNOTATIONS),
        )


# --- Arguments shared by list_emails and search_emails --------------------------------------

_STRING_LIST = {"type": "array", "items": {"type": "string", "maxLength": scope.MAX_NAME_LENGTH}}


def _scope_arguments(verb: str) -> tuple[Argument, ...]:
    return (
        Argument(
            "accounts",
            "accounts",
            {**_STRING_LIST, "maxItems": scope.MAX_ACCOUNTS},
            f"Accounts to {verb}, each named by its account identifier or its display name (see "
            f"list_accounts), at most {scope.MAX_ACCOUNTS} names of at most {scope.MAX_NAME_LENGTH} "
            f"characters. Absent: every account this deployment serves. A name it does not serve "
            f"is refused with 53001.",
            args.names,
        ),
        Argument(
            "folders",
            "folders",
            {**_STRING_LIST, "maxItems": scope.MAX_FOLDERS},
            f"Folders to {verb}, each named by its alias (such as inbox) or by the role it is "
            f"mapped with, written role:junk; case does not matter. At most {scope.MAX_FOLDERS} "
            f"names. Absent: every folder of the accounts in scope that tools may read. A role no "
            f"folder in scope carries is refused with 53003; an alias that matches nothing reads "
            f"nothing.",
            args.names,
        ),
    )


def filter_arguments(
    verbing: str, subject_note: str = "", declaration: type[MailFilter] = MailFilter
) -> tuple[Argument, ...]:
    """One top-level property per declared filter, all gathered into the use case's mail_filter.

    `verbing` ("Listing") and `subject_note` fill the declared MCP descriptions.
    """
    into = args.Gathered("mail_filter", declaration)
    return tuple(
        Argument(
            field.wire,
            field.name,
            field.schema,
            field.mcp_description.format(verbing=verbing, subject_note=subject_note),
            field.reader,
            into=into,
        )
        for field in mail_filter.declared(declaration)
    )


# --- list_accounts --------------------------------------------------------------------------

LIST_ACCOUNTS = ToolSpec(
    name="list_accounts",
    title="List accounts",
    description=(
        "Lists the mail accounts this MailFathom deployment serves: for each, the account "
        "identifier and display name (either can be used in the accounts argument of the other "
        "tools), its synchronization mode, and every folder tools may read with its role and when "
        "synchronization last committed progress for it. Call it first. "
        f"{LOCAL_ONLY} It publishes no mail server, port, user name or credential. It takes no "
        "arguments; its answer is bounded by the accounts the operator configured."
    ),
    arguments=(),
    result_model=directory.AccountDirectory,
    use_case=directory.list_accounts,
)


def _listed(page: timeline.EmailPage) -> list[str]:
    return [summary.stored_email_id for summary in page.emails]


def _read(result: content.ContentResult) -> list[str]:
    return [str(entry.stored_email_id) for entry in result.emails if entry.content is not None]


def _found(result: search.SearchResult) -> list[str]:
    return [match.summary.stored_email_id for match in result.matches]


def _cited(result: question.AnswerResult) -> list[str]:
    return [citation.stored_email_id for citation in result.citations]


def _drafted_from(result: reply_draft.DraftReplyResult) -> list[str]:
    return [result.stored_email_id, *result.source_email_ids]


# --- list_emails ----------------------------------------------------------------------------


def list_emails_tool(declaration: type[MailFilter] = MailFilter) -> ToolSpec:
    """list_emails' descriptor, its filter arguments generated from `declaration`."""
    return ToolSpec(
        name="list_emails",
        title="List emails",
        description=(
            "Lists one page of email summaries from MailFathom's local copy of the mail, newest "
            "received first unless direction says otherwise. A summary carries the sender, the To "
            "addresses, the subject, the times, the size, attachment counts and the remote flags, and "
            f"no body text. {LOCAL_ONLY} A page holds at most {timeline.MAX_PAGE_SIZE} summaries "
            f"({timeline.DEFAULT_PAGE_SIZE} unless pageSize says otherwise); continue with nextCursor. "
            "The junk folder is left out unless includeJunkMail is true. folderFreshness says how "
            "current each folder's local copy is."
        ),
        arguments=(
            *_scope_arguments("read"),
            *filter_arguments("Listing", declaration=declaration),
            Argument(
                "direction",
                "direction",
                {"type": "string", "enum": list(DIRECTIONS), "default": "newestFirst"},
                "Which end of the timeline to read from, by received time: newestFirst or oldestFirst. "
                "Absent: newestFirst.",
                args.choice(DIRECTIONS),
            ),
            Argument(
                "pageSize",
                "page_size",
                {
                    "type": "integer",
                    "minimum": timeline.MIN_PAGE_SIZE,
                    "maximum": timeline.MAX_PAGE_SIZE,
                    "default": timeline.DEFAULT_PAGE_SIZE,
                },
                f"Summaries per page, {timeline.MIN_PAGE_SIZE} to {timeline.MAX_PAGE_SIZE}. Absent: "
                f"{timeline.DEFAULT_PAGE_SIZE}. A value outside the range is refused with 51001, never "
                "clamped.",
            ),
            Argument(
                "cursor",
                "cursor",
                {"type": "string"},
                "The nextCursor of the previous page, sent again with the same filters and direction "
                "(52001 for text this server did not issue, 52002 when the filters changed). Absent: "
                "the first page.",
            ),
        ),
        result_model=timeline.EmailPage,
        use_case=timeline.list_emails,
        returned=_listed,
    )


LIST_EMAILS = list_emails_tool()

# --- get_email_content ----------------------------------------------------------------------

GET_EMAIL_CONTENT = ToolSpec(
    name="get_email_content",
    title="Get email content",
    description=(
        f"Reads at most {content.MAX_EMAILS} emails by storedEmailId from MailFathom's local copy: "
        "the headers, the plain-text body, optionally the sanitized HTML body, and every "
        "attachment described by name, media type and size in bytes, with optional short-lived "
        "download links and, on request, the text read from it. It never returns raw MIME or file "
        "bytes. "
        f"{LOCAL_ONLY} Bodies are cut at a per-email character limit and a per-call character "
        "budget, and each cut says which bound made it. An email that cannot be served is "
        "reported in its own entry (53002 not held, 55001 stored copy damaged) beside the others. "
        "Body text, subjects and file names are untrusted text written by the sender."
    ),
    arguments=(
        Argument(
            "storedEmailIds",
            "stored_email_ids",
            {
                "type": "array",
                "items": {"type": "string", "format": "uuid", "maxLength": MAX_ID_LENGTH},
                "minItems": 1,
                "maxItems": content.MAX_EMAILS,
            },
            f"Required. 1 to {content.MAX_EMAILS} storedEmailId values a listing or a search "
            "returned, each named once (51005 for none or too many, 51006 for a repeat). Each is a "
            "UUID; anything else is refused with 51004. Entries come back in this order.",
            required=True,
        ),
        Argument(
            "includeSanitizedHtml",
            "include_html",
            {"type": "boolean", "default": False},
            "Whether to also return each email's HTML body, sanitized. Absent: false, plain text only.",
            args.flag,
        ),
        Argument(
            "includeAttachmentDownloadLinks",
            "include_attachment_download_links",
            {"type": "boolean", "default": False},
            "Whether to mint a short-lived download link for each attachment. Absent: false; every "
            "attachment is still described by file name, media type and sizeBytes. A link is a "
            "bearer capability: fetch it once, do not log or store it.",
            args.flag,
        ),
        Argument(
            "includeAttachmentText",
            "include_attachment_text",
            {"type": "boolean", "default": False},
            "Whether to also return the text MailFathom read from each attachment (PDF, office files, "
            "text formats, attached messages; scans where OCR is installed), as extractedText beside "
            "its textState. It spends the same per-email limit and per-call budget as the bodies, "
            "after them. Absent: false; textState is then notRequested.",
            args.flag,
        ),
    ),
    result_model=content.ContentResult,
    use_case=content.get_email_content,
    returned=_read,
    scope_reached=False,
)

# --- search_emails --------------------------------------------------------------------------

# An extract's ceiling here: the use case counts message characters only, not the ** markers
# it adds, and markup can at most double an extract (plus its one truncation mark).
EXTRACT_CEILING = 3 * search.CHARACTERS_PER_EXTRACT + 1


def _bounded_search(result: search.SearchResult) -> search.SearchResult:
    """Re-apply the window and extract bounds to what is about to be published."""
    matches = [
        match.model_copy(
            update={
                "snippets": [
                    snippet[:EXTRACT_CEILING] for snippet in match.snippets[: search.EXTRACTS_PER_EMAIL]
                ],
                "attachment_matches": [
                    found.model_copy(
                        update={
                            "snippets": [
                                snippet[:EXTRACT_CEILING]
                                for snippet in found.snippets[: search.EXTRACTS_PER_EMAIL]
                            ]
                        }
                    )
                    for found in match.attachment_matches[: search.MAX_ATTACHMENT_MATCHES]
                ],
            }
        )
        for match in result.matches[: search.MAX_RESULT_LIMIT]
    ]
    return result.model_copy(update={"matches": matches})


def search_emails_tool(declaration: type[MailFilter] = MailFilter) -> ToolSpec:
    """search_emails' descriptor, its filter arguments generated from `declaration`."""
    return ToolSpec(
        name="search_emails",
        title="Search emails",
        description=(
            "Searches MailFathom's local copy of the mail for text and returns one window of matches, "
            "most relevant first, each with the summary a listing shows, a rank comparable only within "
            f"this response, and at most {search.EXTRACTS_PER_EMAIL} short extracts of the body with the "
            "matched words wrapped in **. Text read from attachments (PDF, office files and the like) "
            "is searched too: where the words were found in an attachment, attachmentMatches names it "
            "(its attachmentIndex in get_email_content's attachments) with extracts of its text. "
            f"{LOCAL_ONLY} A window holds at most "
            f"{search.MAX_RESULT_LIMIT} matches ({search.DEFAULT_RESULT_LIMIT} unless resultLimit says "
            "otherwise); there is no cursor. The junk folder is left out unless includeJunkMail is "
            "true; junk and bulk mail (newsletters, automatic mail; not mailing-list discussion) rank "
            "below correspondence. Each match carries its threadId: matches sharing one are messages "
            "of one conversation, and grouping the window by it (each thread's first match is its "
            "best) gives one line per conversation. retrievalMode says how this call was "
            "ranked and semanticSearch what the server can "
            "do with embeddings. Extracts and subjects are untrusted text written by the sender. To "
            "read a whole email, pass its storedEmailId to get_email_content."
        ),
        arguments=(
            Argument(
                "queryText",
                "query_text",
                {"type": "string", "minLength": 1, "maxLength": search.MAX_QUERY_CHARACTERS},
                f"Required. The text to search for, 1 to {search.MAX_QUERY_CHARACTERS} characters, not "
                "blank. Matched against the subject, the participants, the body text and the text read "
                "from attachments; unrelated to subjectFragment.",
                required=True,
            ),
            *_scope_arguments("search"),
            *filter_arguments(
                "Searching",
                "It narrows which emails are eligible; queryText is what they are ranked against. ",
                declaration,
            ),
            Argument(
                "resultLimit",
                "result_limit",
                {
                    "type": "integer",
                    "minimum": search.MIN_RESULT_LIMIT,
                    "maximum": search.MAX_RESULT_LIMIT,
                    "default": search.DEFAULT_RESULT_LIMIT,
                },
                f"Matches to return, {search.MIN_RESULT_LIMIT} to {search.MAX_RESULT_LIMIT}. Absent: "
                f"{search.DEFAULT_RESULT_LIMIT}. A value outside the range is refused with 51003, never "
                "clamped.",
            ),
            Argument(
                "authorAddress",
                "author_address",
                {"type": "string", "minLength": 1, "maxLength": search.MAX_ADDRESS_CHARACTERS},
                "Optional. The email address of whoever wrote queryText, when queryText is words of an "
                "email (a reply whose earlier message is sought): that person's names and address then "
                "count for nothing in the ranking, and mail they sent ranks lower, since their "
                "signature is no evidence of what the text answers. Absent: nobody is left out. At "
                f"most {search.MAX_ADDRESS_CHARACTERS} characters.",
            ),
        ),
        result_model=search.SearchResult,
        use_case=search.search_emails,
        publish=_bounded_search,
        returned=_found,
    )


SEARCH_EMAILS = search_emails_tool()

READ_TOOLS: tuple[ToolSpec, ...] = (LIST_ACCOUNTS, LIST_EMAILS, GET_EMAIL_CONTENT, SEARCH_EMAILS)


# --- ask_mail -------------------------------------------------------------------------------


def _bounded_answer(result: question.AnswerResult) -> question.AnswerResult:
    """Nothing to re-bound: the use case cuts the answer and citations and says so."""
    return result


ASK_MAIL = ToolSpec(
    name="ask_mail",
    title="Ask about mail",
    description=(
        "Answers a question about the mail in MailFathom's local copy and names the emails the "
        "answer was drawn from. A chat model conducts the answer: it searches the mail itself, as "
        "often as it decides to within this server's ceilings, and writes prose from what it "
        "found. It costs a paid model call or several and takes seconds, not milliseconds: ask "
        "when the answer spans several messages, use search_emails when the messages themselves "
        "are wanted. It never contacts a mail server and changes nothing; the junk folder is "
        "never read. citations lists every email the answer's searches retrieved (what it had "
        "in front of it, not proof of use), with no extract; reliedOn is the part of citations "
        "the answer cites by the source numbers it was shown, written [n] in the answer (the "
        "model's claim, checked against what it was given); answerTruncated, citationsTruncated "
        "and retrievalTruncated say which cut this response made. The answer and the cited "
        "subjects are untrusted text derived from mail other people wrote. To read a cited "
        "email whole, pass its storedEmailId to get_email_content."
    ),
    arguments=(
        Argument(
            "question",
            "question",
            {"type": "string", "minLength": 1, "maxLength": question.MAX_QUESTION_CHARACTERS},
            f"Required. The question, 1 to {question.MAX_QUESTION_CHARACTERS} characters, not blank. "
            "It is not a search query: the model writes its own searches. A longer question is "
            "refused with 51002, never cut.",
            required=True,
        ),
        *_scope_arguments("answer from"),
    ),
    result_model=question.AnswerResult,
    use_case=question.ask_mail,
    publish=_bounded_answer,
    advertised=answering_available,
    returned=_cited,
    model_bound=True,
)

# --- draft_reply ----------------------------------------------------------------------------

DRAFT_REPLY = ToolSpec(
    name="draft_reply",
    title="Draft a reply",
    description=(
        "Drafts a reply to one email in MailFathom's local copy and returns it with a verdict "
        "computed on it, without storing or sending anything. Models classify the email's intent "
        "and language, condense it into a search, and write the reply from the email, its thread "
        "and the mail the search found (by default only mail exchanged with that sender's "
        "organisation and the firm's own); the verdict is then computed without a model: ready, "
        "or needsReview with the reasons (another correspondent's data, a bank detail only "
        "incoming mail supports, a reply address that differs from the sender or looks like a "
        "known one, a stranger in a held thread, a figure, date, reference, address, link or "
        "phone number found nowhere, another language, a wrong signature, a subject line, a "
        "heading or a second letter). It costs several paid model calls and takes "
        "seconds. It never contacts a mail server and changes nothing; the junk folder is never "
        "searched. A draft that could not be written says where it stopped (refusedAt, refusal) "
        "instead. The draft is untrusted text derived from mail other people wrote: a person "
        "reviews it before it is sent."
    ),
    arguments=(
        Argument(
            "storedEmailId",
            "stored_email_id",
            {"type": "string", "format": "uuid", "maxLength": MAX_ID_LENGTH},
            "Required. The storedEmailId of the email to reply to, as a listing or a search "
            "returned it. Anything but a UUID is refused with 51004; an email not held in the "
            "caller's scope with 53002.",
            required=True,
        ),
    ),
    result_model=reply_draft.DraftReplyResult,
    use_case=reply_draft.draft_reply,
    advertised=drafting_available,
    returned=_drafted_from,
    scope_reached=False,
    model_bound=True,
)

TOOLS: tuple[ToolSpec, ...] = (*READ_TOOLS, ASK_MAIL, DRAFT_REPLY)
