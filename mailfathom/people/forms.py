"""The search, ask and login forms: what a person types, turned into the use cases' arguments.

The forms check nothing the use cases check: every bound and every refusal (its five-digit
code and sentence) is the use case's, as for the MCP tools. A form only turns text into the
values a tool call would carry: a date into an instant (midnight in the deployment's time
zone), a tri-state choice into true or false, a number into a whole number (anything else
is handed on for the use case to refuse).
"""

from __future__ import annotations

import re
from datetime import date, datetime, time
from typing import Any

from django import forms
from django.contrib.auth.forms import AuthenticationForm
from django.utils import timezone

from answering.services.question import MAX_QUESTION_CHARACTERS
from mailbox.services import search
from mailbox.services.directory import DirectoryAccount
from mailbox.services.mail_filter import MailFilter, read_filter
from mailfathom.login_throttle import ThrottledAdminLoginForm

ANY, YES, NO = "", "yes", "no"
_FLAGS = {ANY: None, YES: True, NO: False}
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_WHOLE_NUMBER = re.compile(r"[+-]?\d{1,9}")

# The form's fields by the argument names the use cases' sentences use, so a refusal can
# point at the field it is about.
LABELS = {
    "queryText": "Search for",
    "senderAddress": "From",
    "recipientAddress": "To or Cc",
    "subjectFragment": "Subject contains",
    "receivedOnOrAfter": "Received on or after",
    "receivedBefore": "Received before",
    "hasAttachments": "Attachments",
    "isRemotelySeen": "Read state",
    "resultLimit": "Results",
    "accounts": "Accounts",
    "question": "Question",
}


class AnyNameMultipleChoiceField(forms.MultipleChoiceField):
    """Account names, offered as the person's accounts; any name is handed on, for scope
    resolution to answer as it answers a tool (53001 for one the person may not read)."""

    def valid_value(self, value: str) -> bool:
        return True


def _accounts_field() -> AnyNameMultipleChoiceField:
    return AnyNameMultipleChoiceField(
        label=LABELS["accounts"],
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: every account you may read.",
    )


def _text(name: str, *, input_type: str = "text", **attrs: Any) -> forms.CharField:
    widget = forms.TextInput(attrs={"type": input_type, **attrs})
    return forms.CharField(label=LABELS[name], required=False, strip=False, widget=widget)


def _tri_state(name: str, yes: str, no: str) -> forms.CharField:
    choices = [(ANY, "Either"), (YES, yes), (NO, no)]
    return forms.CharField(label=LABELS[name], required=False, widget=forms.Select(choices=choices))


class _Scoped(forms.Form):
    def __init__(self, *args: Any, accounts: list[DirectoryAccount], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["accounts"]
        assert isinstance(field, forms.MultipleChoiceField)
        field.choices = [(account.account_id, account.display_name) for account in accounts]

    def _accounts(self) -> list[str] | None:
        return list(self.cleaned_data["accounts"]) or None


class SearchForm(_Scoped):
    q = _text("queryText", input_type="search", maxlength=search.MAX_QUERY_CHARACTERS)
    sender = _text("senderAddress", input_type="email")
    recipient = _text("recipientAddress", input_type="email")
    subject = _text("subjectFragment")
    after = _text("receivedOnOrAfter", input_type="date")
    before = _text("receivedBefore", input_type="date")
    attachments = _tri_state("hasAttachments", "With attachments", "Without attachments")
    seen = _tri_state("isRemotelySeen", "Read", "Unread")
    limit = _text(
        "resultLimit", input_type="number", min=search.MIN_RESULT_LIMIT, max=search.MAX_RESULT_LIMIT
    )
    accounts = _accounts_field()

    def search_arguments(self) -> dict[str, Any]:
        """search_emails' keyword arguments; the filter's own reading may refuse (51002)."""
        data = self.cleaned_data
        return {
            "query_text": data["q"],
            "accounts": self._accounts(),
            "mail_filter": self.mail_filter(),
            "result_limit": _whole_number(data["limit"]),
        }

    def mail_filter(self) -> MailFilter:
        data = self.cleaned_data
        return read_filter(
            {
                "senderAddress": data["sender"] or None,
                "recipientAddress": data["recipient"] or None,
                "subjectFragment": data["subject"] or None,
                "receivedOnOrAfter": _instant(data["after"]),
                "receivedBefore": _instant(data["before"]),
                "hasAttachments": _flag(data["attachments"]),
                "isRemotelySeen": _flag(data["seen"]),
            }
        )


class AskForm(_Scoped):
    question = forms.CharField(
        label=LABELS["question"],
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 3, "maxlength": MAX_QUESTION_CHARACTERS}),
    )
    accounts = _accounts_field()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("auto_id", "ask_%s")  # beside the search form on one page
        super().__init__(*args, **kwargs)

    def ask_arguments(self) -> dict[str, Any]:
        """ask_mail's keyword arguments."""
        return {"question": self.cleaned_data["question"], "accounts": self._accounts()}


def _instant(text: str) -> str | None:
    """A date as midnight in the deployment's time zone; other text as written (an ISO 8601
    instant is read as the tools read it, anything else refused by the filter's reader)."""
    if not text:
        return None
    if _DATE.fullmatch(text):
        try:
            day = date.fromisoformat(text)
        except ValueError:
            return text
        return datetime.combine(day, time(), tzinfo=timezone.get_current_timezone()).isoformat()
    return text


def _flag(choice: str) -> object:
    """True, False or None for the offered choices; any other text is handed to the filter's
    reader, which refuses it as a tool call's non-boolean (51002)."""
    return _FLAGS.get(choice, choice)


def _whole_number(text: str) -> object:
    """An int for a whole number; None when empty; other text as it is, for the use case to
    refuse (51003) as it refuses a tool call's."""
    if not text:
        return None
    return int(text) if _WHOLE_NUMBER.fullmatch(text.strip()) else text


class PersonLoginForm(ThrottledAdminLoginForm):
    """Admin's throttled login form, open to people who are not staff."""

    error_messages = {
        **ThrottledAdminLoginForm.error_messages,
        "invalid_login": AuthenticationForm.error_messages["invalid_login"],
    }

    def confirm_login_allowed(self, user: Any) -> None:
        AuthenticationForm.confirm_login_allowed(self, user)
