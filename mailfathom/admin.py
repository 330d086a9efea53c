"""The mail account admin, registered once, from the part each app owns.

accounts.admin.MailAccountAdmin (the account, its folders and the connection test), mailbox's
synchronization status and "Synchronize now", answering's "Draft now", and audit's refusal
to delete an account a legal hold covers: an edit to any of them shows on the page.
Registered here, in the roof, because the roof is what may import every app.
"""

from django.contrib import admin

from accounts.models import MailAccount
from answering.admin_accounts import DraftNowAction
from audit.admin_accounts import HeldAccountDeletion
from mailbox.admin_accounts import SynchronizedMailAccountAdmin


@admin.register(MailAccount)
class MailAccountAdmin(HeldAccountDeletion, DraftNowAction, SynchronizedMailAccountAdmin):
    actions = ["synchronize_now", "draft_now"]
