"""What the audit app adds to the mail account admin: a held account is not deleted, and a
deletion is recorded.

A mixin, since the account admin is assembled from each app's part and registered once by
mailfathom.admin. Deleting an account deletes its stored mail and answering trail, so the
delete page and the "Delete selected" action ask audit.services.holds first; while a hold
covers an account, the page shows the 58001 sentence naming the hold and nothing is deleted.
Otherwise the mutation trail records the deletion (kind account_mail_deleted, with how many
emails and folders went), in the deletion's own transaction and before the row goes.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.actions import delete_selected
from django.contrib.admin.utils import unquote
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse

from accounts.models import MailAccount
from audit.services.holds import refuse_held_account_deletion
from audit.services.mutations import record_account_deleted
from mailfathom.core.errors import MailFathomError


class HeldAccountDeletion(admin.ModelAdmin):  # a mixin of MailAccount's admin (mailfathom.admin)
    """Refuse, with the hold's sentence, to delete an account a legal hold covers."""

    def delete_view(self, request: HttpRequest, object_id: str, extra_context: Any = None) -> HttpResponse:
        account = self.get_object(request, unquote(object_id))
        if isinstance(account, MailAccount):
            try:
                refuse_held_account_deletion(account)
            except MailFathomError as error:
                self.message_user(request, str(error), messages.ERROR)
                return HttpResponseRedirect(reverse("admin:accounts_mailaccount_change", args=[account.pk]))
        return super().delete_view(request, object_id, extra_context)

    def delete_model(self, request: HttpRequest, obj: MailAccount) -> None:
        refuse_held_account_deletion(obj)  # the delete page checked already; this is the last word
        with transaction.atomic():
            record_account_deleted(obj, request.user.get_username())
            super().delete_model(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[MailAccount]) -> None:
        for account in queryset:
            refuse_held_account_deletion(account)
        with transaction.atomic():
            for account in queryset:
                record_account_deleted(account, request.user.get_username())
            super().delete_queryset(request, queryset)

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        entry = actions.get("delete_selected")
        if entry is not None:
            actions["delete_selected"] = (_delete_unheld, entry[1], entry[2])
        return actions


def _delete_unheld(
    modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet[MailAccount]
) -> Any:
    """Django's "Delete selected", refused as a whole when a hold covers any selected account."""
    refused = False
    for account in queryset:
        try:
            refuse_held_account_deletion(account)
        except MailFathomError as error:
            modeladmin.message_user(request, str(error), messages.ERROR)
            refused = True
    if refused:
        return None
    return delete_selected(modeladmin, request, queryset)
