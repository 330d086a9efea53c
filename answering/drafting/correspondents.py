"""Who a draft's mail was exchanged with: parties, the account's own side, and who the reply goes to.

A party is a registrable domain (Public Suffix List), except free-mail addresses, each a
party of its own. Two checks of the answered mail: reply_to_mismatch (the reply would go to
another party than the sender, or to a look-alike domain) and thread_hijack (a sender
claiming a conversation of this mailbox its party took no part in; mailing lists are left
out). Reasons name parties by domain or display name, never a fact; logs carry codes only.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from confusable_homoglyphs import confusables
from django.db import connection
from django.db.models import Q
from publicsuffixlist import PublicSuffixList
from rapidfuzz.distance import Levenshtein

from accounts.models import MailAccount
from answering.drafting.compose import reply_recipients
from mailbox.models import Direction, Email, Participant
from mailbox.services.raw_sql import Params, column, table

FREE_MAIL = frozenset(
    """
    gmail.com googlemail.com outlook.com hotmail.com hotmail.de hotmail.co.uk live.com msn.com
    yahoo.com yahoo.de yahoo.co.uk yahoo.fr ymail.com icloud.com me.com mac.com aol.com
    gmx.de gmx.net gmx.at gmx.ch gmx.com web.de t-online.de freenet.de posteo.de mailbox.org
    proton.me protonmail.com protonmail.ch tutanota.com tuta.io zoho.com yandex.com yandex.ru
    mail.ru orange.fr free.fr laposte.net wanadoo.fr libero.it virgilio.it bluewin.ch
    """.split()
)
ADDRESSED = ("to", "cc", "bcc")  # participant roles a message was sent to
MAX_OWN_SENDERS = 50  # distinct outgoing senders read to learn the account's own side


@functools.cache
def _suffixes() -> PublicSuffixList:
    return PublicSuffixList()


def domain_of(address: str) -> str:
    return address.rpartition("@")[2].strip().strip(".").lower() if "@" in address else ""


def organisation_of(domain: str) -> str:
    return _suffixes().privatesuffix(domain) or domain


def party_of(address: str) -> str:
    """The organisation an address speaks for (see the module docstring); "" for no address."""
    domain = domain_of(address)
    if not domain:
        return ""
    if domain in FREE_MAIL or organisation_of(domain) in FREE_MAIL:
        return address.strip().lower()
    return organisation_of(domain)


def own_parties(account: MailAccount) -> frozenset[str]:
    """The account's own side: its user name's party and its outgoing senders' parties."""
    senders = (
        Email.objects.filter(account=account, direction=Direction.OUTGOING)
        .exclude(sender_address="")
        .values_list("sender_address", flat=True)
        .distinct()[:MAX_OWN_SENDERS]
    )
    return frozenset(party for party in map(party_of, [account.username, *senders]) if party)


@dataclass(frozen=True)
class Correspondence:
    """One message's external parties and the name a reviewer knows them by."""

    parties: frozenset[str]
    label: str


def correspondence_of(emails: Iterable[Email], own: frozenset[str]) -> dict[str, Correspondence]:
    """email id -> its parties outside `own` (sender, To, Cc, Reply-To) and a label for them."""
    rows = list(emails)
    people: dict[str, list[tuple[str, str]]] = {str(row.pk): [] for row in rows}
    for email_id, address, name in Participant.objects.filter(email__in=[row.pk for row in rows]).values_list(
        "email_id", "address", "display_name"
    ):
        people[str(email_id)].append((address, name))
    found = {}
    for row in rows:
        everyone = [(row.sender_address, row.sender_name), *people[str(row.pk)]]
        external = [(party_of(address), name) for address, name in everyone if party_of(address) not in own]
        parties = frozenset(party for party, _ in external if party)
        label = next((name for party, name in external if party and name), "") or ", ".join(sorted(parties))
        found[str(row.pk)] = Correspondence(parties, label)
    return found


def recipient_parties(email: Email, own: frozenset[str]) -> frozenset[str]:
    """The parties the reply to `email` goes to (its Reply-To, else its sender), own side left out."""
    return frozenset(
        party
        for party in (party_of(address.addr_spec) for address in reply_recipients(email))
        if party not in own
    )


# --- checks of the answered mail ------------------------------------------------------------


