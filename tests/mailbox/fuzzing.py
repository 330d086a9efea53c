"""Seed messages and the mutations the MIME fuzzers apply to them, deterministic per seed.

Used by tests/mailbox/test_fuzz_mime.py (small seeds built here, a fixed seed, a bounded
count) and by bench/fuzz.py (the shared corpus as seeds, ten thousand and more). Each
mutation takes the message's bytes and a random.Random and returns new bytes: byte flips,
truncation, MIME boundary damage, header damage, and splices of two messages.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator, Sequence
from email.message import EmailMessage
from typing import Any

from mailbox.parsing import parse_message

Mutation = Callable[[bytes, random.Random], bytes]

_BOUNDARY = re.compile(rb'boundary\s*=\s*"?([^";\r\n]+)"?', re.IGNORECASE)
_HEADER_END = re.compile(rb"\r?\n\r?\n")
_PDF = b"%PDF-1.4\n" + bytes(range(256)) * 2
_PNG = b"\x89PNG\r\n\x1a\n" + bytes(120)


def _base(subject: str = "Quarterly invoice") -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = "Alice Example <alice@example.org>"
    msg["To"] = "Bob <bob@example.net>, carol@example.net"
    msg["Cc"] = '"Dee, Accounts" <dee@example.com>'
    msg["Subject"] = subject
    msg["Date"] = "Tue, 03 Jun 2025 12:30:00 +0200"
    msg["Message-ID"] = "<seed.1@example.org>"
    msg["References"] = "<a@example.org> <b@example.org>"
    msg["In-Reply-To"] = "<b@example.org>"
    return msg


def seed_messages() -> list[bytes]:
    """Small messages covering the shapes the parser walks: alternatives, inline parts, files."""
    plain = _base()
    plain.set_content("The insurer agreed to pay 2,300 euros.\nRegards, Alice\n")

    alternative = _base("Réunion à 10h — ordre du jour")
    alternative.set_content("plain version of the agenda\n", charset="latin-1", cte="quoted-printable")
    alternative.add_alternative(
        '<p>see <img src="cid:logo@example.org"> the <b>agenda</b></p>', subtype="html"
    )
    alternative.get_payload()[1].add_related(_PNG, "image", "png", cid="<logo@example.org>")

    attached = _base("Contract attached")
    attached.set_content("Please find the contract attached.\n", cte="base64")
    attached.add_attachment(_PDF, "application", "pdf", filename="contract ünïcode.pdf")

    forwarded = _base("Fwd: lunch")
    forwarded.set_content("See below.\n")
    inner = _base("lunch")
    inner.set_content("Shall we meet at noon?\n")
    forwarded.add_attachment(inner)

    signed = (
        b"From: a@example.org\r\nTo: b@example.org\r\nSubject: =?utf-8?B?w6TDtsO8?= signed\r\n"
        b'MIME-Version: 1.0\r\nContent-Type: multipart/signed; protocol="application/pgp-signature";'
        b' boundary="sig"\r\n\r\n--sig\r\nContent-Type: text/plain\r\n\r\nsigned text\r\n'
        b"--sig\r\nContent-Type: application/pgp-signature\r\n\r\n-----BEGIN PGP SIGNATURE-----\r\n"
        b"--sig--\r\n"
    )
    return [m.as_bytes() for m in (plain, alternative, attached, forwarded)] + [signed]


# --- mutations ------------------------------------------------------------------------------


def flip_bytes(raw: bytes, rng: random.Random) -> bytes:
    data = bytearray(raw)
    for _ in range(rng.randint(1, max(1, len(data) // 50))):
        if data:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    return bytes(data)


def set_bytes(raw: bytes, rng: random.Random) -> bytes:
    """Overwrite a few bytes with the ones parsers care about."""
    data = bytearray(raw)
    special = b'\x00\r\n:;="<>\\-=?\xff\x80 \t'
    for _ in range(rng.randint(1, 8)):
        if data:
            data[rng.randrange(len(data))] = rng.choice(special)
    return bytes(data)


def truncate(raw: bytes, rng: random.Random) -> bytes:
    return raw[: rng.randrange(len(raw) + 1)]


def damage_boundary(raw: bytes, rng: random.Random) -> bytes:
    found = _BOUNDARY.search(raw)
    if found is None:
        return set_bytes(raw, rng)
    boundary = found.group(1)
    choice = rng.randrange(6)
    if choice == 0:  # the closing delimiter disappears
        return raw.replace(b"--" + boundary + b"--", b"")
    if choice == 1:  # the declared boundary no longer matches the body's
        return raw[: found.start(1)] + boundary[:-1] + raw[found.end(1) :]
    if choice == 2:  # an empty or over-long boundary parameter
        replacement = rng.choice([b"", b"x" * 5000, b'"', b"--"])
        return raw[: found.start(1)] + replacement + raw[found.end(1) :]
    if choice == 3:  # delimiters repeated many times
        line = b"\r\n--" + boundary + b"\r\n"
        cut = rng.randrange(len(raw) + 1)
        return raw[:cut] + line * rng.randint(2, 300) + raw[cut:]
    if choice == 4:  # a delimiter inside a header block or a payload
        cut = rng.randrange(len(raw) + 1)
        return raw[:cut] + b"--" + boundary + rng.choice([b"", b"--", b"\r\n\r\n"]) + raw[cut:]
    return raw.replace(boundary, boundary + b"\x00", rng.randint(1, 3))


def damage_headers(raw: bytes, rng: random.Random) -> bytes:
    end = _HEADER_END.search(raw)
    head, rest = (raw[: end.start()], raw[end.start() :]) if end else (raw, b"")
    lines = head.split(b"\n")
    choice = rng.randrange(9)
    if choice == 0 and lines:  # a header repeated
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(lines))
    elif choice == 1 and lines:  # a header lost
        lines.pop(rng.randrange(len(lines)))
    elif choice == 2:  # a very long header, folded or not
        fold = rng.choice([b"", b"\r\n "])
        lines.insert(0, b"Subject: " + (b"word " + fold) * rng.randint(100, 3000))
    elif choice == 3:  # broken encoded words
        word = rng.choice([b"=?utf-8?B?w6", b"=?unknown-8?Q?=FF=FE?=", b"=?utf-8?q??=", b"=?x?b?====?="])
        lines.insert(0, b"Subject: " + word * rng.randint(1, 50))
    elif choice == 4:  # a hostile content type or encoding
        header = rng.choice(
            [
                b"Content-Type: multipart/mixed",
                b"Content-Type: text/plain; charset=utf-7",
                b"Content-Type: text/plain; charset=\x00bogus",
                b"Content-Type: message/rfc822",
                b"Content-Transfer-Encoding: base64",
                b"Content-Transfer-Encoding: x-uuencode",
                b"Content-Type: multipart/alternative; boundary=" + b"b" * 200,
            ]
        )
        lines.insert(rng.randrange(len(lines) + 1), header)
    elif choice == 5:  # addresses the address parser must survive
        lines.insert(
            0,
            rng.choice([b"To: ", b"From: ", b"Cc: ", b"Reply-To: "])
            + rng.choice([b"<<@>>", b'"unterminated <a@b', b"a@b, " * 600, b'"\\" <\x00@x>', b"@:;,"]),
        )
    elif choice == 6 and lines:  # a header without its colon, or a continuation first
        lines[rng.randrange(len(lines))] = rng.choice([b" continuation first", b"NoColonHere", b":"])
    elif choice == 7:  # line endings mixed
        return head.replace(b"\r\n", rng.choice([b"\n", b"\r", b"\r\r\n"])) + rest
    else:  # the blank line between head and body lost
        return head + rest.lstrip(b"\r\n")
    return b"\n".join(lines) + rest


def nest(raw: bytes, rng: random.Random) -> bytes:
    """The message wrapped in many multipart or message/rfc822 layers."""
    depth = rng.randint(2, 120)
    wrapper = rng.choice(
        [
            b'Content-Type: multipart/mixed; boundary="n"\r\n\r\n--n\r\n',
            b"Content-Type: message/rfc822\r\n\r\n",
        ]
    )
    return wrapper * depth + raw


def splice(raw: bytes, rng: random.Random, others: Sequence[bytes] = ()) -> bytes:
    other = rng.choice(others) if others else raw
    return raw[: rng.randrange(len(raw) + 1)] + other[rng.randrange(len(other) + 1) :]


MUTATIONS: tuple[Mutation, ...] = (
    flip_bytes,
    set_bytes,
    truncate,
    damage_boundary,
    damage_headers,
    nest,
    splice,
)


def mutated(seeds: Sequence[bytes], count: int, seed: int) -> Iterator[tuple[str, bytes]]:
    """`count` mutants of `seeds`, the same for the same seed: (mutation names, bytes)."""
    rng = random.Random(seed)
    for _ in range(count):
        raw = rng.choice(seeds)
        names = []
        for _step in range(rng.randint(1, 3)):
            mutation = rng.choice(MUTATIONS)
            names.append(mutation.__name__)
            raw = splice(raw, rng, seeds) if mutation is splice else mutation(raw, rng)
        yield "+".join(names), raw


# --- store + read back ----------------------------------------------------------------------


def _mailbox(address: Any) -> tuple[str, str | None]:
    return address.address[:320], address.display_name[:998] or None


def read_back_mismatches(entry: Any, raw: bytes, limits: Any) -> list[str]:
    """Where get_email_content's entry for stored `raw` differs from what the parser produced.

    Names fields only, never their values (the bench prints these for corpus mail).
    Sensitive-content scanning must be off: it rewrites text on purpose.
    """
    if entry.failure is not None:
        return [f"failure {entry.failure.code}"]
    parsed = parse_message(raw)
    headers, wrong = entry.content.headers, []
    expected = {
        "subject": parsed.subject,
        "messageId": parsed.message_id[:998] or None,
        "inReplyTo": parsed.in_reply_to[:998] or None,
        "references": [reference[:998] for reference in parsed.references],
        "sentAt": parsed.sent_at,
    }
    got = {
        "subject": headers.subject,
        "messageId": headers.message_id,
        "inReplyTo": headers.in_reply_to,
        "references": headers.references,
        "sentAt": headers.sent_at,
    }
    wrong += [name for name in expected if expected[name] != got[name]]
    sender = (headers.from_.address, headers.from_.display_name) if headers.from_ else None
    wanted = _mailbox(parsed.sender) if parsed.sender else ("", None)
    if sender != (None if wanted == ("", None) else wanted):
        wrong.append("from")
    for role in ("to", "cc", "bcc", "reply_to"):
        if [(m.address, m.display_name) for m in getattr(headers, role)] != [
            _mailbox(a) for a in getattr(parsed, role)
        ]:
            wrong.append(role)
    body = entry.content.body.plain_text
    text = "" if parsed.encrypted else parse_message(raw, limits).text_body
    if body.truncated_by == "none" and body.text != text:
        wrong.append("plainText")
    elif body.truncated_by != "none" and not text.startswith(body.text):
        wrong.append("plainText (cut)")
    return wrong
