"""An index on each participant's address in lower case.

Search looks up the display names of a query's author by address, in any case (a sender
writes Jane.Doe@example.org, the author is told as jane.doe@example.org). Built
concurrently, so synchronization keeps storing mail while a large table is indexed.
"""

import django.db.models.functions.text
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("mailbox", "0019_email_mail_date"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="participant",
            index=models.Index(
                django.db.models.functions.text.Lower("address"), name="participant_address_folded"
            ),
        ),
    ]
