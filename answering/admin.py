"""The review queue: drafts listed (pending first), and one review page per draft.

The list shows no mail content, so the model's view permission opens it. The review page
shows the answered mail and the draft side by side, and takes the draft's change
permission (`answering.change_draft`) and the permission to read mail
(`mailbox.view_mail_content`) even to look at. Approve, save-edit-and-approve,
discard and deliver-again call the use cases in answering.drafting.review; no page adds or
deletes a draft (the drafting run makes them; discarding is how one is dropped).
"""

from __future__ import annotations

import uuid
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import Case, IntegerField, QuerySet, Value, When
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.translation import ngettext

from accounts.models import DraftAppendMode
from answering.drafting import review
from answering.drafting.deliver import is_delivered, wants_copy
from answering.models import Draft, DraftStatus
from mailbox.admin_emails import MAIL_CONTENT_PERMISSION
from mailbox.models import ParticipantRole
from mailfathom.errors import MailFathomError

TEMPLATE = "admin/answering/draft/review.html"
ACTIONS = {
    "_approve": "approve",
    "_save_and_approve": "save_and_approve",
    "_discard": "discard",
    "_deliver_again": "deliver_again",
}


class ReviewForm(forms.Form):
    body = forms.CharField(
        label="Draft",
        strip=False,
        max_length=review.MAX_BODY_CHARS,
        widget=forms.Textarea(attrs={"rows": 24, "cols": 80, "spellcheck": "true"}),
    )


def server_state(draft: Draft) -> str:
    """Where the draft stands in the Drafts folder, in words for the reviewer."""
    if draft.account.drafting_append_mode == DraftAppendMode.OFF:
        return "kept in MailFathom (the account's Drafts-folder mode is off)"
    if is_delivered(draft):
        return f"in the Drafts folder (UID {draft.remote_uid})"
    if wants_copy(draft):
        return "not in the Drafts folder yet: deliver again"
    return "not written to the Drafts folder (only approved drafts are)"


