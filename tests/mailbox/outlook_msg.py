"""Write a small Outlook .msg file (an OLE compound document of MAPI properties) for tests.

It holds what Outlook writes for a received message: the message class, subject, plain and
HTML bodies, sender, recipients, the submit time, the Internet message id, optionally the
transport headers, and attachments by value. Built with extract-msg's own OLE writer, so the
bytes are ours (no third-party sample with a licence to track) and the container is real.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from extract_msg.ole_writer import OleWriter

PT_LONG, PT_SYSTIME, PT_UNICODE, PT_BINARY = 0x0003, 0x0040, 0x001F, 0x0102
_READABLE_WRITABLE = 0x00000006
_FILETIME_EPOCH = datetime(1601, 1, 1, tzinfo=UTC)


@dataclass
class OutlookAttachment:
    name: str
    data: bytes = b""
    mime_type: str = "application/octet-stream"
    embedded: OutlookMessage | None = None  # an attached Outlook message (ATTACH_EMBEDDED_MSG)


@dataclass
class OutlookMessage:
    subject: str
    body: str
    sender_name: str = "Carol Sender"
    sender_address: str = "carol@example.org"
    to: list[tuple[str, str]] = field(default_factory=lambda: [("Alice", "alice@example.org")])
    sent: datetime = datetime(2024, 3, 5, 9, 30, tzinfo=UTC)
    message_id: str = "<outlook-1@example.org>"
    html_body: str = ""
    transport_headers: str = ""
    attachments: list[OutlookAttachment] = field(default_factory=list)


def _filetime(moment: datetime) -> int:
    return int((moment - _FILETIME_EPOCH).total_seconds() * 10_000_000)


class _Properties:
    """One storage's properties: fixed ones in its properties stream, others as substreams."""

    def __init__(self, writer: OleWriter, storage: list[str]) -> None:
        self.writer, self.storage, self.entries = writer, storage, b""

    def string(self, tag: int, value: str) -> None:
        # The stream holds no terminator; the size in the properties stream counts one.
        self._stream(tag, PT_UNICODE, value.encode("utf-16-le"), terminator=2)

    def binary(self, tag: int, value: bytes) -> None:
        self._stream(tag, PT_BINARY, value)

    def long(self, tag: int, value: int) -> None:
        self._fixed(tag, PT_LONG, struct.pack("<I", value) + b"\x00" * 4)

    def time(self, tag: int, value: datetime) -> None:
        self._fixed(tag, PT_SYSTIME, struct.pack("<Q", _filetime(value)))

    def _fixed(self, tag: int, kind: int, value: bytes) -> None:
        self.entries += struct.pack("<HHI", kind, tag, _READABLE_WRITABLE) + value

    def _stream(self, tag: int, kind: int, data: bytes, terminator: int = 0) -> None:
        self.writer.addEntry([*self.storage, f"__substg1.0_{tag:04X}{kind:04X}"], data)
        size = len(data) + terminator
        self.entries += struct.pack("<HHII", kind, tag, _READABLE_WRITABLE, size) + b"\x00" * 4

    def close(self, header: bytes) -> None:
        self.writer.addEntry([*self.storage, "__properties_version1.0"], header + self.entries)


def write_outlook_msg(path: Path, message: OutlookMessage) -> Path:
    """Write `message` as an Outlook .msg file at `path` and return the path."""
    writer = OleWriter()
    writer.addEntry(["__nameid_version1.0"], storage=True)
    for stream in ("__substg1.0_00020102", "__substg1.0_00030102", "__substg1.0_00040102"):
        writer.addEntry(["__nameid_version1.0", stream], b"")
    _write_message(writer, [], message)
    path.parent.mkdir(parents=True, exist_ok=True)
    writer.write(path)
    return path


def _write_message(writer: OleWriter, storage: list[str], message: OutlookMessage) -> None:
    root = _Properties(writer, storage)
    root.string(0x001A, "IPM.Note")
    root.string(0x0037, message.subject)
    root.string(0x1000, message.body)
    if message.html_body:
        root.binary(0x1013, message.html_body.encode("utf-8"))
    root.string(0x0C1A, message.sender_name)
    root.string(0x0C1F, message.sender_address)
    root.string(0x0C1E, "SMTP")
    root.string(0x5D01, message.sender_address)
    root.string(0x1035, message.message_id)
    root.time(0x0039, message.sent)
    root.time(0x0E06, message.sent)
    if message.transport_headers:
        root.string(0x007D, message.transport_headers)
    for n, (name, address) in enumerate(message.to):
        recipient = _Properties(writer, [*storage, f"__recip_version1.0_#{n:08X}"])
        writer.addEntry(recipient.storage, storage=True)
        recipient.string(0x3001, name)
        recipient.string(0x3003, address)
        recipient.string(0x39FE, address)
        recipient.string(0x3002, "SMTP")
        recipient.long(0x0C15, 1)  # MAPI_TO
        recipient.long(0x3000, n)
        recipient.close(b"\x00" * 8)
    for n, attachment in enumerate(message.attachments):
        part = _Properties(writer, [*storage, f"__attach_version1.0_#{n:08X}"])
        writer.addEntry(part.storage, storage=True)
        part.string(0x3707, attachment.name)
        part.string(0x3704, attachment.name[:12])
        part.string(0x3001, attachment.name)
        if attachment.embedded is not None:
            inner = [*part.storage, "__substg1.0_3701000D"]
            writer.addEntry(inner, storage=True)
            _write_message(writer, inner, attachment.embedded)
            part.long(0x3705, 5)  # ATTACH_EMBEDDED_MSG
        else:
            part.string(0x370E, attachment.mime_type)
            part.binary(0x3701, attachment.data)
            part.long(0x3705, 1)  # ATTACH_BY_VALUE
        part.long(0x0E21, n)
        part.close(b"\x00" * 8)
    counts = len(message.to), len(message.attachments)
    header = b"\x00" * 8 + struct.pack("<IIII", counts[0], counts[1], counts[0], counts[1])
    # The top-level header has 8 reserved bytes more than an embedded message's.
    root.close(header + (b"\x00" * 8 if not storage else b""))
