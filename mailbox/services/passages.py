"""Passages: what one ask_mail lookup draws from the local copy (docs/operations/answering.md).

The selection and ranking search_emails answers from, with two differences that are the
answering contract: junk mail never takes part, and each match is a passage (identity plus
one extract bounded by `max_characters`) instead of a summary; a match with no text is
dropped. Where the query's words were found in the text read from an attachment, the
passage also carries extracts of that attachment and its file name, inside the same bound
(at most half of it, the body's extract taking the rest). Where sensitive-content scanning
is on, subject, extracts and file name are redacted here: text sent to a model leaves the
deployment as surely as text returned to a caller.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db.models.functions import Left

from accounts.models import MailAccount
from mailbox.models import Email, Folder
from mailbox.services import search, sensitive
from mailbox.services.bounds import whole_number
from mailbox.services.lexical_search import highlight, highlight_attachments
from mailbox.services.mail_filter import MailFilter
from mailbox.services.selection import select

FRAGMENTS = 4
SEPARATOR = " … "
BODY_READ = 20_000  # characters read per match; the extract is cut far below this
_WHITESPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Passage:
    stored_email_id: str
    account_id: str
    account_display_name: str
    folder_alias: str
    subject: str
    received_at: datetime
    extract: str
    # The attachment whose text also matched (its file name, "" when it has none) and
    # extracts of that text; None and "" when the match was in the message alone.
    attachment_name: str | None = None
    attachment_extract: str = ""

    @property
    def characters(self) -> int:
        """What this passage sends of somebody's mail: subject, extracts and the attachment's name."""
        return (
            len(self.subject)
            + len(self.extract)
            + len(self.attachment_name or "")
            + len(self.attachment_extract)
        )


@dataclass(frozen=True)
class PassageRetrieval:
    passages: tuple[Passage, ...]
    retrieval_mode: str  # "lexical" or "hybrid"


def retrieve_passages(
    query_text: str,
    *,
    accounts: Iterable[str] | None,
    folders: Iterable[str] | None,
    limit: int,
    max_characters: int,
    mail_filter: MailFilter | None = None,
    lexical_query_text: str | None = None,
) -> PassageRetrieval:
    """Rank the scope's mail (junk excluded) for `query_text`; return up to `limit` passages.

    `mail_filter` narrows exactly as for search_emails and is checked the same way; it may
    not ask for junk mail (a programming error, not a caller's refusal: search_mail does
    not offer the switch). `lexical_query_text`, as for search_emails, is what the lexical
    arm ranks by and the extracts are chosen for; `query_text` alone is embedded.
    """
    query = search.checked_query(query_text)
    words = search.lexical_text(lexical_query_text, query)
    limit = whole_number(
        limit,
        minimum=search.MIN_RESULT_LIMIT,
        maximum=search.MAX_RESULT_LIMIT,
        default=search.DEFAULT_RESULT_LIMIT,
        code=search.RESULT_LIMIT_OUT_OF_RANGE,
        argument="limit",
    )
    if mail_filter is not None and mail_filter.include_junk:
        raise ValueError("passages never include the junk folder")
    selection = select(accounts, folders, mail_filter)
    candidates = Email.objects.in_selection(selection)
    ranked, mode, _state = search.rank(candidates, query, limit, lexical_query=words)
    ids = [email_id for email_id, _score, _kind in ranked]
    rows = {
        str(row["id"]): row
        for row in Email.objects.filter(id__in=ids)
        .annotate(body_start=Left("text_body", BODY_READ))
        .values("id", "account_id", "folder_id", "subject", "received_at", "body_start")
    }
    accounts_by_pk = {
        pk: (account_id, display_name)
        for pk, account_id, display_name in MailAccount.objects.filter(
            pk__in={row["account_id"] for row in rows.values()}
        ).values_list("pk", "account_id", "display_name")
    }
    aliases = dict(
        Folder.objects.filter(pk__in={row["folder_id"] for row in rows.values()}).values_list(
            "pk", "mapping__alias"
        )
    )
    fragments = highlight(ids, words, FRAGMENTS, max(40, max_characters // FRAGMENTS), marker="")
    in_files = highlight_attachments(
        ids, words, FRAGMENTS, max(40, max_characters // (2 * FRAGMENTS)), marker=""
    )
    scanning = sensitive.enabled()
    passages = []
    for email_id in ids:
        row = rows.get(email_id)
        if row is None:  # expunged between ranking and reading
            continue
        found = in_files.get(email_id)
        name, in_file = None, ""
        if found:
            name = found[0].file_name
            in_file = _joined(found[0].extracts, max_characters // 2)
        extract = _extract(fragments.get(email_id, []), row["body_start"], max_characters - len(in_file))
        subject = row["subject"]
        if scanning:
            extract = sensitive.redact(extract)[: max_characters - len(in_file)]
            subject = sensitive.redact(subject)
            if found:
                name = sensitive.redact(name or "")
                in_file = sensitive.redact(in_file)[: max_characters // 2]
        if not extract.strip() and not in_file.strip():
            continue
        account_id, display_name = accounts_by_pk[row["account_id"]]
        passages.append(
            Passage(
                stored_email_id=email_id,
                account_id=account_id,
                account_display_name=display_name,
                folder_alias=aliases.get(row["folder_id"]) or "",
                subject=subject,
                received_at=row["received_at"],
                extract=extract,
                attachment_name=name,
                attachment_extract=in_file,
            )
        )
    return PassageRetrieval(passages=tuple(passages), retrieval_mode=mode)


def _extract(fragments: list[str], body: str, max_characters: int) -> str:
    """The whole body when it fits, else its matched fragments (or its start); at most the bound."""
    if max_characters <= 0:
        return ""
    whole = _WHITESPACE.sub(" ", body).strip()
    if len(whole) <= max_characters:
        return whole
    return _joined(fragments, max_characters) or whole[: max_characters - 1].rstrip() + "…"


def _joined(fragments: list[str], max_characters: int) -> str:
    """The fragments, whitespace collapsed, joined and cut to the bound ("" when none)."""
    if max_characters <= 0:
        return ""
    parts = [_WHITESPACE.sub(" ", fragment).strip() for fragment in fragments]
    text = SEPARATOR.join(part for part in parts if part)
    if len(text) <= max_characters:
        return text
    return text[: max_characters - 1].rstrip() + "…"
