"""The one read-only admin: rows that change only through the product, never by hand.

Mail rows change only through synchronization and import; the audit trails and erasure
statements only by the acts they record (a trail an operator could edit would record nothing).
"""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Model
from django.http import HttpRequest


class ReadOnly:
    """No add, change or delete, for a ModelAdmin or an inline: viewable with view permission only."""

    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


class ReadOnlyAdmin(ReadOnly, admin.ModelAdmin):
    """Viewable by staff with view permission; nothing is added, changed or deleted here."""