def known_domains(account: MailAccount, leave_out: Email) -> frozenset[str]:
    """Organisation domains of every correspondent of the account's mail but `leave_out`."""
    email, participant = table(Email), table(Participant)
    sender, account_col = column(Email, "sender_address"), column(Email, "account")
    bind = Params()
    sql = f"""
        SELECT DISTINCT lower(split_part(e.{sender}, '@', 2)) FROM {email} e
        WHERE e.{account_col} = {bind(account.pk)} AND e.id <> {bind(leave_out.pk)}
          AND e.{sender} LIKE '%%@%%'
        UNION
        SELECT DISTINCT lower(split_part(p.{column(Participant, "address")}, '@', 2))
        FROM {participant} p JOIN {email} e ON e.id = p.{column(Participant, "email")}
        WHERE e.{account_col} = {bind(account.pk)} AND e.id <> {bind(leave_out.pk)}
          AND p.{column(Participant, "address")} LIKE '%%@%%'
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, bind.values)
        return frozenset(organisation_of(domain) for (domain,) in cursor.fetchall() if domain)


def _skeleton(domain: str) -> str:
    """The domain as it looks: confusable characters mapped to Latin ones, common ASCII tricks undone."""
    text = unicodedata.normalize("NFKC", domain).lower()
    found = confusables.is_confusable(text, greedy=True, preferred_aliases=["latin"]) or []
    for item in found:
        latin = [h["c"] for h in item["homoglyphs"] if h["n"].startswith("LATIN")]
        if latin:
            text = text.replace(item["character"], latin[0].lower())
    return text.replace("rn", "m").replace("vv", "w").replace("0", "o").replace("1", "l")


def looks_like(domain: str, known: Iterable[str]) -> str:
    """The known domain `domain` imitates without being it, else ""."""
    if domain in known:
        return ""
    skeleton, name = _skeleton(domain), domain.split(".")[0]
    for other in sorted(known):
        if _skeleton(other) == skeleton:
            return other
        allowed = 1 if len(other) <= 8 else 2
        if Levenshtein.distance(domain, other) <= allowed:
            return other
        if other.split(".")[0] == name and len(name) >= 4:  # the same name under another suffix
            return other
    return ""


def reply_to_reasons(email: Email, own: frozenset[str]) -> list[str]:
    """reply_to_mismatch reasons for the reply to `email` (see the module docstring)."""
    reasons = []
    sender = party_of(email.sender_address)
    recipients = [address.addr_spec for address in reply_recipients(email)]
    known = known_domains(email.account, email)
    for address in recipients:
        party = party_of(address)
        if party in own:
            continue
        domain = organisation_of(domain_of(address))
        if sender and party != sender:
            new = " a domain this mailbox has never corresponded with," if domain not in known else ""
            reasons.append(
                f"reply_to_mismatch: The reply would go to {domain},{new} named by the mail's Reply-To, "
                f"not to its sender at {organisation_of(domain_of(email.sender_address))}."
            )
            continue
        imitated = looks_like(domain, known)
        if imitated:
            reasons.append(
                f"reply_to_mismatch: The reply would go to {domain}, which looks like {imitated}, a "
                "domain this mailbox corresponds with, but is not it."
            )
    return reasons


def earlier_in_thread(email: Email) -> list[Email]:
    """The conversation `email` claims to follow, oldest first: what it names (In-Reply-To,
    References) and the rest of its stored thread, received before it; [] when it names nothing.

    The whole thread, not only the named messages: an intruder who first plants a message of
    his own in the thread and then names only that one still answers the same conversation.
    """
    claimed = {value for value in (email.in_reply_to, *email.references) if value}
    if not claimed:
        return []
    named = Q(message_id__in=claimed)
    if email.thread_id is not None:
        named |= Q(thread_id=email.thread_id)
    return list(
        Email.objects.filter(named, account_id=email.account_id, received_at__lt=email.received_at)
        .exclude(pk=email.pk)
        .order_by("received_at", "id")
        .only("id", "sender_address", "sender_name", "is_list_mail", "received_at")
    )


def held_conversation(email: Email, own: frozenset[str]) -> list[Email]:
    """The conversation `email` claims to follow, when thread_hijack can judge it; else [].

    Its earlier private messages (list posts left out), provided the firm's own side sent
    one or was addressed in one (see the module docstring).
    """
    earlier = [row for row in earlier_in_thread(email) if not row.is_list_mail]
    if not earlier:
        return []  # no claim, a conversation this mailbox never held, or one held on a list
    if not _firm_took_part(earlier, own):
        # A thread the firm only overheard (a copy forwarded to it) is open to whoever joins
        # it; a hijack takes over a conversation the firm itself was part of.
        return []
    return earlier


def _firm_took_part(earlier: list[Email], own: frozenset[str]) -> bool:
    """Whether the firm's own side sent one of `earlier` or was addressed by name in one."""
    if any(party_of(row.sender_address) in own for row in earlier):
        return True
    addresses = Participant.objects.filter(email__in=[row.pk for row in earlier]).values_list(
        "address", flat=True
    )
    return any(party_of(address) in own for address in addresses)


def thread_hijack_reasons(email: Email, own: frozenset[str]) -> list[str]:
    """thread_hijack when `email` claims a stored conversation its sender took no part in."""
    sender = party_of(email.sender_address)
    if not sender or sender in own:
        return []
    earlier = held_conversation(email, own)
    if not earlier:
        return []
    if _admitted(earlier, sender):
        return []
    held = correspondence_of([row for row in earlier if party_of(row.sender_address) != sender], own)
    labels = ", ".join(sorted({found.label for found in held.values() if found.label})) or "others"
    return [
        f"thread_hijack: The mail answers a conversation held with {labels}, but its sender at "
        f"{organisation_of(domain_of(email.sender_address))} took no part in it."
    ]


def _admitted(earlier: list[Email], sender: str) -> bool:
    """Whether `sender`'s party belongs in the conversation `earlier` (oldest first).

    It does when it began the conversation, or when someone else in it wrote to it (To,
    Cc, or the firm's own Bcc), or may have: a message of someone else's that names no
    recipient (sent to undisclosed recipients) went to people nobody recorded. Its own
    messages vouch for nothing: a stranger who wrote into the thread before, with or
    without recipients, is still a stranger to it.
    """
    if party_of(earlier[0].sender_address) == sender:
        return True
    by_others = [row.pk for row in earlier if party_of(row.sender_address) != sender]
    addressed = Participant.objects.filter(email__in=by_others, role__in=ADDRESSED).values_list(
        "email_id", "address"
    )
    if {pk for pk, _ in addressed} != set(by_others):
        return True  # a message went to recipients nobody recorded: the sender may have been one
    return any(party_of(address) == sender for _, address in addressed)
