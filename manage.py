#!/usr/bin/env python
"""Django's command-line utility for MailFathom."""

import os
import sys


def main() -> None:
    if sys.argv[1:3] == ["embedded", "stop"]:
        # Loading the settings starts the embedded servers; stopping them must not.
        from mailfathom.embedded import stop_running

        print("stopped: " + (", ".join(stop_running()) or "nothing was running"))
        return
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mailfathom.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
