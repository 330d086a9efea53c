"""verify_trails: check every audit trail against its hash chain; exit 1 when one is broken.

Prints one line per trail: ok, or the first broken link (sequence, entry primary key and the
reason). Nothing else: no entry content. See docs/operations/compliance.md, Tamper evidence.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.services import chain


class Command(BaseCommand):
    help = "Verify the audit trails' hash chains; exit status 1 if any trail is broken."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--trail", action="append", choices=chain.trails(), help="Only this trail (repeatable)."
        )
        parser.add_argument(
            "--adopt-unlinked",
            action="store_true",
            help="First link every entry that has none (once, when chaining starts on existing trails).",
        )

    def handle(self, *args: object, **options: Any) -> None:
        names = options["trail"] or list(chain.trails())
        if options["adopt_unlinked"]:
            for name in names:
                self.stdout.write(f"{name}: adopted {chain.adopt_unlinked(name)} unlinked entries")
        broken = 0
        for report in chain.verify_trails(names):
            summary = f"{report.entries} entries, {report.links} links, head {report.head_seq}"
            if report.ok:
                self.stdout.write(f"{report.trail}: ok ({summary})")
                continue
            broken += 1
            first = report.first_break
            assert first is not None
            self.stdout.write(
                f"{report.trail}: BROKEN at link {first.seq if first.seq is not None else '-'}, "
                f"entry {first.entry_pk or '-'}: {first.reason} ({report.breaks} breaks; {summary})"
            )
        if broken:
            raise CommandError(f"{broken} trail(s) broken", returncode=1)
