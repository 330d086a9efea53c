"""erasure_cleanup: the clean-up an erasure needs, run by hand (docs/operations/erasure.md).

Rewrites every table an erasure touches (VACUUM FULL with ANALYZE), then runs a checkpoint,
a WAL switch and another checkpoint, and records the steps on each executed request that
was not cleaned up yet (audit.services.erasure.clean_up_after_erasure). The same runs as a
task after each execution; run this when no worker runs, or to see the steps.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from audit.services.erasure import clean_up_after_erasure


class Command(BaseCommand):
    help = "Rewrite the tables erasures touched and switch the WAL, so no erased row stays in their files."

    def handle(self, *args: object, **options: Any) -> None:
        steps = clean_up_after_erasure()
        for step in steps:
            detail = f" ({step.detail})" if step.detail else ""
            self.stdout.write(f"{step.outcome:>14}  {step.step}{detail}")
        missed = [step for step in steps if step.outcome != "done"]
        if missed:
            raise CommandError(
                f"{len(missed)} steps were not done; the database user lacks a privilege they need "
                "(docs/operations/erasure.md, The clean-up)."
            )
        self.stdout.write("Clean-up done.")
