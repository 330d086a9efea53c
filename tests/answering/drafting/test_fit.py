"""fit: the budget follows the retrieval settings under the 12,000-token ceiling, and the drop order.

The property test states the order for any sizes: examples go first and all at once; then
the oldest thread messages one at a time, never the last one; then sources from the
bottom; nothing is dropped that did not need to be; and whenever the never-dropped parts
and one thread message fit, the result fits.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from answering.drafting.checks import check_drafting_budget
from answering.drafting.fit import (
    CEILING_TOKENS,
    EXAMPLES,
    SOURCE,
    TAIL,
    Parts,
    budget_problems,
    budget_tokens,
    estimate_tokens,
    fit,
)
from answering.drafting.generate import longest_instruction
from mailfathom.core.config import MailFathomSettings
from tests.configure import configure

INSTRUCTION = estimate_tokens(longest_instruction())
DEFAULTS = MailFathomSettings()


def test_the_shipped_defaults_sit_under_the_ceiling_and_pass_the_startup_check():
    assert budget_tokens(DEFAULTS, INSTRUCTION) < CEILING_TOKENS
    assert budget_problems(DEFAULTS, INSTRUCTION) == []


def test_more_sources_make_more_room_until_the_ceiling():
    budgets = [budget_tokens(DEFAULTS.replace(drafting_sources_per_draft=n), INSTRUCTION) for n in (1, 4, 8)]
    assert budgets == sorted(budgets) and len(set(budgets)) == 3
    many = DEFAULTS.replace(drafting_sources_per_draft=20, drafting_characters_per_source=4000)
    assert budget_tokens(many, INSTRUCTION) == CEILING_TOKENS


def test_a_setting_that_would_retrieve_more_than_the_prompt_holds_is_refused_at_startup(settings):
    configure(settings, drafting_sources_per_draft=20, drafting_characters_per_source=4000)

    (error,) = check_drafting_budget()

    assert error.id == "mailfathom.E030"
    assert "MAILFATHOM_DRAFTING_SOURCES_PER_DRAFT (20)" in error.msg and "12000 tokens" in error.msg


def test_what_fits_is_left_whole():
    plan = fit(Parts(fixed=100, examples=(50,), tail=(10, 10), sources=(20, 20)), budget=1000)
    assert plan.dropped == () and plan.keep_examples and plan.tail_from == 0 and plan.sources_kept == 2


def test_examples_go_first_and_together():
    plan = fit(Parts(fixed=100, examples=(300, 300), tail=(10, 10), sources=(20, 20)), budget=200)
    assert plan.dropped == (EXAMPLES,) and not plan.keep_examples and plan.tail_from == 0


def test_then_the_oldest_thread_messages_never_the_last_then_the_worst_sources():
    parts = Parts(fixed=100, examples=(50,), tail=(40, 40, 40), sources=(30, 30, 30))
    plan = fit(parts, budget=150)
    assert plan.dropped == (EXAMPLES, TAIL, TAIL, SOURCE, SOURCE, SOURCE)
    assert plan.tail_from == 2 and plan.sources_kept == 0 and plan.tokens == 140 and plan.fits


def test_the_answered_mail_is_never_dropped_even_when_nothing_else_can_go():
    plan = fit(Parts(fixed=500, examples=(), tail=(), sources=(10,)), budget=100)
    assert not plan.fits and plan.dropped == (SOURCE,) and plan.tokens == 500


_sizes = st.lists(st.integers(min_value=0, max_value=3000), max_size=12)


@hypothesis_settings(max_examples=400, deadline=None)
@given(
    fixed=st.integers(min_value=0, max_value=12000),
    examples=st.lists(st.integers(min_value=0, max_value=4000), max_size=6),
    tail=_sizes,
    sources=_sizes,
    budget=st.integers(min_value=1, max_value=CEILING_TOKENS),
)
def test_for_any_sizes_the_order_holds_and_the_prompt_fits(fixed, examples, tail, sources, budget):
    parts = Parts(fixed=fixed, examples=tuple(examples), tail=tuple(tail), sources=tuple(sources))
    plan = fit(parts, budget)

    # The order: examples (once, first), then tail drops, then source drops; never interleaved.
    order = {EXAMPLES: 0, TAIL: 1, SOURCE: 2}
    assert list(plan.dropped) == sorted(plan.dropped, key=order.__getitem__)
    assert plan.dropped.count(EXAMPLES) <= 1
    assert plan.tail_from == plan.dropped.count(TAIL)
    assert plan.sources_kept == len(sources) - plan.dropped.count(SOURCE)
    if tail:
        assert plan.tail_from <= len(tail) - 1, "never below one thread message"
    kept = fixed + (sum(examples) if plan.keep_examples else 0) + sum(tail[plan.tail_from :])
    kept += sum(sources[: plan.sources_kept])
    assert plan.tokens == kept

    # It fits whenever the never-dropped parts and the newest thread message do.
    floor = fixed + (tail[-1] if tail else 0)
    assert plan.fits == (plan.tokens <= budget)
    if floor <= budget:
        assert plan.fits
    else:
        assert plan.sources_kept == 0 and not plan.keep_examples or not (examples or sources)

    # Nothing went that did not need to: before the last drop, it did not fit.
    if plan.dropped:
        last = plan.dropped[-1]
        restored = (
            plan.tokens
            + {
                EXAMPLES: sum(examples),
                TAIL: tail[plan.tail_from - 1] if plan.tail_from else 0,
                SOURCE: sources[plan.sources_kept] if plan.sources_kept < len(sources) else 0,
            }[last]
        )
        assert restored > budget
