from django.db import migrations, models


def start_failing_times(apps, schema_editor):
    """Folders failing when this arrives: failing at least since their last failure."""
    Folder = apps.get_model("mailbox", "Folder")
    Folder.objects.filter(last_failure_code__isnull=False).exclude(
        last_failure_code__in=[61012, 61013]
    ).update(failing_since=models.F("last_failure_at"))


class Migration(migrations.Migration):
    dependencies = [
        ("mailbox", "0014_download_day"),
    ]

    operations = [
        migrations.AddField(
            model_name="folder",
            name="failing_since",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(start_failing_times, migrations.RunPython.noop),
    ]
