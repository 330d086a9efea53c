"""The review queue: drafts listed (pending first, oldest mail first), and one review page per draft.

A person sees the drafts of the accounts they hold a role on (accounts.services.people). The
answered mail's subject and sender, and the review page, take the permission to read mail
besides; approving takes the owner's role. The page's buttons call answering.drafting.review.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import Case, F, Func, IntegerField, QuerySet, Value, When
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import formats, timezone
from django.utils.html import format_html
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from accounts.admin_people import PeopleScoped
from accounts.models import DraftAppendMode
from accounts.services import people
from answering import (
    admin_references,  # noqa: F401  (registers itself)
    review_page,
)
from answering.drafting import review
from answering.drafting.deliver import is_delivered, wants_copy
from answering.models import Draft, DraftStatus, Verdict
from mailbox.admin_emails import MAIL_CONTENT_PERMISSION
from mailbox.models import ParticipantRole
from mailfathom.core.errors import MailFathomError

if TYPE_CHECKING:  # the admin's own return types, declared by django-stubs only
    from django.contrib.admin.options import _ListDisplayT


TEMPLATE = "admin/answering/draft/review.html"
ACTIONS = {
    "_approve": "approve",
    "_save": "save",
    "_save_and_approve": "save_and_approve",
    "_discard": "discard",
    "_deliver_again": "deliver_again",
}
EDITS = ("save", "save_and_approve")
APPROVALS = ("approve", "save_and_approve")
SUBJECT_CHARACTERS = 80
SENDER_CHARACTERS = 48
NO_SUBJECT = _("(no subject)")
# The answered mail's columns a queue row never shows (its body, the index) and, without
# the permission to read mail, those it shows only with it.
UNSHOWN = ("email__text_body", "email__search_vector", "email__participants_text", "email__references")
CONTENT = (
    "email__subject",
    "email__sender_name",
    "email__sender_address",
    "email__message_id",
    "email__in_reply_to",
)
METADATA_LIST = ["received", "status", "verdict_badge", "reason_count", "account", "intent", "on_server"]
CONTENT_LIST = ["received", "subject", "sender", *METADATA_LIST[1:]]


class ReviewForm(forms.Form):
    body = forms.CharField(
        label=_("Draft"),
        strip=False,
        max_length=review.MAX_BODY_CHARS,
        widget=forms.Textarea(attrs={"rows": 24, "cols": 80, "spellcheck": "true"}),
    )


def server_state(draft: Draft) -> str:
    """Where the draft stands in the Drafts folder, in words for the reviewer."""
    if draft.account.drafting_append_mode == DraftAppendMode.OFF:
        return gettext("kept in MailFathom (the account's Drafts-folder mode is off)")
    if is_delivered(draft):
        return gettext("in the Drafts folder (UID %(uid)s)") % {"uid": draft.remote_uid}
    if wants_copy(draft):
        return gettext("not in the Drafts folder yet: deliver again")
    if draft.status == DraftStatus.PENDING and draft.verdict != Verdict.READY:
        return gettext(
            "not written to the Drafts folder (a draft that needs review goes there only once approved)"
        )
    return gettext("not written to the Drafts folder (only approved drafts are)")


def verdict_badge_html(verdict: str, label: str) -> str:
    """The verdict as a badge whose colours are readable in both admin themes (verdict_style.html)."""
    mark = "\u2713" if verdict == Verdict.READY else "!"
    return format_html(
        '<span class="verdict-badge verdict-{}"><span aria-hidden="true">{}</span> {}</span>',
        verdict,
        mark,
        label,
    )


def _cut(text: str, characters: int) -> str:
    return text if len(text) <= characters else text[: characters - 1] + "\u2026"


def _may_read_mail(request: HttpRequest) -> bool:
    return request.user.has_perm(MAIL_CONTENT_PERMISSION)


def _may_approve(request: HttpRequest, draft: Draft) -> bool:
    """Approving is the owner's (accounts.services.people), on top of the draft's change permission."""
    return people.within(people.approvable_accounts(request.user), draft.account_id)


class ReasonCount(Func):
    """The number of reasons stored on a draft (0 for anything but a JSON array)."""

    template = (
        "jsonb_array_length(CASE WHEN jsonb_typeof(%(expressions)s) = 'array' "
        "THEN %(expressions)s ELSE '[]'::jsonb END)"
    )
    output_field = IntegerField()


@admin.register(Draft)
class DraftAdmin(PeopleScoped):
    account_roles = people.REVIEW_ROLES
    list_filter = ["status", "verdict", "account", "intent"]
    list_select_related = ["account", "email"]
    actions = ["deliver_again"]
    show_full_result_count = False

    def get_list_display(self, request: HttpRequest) -> _ListDisplayT[Draft]:
        return list(CONTENT_LIST if _may_read_mail(request) else METADATA_LIST)

    def get_list_display_links(
        self, request: HttpRequest, list_display: _ListDisplayT[Draft]
    ) -> _ListDisplayT[Draft]:
        return ["received"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Draft]:
        hidden = UNSHOWN if _may_read_mail(request) else UNSHOWN + CONTENT
        return super().get_queryset(request).defer(*hidden).annotate(reason_total=ReasonCount(F("reasons")))

    def get_ordering(self, request: HttpRequest) -> list[Any]:
        pending_first = Case(
            When(status=DraftStatus.PENDING, then=Value(0)), default=Value(1), output_field=IntegerField()
        )
        return [pending_first.asc(), "email__received_at", "id"]

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        return super().changelist_view(
            request, {"title": gettext("Drafts to review"), **(extra_context or {})}
        )

    # The drafting run makes drafts and discarding drops one: no page adds or deletes them.
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    # --- columns ---------------------------------------------------------------------------

    @admin.display(description=_("received"), ordering="email__received_at")
    def received(self, draft: Draft) -> str:
        return formats.date_format(timezone.localtime(draft.email.received_at), "Y-m-d H:i")

    @admin.display(description=_("subject"), ordering="email__subject")
    def subject(self, draft: Draft) -> str:
        subject = draft.email.subject.strip()
        return format_html(
            '<span title="{}">{}</span>', subject, _cut(subject, SUBJECT_CHARACTERS) or str(NO_SUBJECT)
        )

    @admin.display(description=_("from"), ordering="email__sender_address")
    def sender(self, draft: Draft) -> str:
        email = draft.email
        if email.sender_name and email.sender_address:
            shown = f"{email.sender_name} <{email.sender_address}>"
        else:
            shown = email.sender_name or email.sender_address
        return format_html('<span title="{}">{}</span>', shown, _cut(shown, SENDER_CHARACTERS) or "-")

    @admin.display(description=_("verdict"), ordering="verdict")
    def verdict_badge(self, draft: Draft) -> str:
        return verdict_badge_html(draft.verdict, draft.get_verdict_display())

    @admin.display(description=_("reasons"), ordering="reason_total")
    def reason_count(self, draft: Draft) -> int:
        return getattr(draft, "reason_total", len(draft.reasons or []))

    @admin.display(description=_("Drafts folder"))
    def on_server(self, draft: Draft) -> str:
        if draft.account.drafting_append_mode == DraftAppendMode.OFF:
            return "-"
        if is_delivered(draft):
            return gettext("delivered")
        return gettext("not yet") if wants_copy(draft) else "-"

    @admin.action(
        description=_("Deliver the selected drafts to the Drafts folder again"), permissions=["change"]
    )
    def deliver_again(self, request: HttpRequest, queryset: QuerySet[Draft]) -> None:
        user = request.user
        assert user.is_authenticated  # the admin serves staff only
        delivered, failed = 0, 0
        for draft_id in queryset.values_list("pk", flat=True):
            result = review.deliver_again(draft_id, user)
            if result.delivery_error is None:
                delivered += 1
            else:
                failed += 1
        if delivered:
            self.message_user(
                request,
                ngettext(
                    "%(n)d draft checked in the Drafts folder.",
                    "%(n)d drafts checked in the Drafts folder.",
                    delivered,
                )
                % {"n": delivered},
                messages.SUCCESS,
            )
        if failed:
            self.message_user(
                request,
                ngettext(
                    "%(n)d draft could not be delivered; open it to see why.",
                    "%(n)d drafts could not be delivered; open each to see why.",
                    failed,
                )
                % {"n": failed},
                messages.ERROR,
            )

    # --- the review page (replaces the change form) ----------------------------------------

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        # Not wrapped in a transaction like the stock change form: a review is committed
        # before the Drafts folder is written, so a failed delivery keeps it.
        draft = self._draft(request, object_id)
        # The page shows the answered mail: reviewing needs the right to read mail too.
        if not self.has_change_permission(request, draft) or not _may_read_mail(request):
            raise PermissionDenied
        if request.method == "POST":
            return self._review(request, draft)
        return self._render(request, draft, ReviewForm(initial={"body": draft.body}))

    def _draft(self, request: HttpRequest, object_id: str) -> Draft:
        """The draft, if it is one of the person's accounts'; else 404, as for no such draft."""
        try:
            pk = uuid.UUID(unquote(object_id))
        except ValueError:
            raise Http404(gettext("No draft has that identifier.")) from None
        related = ("account", "email", "email__folder__mapping", "reviewed_by")
        drafts = people.limited(Draft.objects.select_related(*related), self.account_limit(request))
        draft = drafts.filter(pk=pk).first()
        if draft is None:
            raise Http404(gettext("No draft has that identifier."))
        return draft

    def _review(self, request: HttpRequest, draft: Draft) -> HttpResponse:
        action = next((name for key, name in ACTIONS.items() if key in request.POST), None)
        if action is None:
            return HttpResponseRedirect(request.path)
        if action in APPROVALS and not _may_approve(request, draft):
            raise PermissionDenied
        acknowledged = request.POST.getlist("acknowledged")
        form = ReviewForm(request.POST) if action in EDITS else None
        if form is not None and not form.is_valid():
            return self._render(request, draft, form, acknowledged=acknowledged)
        if action == "approve" and _normalized(request.POST.get("body")) not in (
            None,
            _normalized(draft.body),
        ):
            # Approving as it stands would silently drop what the reviewer typed.
            changed = ReviewForm(request.POST)
            changed.is_valid()
            changed.add_error(
                None, gettext("The text was changed: use “Save edit” or “Save edit and approve” to keep it.")
            )
            return self._render(request, draft, changed, acknowledged=acknowledged)
        body = form.cleaned_data["body"] if form is not None else ""
        user = request.user
        assert user.is_authenticated  # the admin serves staff only
        try:
            if action == "approve":
                result = review.approve_draft(draft.pk, user, acknowledged)
            elif action == "save":
                result = review.save_draft_edit(draft.pk, user, body)
            elif action == "save_and_approve":
                result = review.edit_and_approve_draft(draft.pk, user, body, acknowledged)
            elif action == "discard":
                result = review.discard_draft(draft.pk, user)
            else:
                result = review.deliver_again(draft.pk, user)
        except MailFathomError as error:
            if form is not None and error.code == review.BODY_REFUSED:
                form.add_error("body", error.message)
                return self._render(request, draft, form, acknowledged=acknowledged)
            if error.code == review.ACKNOWLEDGEMENT_REQUIRED:
                return self._acknowledgement_refused(request, draft, form, acknowledged, error)
            self.message_user(request, str(error), messages.ERROR)
            return HttpResponseRedirect(request.path)
        self._report(request, action, result)
        return HttpResponseRedirect(request.path)

    def _acknowledgement_refused(
        self,
        request: HttpRequest,
        draft: Draft,
        form: ReviewForm | None,
        acknowledged: list[str],
        error: MailFathomError,
    ) -> TemplateResponse:
        """The page again, with what was typed kept and the reasons that version must have acknowledged."""
        if form is None:
            form = ReviewForm({"body": draft.body})
            form.is_valid()
            reasons = review.open_reasons(draft)
            edited = False
        else:
            body = form.cleaned_data["body"]
            reasons = review.assessment_of(draft.pk, body)
            edited = _normalized(body) != _normalized(draft.body)
        form.add_error(None, str(error))
        return self._render(
            request, draft, form, acknowledge=reasons, acknowledged=acknowledged, acknowledge_edited=edited
        )

    def _report(self, request: HttpRequest, action: str, result: review.ReviewResult) -> None:
        done = {
            "approve": gettext("The draft is approved."),
            "save": _changes(result),
            "save_and_approve": gettext("The edit is saved and the draft approved."),
            "discard": gettext("The draft is discarded."),
            "deliver_again": gettext("The Drafts folder was checked."),
        }[action]
        # Whole sentences, each translated on its own, joined by a space.
        if result.delivery_error is not None:
            failure = gettext(
                "The Drafts folder was not updated: %(error)s. Use “Deliver again” once the cause is fixed."
            ) % {"error": result.delivery_error}
            self.message_user(
                request,
                failure if action == "deliver_again" else f"{done} {failure}",
                messages.ERROR,
            )
            return
        delivery = result.delivery
        if delivery is not None and (delivery.appended or delivery.found_existing):
            done += " " + gettext("It is in the Drafts folder (UID %(uid)s).") % {"uid": delivery.uid}
        if delivery is not None and delivery.removed:
            done += " " + ngettext(
                "%(count)s earlier copy removed from the Drafts folder.",
                "%(count)s earlier copies removed from the Drafts folder.",
                delivery.removed,
            ) % {"count": delivery.removed}
            if not delivery.expunged:
                done += " " + gettext(
                    "The server lacks UIDPLUS: it is marked deleted until the mail client expunges."
                )
        needs_review = action == "save" and result.draft.verdict != Verdict.READY
        self.message_user(request, done, messages.WARNING if needs_review else messages.SUCCESS)

    def _render(
        self,
        request: HttpRequest,
        draft: Draft,
        form: ReviewForm,
        *,
        acknowledge: list[str] | None = None,
        acknowledged: Sequence[str] = (),
        acknowledge_edited: bool = False,
    ) -> TemplateResponse:
        email = draft.email
        people: dict[str, list[Any]] = {role: [] for role in ParticipantRole.values}
        for person in email.participants.order_by("role", "position"):
            people[person.role].append(person)
        sources = review_page.sources_of(draft)
        recipients = review_page.recipients_of(email, people)
        pending = draft.status == DraftStatus.PENDING
        may_approve = _may_approve(request, draft)
        can_edit = draft.status != DraftStatus.DISCARDED
        if acknowledge is None:
            acknowledge = review.open_reasons(draft) if can_edit else []
        ticked = set(acknowledged)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": gettext("Review draft"),
            "draft": draft,
            "email": email,
            "to": people[ParticipantRole.TO],
            "cc": people[ParticipantRole.CC],
            "reply_to": people[ParticipantRole.REPLY_TO],
            "recipients": recipients,
            # Joined here: a sentence to translate holds the list as one placeholder.
            "reply_addresses": ", ".join(person.address for person in recipients.to),
            "not_copied_addresses": ", ".join(person.address for person in recipients.not_copied),
            "verdict_badge": verdict_badge_html(draft.verdict, draft.get_verdict_display()),
            "needs_review": draft.verdict != Verdict.READY,
            "reasons": [_reason_text(reason) for reason in draft.reasons or []],
            "acknowledge": [(reason, reason in ticked) for reason in acknowledge],
            "acknowledge_edited": acknowledge_edited,
            "acknowledgements": [entry for entry in draft.acknowledgements or [] if isinstance(entry, dict)],
            "sources": sources,
            "marked_body": review_page.marked_body(draft, sources),
            "flagged": len(draft.findings or []),
            "form": form,
            "server_state": server_state(draft),
            "can_approve": pending and may_approve,
            "can_save": pending,
            "can_edit": can_edit,
            "can_edit_and_approve": can_edit and may_approve,
            "can_discard": pending,
            "can_deliver": wants_copy(draft),
            "changelist_url": reverse("admin:answering_draft_changelist"),
            "has_view_permission": True,
        }
        return TemplateResponse(request, TEMPLATE, context)


def _changes(result: review.ReviewResult) -> str:
    """What a saved edit did to the verdict, by reason code."""
    verdict = result.draft.get_verdict_display()
    if not result.added and not result.cleared:
        return gettext("The edit is saved. The verdict stayed the same: %(verdict)s.") % {"verdict": verdict}
    added = review_page.code_summary(result.added)
    cleared = review_page.code_summary(result.cleared)
    if result.added and result.cleared:
        changed = gettext("Added: %(added)s; cleared: %(cleared)s.") % {"added": added, "cleared": cleared}
    elif result.added:
        changed = gettext("Added: %(added)s.") % {"added": added}
    else:
        changed = gettext("Cleared: %(cleared)s.") % {"cleared": cleared}
    return gettext("The edit is saved and judged again. %(changed)s The verdict is now %(verdict)s.") % {
        "changed": changed,
        "verdict": verdict,
    }


def _normalized(body: str | None) -> str | None:
    # Browsers send a textarea's line ends as CRLF; the stored body may use LF.
    return None if body is None else body.replace("\r\n", "\n")


def _reason_text(reason: object) -> str:
    """A verdict reason as one line: strings as they are, mappings as their values joined."""
    if isinstance(reason, dict):
        return ": ".join(str(value) for value in reason.values() if value not in (None, ""))
    if isinstance(reason, list | tuple):
        return ": ".join(str(part) for part in reason)
    return str(reason)
