"""Operator console for the local copy: synchronization state and message metadata, read-only.

Operators configure accounts; reading mail is a permission of its own (mailbox.admin_emails).
No page can add, change or delete a row. A person sees the folders of the accounts they hold
any role on (accounts.services.people), and "Synchronize now" reaches those only.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import Count, QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from accounts.admin_people import PeopleScoped
from accounts.services import people
from mailbox import tasks
from mailbox.admin_emails import EmailAdmin
from mailbox.admin_read_only import ReadOnlyAdmin
from mailbox.models import Email, Folder
from mailbox.sync.folder_state import record_interrupted_runs
from mailfathom.core import instants

NEVER = _("never")
UNMAPPED = _("(unmapped)")


@admin.register(Folder)
class FolderAdmin(PeopleScoped, ReadOnlyAdmin):
    account_roles = people.REVIEW_ROLES
    list_display = [
        "account",
        "alias",
        "remote_name",
        "last_committed",
        "last_failure",
        "consecutive_failures",
        "backoff_until",
        "message_count",
        "lease_held",
        "interrupted",
    ]
    list_filter = ["account"]
    list_select_related = ["account", "mapping"]
    ordering = ["account__account_id", "remote_name"]
    actions = ["synchronize_now"]
    fields = [
        "account",
        "mapping",
        "remote_name",
        "uidvalidity",
        "highest_uid",
        "highest_modseq",
        "last_committed_at",
        "last_failure_code",
        "last_failure_at",
        "consecutive_failures",
        "backoff_until",
        "lease_expires_at",
        "interrupted_at",
        "interrupted_stored",
        "interrupted_server",
    ]
    readonly_fields = fields  # type: ignore[assignment]  # names only; the stubs widen fields to groups

    def get_queryset(self, request: HttpRequest) -> QuerySet[Folder]:
        record_interrupted_runs()  # a run that died says so wherever the folder is read
        return super().get_queryset(request).annotate(message_count=Count("emails"))

    @admin.display(description=_("alias"), ordering="mapping__alias")
    def alias(self, obj: Folder) -> str:
        return obj.mapping.alias if obj.mapping is not None else str(UNMAPPED)

    @admin.display(description=_("last committed"), ordering="last_committed_at")
    def last_committed(self, obj: Folder) -> str:
        # To the second and as an age: a run that found nothing still visibly moves it.
        return instants.stamp(obj.last_committed_at, never=str(NEVER))

    @admin.display(description=_("last failure"), ordering="last_failure_at")
    def last_failure(self, obj: Folder) -> str:
        if obj.last_failure_code is None:
            return "-"
        if obj.last_failure_at is None:
            return str(obj.last_failure_code)
        return gettext("%(code)s at %(time)s") % {
            "code": obj.last_failure_code,
            "time": instants.to_the_second(obj.last_failure_at),
        }

    @admin.display(description=_("messages"), ordering="message_count")
    def message_count(self, obj: Folder) -> int:
        return obj.message_count  # type: ignore[attr-defined]  # annotated by get_queryset (Count of emails)

    @admin.display(description=_("synchronization"))
    def lease_held(self, obj: Folder) -> str:
        # Words, not admin's ✓/✗ icons: a free folder is the normal state, not an error.
        held = obj.lease_expires_at is not None and obj.lease_expires_at > timezone.now()
        return gettext("in use by a run") if held else gettext("free")

    @admin.display(description=_("interrupted run"))
    def interrupted(self, obj: Folder) -> str:
        if obj.interrupted_at is None or not obj.interruption_pending:  # pending implies a time
            return "-"
        seen = instants.to_the_second(obj.interrupted_at)
        if obj.interrupted_server is None:
            return gettext("last seen %(time)s, %(stored)s stored") % {
                "time": seen,
                "stored": obj.interrupted_stored,
            }
        return gettext("last seen %(time)s, %(stored)s of %(server)s stored") % {
            "time": seen,
            "stored": obj.interrupted_stored,
            "server": obj.interrupted_server,
        }

    def has_sync_permission(self, request: HttpRequest) -> bool:
        # Starting a run is an operation on the account, so it takes the account's permission.
        return request.user.has_perm("accounts.change_mailaccount")

    @admin.action(description=_("Synchronize now"), permissions=["sync"])
    def synchronize_now(self, request: HttpRequest, queryset: QuerySet[Folder]) -> None:
        """Queue one forced run per distinct account of the selected folders, after commit."""
        queued = tasks.queue_synchronization(queryset.values_list("account_id", flat=True))
        self.message_user(
            request,
            ngettext(
                "Queued %(count)d synchronization run.",
                "Queued %(count)d synchronization runs.",
                queued,
            )
            % {"count": queued},
            messages.SUCCESS,
        )


admin.site.register(Email, EmailAdmin)
