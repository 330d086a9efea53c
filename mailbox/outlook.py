"""Turn an Outlook .msg file (an OLE compound document of MAPI properties) into a MIME message.

extract-msg reads the container; the MIME message is written here, so what is kept is
decided in one place and the bytes are the same on every import (the UID derives from them,
so importing twice adds nothing). Kept: the saved transport headers (else those rebuilt from
MAPI), the plain and HTML bodies, attachments (nested messages at most MAX_NESTING deep).
Lost: the original MIME structure, the RTF body, attachments by reference and MAPI state.
Every converted message carries `X-MailFathom-Converted-From: outlook-msg`.
"""

from __future__ import annotations

import hashlib
import logging
import re
from email import policy
from email.message import EmailMessage, MIMEPart
from email.utils import format_datetime

import extract_msg
import olefile
from extract_msg.enums import DeencapType
from extract_msg.msg_classes import MessageBase

OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
MAX_NESTING = 5
CONVERTED_HEADER = "X-MailFathom-Converted-From"
# Fields of the saved transport headers that describe the original body, not the message.
_CONTENT_FIELDS = frozenset(
    {"content-type", "content-transfer-encoding", "mime-version", "content-disposition", "content-id"}
)
_FIELD_NAME = re.compile(rb"^([!-9;-~]+):")
_UNSAFE_IN_HEADER = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_MEDIA_TYPE = re.compile(r"^[a-z0-9][a-z0-9!#$&^_.+-]*/[a-z0-9][a-z0-9!#$&^_.+-]*$")
_POLICY = policy.SMTP.clone(max_line_length=998)

# The libraries log per stream and attachment (names included, at INFO to ERROR): nothing
# of a message belongs in our log, so they are silenced; a failure is an OutlookError.
for _logger in ("extract_msg", "olefile", "RTFDE"):
    logging.getLogger(_logger).setLevel(logging.CRITICAL + 1)


DAMAGED = "damaged Outlook file"
OFFICE = "Office document (not mail)"
OUTLOOK_ITEM = "Outlook item (not mail)"


class OutlookError(Exception):
    """The file is not an Outlook message MailFathom can read; `kind` says what it is."""

    def __init__(self, kind: str) -> None:
        super().__init__(f"The file was not read: {kind}.")
        self.kind = kind


def is_outlook_container(prefix: bytes) -> bool:
    """Whether `prefix` (the start of a file) is an OLE compound document."""
    return prefix.startswith(OLE_MAGIC)


def outlook_to_mime(data: bytes) -> bytes:
    """Return the Outlook .msg file `data` as a MIME message (CRLF line ends).

    Raises OutlookError for a file extract-msg cannot open, or an OLE document that holds
    no Outlook message (a Word or Excel file, a contact card).
    """
    seed = hashlib.sha256(data).hexdigest()[:24]
    try:
        msg = extract_msg.openMsg(data, strict=False, delayAttachments=False)
    except Exception as error:  # the library raises many kinds for a damaged file
        raise OutlookError(_unopened_kind(data)) from error
    try:
        if not isinstance(msg, MessageBase):
            raise OutlookError(OUTLOOK_ITEM)
        try:
            return _convert(msg, seed, depth=0).as_bytes(policy=_POLICY)
        except Exception as error:
            raise OutlookError(DAMAGED) from error
    finally:
        msg.close()


def _unopened_kind(data: bytes) -> str:
    """An OLE document without an Outlook message's properties is Word, Excel and the like."""
    try:
        with olefile.OleFileIO(data) as ole:
            return DAMAGED if ole.exists("__properties_version1.0") else OFFICE
    except Exception:
        return DAMAGED


def _convert(msg: MessageBase, seed: str, depth: int) -> EmailMessage:
    message = EmailMessage(policy=_POLICY)
    _set_headers(message, msg)
    message[CONVERTED_HEADER] = "outlook-msg"
    body = _body(msg, f"{seed}.{depth}")
    parts = [p for p in (_attachment(a, seed, depth, n) for n, a in enumerate(msg.attachments)) if p]
    if not parts:
        _adopt(message, body)
        return message
    message["MIME-Version"] = "1.0"
    message.add_header("Content-Type", "multipart/mixed", boundary=f"mf-mixed-{seed}-{depth}")
    message.set_payload([body, *parts])
    return message


def _adopt(message: EmailMessage, body: MIMEPart) -> None:
    """Make `body`'s content (a text part or an alternative) the content of `message`."""
    message["MIME-Version"] = "1.0"
    message.set_payload(body.get_payload())
    for name, value in body.items():
        message[name] = value


def _body(msg: MessageBase, seed: str) -> MIMEPart:
    text = _text(msg.body)
    html = _html(msg)
    body = MIMEPart(policy=_POLICY)
    body.set_content(text, subtype="plain", charset="utf-8", cte="quoted-printable")
    if html:
        body.add_alternative(html, subtype="html", charset="utf-8", cte="quoted-printable")
        body.set_boundary(f"mf-alt-{seed}")
    return body


