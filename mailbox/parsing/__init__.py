"""MIME parsing for MailFathom: pure Python, no Django models, bounded work per message.

Import from here; the submodules are internal.
"""

from mailbox.parsing.bulk import DEFAULT_BULK_LOCAL_PARTS, is_bulk, is_list_mail
from mailbox.parsing.envelope import HEADER_BLOCK_BYTES, header_block, parse_envelope
from mailbox.parsing.filenames import normalize_file_name
from mailbox.parsing.limits import ParseLimits
from mailbox.parsing.message import attachment_bytes, parse_message
from mailbox.parsing.results import Address, AttachmentInfo, BulkHeaders, ParsedMessage
from mailbox.parsing.sanitize import sanitized_html

__all__ = [
    "DEFAULT_BULK_LOCAL_PARTS",
    "HEADER_BLOCK_BYTES",
    "Address",
    "AttachmentInfo",
    "BulkHeaders",
    "ParseLimits",
    "ParsedMessage",
    "attachment_bytes",
    "header_block",
    "is_bulk",
    "is_list_mail",
    "normalize_file_name",
    "parse_envelope",
    "parse_message",
    "sanitized_html",
]
