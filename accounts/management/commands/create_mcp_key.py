from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.services.mcp_keys import create_key


def account_list(value: str) -> list[str]:
    """`a,b` as identifiers; blanks are kept so the use case refuses them by name."""
    return [part.strip() for part in value.split(",")]


class Command(BaseCommand):
    help = (
        "Create an API key for /mcp and print it once on standard output (only its hash is "
        "stored). Revoke it in admin."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="Who or what uses this key, for your own records.")
        parser.add_argument(
            "--accounts",
            type=account_list,
            default=None,
            help="Comma-separated account identifiers the key is limited to (default: every account).",
        )

    def handle(self, *args: object, **options: Any) -> None:
        accounts = options["accounts"]
        try:
            issued = create_key(str(options["name"]), accounts)
        except ValueError as error:
            raise CommandError(str(error)) from None
        # The key alone on stdout, so automation can capture it; the note goes to stderr.
        self.stdout.write(issued.key)
        reach = "every account" if accounts is None else f"{len(issued.record.accounts.all())} account(s)"
        self.stderr.write(
            f"Created MCP API key '{issued.record.name}' ({issued.record.prefix}…) reading {reach}. "
            "It is shown only now; store it where the client reads it."
        )
