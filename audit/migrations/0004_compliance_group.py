"""Create the Compliance group: read and export the trails, request erasure (not execute it).

The permissions are created here rather than left to post_migrate, which runs only after
every migration: the group needs them now. Reversing removes the group, not the permissions.
"""

from django.db import migrations

GROUP = "Compliance"
GRANTED = ("view_audit", "export_audit", "request_erasure")
LABELS = {
    "view_audit": "Can read the audit trails through the compliance API",
    "export_audit": "Can export the audit trails through the compliance API",
    "request_erasure": "Can request the erasure of a person's mail",
    "execute_erasure": "Can execute a requested erasure",
}


def create_group(apps, schema_editor):
    content_type_model = apps.get_model("contenttypes", "ContentType")
    permission_model = apps.get_model("auth", "Permission")
    group_model = apps.get_model("auth", "Group")
    content_type, _ = content_type_model.objects.get_or_create(app_label="audit", model="apitoken")
    permissions = {
        codename: permission_model.objects.get_or_create(
            content_type=content_type, codename=codename, defaults={"name": label}
        )[0]
        for codename, label in LABELS.items()
    }
    group, _ = group_model.objects.get_or_create(name=GROUP)
    group.permissions.add(*(permissions[codename] for codename in GRANTED))


def remove_group(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name=GROUP).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0003_api_tokens"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_group, remove_group)]