def _text(value: object) -> str:
    text = value if isinstance(value, str) else ""
    text = text.replace("\x00", "").replace("\r\n", "\n").replace("\r", "\n")
    return text if text.endswith("\n") or not text else text + "\n"


def _html(msg: MessageBase) -> str:
    """The HTML body Outlook kept, or de-encapsulated from its RTF body; never one made up.

    (extract-msg's own htmlBody writes one from the plain text when there is none.)
    """
    raw: bytes | str | None
    try:
        raw = msg.getStream("__substg1.0_10130102")
        if raw is None and msg.rtfBody:
            raw = msg.deencapsulateBody(msg.rtfBody, DeencapType.HTML)
    except Exception:
        return ""
    if not raw:
        return ""
    if isinstance(raw, str):
        return _text(raw)
    try:
        return _text(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return _text(raw.decode("cp1252", "replace"))  # Outlook's usual code page otherwise


def _set_headers(message: EmailMessage, msg: MessageBase) -> None:
    saved = msg.headerText or ""
    if saved.startswith("Microsoft Mail Internet Headers Version 2.0"):
        saved = saved[len("Microsoft Mail Internet Headers Version 2.0") :].lstrip()
    fields = _saved_fields(saved)
    if any(name.lower() in ("from", "date", "message-id") for name, _ in fields):
        for name, value in fields:
            message[name] = value
        return
    _set(message, "From", _clean(msg.sender))
    _set(message, "To", _clean(msg.to))
    _set(message, "Cc", _clean(msg.cc))
    if msg.date is not None:
        _set(message, "Date", format_datetime(msg.date))
    _set(message, "Subject", _clean(msg.subject))
    _set(message, "Message-ID", _clean(msg.messageId))
    _set(message, "In-Reply-To", _clean(getattr(msg, "inReplyTo", None)))


def _saved_fields(saved: str) -> list[tuple[str, str]]:
    """The saved transport header fields, unfolded, less the MIME content fields."""
    fields: list[tuple[str, str]] = []
    for line in saved.replace("\r\n", "\n").split("\n"):
        if line[:1] in (" ", "\t") and fields:
            fields[-1] = (fields[-1][0], fields[-1][1] + " " + line.strip())
        elif not line.strip():
            break
        elif _FIELD_NAME.match(line.encode("utf-8", "replace")):
            name, _, value = line.partition(":")
            fields.append((name, value.strip()))
    return [(n, _clean(v)) for n, v in fields if n.lower() not in _CONTENT_FIELDS]


def _set(message: EmailMessage, name: str, value: str) -> None:
    if not value:
        return
    try:
        message[name] = value
    except (ValueError, TypeError, IndexError):
        message[name] = value.encode("ascii", "replace").decode()  # an unparsable address


def _clean(value: object) -> str:
    """A header value on one line, without control characters; "" for nothing."""
    if not isinstance(value, str):
        return ""
    return re.sub(r" {2,}", " ", _UNSAFE_IN_HEADER.sub(" ", value.replace("\t", " "))).strip()[:16000]


def _attachment(att: object, seed: str, depth: int, n: int) -> MIMEPart | None:
    """The MIME part of one attachment; None for what a MIME message cannot hold."""
    data_type = getattr(att, "dataType", None)
    if data_type is None:
        return None  # by reference, an OLE object, or unreadable: nothing to attach
    data = att.data  # type: ignore[attr-defined]  # att is an extract_msg attachment, passed here as object
    part = MIMEPart(policy=_POLICY)
    if isinstance(data, MessageBase):
        if depth >= MAX_NESTING:
            return None
        part.set_content(_convert(data, seed, depth + 1))  # message/rfc822
        return part
    if not isinstance(data, bytes):
        return None
    media = (getattr(att, "mimetype", None) or "application/octet-stream").strip().lower()
    if not _MEDIA_TYPE.match(media):
        media = "application/octet-stream"
    maintype, subtype = media.split("/", 1)
    name = _clean(_name(att)) or f"attachment-{n + 1}"
    # base64 for every attachment, text included: its bytes come back exactly as Outlook held them.
    part.set_content(data, maintype=maintype, subtype=subtype, cte="base64")
    inline = bool(getattr(att, "hidden", False))
    part.add_header("Content-Disposition", "inline" if inline else "attachment", filename=name)
    content_id = _clean(getattr(att, "contentId", None))
    if content_id:
        part["Content-ID"] = content_id if content_id.startswith("<") else f"<{content_id}>"
    return part


def _name(att: object) -> str:
    for attribute in ("longFilename", "name", "shortFilename"):
        value = getattr(att, attribute, None)
        if isinstance(value, str) and value.strip("\x00 "):
            return value
    return ""
