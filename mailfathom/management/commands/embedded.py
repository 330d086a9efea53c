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
        stopped = [
            name
            for name, stop in (("Redis", embedded.stop_redis), ("PostgreSQL", embedded.stop_postgres))
            if stop()
        ]
        self.stdout.write("stopped: " + (", ".join(stopped) or "nothing was running"))
