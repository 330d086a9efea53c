"""Attachment text joins the lexical index as a field of its own (weight D).

The text moves from each AttachmentText row into Email.attachment_text, joined in attachment
order, each row keeping where its part starts, so it is stored once. The tsvector column is
recomputed for every row (a generated column cannot change its expression in place through
Django) and its GIN index rebuilt: on a large mailbox this rewrites the email table and
takes minutes (docs/search.md, "Upgrading the index"). The word snapshot is refreshed at
the end so attachment words count in document frequencies at once.
"""

import django.contrib.postgres.indexes
import django.contrib.postgres.search
import django.db.models.functions.text
from django.db import migrations, models

SEPARATOR = "\n\n"

REFRESH = """
TRUNCATE mailbox_lexicaltermstat;
INSERT INTO mailbox_lexicaltermstat (word, documents, english, german)
SELECT word, ndoc, coalesce((ts_lexize('english_stem', word))[1], ''),
       coalesce((ts_lexize('german_stem', word))[1], '')
FROM ts_stat('SELECT search_vector FROM mailbox_email');
"""


def move_text(apps, schema_editor):
    AttachmentText = apps.get_model("mailbox", "AttachmentText")
    Email = apps.get_model("mailbox", "Email")
    email_ids = AttachmentText.objects.filter(characters__gt=0).values_list("email_id", flat=True).distinct()
    for email_id in email_ids.iterator():
        joined = ""
        for row in AttachmentText.objects.filter(email_id=email_id).order_by("part_index"):
            if not row.text:
                row.offset = len(joined)
                row.save(update_fields=["offset"])
                continue
            if joined:
                joined += SEPARATOR
            row.offset = len(joined)
            row.save(update_fields=["offset"])
            joined += row.text
        Email.objects.filter(pk=email_id).update(attachment_text=joined)


def lexical_document():
    search = django.contrib.postgres.search
    left = django.db.models.functions.text.Left
    simple = search.SearchConfig("simple")
    subject = search.SearchVector("subject", config="simple", weight="A")
    participants = search.SearchVector("participants_text", config="simple", weight="B")
    body = search.SearchVector(left("text_body", 100000), config="simple", weight="C")
    attachments = search.SearchVector(left("attachment_text", 100000), config="simple", weight="D")
    combined = search.CombinedSearchVector(subject, "||", participants, simple)
    combined = search.CombinedSearchVector(combined, "||", body, simple)
    return search.CombinedSearchVector(combined, "||", attachments, simple)


class Migration(migrations.Migration):

    dependencies = [
        ("mailbox", "0016_attachment_text"),
    ]

    operations = [
        migrations.AddField(
            model_name="email",
            name="attachment_text",
            field=models.TextField(blank=True, default=""),
        ),
        migrations.AddField(
            model_name="attachmenttext",
            name="offset",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.RunPython(move_text, migrations.RunPython.noop),
        migrations.RemoveField(model_name="attachmenttext", name="text"),
        migrations.RemoveIndex(model_name="email", name="email_search_vector"),
        migrations.RemoveField(model_name="email", name="search_vector"),
        migrations.AddField(
            model_name="email",
            name="search_vector",
            field=models.GeneratedField(
                db_persist=True,
                expression=lexical_document(),
                output_field=django.contrib.postgres.search.SearchVectorField(),
            ),
        ),
        migrations.AddIndex(
            model_name="email",
            index=django.contrib.postgres.indexes.GinIndex(fields=["search_vector"], name="email_search_vector"),
        ),
        migrations.RunSQL(REFRESH, reverse_sql=migrations.RunSQL.noop),
    ]