@admin.register(Draft)
class DraftAdmin(admin.ModelAdmin):
    list_display = ["created_at", "status", "account", "intent", "verdict", "language", "on_server"]
    list_display_links = ["created_at"]
    list_filter = ["status", "verdict", "intent", "account"]
    list_select_related = ["account"]
    actions = ["deliver_again"]
    show_full_result_count = False

    def get_ordering(self, request: HttpRequest) -> list[Any]:
        pending_first = Case(
            When(status=DraftStatus.PENDING, then=Value(0)), default=Value(1), output_field=IntegerField()
        )
        return [pending_first.asc(), "created_at", "id"]

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        return super().changelist_view(request, {"title": "Drafts to review", **(extra_context or {})})

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    @admin.display(description="Drafts folder")
    def on_server(self, draft: Draft) -> str:
        if draft.account.drafting_append_mode == DraftAppendMode.OFF:
            return "-"
        if is_delivered(draft):
            return "delivered"
        return "not yet" if wants_copy(draft) else "-"

    @admin.action(
        description="Deliver the selected drafts to the Drafts folder again", permissions=["change"]
    )
    def deliver_again(self, request: HttpRequest, queryset: QuerySet[Draft]) -> None:
        delivered, failed = 0, 0
        for draft_id in queryset.values_list("pk", flat=True):
            result = review.deliver_again(draft_id, request.user)
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
        draft = self._draft(object_id)
        # The page shows the answered mail: reviewing needs the right to read mail too.
        if not self.has_change_permission(request, draft) or not request.user.has_perm(
            MAIL_CONTENT_PERMISSION
        ):
            raise PermissionDenied
        if request.method == "POST":
            return self._review(request, draft)
        return self._render(request, draft, ReviewForm(initial={"body": draft.body}))

    def _draft(self, object_id: str) -> Draft:
        try:
            pk = uuid.UUID(unquote(object_id))
        except ValueError:
            raise Http404("No draft has that identifier.") from None
        related = ("account", "email", "email__folder__mapping", "reviewed_by")
        draft = Draft.objects.select_related(*related).filter(pk=pk).first()
        if draft is None:
            raise Http404("No draft has that identifier.")
        return draft

    def _review(self, request: HttpRequest, draft: Draft) -> HttpResponse:
        action = next((name for key, name in ACTIONS.items() if key in request.POST), None)
        if action is None:
            return HttpResponseRedirect(request.path)
        form = ReviewForm(request.POST) if action == "save_and_approve" else None
        if form is not None and not form.is_valid():
            return self._render(request, draft, form)
        if action == "approve" and _normalized(request.POST.get("body")) not in (
            None,
            _normalized(draft.body),
        ):
            # Approving as it stands would silently drop what the reviewer typed.
            changed = ReviewForm(request.POST)
            changed.is_valid()
            changed.add_error(None, "The text was changed: use “Save edit and approve” to keep the change.")
            return self._render(request, draft, changed)
        try:
            if action == "approve":
                result = review.approve_draft(draft.pk, request.user)
            elif action == "save_and_approve":
                body = form.cleaned_data["body"]  # type: ignore[union-attr]
                result = review.edit_and_approve_draft(draft.pk, request.user, body)
            elif action == "discard":
                result = review.discard_draft(draft.pk, request.user)
            else:
                result = review.deliver_again(draft.pk, request.user)
        except MailFathomError as error:
            if form is not None and error.code == review.BODY_REFUSED:
                form.add_error("body", error.message)
                return self._render(request, draft, form)
            self.message_user(request, str(error), messages.ERROR)
            return HttpResponseRedirect(request.path)
        self._report(request, action, result)
        return HttpResponseRedirect(request.path)

    def _report(self, request: HttpRequest, action: str, result: review.ReviewResult) -> None:
        done = {
            "approve": "The draft is approved.",
            "save_and_approve": "The edit is saved and the draft approved.",
            "discard": "The draft is discarded.",
            "deliver_again": "The Drafts folder was checked.",
        }[action]
        if result.delivery_error is not None:
            kept = "" if action == "deliver_again" else f"{done} "
            self.message_user(
                request,
                f"{kept}The Drafts folder was not updated: {result.delivery_error}. "
                "Use “Deliver again” once the cause is fixed.",
                messages.ERROR,
            )
            return
        delivery = result.delivery
        if delivery is not None and (delivery.appended or delivery.found_existing):
            done += f" It is in the Drafts folder (UID {delivery.uid})."
        if delivery is not None and delivery.removed:
            done += f" {delivery.removed} earlier copy removed from the Drafts folder."
            if not delivery.expunged:
                done += " The server lacks UIDPLUS: it is marked deleted until the mail client expunges."
        self.message_user(request, done, messages.SUCCESS)

    def _render(self, request: HttpRequest, draft: Draft, form: ReviewForm) -> TemplateResponse:
        email = draft.email
        people = {role: [] for role in ParticipantRole.values}
        for person in email.participants.order_by("role", "position"):
            people[person.role].append(person)
        sources = list(draft.source_ids)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Review draft",
            "draft": draft,
            "email": email,
            "to": people[ParticipantRole.TO],
            "cc": people[ParticipantRole.CC],
            "reply_to": people[ParticipantRole.REPLY_TO],
            "reasons": [_reason_text(reason) for reason in draft.reasons or []],
            "sources": sources,
            "form": form,
            "server_state": server_state(draft),
            "can_approve": draft.status == DraftStatus.PENDING,
            "can_edit": draft.status != DraftStatus.DISCARDED,
            "can_discard": draft.status == DraftStatus.PENDING,
            "can_deliver": wants_copy(draft),
            "changelist_url": reverse("admin:answering_draft_changelist"),
            "has_view_permission": True,
        }
        return TemplateResponse(request, TEMPLATE, context)


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


from answering import admin_references  # noqa: E402,F401  (reference documents, registered on import)
