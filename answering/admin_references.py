"""Admin for reference documents: upload a file (or paste the text), stored and indexed.

An uploaded file's text is read by answering.services.reference_uploads (in a limited
child process, never in this one) and replaces the text field; a file whose text cannot
be had is a form error carrying its code (63009) and nothing is stored. The title, when
left blank, is the file's cleaned-up name. Saving goes through
answering.services.reference_documents, which cuts the text into chunks, indexes and
embeds them; an edited text rebuilds them. A person sees and files documents for the
accounts they hold any role on (accounts.services.people).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import ForeignKey
from django.http import HttpRequest
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from accounts.admin_people import PeopleScoped
from accounts.models import MailAccount
from accounts.services import people
from answering.models import ReferenceDocument
from answering.services import reference_uploads
from answering.services.reference_documents import (
    MAX_DOCUMENT_CHARACTERS,
    Source,
    source_of,
    store_reference_document,
)
from mailfathom.core.errors import MailFathomError


class ReferenceDocumentForm(forms.ModelForm):
    upload = forms.FileField(
        required=False,
        label=_("File"),
        help_text=_(
            "A PDF, Word (DOCX), Excel (XLSX), PowerPoint (PPTX), OpenDocument, RTF, HTML, CSV, image or "
            "plain-text file. Its text replaces the text below; the title, if left blank, is "
            "the file's name. Scanned pages and images are read where Tesseract is installed."
        ),
    )

    class Meta:
        model = ReferenceDocument
        fields = ["account", "title", "upload", "text"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["text"].required = False
        self.fields["title"].required = False
        self.fields["title"].help_text = _("Left blank with a file uploaded, the file's name.")
        self.source: Source | None = None  # set when the text was read from an uploaded file
        self.stored_text = self.instance.text if self.instance.pk is not None else None

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        upload = cleaned.get("upload")
        if upload is not None:
            try:
                read = reference_uploads.read_upload(upload)
            except MailFathomError as error:
                raise forms.ValidationError({"upload": str(error)}) from None
            self.source = read.source
            cleaned["text"] = read.text
            cleaned["title"] = (cleaned.get("title") or "").strip() or read.source.file_name
        text = cleaned.get("text") or ""
        if not text.strip():
            raise forms.ValidationError({"text": gettext("Give the document's text, or upload a file.")})
        if len(text) > MAX_DOCUMENT_CHARACTERS:
            raise forms.ValidationError(
                {"text": gettext("At most %(count)s characters.") % {"count": MAX_DOCUMENT_CHARACTERS}}
            )
        if not (cleaned.get("title") or "").strip():
            raise forms.ValidationError({"title": gettext("Give the document a title, or upload a file.")})
        return cleaned

    def source_to_store(self) -> Source | None:
        """The uploaded file's; else, for an unchanged text, the one the document has; else none."""
        if self.source is not None:
            return self.source
        if self.stored_text is not None and _same(self.stored_text, self.cleaned_data["text"]):
            return source_of(self.instance)
        return None


def _same(stored: str, submitted: str) -> bool:
    """Whether a text came back as it was stored (a browser sends its line ends as CRLF)."""
    return stored.strip() == submitted.replace("\r\n", "\n").strip()


@admin.register(ReferenceDocument)
class ReferenceDocumentAdmin(PeopleScoped):
    account_roles = people.REVIEW_ROLES
    form = ReferenceDocumentForm
    list_display = ["title", "account", "uploaded_at", "chunk_count", "source"]
    list_filter = ["account"]
    search_fields = ["title"]
    readonly_fields = ["source"]

    def formfield_for_foreignkey(self, db_field: ForeignKey, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "account":
            kwargs["queryset"] = people.limited(MailAccount.objects.all(), self.account_limit(request), "pk")
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    @admin.display(description=_("chunks"))
    def chunk_count(self, document: ReferenceDocument) -> int:
        return document.chunks.count()

    @admin.display(description=_("read from"))
    def source(self, document: ReferenceDocument) -> str:
        recorded = source_of(document)
        if recorded is None:
            return gettext("pasted text")
        media_type = recorded.media_type or gettext("no declared type")
        return gettext("%(file)s (%(type)s; %(outcome)s, %(count)s characters)") % {
            "file": recorded.file_name,
            "type": media_type,
            "outcome": recorded.outcome,
            "count": f"{recorded.characters:,}",
        }

    def save_model(self, request: HttpRequest, obj: ReferenceDocument, form: Any, change: bool) -> None:
        stored = store_reference_document(
            form.cleaned_data["account"],
            form.cleaned_data["title"],
            form.cleaned_data["text"],
            document=obj if change else None,
            source=form.source_to_store(),
        )
        obj.pk = stored.pk
