"""Email.is_list_mail: mail that came through a mailing list, read from the stored headers.

Only rows already marked bulk can be list mail (List-Id and Precedence: list make mail
bulk), so the backfill reads the header block of those alone, in batches.
"""

import zlib
from email.parser import BytesHeaderParser

from django.db import migrations, models

BATCH = 500
HEADER_BYTES = 256 * 1024  # the same bound the store reads an over-limit message's headers with


def _header_block(compressed: bytes) -> bytes:
    inflater = zlib.decompressobj()
    head = inflater.decompress(bytes(compressed), HEADER_BYTES)
    end = head.find(b"\r\n\r\n")
    end = head.find(b"\n\n") if end < 0 else end
    return head if end < 0 else head[:end]


def _is_list_mail(compressed: bytes) -> bool:
    headers = BytesHeaderParser().parsebytes(_header_block(compressed))
    precedence = str(headers.get("Precedence", "")).split(";", 1)[0].split("(", 1)[0].strip().lower()
    return headers.get("List-Id") is not None or precedence == "list"


def mark_list_mail(apps, schema_editor):
    Email = apps.get_model("mailbox", "Email")
    RawMessage = apps.get_model("mailbox", "RawMessage")
    rows = RawMessage.objects.filter(email__is_bulk=True).values_list("email_id", "compressed")
    found = []
    for email_id, compressed in rows.iterator(chunk_size=BATCH):
        try:
            if _is_list_mail(compressed):
                found.append(email_id)
        except (zlib.error, ValueError):
            continue  # unreadable stored bytes: left unmarked, as before this field existed
        if len(found) >= BATCH:
            Email.objects.filter(pk__in=found).update(is_list_mail=True)
            found = []
    if found:
        Email.objects.filter(pk__in=found).update(is_list_mail=True)


class Migration(migrations.Migration):
    dependencies = [("mailbox", "0012_folder_interrupted_run")]

    operations = [
        migrations.AddField(
            model_name="email",
            name="is_list_mail",
            field=models.BooleanField(default=False),
        ),
        migrations.RunPython(mark_list_mail, migrations.RunPython.noop),
    ]
