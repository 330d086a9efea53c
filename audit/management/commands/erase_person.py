"""erase_person: answer a data-subject request from the command line (docs/operations/erasure.md).

Preview by default; --execute removes, after a typed confirmation unless --yes. Every run
is recorded as an erasure request (audit.services.erasure) and prints its id; the record
and the output hold counts and keyed hashes only: never an address, a subject or any other
content. The command lives in the audit app because it records the act, and the audit app
stands above the mailbox app.
"""

from __future__ import annotations

import getpass
from datetime import UTC, date, datetime, time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.erasure_models import ErasureRequesterKind
from audit.services.erasure import (
    Requester,
    abandon_erasure_request,
    execute_erasure_request,
    request_erasure,
)
from mailbox.services.erasure import KINDS, AccountCounts
from mailfathom.core.errors import MailFathomError

CONFIRMATION = "erase"


def _day(text: str) -> datetime:
    """A YYYY-MM-DD day as its first instant in UTC."""
    try:
        return datetime.combine(date.fromisoformat(text), time.min, tzinfo=UTC)
    except ValueError as error:
        raise CommandError("--from and --before take a day written YYYY-MM-DD.") from error


class Command(BaseCommand):
    help = "Preview or erase every stored email a person sent or received (a data-subject request)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--address", action="append", required=True, help="An address of the person (repeatable)."
        )
        parser.add_argument(
            "--account", action="append", default=[], help="Only this account identifier (repeatable)."
        )
        parser.add_argument("--from", dest="from_day", help="Only mail received on or after this day (UTC).")
        parser.add_argument("--before", dest="before_day", help="Only mail received before this day (UTC).")
        parser.add_argument("--execute", action="store_true", help="Erase; without it, only count.")
        parser.add_argument("--yes", action="store_true", help="Do not ask for confirmation.")

    def handle(self, *args: object, **options: Any) -> None:
        requester = Requester(name=_os_user(), kind=ErasureRequesterKind.COMMAND)
        addresses: list[str] = options["address"]
        try:
            requested = request_erasure(
                addresses,
                account_ids=options["account"],
                received_on_or_after=_day(str(options["from_day"])) if options["from_day"] else None,
                received_before=_day(str(options["before_day"])) if options["before_day"] else None,
                requester=requester,
            )
        except MailFathomError as error:
            raise CommandError(str(error)) from error
        self.stdout.write(f"Erasure request {requested.request_id} recorded.")
        self._table("Would erase" if not options["execute"] else "Matched", requested.accounts)
        if not options["execute"]:
            self.stdout.write("Preview only: nothing was changed. Run again with --execute to erase.")
            return
        if requested.total("emails") == 0:
            abandon_erasure_request(requested.request_id)
            self.stdout.write("Nothing to erase.")
            return
        if not options["yes"]:
            answer = input(f'Type "{CONFIRMATION}" to erase these emails for good: ')
            if answer.strip() != CONFIRMATION:
                abandon_erasure_request(requested.request_id)
                raise CommandError("Not confirmed: nothing was changed.")
        try:
            statement = execute_erasure_request(requested.request_id, addresses, requester=requester)
        except MailFathomError as error:
            raise CommandError(str(error)) from error
        self._table("Erased", statement.accounts)
        self.stdout.write(
            f"{statement.total('emails')} suppressions recorded: synchronization and import will not store "
            "these messages again. Remove them from the mail server too (docs/operations/erasure.md)."
        )
        self.stdout.write(f"Statement of erasure request {statement.request_id}:")
        for sentence in statement.cannot_erase:
            self.stdout.write(f"  {sentence}")

    def _table(self, title: str, accounts: tuple[AccountCounts, ...]) -> None:
        self.stdout.write(f"{title}:")
        if not accounts:
            self.stdout.write("  no stored email matches.")
        for counts in accounts:
            parts = ", ".join(f"{getattr(counts, kind)} {kind.replace('_', ' ')}" for kind in KINDS)
            self.stdout.write(f"  account {counts.account_id}: {parts}")
        if len(accounts) > 1:
            totals = ", ".join(
                f"{sum(getattr(c, kind) for c in accounts)} {kind.replace('_', ' ')}" for kind in KINDS
            )
            self.stdout.write(f"  total: {totals}")


def _os_user() -> str:
    """Who ran the command, as the operating system knows them (recorded as the requester)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown operating-system user"
