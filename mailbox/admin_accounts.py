"""What synchronization adds to the mail account admin: its status and "Synchronize now".

accounts.admin.MailAccountAdmin knows accounts only (accounts stands below mailbox). This
subclass adds each account's state, last committed progress to the second, messages stored
against the server's count, the last failure's sentence, and a button and an action that
queue a forced run (a run creates the folder rows from the mappings, so both work before
the first one). mailfathom.admin registers the account admin once, built from this class.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.template.loader import render_to_string
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from accounts.admin import MailAccountAdmin
from accounts.models import MailAccount
from mailbox import tasks
from mailbox.services.sync_status import AccountStatus, SyncState, account_status, account_statuses
from mailfathom.core import instants

if TYPE_CHECKING:  # the admin's own return types, declared by django-stubs only
    from django.contrib.admin.options import _FieldsetSpec

NOT_READY = {
    "no-mapping": _("%(name)s has no mapped folder yet: use “Test connection and map folders” first."),
    "disabled": _("%(name)s is not served or its synchronization is off, so no run was queued."),
}


def readiness(account: MailAccount, status: AccountStatus | None) -> str:
    """ "" when a run can be queued for `account`, else a key of NOT_READY."""
    if not (account.served and account.sync_enabled):
        return "disabled"
    if status is None or not status.mapped_folders:
        return "no-mapping"
    return ""


class SynchronizedMailAccountAdmin(MailAccountAdmin):
    # Compact, counts before the wide columns: at 1280 px beside the filter column every
    # figure stays on screen (docs/operations/status.md).
    list_display = [
        "account_id",
        "display_name",
        "sync_state",
        "messages",
        "last_sync",
        "mode",
        "last_error",
    ]

    class Media:
        css = {"all": ["mailfathom/account_list.css"]}

    actions = ["synchronize_now"]
    change_form_template = "admin/accounts/mailaccount/change_form_with_sync.html"

    # --- the list: statuses for the page's rows, read once ----------------------------

    def get_changelist_instance(self, request: HttpRequest) -> ChangeList:
        changelist = super().get_changelist_instance(request)
        rows = list(changelist.result_list)  # evaluated here; the template reuses the same rows
        statuses = {s.account_pk: s for s in account_statuses([row.pk for row in rows])}
        for row in rows:
            row.sync_status = statuses.get(row.pk)
        return changelist

    @staticmethod
    def _status(obj: MailAccount) -> AccountStatus | None:
        found = getattr(obj, "sync_status", None)
        if found is None and obj.pk is not None:
            found = obj.sync_status = account_status(obj.pk)  # type: ignore[attr-defined]  # cached on the instance for the page
        return found

    @admin.display(description=_("state"))
    def sync_state(self, obj: MailAccount) -> SafeString | str:
        status = self._status(obj)
        if status is None:
            return "–"
        return format_html('<span class="sync-state" data-state="{}">{}</span>', status.state, status.state)

    @admin.display(description=_("last sync"))
    def last_sync(self, obj: MailAccount) -> SafeString | str:
        status = self._status(obj)
        if status is None or status.last_committed_at is None:
            return gettext("never")
        return format_html(
            '<time datetime="{}" title="{}">{}</time>',
            status.last_committed_at.isoformat(),
            instants.to_the_second(status.last_committed_at),
            instants.relative(status.last_committed_at),
        )

    @admin.display(description=_("stored / server"))
    def messages(self, obj: MailAccount) -> SafeString | str:
        status = self._status(obj)
        if status is None:
            return "–"
        server = "–" if status.server is None else f"{status.server:,}"
        return format_html(
            '<span class="sync-counts" data-stored="{}" data-server="{}">{} / {}</span>',
            status.stored,
            "" if status.server is None else status.server,
            f"{status.stored:,}",
            server,
        )

    @admin.display(description=_("mode"), ordering="sync_mode")
    def mode(self, obj: MailAccount) -> str:
        return obj.sync_mode  # "polling" or "push": the long label would widen the column

    @admin.display(description=_("last error"))
    def last_error(self, obj: MailAccount) -> str:
        status = self._status(obj)
        return status.failure_sentence if status and status.failure_sentence else "–"

    # --- the change page ---------------------------------------------------------------

    def get_fieldsets(self, request: HttpRequest, obj: MailAccount | None = None) -> _FieldsetSpec:
        fieldsets = super().get_fieldsets(request, obj)
        if obj is None:
            return fieldsets
        return [(_("Synchronization status"), {"fields": ["synchronization_status"]}), *fieldsets]

    def get_readonly_fields(self, request: HttpRequest, obj: MailAccount | None = None) -> list[str]:
        fields = super().get_readonly_fields(request, obj)
        return [*fields, "synchronization_status"] if obj is not None else fields

    @admin.display(description=_("Status"))
    def synchronization_status(self, obj: MailAccount) -> SafeString:
        status = self._status(obj)
        return render_to_string(
            "admin/accounts/mailaccount/sync_status.html",
            {"status": status, "never": SyncState.NEVER},
        )

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        extra = dict(extra_context or {})
        if self.has_change_permission(request):
            extra["sync_now_url"] = reverse("admin:accounts_mailaccount_synchronize", args=[object_id])
        return super().change_view(request, object_id, form_url, extra)

    def get_urls(self) -> list[URLPattern]:
        custom = [
            path(
                "<path:object_id>/synchronize/",
                self.admin_site.admin_view(self.synchronize_view),
                name="accounts_mailaccount_synchronize",
            )
        ]
        return custom + super().get_urls()

    def synchronize_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """POST: queue a forced run of this account and return to its page (404, 403, 405)."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        account = self.get_object(request, unquote(object_id))
        if account is None:
            raise Http404("No mail account with this identifier.")
        if not self.has_change_permission(request, account):
            raise PermissionDenied
        self._queue(request, [account])
        return HttpResponseRedirect(reverse("admin:accounts_mailaccount_change", args=[account.pk]))

    # --- queueing ------------------------------------------------------------------------

    def has_sync_permission(self, request: HttpRequest) -> bool:
        return self.has_change_permission(request)

    @admin.action(description=_("Synchronize now"), permissions=["sync"])
    def synchronize_now(self, request: HttpRequest, queryset: QuerySet[MailAccount]) -> None:
        self._queue(request, list(queryset))

    def _queue(self, request: HttpRequest, accounts: list[MailAccount]) -> None:
        statuses = {s.account_pk: s for s in account_statuses([a.pk for a in accounts])}
        ready = []
        for account in accounts:
            reason = readiness(account, statuses.get(account.pk))
            if reason:
                self.message_user(request, NOT_READY[reason] % {"name": account}, messages.WARNING)
            else:
                ready.append(account.pk)
        if not ready:
            return
        queued = tasks.queue_synchronization(ready)
        self.message_user(
            request,
            ngettext(
                "Queued %(count)d synchronization run; the status shows it within seconds "
                "once a worker takes it.",
                "Queued %(count)d synchronization runs; the status shows them within seconds "
                "once a worker takes them.",
                queued,
            )
            % {"count": queued},
            messages.SUCCESS,
        )
