from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.models import MailAccount
from mailbox.sync.engine import synchronize_account
from mailfathom.core.progress import INTERRUPTED, TerminalProgress


class Command(BaseCommand):
    help = (
        "Synchronize one account's mapped folders now, in this terminal, with a progress bar per "
        "folder (folders in backoff too). Ctrl-C stops it keeping every committed batch; run it "
        "again to continue."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("account", help="The account identifier.")
        parser.add_argument("--no-progress", action="store_true", help="Do not draw progress bars.")

    def handle(self, *args: object, **options: object) -> None:
        account = MailAccount.objects.filter(account_id=str(options["account"])).first()
        if account is None:
            raise CommandError("No account has that identifier.")
        # tqdm redraws one line in place; Django's OutputWrapper would add a newline per update.
        bars = TerminalProgress(self.stderr._out, disable=bool(options["no_progress"]))  # type: ignore[arg-type]  # the TextIO OutputWrapper wraps; the stubs see _out as Callable
        try:
            with bars:
                run = synchronize_account(account.pk, force=True, progress=bars)
        except KeyboardInterrupt:
            raise CommandError(INTERRUPTED, returncode=130) from None
        if run.skipped:
            raise CommandError(f"Nothing was synchronized: {run.skipped}.")
        for folder in run.folders:
            if folder.skipped_locked:
                state = "skipped: another run holds this folder now"
            elif folder.failure_code:
                state = f"failed with {folder.failure_code}"
            else:
                state = "done"
            self.stdout.write(
                f"{folder.alias}: {folder.stored} stored, {folder.withheld} envelope only, "
                f"{folder.expunged} removed, {folder.flags_updated} flag changes; {state}."
            )
        if run.failure_code:
            raise CommandError(
                f"The run stopped with failure {run.failure_code} (see docs/synchronization.md)."
            )
        failed = sorted({folder.failure_code for folder in run.folders if folder.failure_code})
        if failed:
            codes = ", ".join(str(code) for code in failed)
            raise CommandError(f"Some folders failed ({codes}; see docs/synchronization.md).")
