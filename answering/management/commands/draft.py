import redis
from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.models import MailAccount
from answering.drafting.runs import RunSummary, draft_account
from answering.ledger import drafting_ledger
from answering.models import RunTrigger
from answering.services.draft_now import why_not_drafting
from mailfathom.core.errors import MailFathomError
from mailfathom.core.progress import TerminalProgress

INTERRUPTED = (
    "Stopped. Every draft stored before Ctrl-C is kept; run the same command again to draft "
    "the mail still waiting."
)


REDIS_DOWN = "Redis cannot be reached ({name}), so drafting's allowance cannot be counted; check REDIS_URL."


def _ledger_reachable() -> None:
    """Refuse before anything runs when drafting's count in Redis cannot be read."""
    try:
        drafting_ledger().spend()
    except MailFathomError as error:
        cause = error.__cause__
        raise CommandError(REDIS_DOWN.format(name=type(cause).__name__ if cause else "unreachable")) from None


class Command(BaseCommand):
    help = (
        "Run one drafting run over an account now, in this terminal, with a progress bar: the "
        "gate's oldest waiting mail, at most the account's drafts per run. Ctrl-C stops it keeping "
        "every stored draft."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("account", help="The account identifier.")
        parser.add_argument("--no-progress", action="store_true", help="Do not draw a progress bar.")

    def handle(self, *args: object, **options: object) -> None:
        account = MailAccount.objects.filter(account_id=str(options["account"])).first()
        if account is None:
            raise CommandError("No account has that identifier.")
        try:
            reason = why_not_drafting(account)
            if reason:
                raise CommandError(reason)
            _ledger_reachable()
            # tqdm redraws one line in place; Django's OutputWrapper would add a newline per update.
            bars = TerminalProgress(self.stderr._out, disable=bool(options["no_progress"]))  # type: ignore[arg-type]  # the TextIO OutputWrapper wraps; the stubs see _out as Callable
            with bars:
                summary = draft_account(account, trigger=RunTrigger.COMMAND, progress=bars)
        except KeyboardInterrupt:
            raise CommandError(INTERRUPTED, returncode=130) from None
        except (redis.RedisError, OSError) as error:
            raise CommandError(REDIS_DOWN.format(name=type(error).__name__)) from None
        except MailFathomError as error:
            raise CommandError(f"Drafting stopped ({error.code}): {error.message}") from None
        if summary.skipped:
            raise CommandError(f"Nothing was drafted: {summary.skipped}.")
        self.stdout.write(describe(summary))


def describe(summary: RunSummary) -> str:
    """The run in one or two sentences: counts only."""
    parts = [f"{summary.considered} considered", f"{summary.drafted} drafted"]
    refused = ", ".join(f"{count} {outcome}" for outcome, count in sorted(summary.refused.items()))
    if refused:
        parts.append(f"refused: {refused}")
    for count, what in (
        (summary.already_drafted, "already drafted"),
        (summary.vanished, "vanished"),
        (summary.failed, "failed"),
        (summary.delivered, "written to the Drafts folder"),
        (summary.delivery_failed, "not written to the Drafts folder"),
    ):
        if count:
            parts.append(f"{count} {what}")
    text = f"{summary.account_id}: " + "; ".join(parts) + "."
    if summary.stopped_by == "ledger":
        text += " Stopped early: drafting's allowance for this period is spent (or its count unreachable)."
    elif summary.stopped_by == "provider":
        text += " Stopped early: a drafting endpoint failed; the rest waits for it."
    return text
