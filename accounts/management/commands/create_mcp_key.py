from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.services.mcp_keys import create_key


class Command(BaseCommand):
    help = (
        "Create an API key for /mcp and print it once on standard output (only its hash is "
        "stored). Revoke it in admin."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="Who or what uses this key, for your own records.")

    def handle(self, *args: object, **options: object) -> None:
        try:
            issued = create_key(str(options["name"]))
        except ValueError as error:
            raise CommandError(str(error)) from None
        # The key alone on stdout, so automation can capture it; the note goes to stderr.
        self.stdout.write(issued.key)
        self.stderr.write(
            f"Created MCP API key '{issued.record.name}' ({issued.record.prefix}…). "
            "It is shown only now; store it where the client reads it."
        )
