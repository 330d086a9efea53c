"""The append never fails the answer: ask_mail in process, so our own seam can be made to fail.

In process rather than over /mcp because a monkeypatch cannot reach the uvicorn process;
the model is still the scripted server reached by the real `openai` client.
"""

from __future__ import annotations

import logging

import pytest

from answering.services.question import ask_mail
from audit.models import AnsweringRunEntry
from audit.services import answering_trail
from tests.audit.support import keep_answering_trail
from tests.conftest import metric_points

pytestmark = pytest.mark.django_db

QUESTION = "What did the insurer finally agree to pay?"
ONE_API = pytest.mark.parametrize("chat_api", ["chat-completions"], indirect=True)


def _refused_appends(reader) -> float:
    return sum(
        value or 0
        for name, _attributes, value in metric_points(reader)
        if name == "mailfathom.answering.audit.refused_appends"
    )


@ONE_API
def test_a_refused_append_leaves_the_answer_intact_warns_with_the_run_id_and_is_counted(
    world, obedient, chat_api, metric_reader, monkeypatch, caplog
):
    world()
    keep_answering_trail("work")
    before = _refused_appends(metric_reader)

    def refuse(run):
        raise RuntimeError("the audit table is unavailable")

    monkeypatch.setattr(answering_trail, "_append", refuse)
    with caplog.at_level(logging.WARNING, logger="audit.services.answering_trail"):
        result = ask_mail(QUESTION, accounts=["work"])

    assert result.answer.startswith("The insurer agreed to pay 2,300 euros.") and result.citations
    assert _refused_appends(metric_reader) == before + 1
    (warning,) = [r for r in caplog.records if r.name == "audit.services.answering_trail"]
    assert warning.levelno == logging.WARNING
    assert warning.getMessage().startswith("answering audit: the entries of run ")
    assert QUESTION not in warning.getMessage() and "2,300" not in warning.getMessage()
    assert not AnsweringRunEntry.objects.exists()


@ONE_API
def test_an_appended_entry_is_written_beside_the_answer_in_process(world, obedient, chat_api):
    world()
    keep_answering_trail("work")

    result = ask_mail(QUESTION, accounts=["work"])

    (entry,) = AnsweringRunEntry.objects.all()
    assert [str(e) for e in entry.emails.order_by("position").values_list("email_id", flat=True)] == [
        c.stored_email_id for c in result.citations
    ]
