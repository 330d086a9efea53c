"""Checks a file passes before a library reads it: zip containers and their XML.

Office files are zip containers of XML. Before any library opens one, every member's
declared size is checked (each, in sum, and against its compressed size), and every XML
member is refused if it declares a DTD: no OOXML or ODF part needs one, and a DTD is how
entity expansion (billion laughs) and external entities (XXE) get in. While a library
reads, Python's zipfile never returns more than a member's declared size, so a header that
lies ends in a CRC error, not in unbounded output.
"""

from __future__ import annotations

import io
import zipfile

from mailbox.extraction.outcome import ExtractionLimits
from mailbox.extraction.sink import Encrypted, TooLarge, Unreadable

_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_DTD_MARKERS = tuple(
    marker.encode(codec)
    for marker in ("<!DOCTYPE", "<!ENTITY")
    for codec in ("utf-8", "utf-16-le", "utf-16-be")
)
_RATIO_FLOOR_BYTES = 1024 * 1024
_XML_SUFFIXES = (".xml", ".rels", ".vml")


def checked_zip(data: bytes, limits: ExtractionLimits) -> zipfile.ZipFile:
    """Open data as a zip container after checking every member's declared size and XML.

    Edge cases: an OLE file where a zip was expected is an encrypted Office document (Office
    wraps the encrypted package in OLE); a member that is too large, or compressed beyond
    the ratio bound, makes the whole file too_large; a DTD in any XML member makes it
    unreadable ("xml-dtd").
    """
    if data.startswith(_OLE_MAGIC):
        raise Encrypted("office-encrypted")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as error:
        raise Unreadable("not-a-zip") from error
    if len(members) > limits.max_zip_members:
        raise TooLarge("zip-members")
    total = 0
    for member in members:
        if member.flag_bits & 0x1:
            raise Encrypted("zip-encrypted")
        if member.file_size > limits.max_member_bytes:
            raise TooLarge("zip-member-size")
        ratio_bound = max(member.compress_size, 1) * limits.max_compression_ratio
        if member.file_size > _RATIO_FLOOR_BYTES and member.file_size > ratio_bound:
            raise TooLarge("zip-ratio")
        total += member.file_size
        if total > limits.max_unpacked_bytes:
            raise TooLarge("zip-unpacked-size")
    for member in members:
        if member.filename.lower().endswith(_XML_SUFFIXES):
            refuse_dtd(read_member(archive, member.filename))
    return archive


def read_member(archive: zipfile.ZipFile, name: str) -> bytes:
    """Read one member whole (its declared size was bounded by checked_zip)."""
    try:
        return archive.read(name)
    except (zipfile.BadZipFile, KeyError, ValueError, OSError, EOFError) as error:
        raise Unreadable("zip-member") from error
    except RuntimeError as error:  # zipfile's "password required"
        raise Encrypted("zip-encrypted") from error


def refuse_dtd(xml: bytes) -> None:
    """Refuse XML that declares a document type or an entity, in UTF-8 or UTF-16."""
    if any(marker in xml for marker in _DTD_MARKERS):
        raise Unreadable("xml-dtd")
