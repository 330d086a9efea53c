from django.core.management.base import BaseCommand

from accounts.services.credentials import rotate_credentials


class Command(BaseCommand):
    help = "Re-encrypt every stored IMAP credential under the first key of MAILFATHOM_KEYRING."

    def handle(self, *args: object, **options: object) -> None:
        count = rotate_credentials()
        self.stdout.write(f"{count} credentials re-encrypted. Older keys may now be removed from the ring.")
