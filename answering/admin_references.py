"""Admin for reference documents: upload a text file (or paste the text), stored and indexed.

Saving goes through answering.services.reference_documents, which cuts the text into
chunks, indexes and embeds them; an edited text rebuilds them. Files are read as UTF-8
text (plain text, Markdown, CSV); anything else is refused with a form error. A person
sees and files documents for the accounts they hold any role on (accounts.services.people).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import ForeignKey
from django.http import HttpRequest

from accounts.admin_people import PeopleScoped
from accounts.models import MailAccount
from accounts.services import people
from answering.models import ReferenceDocument
from answering.services.reference_documents import MAX_DOCUMENT_CHARACTERS, store_reference_document

MAX_UPLOAD_BYTES = 4 * 1024 * 1024


class ReferenceDocumentForm(forms.ModelForm):
    upload = forms.FileField(
        required=False,
        help_text="A UTF-8 text file (plain text, Markdown, CSV). It replaces the text below.",
    )

    class Meta:
        model = ReferenceDocument
        fields = ["account", "title", "text"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["text"].required = False

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        upload = cleaned.get("upload")
        if upload is not None:
            if upload.size > MAX_UPLOAD_BYTES:
                raise forms.ValidationError({"upload": f"The file is larger than {MAX_UPLOAD_BYTES} bytes."})
            try:
                cleaned["text"] = upload.read().decode("utf-8")
            except UnicodeDecodeError:
                raise forms.ValidationError({"upload": "The file is not UTF-8 text."}) from None
        text = cleaned.get("text") or ""
        if not text.strip():
            raise forms.ValidationError({"text": "Give the document's text, or upload a file."})
        if len(text) > MAX_DOCUMENT_CHARACTERS:
            raise forms.ValidationError({"text": f"At most {MAX_DOCUMENT_CHARACTERS} characters."})
        return cleaned


@admin.register(ReferenceDocument)
class ReferenceDocumentAdmin(PeopleScoped):
    account_roles = people.REVIEW_ROLES
    form = ReferenceDocumentForm
    list_display = ["title", "account", "uploaded_at", "chunk_count"]
    list_filter = ["account"]
    search_fields = ["title"]

    def formfield_for_foreignkey(self, db_field: ForeignKey, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "account":
            kwargs["queryset"] = people.limited(MailAccount.objects.all(), self.account_limit(request), "pk")
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    @admin.display(description="chunks")
    def chunk_count(self, document: ReferenceDocument) -> int:
        return document.chunks.count()

    def save_model(self, request: HttpRequest, obj: ReferenceDocument, form: Any, change: bool) -> None:
        stored = store_reference_document(
            form.cleaned_data["account"],
            form.cleaned_data["title"],
            form.cleaned_data["text"],
            document=obj if change else None,
        )
        obj.pk = stored.pk
