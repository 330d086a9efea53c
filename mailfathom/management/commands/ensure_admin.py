from django.conf import settings
from django.core.management.base import BaseCommand

from mailfathom.bootstrap import ensure_admin_user


class Command(BaseCommand):
    help = "Create the `admin` superuser if it does not exist (password from MAILFATHOM_ADMIN_PASSWORD)."

    def handle(self, *args: object, **options: object) -> None:
        result = ensure_admin_user(settings.MAILFATHOM.admin_password)
        if not result.created:
            self.stdout.write("The admin user exists; its password is unchanged.")
        elif result.password:
            self.stdout.write(f"Created user 'admin' with password: {result.password}")
            self.stdout.write("This password is shown once. Change it in admin after logging in.")
        else:
            self.stdout.write("Created user 'admin' with the password from MAILFATHOM_ADMIN_PASSWORD.")
