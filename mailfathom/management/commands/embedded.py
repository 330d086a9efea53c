from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from mailfathom import embedded


class Command(BaseCommand):
    help = "Show or stop the embedded PostgreSQL and Redis kept under var/."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["status", "stop"])

    def handle(self, *args: object, **options: object) -> None:
        if options["action"] == "status":
            self.stdout.write(f"data folder: {embedded.var_dir()}")
            self.stdout.write(f"database: {'embedded' if settings.EMBEDDED_DATABASE else 'DATABASE_URL'}")
            self.stdout.write(f"redis: {'embedded' if settings.EMBEDDED_REDIS else 'REDIS_URL'}")
            return
        # `manage.py embedded stop` is answered by manage.py itself, before the settings
        # start anything; this path serves call_command, where they are loaded already.
        stopped = embedded.stop_running()
        self.stdout.write("stopped: " + (", ".join(stopped) or "nothing was running"))
