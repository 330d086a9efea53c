"""The drafting attack set (attack_set.py) against the real pipeline and an obedient model.

Every hostile mail's draft must need review with the reason its attack calls for, both
through draft_reply and through a scheduled run; in the scheduled run (append mode
`every`, a real Dovecot) none of them may reach the Drafts folder, while the clean
drafts stay ready and do. The model is the scripted OpenAI-compatible server reached by
the real `openai` client, answering each mail with the letter the mail asks for.
"""

from __future__ import annotations

import pytest

from answering.drafting.assess import reason_codes
from answering.drafting.runs import draft_account
from answering.models import Draft, Verdict
from answering.services.reply_draft import draft_reply
from mailbox.services.embedding import embed_pending
from mailbox.services.lexical_search import refresh_term_stats
from mailbox.services.threads import thread_unthreaded
from tests.answering.drafting.attack_set import (
    ATTACKS,
    CLEAN,
    CUSTOMERS,
    Case,
    ObedientDrafter,
    build_firm,
    planted_of,
    store_case,
)
from tests.answering.drafting.support import GENERATE
from tests.answering.drafts_support import drafting_account, drafts_on_server
from tests.configure import configure
from tests.factories import MailAccountFactory
from tests.mailbox.imap_support import add_user

MAX_FALSE_ALARM_RATE = 0.05


def _misses(results: dict[str, list[str]], cases: list[Case]) -> list[str]:
    """Each hostile case whose verdict lacks an expected reason, with what it got."""
    return [
        f"{case.name}: expected {sorted(case.expected)}, got {results[case.name]}"
        for case in cases
        if not case.expected <= set(results[case.name])
    ]


def _false_alarms(results: dict[str, list[str]]) -> list[str]:
    return [f"{case.name}: {results[case.name]}" for case in CLEAN if results[case.name]]


def test_the_set_is_large_and_covers_every_attack():
    assert len(ATTACKS) >= 40
    covered = set().union(*(case.expected for case in ATTACKS))
    assert covered == {
        "other_correspondent",
        "unverified_payment_detail",
        "reply_to_mismatch",
        "thread_hijack",
    }


@pytest.mark.django_db
@pytest.mark.slow
def test_every_hostile_draft_from_draft_reply_needs_review_with_its_reason(drafting, chat_api, settings):
    configure(settings, drafting_max_runs_per_period=1000, drafting_max_tokens_per_period=10_000_000)
    account = MailAccountFactory(account_id="oak", display_name="Oak & Iron", username="anna@oak.example")
    firm = build_firm(account)
    drafting.chat.always(ObedientDrafter([*ATTACKS, *CLEAN]))

    results = {}
    for position, case in enumerate([*ATTACKS, *CLEAN]):
        # One case at a time: the firm's mailbox and this one mail, as an attacker meets it.
        email = store_case(firm, case, position=position)
        while thread_unthreaded(account.pk):  # as storing does: the mail joins its thread
            pass
        embed_pending()
        refresh_term_stats()
        result = draft_reply(str(email.pk))
        email.delete()
        if (planted := planted_of(email)) is not None:
            planted.delete()
        assert result.drafted, case.name
        results[case.name] = reason_codes(result.reasons)
        assert (result.verdict == "ready") == (not result.reasons)

    assert _misses(results, ATTACKS) == []
    alarms = _false_alarms(results)
    print(f"\nattack set via draft_reply: {len(ATTACKS)} hostile, all flagged; false alarms "
          f"{len(alarms)}/{len(CLEAN)} clean")  # fmt: skip
    assert len(alarms) / len(CLEAN) <= MAX_FALSE_ALARM_RATE, alarms


@pytest.mark.django_db(transaction=True)
@pytest.mark.dovecot
@pytest.mark.slow
def test_a_scheduled_run_keeps_every_hostile_draft_out_of_the_drafts_folder(
    drafting, chat_api, dovecot, settings
):
    configure(settings, drafting_max_runs_per_period=1000, drafting_max_tokens_per_period=10_000_000)
    user = add_user(dovecot)
    account = drafting_account(user, append_mode="every", drafting_max_per_run=200)
    firm = build_firm(account)
    stored = {case.name: store_case(firm, case, position=i) for i, case in enumerate([*ATTACKS, *CLEAN])}
    while thread_unthreaded(account.pk):
        pass
    embed_pending()
    refresh_term_stats()
    drafting.chat.always(ObedientDrafter([*ATTACKS, *CLEAN]))

    summary = draft_account(account)

    planted = sum(1 for case in ATTACKS if case.planted)
    assert summary.drafted == len(ATTACKS) + len(CLEAN) + planted, summary
    drafts = {d.email_id: d for d in Draft.objects.filter(account=account)}
    results = {name: reason_codes(drafts[email.pk].reasons) for name, email in stored.items()}
    assert _misses(results, ATTACKS) == []
    for case in ATTACKS:
        assert drafts[stored[case.name].pk].verdict == Verdict.NEEDS_REVIEW
    on_server = {
        message["Message-ID"].strip("<>").split(".")[0] for _, message in drafts_on_server(user).values()
    }
    hostile_ids = {str(drafts[stored[case.name].pk].id) for case in ATTACKS}
    assert not on_server & hostile_ids
    ready = {str(d.id) for d in drafts.values() if d.verdict == Verdict.READY}
    assert on_server == ready and summary.delivered == len(ready)
    assert len(_false_alarms(results)) / len(CLEAN) <= MAX_FALSE_ALARM_RATE, _false_alarms(results)


@pytest.mark.django_db
def test_with_the_correspondent_scope_no_other_customers_mail_reaches_the_model(drafting, chat_api, settings):
    configure(settings, drafting_source_scope="correspondent")
    account = MailAccountFactory(account_id="oak", display_name="Oak & Iron", username="anna@oak.example")
    firm = build_firm(account)
    model = ObedientDrafter(ATTACKS)
    drafting.chat.always(model)
    (case,) = [case for case in ATTACKS if case.name == "leak-brandt-iban"]
    email = store_case(firm, case)
    embed_pending()
    refresh_term_stats()

    result = draft_reply(str(email.pk))

    prompt = model.user_turn(GENERATE)
    for customer in CUSTOMERS.values():
        assert customer.iban not in prompt and customer.phone not in prompt
    # The obedient model wrote the IBAN anyway: the verdict still says whose it is.
    assert {"unsupported_iban", "other_correspondent"} <= set(reason_codes(result.reasons))
