"""The access trail (who read which mail), the answering trail's requester, and the
Compliance group's permission to read the access trail in admin.

The permission is created here rather than left to post_migrate, which runs only after
every migration (as 0004 does for the group's own permissions). Reversing takes it from the
group and leaves the permission.
"""

import django.db.models.deletion
from django.db import migrations, models

GROUP = "Compliance"
GRANTED = {"view_accessentry": "Can view access entry"}


def grant_view(apps, schema_editor):
    content_type_model = apps.get_model("contenttypes", "ContentType")
    permission_model = apps.get_model("auth", "Permission")
    group_model = apps.get_model("auth", "Group")
    content_type, _ = content_type_model.objects.get_or_create(app_label="audit", model="accessentry")
    group, _ = group_model.objects.get_or_create(name=GROUP)
    for codename, label in GRANTED.items():
        permission, _ = permission_model.objects.get_or_create(
            content_type=content_type, codename=codename, defaults={"name": label}
        )
        group.permissions.add(permission)


def revoke_view(apps, schema_editor):
    group = apps.get_model("auth", "Group").objects.filter(name=GROUP).first()
    if group is not None:
        group.permissions.remove(
            *apps.get_model("auth", "Permission").objects.filter(
                content_type__app_label="audit", codename__in=list(GRANTED)
            )
        )


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0010_access_trail"),
        ("audit", "0007_legal_holds"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("mailbox", "0017_attachment_text_indexed"),
    ]

    operations = [
        migrations.AddField(
            model_name="answeringrunentry",
            name="client_name",
            field=models.CharField(blank=True, default="", max_length=100),
        ),
        migrations.AddField(
            model_name="answeringrunentry",
            name="requester",
            field=models.CharField(
                blank=True, default="", help_text="User name, or key or token name.", max_length=200
            ),
        ),
        migrations.AddField(
            model_name="answeringrunentry",
            name="requester_kind",
            field=models.CharField(blank=True, default="", max_length=16),
        ),
        migrations.AddField(
            model_name="answeringrunentry",
            name="requester_owner",
            field=models.CharField(
                blank=True,
                default="",
                help_text="The person a key or token belongs to.",
                max_length=200,
                verbose_name="requester's owner",
            ),
        ),
        migrations.CreateModel(
            name="AccessEntry",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("account_identifier", models.CharField(max_length=64, verbose_name="account identifier")),
                ("accessed_at", models.DateTimeField()),
                (
                    "channel",
                    models.CharField(
                        choices=[
                            ("mcp", "MCP tool call"),
                            ("admin", "Admin page"),
                            ("api", "Compliance API"),
                            ("people_page", "Search and ask page"),
                        ],
                        max_length=16,
                    ),
                ),
                ("action", models.CharField(help_text="The tool or page that read the mail.", max_length=64)),
                (
                    "requester_kind",
                    models.CharField(
                        choices=[
                            ("person", "Person (signed-in user)"),
                            ("mcp_key", "MCP API key"),
                            ("oauth_token", "MCP OAuth token"),
                            ("api_token", "Compliance API token"),
                            ("unauthenticated", "Unauthenticated (loopback /mcp)"),
                            ("task", "Task (no caller)"),
                        ],
                        max_length=16,
                    ),
                ),
                (
                    "requester",
                    models.CharField(
                        blank=True,
                        default="",
                        help_text="User name, or the key's or token's name.",
                        max_length=200,
                    ),
                ),
                (
                    "owner",
                    models.CharField(
                        blank=True,
                        default="",
                        help_text="The person the key or token belongs to.",
                        max_length=200,
                    ),
                ),
                (
                    "client_name",
                    models.CharField(
                        blank=True,
                        default="",
                        help_text="The client's own name, where it gave one.",
                        max_length=100,
                    ),
                ),
                (
                    "email_count",
                    models.PositiveIntegerField(
                        default=0, help_text="Emails of this account the read returned."
                    ),
                ),
                ("retention_days", models.PositiveIntegerField()),
                (
                    "account",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="access_entries",
                        to="accounts.mailaccount",
                    ),
                ),
            ],
            options={
                "verbose_name": "access entry",
                "verbose_name_plural": "access trail",
                "ordering": ["-accessed_at", "-id"],
            },
        ),
        migrations.CreateModel(
            name="AccessEntryEmail",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "position",
                    models.PositiveIntegerField(help_text="0 for the first email the read returned."),
                ),
                (
                    "email",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="access_entries",
                        to="mailbox.email",
                    ),
                ),
                (
                    "entry",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="emails",
                        to="audit.accessentry",
                    ),
                ),
            ],
            options={
                "verbose_name": "email returned",
                "ordering": ["entry", "position"],
            },
        ),
        migrations.AddIndex(
            model_name="accessentry",
            index=models.Index(fields=["account", "accessed_at"], name="access_entry_retention"),
        ),
        migrations.AddConstraint(
            model_name="accessentryemail",
            constraint=models.UniqueConstraint(fields=("entry", "email"), name="access_email_once_per_entry"),
        ),
        migrations.RunPython(grant_view, revoke_view),
    ]
