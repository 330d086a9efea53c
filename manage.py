#!/usr/bin/env python
"""Django's command-line utility for MailFathom."""

import os
import sys


def main() -> None:
    if sys.argv[1:2] == ["embedded"] and sys.argv[2:3] in (["start"], ["status"], ["stop"]):
        # Loading the settings starts the embedded servers: status and stop must not, and
        # start says what it did. mailfathom/management/commands/embedded.py words the same.
        from mailfathom.embedded import start_configured, status_lines, stop_running

        if sys.argv[2] == "start":
            print("started: " + (", ".join(start_configured()) or "both were running"))
        elif sys.argv[2] == "status":
            print("\n".join(status_lines()))
        else:
            print("stopped: " + (", ".join(stop_running()) or "nothing was running"))
        return
    if sys.argv[1:2] == ["mcp_client_config"]:
        # It prints a snippet from configuration alone: no database, no Redis, no app, so it
        # neither starts the embedded servers nor loads the product (a second, not eight).
        from django.conf import settings

        from mailfathom.core import config

        settings.configure(MAILFATHOM=config.load(os.environ).values)
        from accounts.management.commands.mcp_client_config import Command

        Command().run_from_argv(sys.argv)
        return
    if sys.argv[1:2] == ["serve"]:
        # Loading Django and the settings takes seconds (more on a first start, which creates
        # the embedded database): say so before it begins, so `make run` is never silent.
        from mailfathom import startup_ticker

        startup_ticker.start("Loading MailFathom")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mailfathom.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
