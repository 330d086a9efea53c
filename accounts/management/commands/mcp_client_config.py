import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.services.mcp_clients import (
    CLIENTS,
    KEY_VARIABLE,
    client_config,
    default_origin,
    endpoint_url,
    mcp_url,
)


class Command(BaseCommand):
    # Run by manage.py without loading the product (configuration only): nothing to check.
    requires_system_checks: list[str] = []
    requires_migrations_checks = False
    help = (
        "Print the configuration an MCP client needs to reach /mcp: the snippet on standard "
        "output, where it goes on standard error. Without --key the snippet holds a placeholder "
        f"(${KEY_VARIABLE}, or the client's own prompt), since a key is shown only when created."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("client", choices=CLIENTS)
        parser.add_argument(
            "--key",
            default=None,
            help="The key to write into the snippet; '-' reads it from standard input "
            "(create_mcp_key NAME | mcp_client_config CLIENT --key -), which keeps it out of "
            "shell history.",
        )
        parser.add_argument(
            "--url",
            default=None,
            help="The server's address as clients reach it (default: MAILFATHOM_PUBLIC_BASE_URL, "
            "else MAILFATHOM_HTTP_HOST and MAILFATHOM_HTTP_PORT).",
        )

    def handle(self, *args: object, **options: Any) -> None:
        key = options["key"]
        if key == "-":
            key = sys.stdin.readline().strip()
            if not key:
                raise CommandError("--key - read no key from standard input.")
        url = endpoint_url(str(options["url"])) if options["url"] else mcp_url(default_origin())
        config = client_config(str(options["client"]), url, key)
        text = config.text if config.text.endswith("\n") else config.text + "\n"
        self.stdout.write(text, ending="")
        self.stdout.flush()
        # On a terminal both streams share the screen: a blank line keeps the note off the
        # snippet's last line, while a redirect of stdout still gets the snippet alone.
        self.stderr.write(f"\n{config.title}: {config.where}")
        if config.note:
            self.stderr.write(config.note)
