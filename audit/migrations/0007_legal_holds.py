"""Legal holds, and the Compliance group's right to read, place and release them.

The permissions are created here rather than left to post_migrate (which runs after every
migration), so the group can be granted them now. Reversing takes the grant back and drops
the table.
"""

import uuid

from django.db import migrations, models

GROUP = "Compliance"
GRANTED = {
    "view_legalhold": "Can view legal hold",
    "manage_legalhold": "Can place and release legal holds",
}


def grant_compliance(apps, schema_editor):
    content_type_model = apps.get_model("contenttypes", "ContentType")
    permission_model = apps.get_model("auth", "Permission")
    group_model = apps.get_model("auth", "Group")
    content_type, _ = content_type_model.objects.get_or_create(app_label="audit", model="legalhold")
    permissions = [
        permission_model.objects.get_or_create(content_type=content_type, codename=codename, defaults={"name": label})[0]
        for codename, label in GRANTED.items()
    ]
    group, _ = group_model.objects.get_or_create(name=GROUP)
    group.permissions.add(*permissions)


def revoke_compliance(apps, schema_editor):
    group = apps.get_model("auth", "Group").objects.filter(name=GROUP).first()
    if group is not None:
        group.permissions.remove(
            *group.permissions.filter(content_type__app_label="audit", codename__in=list(GRANTED))
        )


class Migration(migrations.Migration):

    dependencies = [
        ('audit', '0006_answering_email_relied_on_rank'),
        ('audit', '0004_compliance_group'),
        ('auth', '0012_alter_user_first_name_max_length'),
        ('contenttypes', '0002_remove_content_type_name'),
    ]

    operations = [
        migrations.CreateModel(
            name='LegalHold',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('name', models.CharField(help_text='How compliance staff refer to the hold (a matter name).', max_length=200)),
                ('reason', models.TextField(help_text='Why the mail is held: the matter, not its mail (no content, no address).', max_length=2000)),
                ('scope', models.CharField(choices=[('account', 'Accounts'), ('person', 'Person (addresses)'), ('case', 'Case (accounts, received range, participants)')], max_length=16)),
                ('account_ids', models.JSONField(blank=True, default=list, help_text='Account identifiers; for a case, empty means every account.', verbose_name='accounts')),
                ('address_hashes', models.JSONField(blank=True, default=list, help_text='Keyed hashes (HMAC-SHA256) of the addresses, sorted: never an address.')),
                ('received_on_or_after', models.DateTimeField(blank=True, null=True)),
                ('received_before', models.DateTimeField(blank=True, null=True)),
                ('created_by', models.CharField(max_length=200, verbose_name='placed by')),
                ('created_by_kind', models.CharField(choices=[('user', 'User'), ('api_token', 'API token'), ('command', 'Management command')], max_length=16, verbose_name='placed by (kind)')),
                ('created_at', models.DateTimeField(verbose_name='placed at')),
                ('released_by', models.CharField(blank=True, default='', max_length=200)),
                ('released_by_kind', models.CharField(blank=True, choices=[('user', 'User'), ('api_token', 'API token'), ('command', 'Management command')], default='', max_length=16)),
                ('released_at', models.DateTimeField(blank=True, null=True)),
                ('release_reason', models.TextField(blank=True, default='', max_length=2000)),
            ],
            options={
                'verbose_name': 'legal hold',
                'ordering': ['-created_at'],
                'permissions': [('manage_legalhold', 'Can place and release legal holds')],
                'indexes': [models.Index(fields=['released_at'], name='legal_hold_active')],
                'constraints': [models.CheckConstraint(condition=models.Q(models.Q(('release_reason', ''), ('released_at__isnull', True), ('released_by', '')), models.Q(('released_at__isnull', False), models.Q(('released_by', ''), _negated=True), models.Q(('release_reason', ''), _negated=True)), _connector='OR'), name='legal_hold_release_is_whole')],
            },
        ),
        migrations.RunPython(grant_compliance, revoke_compliance),
    ]
