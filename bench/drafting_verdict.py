"""The drafting verdict on a labelled set: precision and recall of each provenance reason, and its cost.

    .venv/bin/python bench/drafting_verdict.py [--repeat 5] [--scope mailbox|correspondent|both]

The labelled set is the team's attack set (tests/answering/drafting/attack_set.py): hostile
mails, each labelled with the reasons its draft must carry, and clean mails from the same
correspondents, labelled with none. Each mail is put alone into the firm's mailbox (a
scratch database of its own, re-created each run) and drafted by compose_draft against the
scripted OpenAI-compatible server scripted as a model that obeys the mail; the verdict's
reasons are then compared with the labels, per reason code.

Cost: for each draft, the assessment (answering.drafting.verdict.assess_draft: origins read
back by id, their parties, the correspondent checks, the mailbox lookups of facts the model
was not given) is timed `repeat` times; the anchor is the text-only check the pipeline
made before provenance (every origin's text as one piece of evidence, no parties, no
lookups), timed the same way on the same draft. The ratio says what provenance adds.

With `--corpus N` it also drafts replies to N non-bulk messages the corpus's reply pairs
answer (the team corpus loaded as one account, lexical gather), the draft being the first
words the real reply's author wrote (the pair's query), with the real reply moved to a
folder hidden from tools: the rate at which the four provenance reasons flag ordinary
replies a person actually sent (their false-alarm rate), and the sources a draft keeps
under each scope.

With `--scope both` the set runs under each source scope (MAILFATHOM_DRAFTING_SOURCE_SCOPE)
and prints, beside the reasons, how many hostile prompts carried another correspondent's
facts to the drafting endpoint and how many sources a clean draft was given.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO))

from sync import migrated_database, setup_django, use_scripted_server  # noqa: E402

DATABASE = "mailfathom_drafting_verdict"
REASONS = ("other_correspondent", "unverified_payment_detail", "reply_to_mismatch", "thread_hijack")


class UncountedLedger:
    def admit(self) -> None:
        pass

    def charge(self, tokens: int) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=5, help="timings per draft (default 5)")
    parser.add_argument("--scope", choices=("mailbox", "correspondent", "both"), default="both")
    parser.add_argument("--corpus", type=int, default=0, help="also draft for N reply pairs of the corpus")
    parser.add_argument(
        "--corpus-own",
        default="",
        help="the corpus account's own address (e.g. one at enron.com), so its conversations are the firm's",
    )
    parser.add_argument("--skip-attack-set", action="store_true", help="only the corpus part")
    parser.add_argument(
        "--observer",
        action="store_true",
        help="corpus part: the account is a bystander (--corpus-own or nobody), not each reply's author",
    )
    parser.add_argument(
        "--explain",
        action="store_true",
        help="corpus part: what each other_correspondent and thread_hijack flag rests on",
    )
    args = parser.parse_args()

    setup_django(DATABASE)
    import logging

    logging.disable(logging.WARNING)  # the per-draft log lines drown the figures
    migrated_database(DATABASE)
    from django.conf import settings

    from answering.drafting import pipeline

    # This measures the verdict, not spend: whichever ledger the pipeline admits through counts nothing.
    for name in ("period_ledger", "drafting_ledger"):
        if hasattr(pipeline, name):
            setattr(pipeline, name, UncountedLedger)
    from tests.providers.openai_server import ScriptedOpenAIServer

    with ScriptedOpenAIServer(dimensions=384) as server:
        use_scripted_server(server.base_url, embed=True)
        scopes = ("mailbox", "correspondent") if args.scope == "both" else (args.scope,)
        for scope in () if args.skip_attack_set else scopes:
            settings.MAILFATHOM = settings.MAILFATHOM.replace(drafting_source_scope=scope)
            run(server, scope, args.repeat)
        if args.corpus:
            settings.MAILFATHOM = settings.MAILFATHOM.replace(embedding_provider="none")
            corpus_run(args.corpus, scopes, args.corpus_own, explain=args.explain, observer=args.observer)


def run(server, scope: str, repeat: int) -> None:
    from answering.drafting import pipeline
    from answering.drafting.assess import assess, reason_codes
    from answering.drafting.provenance import plain_origin
    from answering.drafting.verdict import assess_draft
    from mailbox.models import Email
    from mailbox.services.embedding import embed_pending
    from mailbox.services.lexical_search import refresh_term_stats
    from mailbox.services.threads import thread_unthreaded
    from tests.answering.drafting.attack_set import (
        ATTACKS,
        CLEAN,
        CUSTOMERS,
        ObedientDrafter,
        build_firm,
        letter,
        planted_of,
        store_case,
    )
    from tests.answering.drafting.support import GENERATE
    from tests.factories import MailAccountFactory

    Email.objects.all().delete()
    from accounts.models import MailAccount

    MailAccount.objects.all().delete()
    account = MailAccountFactory(
        account_id=f"oak-{scope}", display_name="Oak & Iron", username="anna@oak.example"
    )
    firm = build_firm(account)
    model = ObedientDrafter([*ATTACKS, *CLEAN])
    server.chat.always(model)
    labelled: list[tuple[frozenset[str], set[str]]] = []
    names: list[str] = []
    ours: list[float] = []
    anchor: list[float] = []
    exposed = 0
    clean_sources: list[int] = []
    for position, case in enumerate([*ATTACKS, *CLEAN]):
        email = store_case(firm, case, position=position)
        while thread_unthreaded(firm.account.pk):  # as storing does: the mail joins its thread
            pass
        embed_pending()
        refresh_term_stats()
        result = pipeline.compose_draft(Email.objects.select_related("account").get(pk=email.pk))
        if isinstance(result, pipeline.DraftRefused):
            raise SystemExit(f"{case.name}: refused at {result.stage} ({result.outcome})")
        labelled.append((case.expected, set(reason_codes(result.reasons))))
        names.append(case.name)
        prompt = model.user_turn(GENERATE)
        if case.expected and any(
            c.iban in prompt or c.phone in prompt or c.invoice in prompt
            for c in CUSTOMERS.values()
            if c.name not in case.body
        ):
            exposed += 1
        if not case.expected:
            clean_sources.append(len(result.source_ids))
        body = letter(case)
        stored = Email.objects.select_related("account").get(pk=email.pk)
        for _ in range(repeat):
            started = time.perf_counter()
            assess_draft(
                stored,
                body,
                language="en",
                thread_ids=result.thread_ids,
                source_ids=result.source_ids,
                reference_ids=result.reference_ids,
            )
            ours.append(time.perf_counter() - started)
            started = time.perf_counter()
            texts = [
                f"{row.sender_address}\n{row.subject}\n{row.text_body}"
                for row in Email.objects.filter(pk__in=[stored.pk, *result.thread_ids, *result.source_ids])
            ]
            signatures = dict(account.drafting_signatures.values_list("language", "text"))
            assess(
                body,
                language="en",
                origins=[plain_origin([*texts, *signatures.values()])],
                signatures=signatures,
            )
            anchor.append(time.perf_counter() - started)
        email.delete()
        if (planted := planted_of(email)) is not None:
            planted.delete()

    hostile = sum(1 for expected, _ in labelled if expected)
    print(f"\nsource scope {scope}: {hostile} hostile, {len(labelled) - hostile} clean drafts")
    print(f"{'reason':<28} {'tp':>4} {'fp':>4} {'fn':>4} {'precision':>10} {'recall':>8}")
    for code in REASONS:
        tp = sum(1 for expected, got in labelled if code in expected and code in got)
        fp = sum(1 for expected, got in labelled if code not in expected and code in got)
        fn = sum(1 for expected, got in labelled if code in expected and code not in got)
        precision = tp / (tp + fp) if tp + fp else float("nan")
        recall = tp / (tp + fn) if tp + fn else float("nan")
        print(f"{code:<28} {tp:>4} {fp:>4} {fn:>4} {precision:>10.3f} {recall:>8.3f}")
        missed = [
            name
            for name, (expected, got) in zip(names, labelled, strict=True)
            if code in expected and code not in got
        ]
        if missed:
            print(f"{'':<28} missed: {', '.join(missed)}")
    flagged = sum(1 for expected, got in labelled if expected and got)
    alarms = sum(1 for expected, got in labelled if not expected and got)
    print(
        f"hostile drafts needing review: {flagged}/{hostile}; "
        f"clean drafts flagged: {alarms}/{len(labelled) - hostile}"
    )
    print(
        "hostile prompts carrying another customer's IBAN, phone or invoice to the model: "
        f"{exposed}/{hostile}"
    )
    print(f"sources per clean draft: mean {statistics.mean(clean_sources):.1f}")
    ours_ms, anchor_ms = statistics.median(ours) * 1000, statistics.median(anchor) * 1000
    print(
        f"assessment per draft: median {ours_ms:.1f} ms "
        f"(p95 {sorted(ours)[int(0.95 * len(ours))] * 1000:.1f}); "
        f"text-only anchor {anchor_ms:.1f} ms; ratio {ours_ms / anchor_ms:.1f}"
    )


def corpus_run(
    count: int,
    scopes: tuple[str, ...],
    own_address: str = "",
    *,
    explain: bool = False,
    observer: bool = False,
) -> None:
    import json

    import retrieval
    from django.conf import settings

    from accounts.models import MailAccount
    from answering.drafting import pipeline
    from answering.drafting.assess import reason_codes
    from answering.drafting.correspondents import own_parties
    from mailbox.models import Email
    from mailbox.services.lexical_search import refresh_term_stats
    from tests.mailbox.factories import mapped_folder

    corpus = next(
        (parent / "shared" / "corpus" for parent in REPO.parents if (parent / "shared" / "corpus").exists()),
        retrieval.CORPUS,
    )
    retrieval.CORPUS = corpus
    started = time.perf_counter()
    held = retrieval.load("corpus")
    refresh_term_stats()
    print(f"\ncorpus: {held} emails ({time.perf_counter() - started:.0f} s to load)")
    account = MailAccount.objects.get(account_id="corpus")
    if own_address:
        account.username = own_address
        account.save(update_fields=["username"])
    hidden = mapped_folder(account, "hidden-replies", visible_to_tools=False)
    own = own_parties(account)
    pairs = [json.loads(line) for line in (corpus / "reply-pairs-dev.jsonl").read_text().splitlines()]
    ids = dict(Email.objects.filter(account=account).values_list("message_id", "id"))
    chosen = []
    for pair in pairs:
        target, reply = (
            ids.get(pair["target_message_id"].strip("<>")),
            ids.get(pair["reply_message_id"].strip("<>")),
        )
        if target and reply and not Email.objects.filter(pk=target, is_bulk=True).exists():
            chosen.append((target, reply, pair["query"]))
        if len(chosen) == count:
            break
    Email.objects.filter(pk__in=[reply for _, reply, _ in chosen]).update(folder=hidden)

    class Reply:
        body = ""

        def __call__(self, request):
            from tests.answering.drafting.support import stage_of
            from tests.providers.openai_server import text

            return text(
                {"classify": '{"intent": "inquiry", "language": "en"}', "condense": "reply question"}.get(
                    stage_of(request), self.body
                )
            )

    from tests.providers.openai_server import ScriptedOpenAIServer

    with ScriptedOpenAIServer(dimensions=384) as server:
        settings.MAILFATHOM = settings.MAILFATHOM.replace(chat_base_url=server.base_url)
        model = Reply()
        server.chat.always(model)
        for scope in scopes:
            settings.MAILFATHOM = settings.MAILFATHOM.replace(drafting_source_scope=scope)
            flagged: dict[str, int] = dict.fromkeys(REASONS, 0)
            any_flag, sources, composed, judged, fully_addressed = 0, [], 0, 0, 0
            overall: dict[str, int] = {}
            refused: dict[str, int] = {}
            for target, reply, words in chosen:
                model.body = words
                with contextlib.nullcontext(own) if observer else _firm_is_author(account, reply) as own:
                    result = pipeline.compose_draft(Email.objects.select_related("account").get(pk=target))
                    claimed, addressed = _thread_judged(target, own)
                    judged, fully_addressed = judged + claimed, fully_addressed + addressed
                    if explain and not isinstance(result, pipeline.DraftRefused):
                        _explain(result, target, own)
                if isinstance(result, pipeline.DraftRefused):
                    key = f"{result.stage}:{result.outcome}"
                    refused[key] = refused.get(key, 0) + 1
                    continue
                composed += 1
                for code in set(reason_codes(result.reasons)) or {"(ready)"}:
                    overall[code] = overall.get(code, 0) + 1
                codes = set(reason_codes(result.reasons)) & set(REASONS)
                for code in codes:
                    flagged[code] += 1
                any_flag += bool(codes)
                sources.append(len(result.source_ids))
            print(f"corpus, source scope {scope}: {composed} real replies as drafts (non-bulk targets)")
            for code in REASONS:
                print(f"  {code:<28} {flagged[code]:>4}  ({flagged[code] / max(composed, 1):.1%})")
            print(f"  any of the four: {any_flag} ({any_flag / max(composed, 1):.1%}); "
                  f"sources per draft: mean {statistics.mean(sources or [0]):.2f}")  # fmt: skip
            print(
                f"  answered mail claiming a conversation the account took part in: {judged}, "
                f"every message of it with recorded recipients: {fully_addressed}"
            )
            if refused:
                print(f"  refused before a draft: {dict(sorted(refused.items()))}")
            print("  every verdict reason, the text checks included (a draft may carry several):")
            for code, count in sorted(overall.items(), key=lambda item: -item[1]):
                print(f"    {code:<28} {count:>4}  ({count / max(composed, 1):.1%})")


@contextlib.contextmanager
def _firm_is_author(account, reply_id):
    """Make the reply's author the mailbox's owner, as a firm drafting its own reply would be.

    While it lasts, the account's user name is the author's address and the author's
    letters are outgoing mail (a firm's mailbox holds what it sent); yields the account's
    own parties. Everything is put back after the draft.
    """
    from answering.drafting.correspondents import own_parties
    from mailbox.models import Direction, Email

    author = Email.objects.get(pk=reply_id).sender_address
    turned = list(
        Email.objects.filter(
            account=account, sender_address__iexact=author, direction=Direction.INCOMING
        ).values_list("pk", flat=True)
    )
    Email.objects.filter(pk__in=turned).update(direction=Direction.OUTGOING)
    before = account.username
    account.username = author
    account.save(update_fields=["username"])
    try:
        yield own_parties(account)
    finally:
        Email.objects.filter(pk__in=turned).update(direction=Direction.INCOMING)
        account.username = before
        account.save(update_fields=["username"])


def _explain(result, email_id, own) -> None:
    """What each other_correspondent and thread_hijack flag rests on (BENCH_SHOW_FACTS=1 adds the fact)."""
    from answering.drafting.assess import reason_codes
    from answering.drafting.correspondents import correspondence_of, held_conversation, party_of
    from mailbox.models import Email

    for finding in result.findings:
        if finding["code"] != "other_correspondent":
            continue
        rows = Email.objects.in_bulk([origin for origin in finding["origins"] if ":" not in origin])
        held = correspondence_of(rows.values(), own)
        described = [
            f"{row.direction[:3]} list={row.is_list_mail} parties={sorted(held[str(row.pk)].parties)}"
            for row in rows.values()
        ]
        fact = result.body[finding["start"] : finding["end"]] if os.environ.get("BENCH_SHOW_FACTS") else ""
        print(f"    other_correspondent {finding['kind']} {fact}: {'; '.join(described)}")
    if "thread_hijack" in reason_codes(result.reasons):
        email = Email.objects.get(pk=email_id)
        earlier = held_conversation(email, own)
        parties = sorted(frozenset().union(*(f.parties for f in correspondence_of(earlier, own).values())))
        print(
            f"    thread_hijack: sender {party_of(email.sender_address)}, "
            f"{len(earlier)} earlier with {parties}"
        )


def _thread_judged(email_id, own) -> tuple[int, int]:
    """(claims a conversation the firm took part in, and every message of it names its recipients).

    Only the second kind tests thread_hijack: a message to unrecorded recipients admits anyone.
    """
    from answering.drafting.correspondents import ADDRESSED, held_conversation
    from mailbox.models import Email, Participant

    earlier = held_conversation(Email.objects.get(pk=email_id), own)
    addressed = set(
        Participant.objects.filter(email__in=earlier, role__in=ADDRESSED).values_list("email_id", flat=True)
    )
    return int(bool(earlier)), int(bool(earlier) and addressed == {row.pk for row in earlier})


if __name__ == "__main__":
    main()
