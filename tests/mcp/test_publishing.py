"""What the bridge re-bounds before publishing, and how protocol arguments are converted."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from mailbox.services import search
from mailbox.services.summaries import AttachmentSummary, EmailSummary, RemoteFlags
from mailfathom.core.errors import MailFathomError
from mailfathom.mcp import arguments
from mailfathom.mcp.tools import EXTRACT_CEILING, LIST_EMAILS, SEARCH_EMAILS


def _summary(n: int) -> EmailSummary:
    return EmailSummary(
        stored_email_id=f"id-{n}",
        account_id="billing",
        account_display_name="Billing",
        folder_alias="inbox",
        message_id="",
        subject="s",
        sender_address="",
        sender_display_name="",
        to_addresses=[],
        sent_at=None,
        received_at=datetime(2024, 1, 1, tzinfo=UTC),
        size_bytes=1,
        attachments=AttachmentSummary(
            attachment_count=0,
            inline_resource_count=0,
            total_size_bytes=0,
            encrypted=False,
            unverified_signature=False,
            unexpanded_tnef=False,
        ),
        remote_flags=RemoteFlags(flags=[], was_observed=False, observed_at=None),
        content_availability="available",
    )


def test_search_results_are_cut_again_to_the_window_and_extract_bounds():
    oversized = search.SearchResult(
        matches=[
            search.SearchMatch(
                summary=_summary(n),
                relevance_rank=1.0,
                thread_id=f"thread-{n}",
                snippets=["x" * 5000] * 7,
                match_kind="exact",
                attachment_matches=[
                    search.AttachmentMatch(attachment_index=i, file_name="a.pdf", snippets=["y" * 5000] * 7)
                    for i in range(9)
                ],
            )
            for n in range(search.MAX_RESULT_LIMIT + 10)
        ],
        retrieval_mode="lexical",
        semantic_search="inactive",
        included_junk_mail=False,
        folder_freshness=[],
        embedding_coverage=None,
    )

    published = SEARCH_EMAILS.publish(oversized)

    assert len(published.matches) == search.MAX_RESULT_LIMIT
    assert {len(match.snippets) for match in published.matches} == {search.EXTRACTS_PER_EMAIL}
    assert {len(s) for match in published.matches for s in match.snippets} == {EXTRACT_CEILING}
    assert EXTRACT_CEILING == 3 * search.CHARACTERS_PER_EXTRACT + 1
    files = [found for match in published.matches for found in match.attachment_matches]
    assert {len(match.attachment_matches) for match in published.matches} == {search.MAX_ATTACHMENT_MATCHES}
    assert {len(s) for found in files for s in found.snippets} == {EXTRACT_CEILING}
    assert {len(found.snippets) for found in files} == {search.EXTRACTS_PER_EMAIL}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-05-01T09:30:00Z", datetime(2024, 5, 1, 9, 30, tzinfo=UTC)),
        ("2024-05-01T09:30:00+02:00", datetime(2024, 5, 1, 9, 30, tzinfo=timezone(timedelta(hours=2)))),
        (
            "2024-05-01T09:30:00.123456-05:00",
            datetime(2024, 5, 1, 9, 30, 0, 123456, tzinfo=timezone(timedelta(hours=-5))),
        ),
    ],
)
def test_iso_8601_timestamps_with_a_zone_become_aware_datetimes(text, expected):
    converted = arguments.convert_arguments(LIST_EMAILS.arguments, {"receivedBefore": text})
    assert converted["mail_filter"].received_before == expected


@pytest.mark.parametrize(
    "value", ["2024-05-01", "2024-05-01T09:30:00", "yesterday", "", 1714555800, "9" * 65]
)
def test_other_timestamps_are_refused_with_51002_naming_the_argument(value):
    with pytest.raises(MailFathomError) as refused:
        arguments.convert_arguments(SEARCH_EMAILS.arguments, {"receivedOnOrAfter": value})
    assert refused.value.code == 51002
    assert "receivedOnOrAfter" in refused.value.message
    if str(value):
        assert str(value) not in refused.value.message.replace("2024-05-01T09:30:00Z", "")
