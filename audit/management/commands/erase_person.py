"""erase_person: answer a data-subject request from the command line (docs/operations/erasure.md).

Two runs by two people: `erase_person --as alice --address dana@example.org` records and
previews a request; `erase_person --as bob --execute <request id> --address dana@example.org`
executes it. It lives in the audit app because it records the act, and the audit app stands
above the mailbox app.
"""

from __future__ import annotations

import getpass
from datetime import UTC, date, datetime, time
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.erasure_models import ErasureRequesterKind
from audit.services.erasure import (
    ErasureStatement,
    Requester,
    erasure_statement,
    execute_erasure_request,
    request_erasure,
)
from mailbox.services.erasure import KINDS, AccountCounts
from mailfathom.core.errors import MailFathomError

CONFIRMATION = "erase"
REQUEST_PERMISSIONS = ("audit.request_erasure",)
EXECUTE_PERMISSIONS = ("audit.execute_erasure", "audit.execute_erasurerequestrecord")


def _day(text: str) -> datetime:
    """A YYYY-MM-DD day as its first instant in UTC."""
    try:
        return datetime.combine(date.fromisoformat(text), time.min, tzinfo=UTC)
    except ValueError as error:
        raise CommandError("--from and --before take a day written YYYY-MM-DD.") from error


class Command(BaseCommand):
    help = (
        "Request (and preview) the erasure of every stored email a person sent or received, or, "
        "as another person, execute a recorded request (a data-subject request)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--as",
            dest="as_user",
            required=True,
            metavar="USER",
            help="The Django user this run acts for; must hold the step's permission.",
        )
        parser.add_argument(
            "--address", action="append", required=True, help="An address of the person (repeatable)."
        )
        parser.add_argument(
            "--account", action="append", default=[], help="Only this account identifier (repeatable)."
        )
        parser.add_argument("--from", dest="from_day", help="Only mail received on or after this day (UTC).")
        parser.add_argument("--before", dest="before_day", help="Only mail received before this day (UTC).")
        parser.add_argument(
            "--accounts-only",
            action="store_true",
            help="Suppress the erased mail only in the accounts it is erased from "
            "(default: in every account of the deployment).",
        )
        parser.add_argument(
            "--execute",
            metavar="REQUEST_ID",
            help="Execute this recorded request (made by another person); without it, record a new one.",
        )
        parser.add_argument("--yes", action="store_true", help="Do not ask for confirmation.")

    def handle(self, *args: object, **options: Any) -> None:
        if options["execute"]:
            self._execute(options)
        else:
            self._request(options)

    def _request(self, options: dict[str, Any]) -> None:
        if options["yes"]:
            raise CommandError("--yes goes with --execute: recording a request changes no mail.")
        requester = _acting_user(options["as_user"], REQUEST_PERMISSIONS)
        try:
            requested = request_erasure(
                options["address"],
                account_ids=options["account"],
                received_on_or_after=_day(str(options["from_day"])) if options["from_day"] else None,
                received_before=_day(str(options["before_day"])) if options["before_day"] else None,
                accounts_only=options["accounts_only"],
                requester=requester,
            )
        except MailFathomError as error:
            raise CommandError(str(error)) from error
        self.stdout.write(f"Erasure request {requested.request_id} recorded.")
        self._table("Would erase", requested.accounts)
        self.stdout.write(
            "Nothing was changed. Another person executes it with: erase_person --as <user> "
            f"--execute {requested.request_id} and the same --address arguments."
        )

    def _execute(self, options: dict[str, Any]) -> None:
        if options["account"] or options["from_day"] or options["before_day"] or options["accounts_only"]:
            raise CommandError(
                "--execute takes the request's own accounts and range: give only --as, --address and --yes."
            )
        executor = _acting_user(options["as_user"], EXECUTE_PERMISSIONS)
        request_id = str(options["execute"])
        try:
            recorded = erasure_statement(request_id)
        except MailFathomError as error:
            raise CommandError(str(error)) from error
        self.stdout.write(f"Erasure request {recorded.request_id}, requested by {recorded.requested_by}.")
        if not options["yes"]:
            answer = input(f'Type "{CONFIRMATION}" to erase the matched emails for good: ')
            if answer.strip() != CONFIRMATION:
                raise CommandError("Not confirmed: nothing was changed; the request stays open.")
        try:
            statement = execute_erasure_request(recorded.request_id, options["address"], requester=executor)
        except MailFathomError as error:
            raise CommandError(str(error)) from error
        if statement.total("emails") == 0:
            self.stdout.write("No stored email matched: nothing was erased.")
        self._table("Erased", statement.accounts)
        self._summary(statement)

    def _summary(self, statement: ErasureStatement) -> None:
        scope = "every account" if statement.suppressions.get("scope") == "deployment" else "their accounts"
        self.stdout.write(
            f"{statement.suppressions.get('written', 0)} suppressions recorded ({scope}): synchronization "
            "and import will not store these messages again. Remove them from the mail server too "
            "(docs/operations/erasure.md)."
        )
        if statement.single_operator:
            self.stdout.write("Executed under MAILFATHOM_ERASURE_SINGLE_OPERATOR; the statement says so.")
        self.stdout.write(
            "The clean-up that rewrites the affected tables was queued; if no worker runs, run "
            "`python manage.py erasure_cleanup` now."
        )
        self.stdout.write(
            f"Statement of erasure request {statement.request_id} (signed {statement.signed_at}):"
        )
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


def _acting_user(username: str, permissions: tuple[str, ...]) -> Requester:
    """The --as user, who must be active and hold one of `permissions`."""
    user = get_user_model().objects.filter(username=username, is_active=True).first()
    if user is None:
        raise CommandError("--as must name an active user of this deployment.")
    if not any(user.has_perm(permission) for permission in permissions):
        raise CommandError(
            f"The --as user lacks the permission this step needs ({' or '.join(permissions)})."
        )
    name = user.get_username()
    return Requester(
        name=f"{name} (command, OS user {_os_user()})"[:200], kind=ErasureRequesterKind.COMMAND, person=name
    )


def _os_user() -> str:
    """Who ran the command, as the operating system knows them (kept beside the --as user)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"
