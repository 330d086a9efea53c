"""Operator console for emails: metadata for everyone with view permission, content only with
a permission of its own ("view mail content", which managing accounts does not grant).

A person sees the accounts they may read (accounts.services.people); another account's email
is a 404. Nothing here adds, changes or deletes a row. Who sees what: docs/operations/admin-emails.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.contrib.admin.views.main import SEARCH_VAR
from django.db.models import Case, IntegerField, QuerySet, Value, When
from django.http import HttpRequest, HttpResponse
from django.template.defaultfilters import filesizeformat
from django.utils import formats, timezone
from django.utils.html import format_html
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from accounts.admin_people import PeopleScoped
from accounts.services import people
from mailbox.admin_read_only import ReadOnlyAdmin
from mailbox.models import Email, Folder, Participant
from mailbox.services.console_search import rank_for_console
from mailbox.signals import mail_content_shown
from mailfathom.core.errors import MailFathomError

if TYPE_CHECKING:  # the admin's own return types, declared by django-stubs only
    from django.contrib.admin.options import _FieldGroups, _FieldsetSpec, _ListDisplayT
    from django.db.models.query import _OrderByFieldName
    from django.utils.datastructures import _ListOrTuple


# Subject, sender, recipients, body and the search box: mail content, shown only with this.
MAIL_CONTENT_PERMISSION = "mailbox.view_mail_content"
UNMAPPED = _("(unmapped)")
SUBJECT_CHARACTERS = 90
SENDER_CHARACTERS = 48
NO_SUBJECT = _("(no subject)")
# Columns of mail content, never loaded for a list or page that does not show them.
CONTENT_COLUMNS = ("subject", "sender_address", "sender_name", "message_id", "in_reply_to", "text_body")
# Never shown and costly to load per row: the generated index column and the references.
UNSHOWN_COLUMNS = ("search_vector", "participants_text", "references")

METADATA_LIST = [
    "received",
    "account",
    "folder_alias",
    "size",
    "flag_names",
    "direction",
    "availability",
    "attachment_count",
    "is_bulk",
]
CONTENT_LIST = ["received", "folder_alias", "subject_line", "sender", "account", "size", "flag_names"]
METADATA_FIELDS = [
    "account",
    "folder_name",
    "received_at",
    "sent_at",
    "size",
    "flags",
    "flags_observed_at",
    "availability",
    "direction",
    "bulk_shown",
    "attachment_count",
    "inline_count",
    "attachment_total_bytes",
    "encrypted_shown",
    "signature_shown",
    "synced_at",
]
# Where the copy came from on the server and how parsing went: folded away on the page.
TECHNICAL_FIELDS = ["remote_folder", "uidvalidity_shown", "uid_shown", "tnef_shown", "defects_shown"]
CONTENT_FIELDS = ["subject", "from_shown", "recipients", "message_id", "body"]


def may_read_content(request: HttpRequest) -> bool:
    return request.user.has_perm(MAIL_CONTENT_PERMISSION)


def _cut(text: str, characters: int) -> str:
    return text if len(text) <= characters else text[: characters - 1] + "…"


class FolderFilter(admin.SimpleListFilter):
    """Mapped folders by account and alias; narrowed to the account chosen in its own filter."""

    title = _("folder")
    parameter_name = "folder"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        folders = Folder.objects.filter(mapping__isnull=False).select_related("account", "mapping")
        if isinstance(model_admin, PeopleScoped):
            folders = people.limited(folders, model_admin.account_limit(request))
        account = request.GET.get("account__id__exact", "")
        if account.isdigit():
            folders = folders.filter(account_id=int(account))
        folders = folders.order_by("account__account_id", "mapping__alias")
        return [(str(f.pk), f"{f.account.account_id} / {f.mapping.alias}") for f in folders]  # type: ignore[union-attr]  # the choices list only mapped folders, so mapping is set

    def queryset(self, request: HttpRequest, queryset: QuerySet[Email]) -> QuerySet[Email]:
        value = self.value()
        if value is None:
            return queryset
        return queryset.filter(folder_id=int(value)) if value.isdigit() else queryset.none()


class EmailAdmin(PeopleScoped, ReadOnlyAdmin):
    account_roles = people.READ_ROLES

    list_filter = ["account", FolderFilter, "direction", "availability", "is_bulk"]
    list_select_related = ["account", "folder__mapping"]
    list_per_page = 100
    ordering = ["-received_at", "-id"]
    show_full_result_count = False  # a COUNT(*) over every email on each page view is not worth it
    change_list_template = "admin/mailbox/email/change_list.html"

    # --- what a user sees, by permission ------------------------------------------------

    def get_list_display(self, request: HttpRequest) -> _ListDisplayT[Email]:
        return list(CONTENT_LIST if may_read_content(request) else METADATA_LIST)

    def get_list_display_links(
        self, request: HttpRequest, list_display: _ListDisplayT[Email]
    ) -> _ListDisplayT[Email]:
        return ["subject_line"] if may_read_content(request) else ["received"]

    @staticmethod
    def _field_names(request: HttpRequest) -> list[str]:
        shown = CONTENT_FIELDS + METADATA_FIELDS if may_read_content(request) else list(METADATA_FIELDS)
        return shown + TECHNICAL_FIELDS

    def get_fields(self, request: HttpRequest, obj: Email | None = None) -> _FieldGroups:
        return [*self._field_names(request)]

    def get_fieldsets(self, request: HttpRequest, obj: Email | None = None) -> _FieldsetSpec:
        main = CONTENT_FIELDS + METADATA_FIELDS if may_read_content(request) else list(METADATA_FIELDS)
        return [
            (None, {"fields": tuple(main)}),
            (_("Technical details"), {"classes": ["collapse"], "fields": tuple(TECHNICAL_FIELDS)}),
        ]

    def get_readonly_fields(self, request: HttpRequest, obj: Email | None = None) -> list[str]:
        return self._field_names(request)

    def get_search_fields(self, request: HttpRequest) -> list[str]:
        # Non-empty only to draw the search box; get_search_results does the searching.
        return ["subject"] if may_read_content(request) else []

    def get_queryset(self, request: HttpRequest) -> QuerySet[Email]:
        hidden = UNSHOWN_COLUMNS if may_read_content(request) else UNSHOWN_COLUMNS + CONTENT_COLUMNS
        # Not the admin's own queryset, which orders by search_rank before it is annotated.
        rows = people.limited(Email.objects.defer(*hidden), self.account_limit(request))
        if self._searching(request):
            # get_ordering names search_rank while searching; get_search_results sets its value.
            rows = rows.annotate(search_rank=Value(0))
        return rows.order_by(*self.get_ordering(request))

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Email], search_term: str
    ) -> tuple[QuerySet[Email], bool]:
        if not search_term or not may_read_content(request):
            # A term without the permission is ignored: a result count would answer
            # "does any mail say X" to someone not allowed to read mail.
            return queryset, False
        try:
            ranked = rank_for_console(queryset, search_term)  # type: ignore[arg-type]  # the changelist queryset is the EmailQuerySet rank_for_console takes
        except MailFathomError as error:
            self.message_user(request, str(error), messages.ERROR)
            return queryset.none(), False
        order = Case(
            *(When(id=email_id, then=Value(position)) for position, email_id in enumerate(ranked)),
            default=Value(len(ranked)),
            output_field=IntegerField(),
        )
        return queryset.filter(id__in=ranked).annotate(search_rank=order), False

    def get_ordering(self, request: HttpRequest) -> _ListOrTuple[_OrderByFieldName]:
        if self._searching(request):
            return ["search_rank", "-received_at", "-id"]  # best match first
        return list(self.ordering)

    def _searching(self, request: HttpRequest) -> bool:
        return bool(request.GET.get(SEARCH_VAR)) and may_read_content(request)

    # --- who read what (the access trail, by signal: mailbox does not know the audit app) --

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        response = super().change_view(request, object_id, form_url, extra_context)
        if response.status_code == 200 and may_read_content(request):
            original = getattr(response, "context_data", {}).get("original")
            if original is not None:
                mail_content_shown.send(
                    sender=type(self), user=request.user, page="email_change", email_ids=[original.pk]
                )
        return response

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        response = super().changelist_view(request, extra_context)
        changelist = getattr(response, "context_data", {}).get("cl") if response.status_code == 200 else None
        if changelist is not None and may_read_content(request):
            # Evaluated here and cached on the changelist: the template renders these same rows.
            shown = [row.pk for row in changelist.result_list]
            if shown:
                mail_content_shown.send(
                    sender=type(self), user=request.user, page="email_list", email_ids=shown
                )
        return response

    # --- columns ------------------------------------------------------------------------

    @admin.display(description=_("received"), ordering="received_at")
    def received(self, obj: Email) -> str:
        return formats.date_format(timezone.localtime(obj.received_at), "Y-m-d H:i")

    @admin.display(description=_("folder"), ordering="folder__mapping__alias")
    def folder_alias(self, obj: Email) -> str:
        mapping = obj.folder.mapping
        return mapping.alias if mapping is not None else str(UNMAPPED)

    @admin.display(description=_("size"), ordering="size_bytes")
    def size(self, obj: Email) -> str:
        return filesizeformat(obj.size_bytes)

    @admin.display(description=_("flags"))
    def flag_names(self, obj: Email) -> str:
        return " ".join(flag.lstrip("\\") for flag in obj.flags) or "-"

    @admin.display(description=_("subject"), ordering="subject")
    def subject_line(self, obj: Email) -> str:
        subject = obj.subject.strip()
        # The list's style narrows the cell further with an ellipsis; hovering shows the whole.
        return format_html(
            '<span title="{}">{}</span>', subject, _cut(subject, SUBJECT_CHARACTERS) or str(NO_SUBJECT)
        )

    @admin.display(description=_("from"), ordering="sender_address")
    def sender(self, obj: Email) -> str:
        if obj.sender_name and obj.sender_address:
            shown = f"{obj.sender_name} <{obj.sender_address}>"
        else:
            shown = obj.sender_name or obj.sender_address
        return format_html('<span title="{}">{}</span>', shown, _cut(shown, SENDER_CHARACTERS) or "-")

    # --- the page ------------------------------------------------------------------------

    @admin.display(description=_("folder"))
    def folder_name(self, obj: Email) -> str:
        mapping = obj.folder.mapping
        return mapping.alias if mapping is not None else obj.folder.remote_name

    @admin.display(description=_("folder on the server"))
    def remote_folder(self, obj: Email) -> str:
        return f"{obj.folder.remote_name} (#{obj.folder_id})"

    @admin.display(description="UIDVALIDITY")
    def uidvalidity_shown(self, obj: Email) -> int:
        return obj.uidvalidity

    @admin.display(description="UID")
    def uid_shown(self, obj: Email) -> int:
        return obj.uid

    @admin.display(description=_("TNEF attachment (winmail.dat) left unexpanded"))
    def tnef_shown(self, obj: Email) -> str:
        return gettext("yes") if obj.unexpanded_tnef else gettext("no")

    # Yes/no in words on the page: admin's red ✗ for False reads as an error, and "not bulk"
    # or "not encrypted" is the ordinary state of a letter.
    @admin.display(description=_("bulk mail (a list or a newsletter)"))
    def bulk_shown(self, obj: Email) -> str:
        return gettext("yes") if obj.is_bulk else gettext("no")

    @admin.display(description=_("encrypted"))
    def encrypted_shown(self, obj: Email) -> str:
        return gettext("yes, not readable locally") if obj.encrypted else gettext("no")

    @admin.display(description=_("signature"))
    def signature_shown(self, obj: Email) -> str:
        return gettext("signed, not verified") if obj.unverified_signature else gettext("none")

    @admin.display(description=_("parse defects"))
    def defects_shown(self, obj: Email) -> str:
        return ", ".join(obj.parse_defects) or "-"

    # --- content on the page (only in CONTENT_FIELDS) ------------------------------------

    @admin.display(description=_("from"))
    def from_shown(self, obj: Email) -> str:
        """The whole sender, name and address, never cut (the list cuts it to one line)."""
        if obj.sender_name and obj.sender_address:
            return f"{obj.sender_name} <{obj.sender_address}>"
        return obj.sender_name or obj.sender_address or "-"

    @admin.display(description=_("recipients"))
    def recipients(self, obj: Email) -> str:
        rows = Participant.objects.filter(email=obj).order_by("role", "position")
        return (
            "; ".join(
                f"{p.role}: {p.display_name} <{p.address}>" if p.display_name else f"{p.role}: {p.address}"
                for p in rows
            )
            or "-"
        )

    @admin.display(description=_("plain-text body"))
    def body(self, obj: Email) -> str:
        if not obj.text_body:
            return "-"
        return format_html(
            '<div style="white-space: pre-wrap; max-height: 40em; overflow: auto">{}</div>', obj.text_body
        )
