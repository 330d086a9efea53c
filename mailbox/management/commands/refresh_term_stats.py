from django.core.management.base import BaseCommand

from mailbox.services.lexical_search import refresh_term_stats


class Command(BaseCommand):
    help = "Rebuild the word statistics lexical ranking weighs words by (also run hourly by beat)."

    def handle(self, *args: object, **options: object) -> None:
        self.stdout.write(f"{refresh_term_stats()} words counted.")
