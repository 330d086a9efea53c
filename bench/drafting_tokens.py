"""Tokens per draft by stage, with the scripted OpenAI-compatible server standing in for the models.

    .venv/bin/python bench/drafting_tokens.py [--drafts N] [--keep] [--embed]

Loads the corpus Maildir as one account (the retrieval bench's loader, into a scratch
database of its own), takes the messages the reply pairs answer as the mail to draft for,
and runs compose_draft on each against the scripted server (tests/providers). The scripted
models count usage the way a tokenizer roughly would, one token per four characters of what
they were sent and what they answer, so the figures are a size measurement of the prompts
MailFathom builds, not of any real model's tokenizer; a real endpoint reports its own.
The scripted replies are fixed (a JSON classification, an eight-word query, a 120-word
letter), so completion counts are the script's, and only prompt counts are measured.

Anchor: the answered mail alone (subject and body at the drafting bound), counted the same
way. The ratio prompt/anchor says how much the instruction, thread and sources add.
The period ledger is replaced by one that counts nothing (this measures prompts, not
spend); `--embed` embeds the corpus with the scripted endpoint so gather runs hybrid.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO))

import retrieval  # noqa: E402
from retrieval import database_exists, load  # noqa: E402
from sync import recreate_database, setup_django, use_scripted_server  # noqa: E402

DATABASE = "mailfathom_drafting_tokens"
# ../shared/corpus beside the checkout, or above it (a worktree under /work/wt/<branch>).
CORPUS = next(
    (parent / "shared" / "corpus" for parent in REPO.parents if (parent / "shared" / "corpus").exists()),
    retrieval.CORPUS,
)
retrieval.CORPUS = CORPUS
LETTER = ("Thank you for your message; we will look into it and come back to you shortly. " * 8).strip()


def usage(text: str) -> int:
    return math.ceil(len(text) / 4)


def scripted_model(request: dict) -> object:
    from tests.answering.drafting.support import stage_of
    from tests.providers.openai_server import text

    sent = sum(usage(message.get("content") or "") for message in request.get("messages", []))
    stage = stage_of(request)
    reply = {
        "classify": '{"intent": "inquiry", "language": "en"}',
        "condense": "project schedule delivery invoice question reply status update",
        "generate": LETTER,
    }.get(stage, "50")
    return text(reply, usage=(sent, usage(reply)))


class UncountedLedger:
    def admit(self) -> None:
        pass

    def charge(self, tokens: int) -> None:
        pass


def p95(values: list[int]) -> float:
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--drafts", type=int, default=40, help="drafts to compose (default 40)")
    parser.add_argument("--keep", action="store_true", help="reuse the scratch database if it is loaded")
    parser.add_argument("--embed", action="store_true", help="embed the corpus with the scripted endpoint")
    args = parser.parse_args()

    setup_django(DATABASE)
    if not args.keep or not database_exists(DATABASE):
        recreate_database(DATABASE)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from tests.providers.openai_server import ScriptedOpenAIServer

    with ScriptedOpenAIServer(dimensions=384) as server:
        use_scripted_server(server.base_url, embed=args.embed)
        server.chat.always(scripted_model)
        started = time.perf_counter()
        held = load("drafting")
        print(f"corpus: {held} emails held ({time.perf_counter() - started:.1f} s to load or find)")
        from mailbox.services.lexical_search import refresh_term_stats

        refresh_term_stats()
        if args.embed:
            from mailbox.services.embedding import embed_pending

            embed_pending()
        run(args.drafts)


def run(count: int) -> None:
    from django.conf import settings

    from answering.drafting import pipeline
    from answering.drafting.mail import mail_text
    from mailbox.models import Email

    pipeline.drafting_ledger = UncountedLedger  # this measures prompts, not spend
    pairs = [json.loads(line) for line in (CORPUS / "reply-pairs-dev.jsonl").read_text().splitlines()]
    by_message_id = dict(Email.objects.filter(account__account_id="drafting").values_list("message_id", "id"))
    targets = [
        by_message_id[p["target_message_id"].strip("<>")]
        for p in pairs
        if p["target_message_id"].strip("<>") in by_message_id
    ]
    per_stage: dict[str, list[int]] = {}
    anchors: list[int] = []
    refused = 0
    started = time.perf_counter()
    for email_id in targets[:count]:
        email = Email.objects.select_related("account").get(pk=email_id)
        anchors.append(usage(mail_text(email, settings.MAILFATHOM.drafting_max_answered_characters).raw))
        result = pipeline.compose_draft(email)
        if isinstance(result, pipeline.DraftRefused):
            refused += 1
            continue
        for stage, counts in result.tokens.items():
            per_stage.setdefault(stage, []).append(counts["prompt"] + counts["completion"])
    seconds = time.perf_counter() - started
    drafted = count - refused
    print(f"drafts: {drafted} composed, {refused} refused, {seconds / max(count, 1):.2f} s per draft")
    print(f"{'stage':<10} {'mean':>8} {'p95':>8} {'max':>8}   (prompt + completion, 4 characters a token)")
    total = [0] * drafted
    for stage in ("classify", "condense", "rerank", "generate"):
        values = per_stage.get(stage)
        if not values:
            continue
        total = [a + b for a, b in zip(total, values, strict=False)]
        print(f"{stage:<10} {statistics.mean(values):>8.0f} {p95(values):>8.0f} {max(values):>8}")
    if total:
        print(f"{'draft':<10} {statistics.mean(total):>8.0f} {p95(total):>8.0f} {max(total):>8}")
        generate = per_stage["generate"]
        anchor = statistics.mean(anchors)
        print(f"anchor (the answered mail alone): mean {anchor:.0f} tokens")
        print(f"ratio generate (prompt + completion) / anchor: {statistics.mean(generate) / anchor:.1f}")


if __name__ == "__main__":
    main()
