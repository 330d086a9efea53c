"""An index on each email's own date (its Date header, else when its server received it).

The status page charts mail per day by that date. The index is built concurrently, so
synchronization keeps storing mail while a large table is indexed.
"""

import django.db.models.functions.comparison
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("accounts", "0012_user_time_zone"),
        ("mailbox", "0018_suppression_deployment_wide"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="email",
            index=models.Index(
                django.db.models.functions.comparison.Coalesce("sent_at", "received_at"),
                name="email_mail_date",
            ),
        ),
    ]
