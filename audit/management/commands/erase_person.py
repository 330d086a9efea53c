"""erase_person: answer a data-subject request from the command line (docs/operations/erasure.md).

Preview by default; --execute removes, after a typed confirmation unless --yes. Prints
counts only: never an address, a subject or any other content.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time

from django.core.management.base import BaseCommand, CommandError, CommandParser

from mailbox.services.erasure import (
    KINDS,
    AccountCounts,
    erasure_request,
    execute_erasure,
    preview_erasure,
)
from mailfathom.errors import MailFathomError

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

    def handle(self, *args: object, **options: object) -> None:
        try:
            request = erasure_request(
                options["address"],  # type: ignore[arg-type]
                account_ids=options["account"],  # type: ignore[arg-type]
                received_on_or_after=_day(str(options["from_day"])) if options["from_day"] else None,
                received_before=_day(str(options["before_day"])) if options["before_day"] else None,
            )
            preview = preview_erasure(request)
        except MailFathomError as error:
            raise CommandError(str(error)) from error
        self._table("Would erase" if not options["execute"] else "Matched", preview.accounts)
        if not options["execute"]:
            self.stdout.write("Preview only: nothing was changed. Run again with --execute to erase.")
            return
        if preview.total("emails") == 0:
            self.stdout.write("Nothing to erase.")
            return
        if not options["yes"]:
            answer = input(f'Type "{CONFIRMATION}" to erase these emails for good: ')
            if answer.strip() != CONFIRMATION:
                raise CommandError("Not confirmed: nothing was changed.")
        result = execute_erasure(request)
        self._table("Erased", result.accounts)
        self.stdout.write(
            f"{result.suppressions} suppressions recorded: synchronization and import will not store "
            "these messages again. Remove them from the mail server too (docs/operations/erasure.md)."
        )

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
