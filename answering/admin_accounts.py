"""What drafting adds to the mail account admin: the "Draft now" action.

A mixin, since the account admin is assembled from each app's part and registered once by
mailfathom.admin (answering stands above mailbox, whose synchronizing admin it joins).
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from accounts.models import MailAccount
from answering.services.draft_now import queue_drafting, why_not_drafting


class DraftNowAction(admin.ModelAdmin):  # a mixin of MailAccount's admin (mailfathom.admin)
    """The "Draft now" admin action, for a ModelAdmin of MailAccount."""

    @admin.action(description=_("Draft now"), permissions=["sync"])
    def draft_now(self, request: HttpRequest, queryset: QuerySet[MailAccount]) -> None:
        """Queue a drafting run for each selected account that would draft; say why not for the rest."""
        ready = []
        for account in queryset:
            reason = why_not_drafting(account)
            if reason:
                self.message_user(request, reason, messages.WARNING)
            else:
                ready.append(account)
        if not ready:
            return
        queued = queue_drafting([account.pk for account in ready])
        names = ", ".join(str(account) for account in ready)
        self.message_user(
            request,
            ngettext(
                "Queued %(count)d drafting run (%(names)s); its drafts appear in the review queue "
                "once a worker has run it, and the System status page shows what it did.",
                "Queued %(count)d drafting runs (%(names)s); their drafts appear in the review queue "
                "once a worker has run them, and the System status page shows what they did.",
                queued,
            )
            % {"count": queued, "names": names},
            messages.SUCCESS,
        )
