from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.management.commands.create_mcp_key import account_list
from accounts.models import McpApiKey
from accounts.services.mcp_keys import VERIFIED_KEY_SECONDS, limit_key


class Command(BaseCommand):
    help = (
        "Limit an existing /mcp API key, named by its prefix, to some accounts, or let it read "
        "every account again. Running servers notice within a few seconds."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("prefix", help="The key's prefix, as the admin list shows it (mfk_…).")
        reach = parser.add_mutually_exclusive_group(required=True)
        reach.add_argument("--accounts", type=account_list, help="Comma-separated account identifiers.")
        reach.add_argument("--all-accounts", action="store_true", help="Let the key read every account.")

    def handle(self, *args: object, **options: Any) -> None:
        prefix = str(options["prefix"]).strip().rstrip("…")
        matches = list(McpApiKey.objects.filter(prefix=prefix).values_list("pk", flat=True)[:2])
        if len(matches) != 1:
            raise CommandError("No single MCP API key has this prefix.")
        accounts = None if options["all_accounts"] else options["accounts"]
        try:
            limit_key(matches[0], accounts)
        except ValueError as error:
            raise CommandError(str(error)) from None
        reach = "every account" if accounts is None else "only the accounts named"
        self.stdout.write(
            f"Key {prefix}… now reads {reach}; servers apply it within {VERIFIED_KEY_SECONDS:g} seconds."
        )
