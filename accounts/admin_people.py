"""Admin pages narrowed by people: a person sees the rows of their own mail accounts only.

One mixin for every ModelAdmin whose rows belong to a mail account (the account admin,
emails, folders, drafts, the audit trails): the list, its account filter, actions, and the
change, history and delete pages all read the one queryset, narrowed by
accounts.services.people for the roles the page names. A row outside the person's accounts
answers 404, exactly as a row that does not exist, so a URL confirms nothing. Operators
and superusers are not narrowed. Model permissions still decide what a person may do.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.db.models import Field, Model, QuerySet
from django.http import Http404, HttpRequest, HttpResponse

from accounts.models import MailAccount
from accounts.services import people

ACCOUNT = "account"


class PeopleScoped(admin.ModelAdmin):
    """Rows of the accounts on which the person holds one of `account_roles`.

    `account_field` names the row's MailAccount relation ("pk" for accounts themselves).
    An "account" entry of list_filter lists the person's accounts only.
    """

    account_roles: frozenset[str] = people.READ_ROLES
    account_field: str = ACCOUNT
    # A permission that shows every account's rows on this page alone (the audit trails give
    # their readers, compliance staff, every account without making them operators).
    see_all_permission: str | None = None

    def account_limit(self, request: HttpRequest) -> frozenset[int] | None:
        if self.see_all_permission and request.user.has_perm(self.see_all_permission):
            return None
        return people.accounts_for(request.user, self.account_roles)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return people.limited(super().get_queryset(request), self.account_limit(request), self.account_field)

    def get_list_filter(self, request: HttpRequest) -> Any:
        return [
            (ACCOUNT, AccountListFilter) if entry == ACCOUNT else entry
            for entry in super().get_list_filter(request)
        ]

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        self.in_scope_or_404(request, object_id)
        return super().change_view(request, object_id, form_url, extra_context)

    def history_view(self, request: HttpRequest, object_id: str, extra_context: Any = None) -> HttpResponse:
        self.in_scope_or_404(request, object_id)
        return super().history_view(request, object_id, extra_context)

    def delete_view(self, request: HttpRequest, object_id: str, extra_context: Any = None) -> HttpResponse:
        self.in_scope_or_404(request, object_id)
        return super().delete_view(request, object_id, extra_context)

    def in_scope_or_404(self, request: HttpRequest, object_id: str) -> Model:
        """The row `object_id` names if the person may see it; else 404, as for no such row.

        (Django's own pages would redirect to the index saying the row does not exist.)
        """
        found = self.get_object(request, unquote(object_id))
        if found is None:
            raise Http404("Nothing here has that identifier.")
        return found


class AccountListFilter(admin.RelatedFieldListFilter):
    """The account filter, listing only the accounts the page's person may see."""

    def field_choices(self, field: Field, request: HttpRequest, model_admin: admin.ModelAdmin) -> Any:
        limit = model_admin.account_limit(request) if isinstance(model_admin, PeopleScoped) else None
        accounts = people.limited(MailAccount.objects.order_by("account_id"), limit, "pk")
        return [(account.pk, str(account)) for account in accounts]
