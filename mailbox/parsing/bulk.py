"""Tell bulk and automatic mail from mail a person wrote."""

from __future__ import annotations

from mailbox.parsing.results import ParsedMessage

DEFAULT_BULK_LOCAL_PARTS = frozenset(
    {
        "noreply", "no-reply", "donotreply", "do-not-reply", "mailer-daemon", "postmaster",
        "newsletter", "newsletters", "notifications", "notification", "bounce", "bounces",
    }
)  # fmt: skip
_BULK_PRECEDENCE = frozenset({"bulk", "list", "junk"})


def _token(value: str) -> str:
    """Return a header value's main token: lower-cased, parameters after ';' and comments dropped."""
    return value.split(";", 1)[0].split("(", 1)[0].strip().lower()


def is_list_mail(message: ParsedMessage) -> bool:
    """Return whether a message came through a mailing list (List-Id, or Precedence: list).

    The headers are the sender's claim, so nothing that must withstand a hostile sender may
    rest on it alone. Automatic mail (Auto-Submitted, a no-reply sender) and mail judged only
    by List-Unsubscribe are not list mail: transactional mail such as an invoice carries those.
    """
    headers = message.bulk_headers
    return headers.has_list_id or _token(headers.precedence) == "list"


def is_bulk(message: ParsedMessage, sender_local_parts: frozenset[str] = DEFAULT_BULK_LOCAL_PARTS) -> bool:
    """Return whether a message is bulk or automatic.

    Bulk when Auto-Submitted has any value but "no"; List-Id or List-Unsubscribe is present;
    Precedence is bulk, list or junk; or the sender's whole local part is in
    sender_local_parts (case-insensitive; "newsletter-team" and "reply" do not match).
    Edge cases: an empty Auto-Submitted value is ignored; a sender without a usable
    address only counts through the headers.
    """
    headers = message.bulk_headers
    auto_submitted = _token(headers.auto_submitted)
    if auto_submitted and auto_submitted != "no":
        return True
    if headers.has_list_id or headers.has_list_unsubscribe:
        return True
    if _token(headers.precedence) in _BULK_PRECEDENCE:
        return True
    if message.sender is None or "@" not in message.sender.address:
        return False
    local_part = message.sender.address.rpartition("@")[0].strip('"').lower()
    return local_part in {part.lower() for part in sender_local_parts}
