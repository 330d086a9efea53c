"""The Compliance group may open the pages its work needs: the trails and erasure requests in admin.

Its members held the compliance API's permissions but none of the admin's view
permissions, so every audit page and the printable statement answered 403. The model
permissions are created here if post_migrate has not made them yet. Reversing takes them
from the group only.
"""

from django.db import migrations

GROUP = "Compliance"
VIEWS = {
    "answeringrunentry": "answering run entry",
    "answeringrunemail": "retrieved email",
    "mutationentry": "mutation entry",
    "erasurerequestrecord": "erasure request",
}


def _permissions(apps):
    content_types = apps.get_model("contenttypes", "ContentType")
    permissions = apps.get_model("auth", "Permission")
    found = []
    for model, label in VIEWS.items():
        content_type, _ = content_types.objects.get_or_create(app_label="audit", model=model)
        found.append(
            permissions.objects.get_or_create(
                content_type=content_type, codename=f"view_{model}", defaults={"name": f"Can view {label}"}
            )[0]
        )
    return found


def grant(apps, schema_editor):
    group, _ = apps.get_model("auth", "Group").objects.get_or_create(name=GROUP)
    group.permissions.add(*_permissions(apps))


def revoke(apps, schema_editor):
    group = apps.get_model("auth", "Group").objects.filter(name=GROUP).first()
    if group is not None:
        group.permissions.remove(*_permissions(apps))


class Migration(migrations.Migration):
    dependencies = [("audit", "0011_case_exports")]

    operations = [migrations.RunPython(grant, revoke)]
