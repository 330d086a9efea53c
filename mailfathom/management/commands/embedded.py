from django.core.management.base import BaseCommand, CommandParser

from mailfathom import embedded


class Command(BaseCommand):
    help = "Start, show or stop the embedded PostgreSQL and Redis kept under var/."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["start", "status", "stop"])

    def handle(self, *args: object, **options: object) -> None:
        # `manage.py embedded ...` is answered by manage.py itself, before the settings
        # start anything; this path serves call_command, where they are loaded already.
        if options["action"] == "start":
            self.stdout.write("started: " + (", ".join(embedded.start_configured()) or "both were running"))
        elif options["action"] == "status":
            self.stdout.write("\n".join(embedded.status_lines()))
        else:
            stopped = embedded.stop_running()
            self.stdout.write("stopped: " + (", ".join(stopped) or "nothing was running"))
