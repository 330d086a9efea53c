import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from accounts.models import MailAccount
from mailbox.services.threads import thread_unthreaded, unthreaded_count


class Command(BaseCommand):
    help = (
        "Give mail stored before threading existed its thread (Message-ID, In-Reply-To, "
        "References). Safe to stop with Ctrl-C and to run again: each batch commits on its own."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--account", help="Only this account identifier (default: every account).")
        parser.add_argument("--batch-size", type=int, default=500, help="Emails per transaction (1-5000).")
        parser.add_argument("--no-progress", action="store_true", help="Do not draw a progress bar.")

    def handle(self, *args: object, **options: Any) -> None:
        batch_size = int(options["batch_size"])
        if not 1 <= batch_size <= 5000:
            raise CommandError("--batch-size must be between 1 and 5000.")
        accounts = MailAccount.objects.order_by("pk")
        if options["account"]:
            accounts = accounts.filter(account_id=options["account"])
            if not accounts.exists():
                raise CommandError("No account has that identifier.")
        account_pks = list(accounts.values_list("pk", flat=True))
        total = sum(unthreaded_count(pk) for pk in account_pks)
        # tqdm redraws one line in place; Django's OutputWrapper would add a newline per update.
        bar = tqdm(total=total, unit="msg", disable=bool(options["no_progress"]), file=sys.stderr)
        done = 0
        try:
            for pk in account_pks:
                while threaded := thread_unthreaded(pk, batch_size=batch_size):
                    done += threaded
                    bar.update(threaded)
        except KeyboardInterrupt:
            bar.close()
            self.stdout.write(f"Stopped: {done} emails threaded; run again to go on from there.")
            raise SystemExit(130) from None
        bar.close()
        self.stdout.write(f"{done} emails threaded; none left without a thread.")
