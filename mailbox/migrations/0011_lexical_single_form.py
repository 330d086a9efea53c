"""The lexical index holds every word once, as written (mailbox.lexical); stems move to the snapshot.

The tsvector column is recomputed for every row (a generated column cannot change its
expression in place through Django), the GIN index rebuilt, and the word snapshot
rebuilt with its stems and the collection's average length, so ranking is right as soon
as the migration ends. It rewrites the email table: on a large mailbox this takes minutes
(docs/search.md, "Upgrading the index").
"""

import django.contrib.postgres.indexes
import django.contrib.postgres.search
import django.db.models.functions.text
from django.db import migrations, models

REFRESH = """
INSERT INTO mailbox_lexicaltermstat (word, documents, english, german)
SELECT word, ndoc, coalesce((ts_lexize('english_stem', word))[1], ''),
       coalesce((ts_lexize('german_stem', word))[1], '')
FROM ts_stat('SELECT search_vector FROM mailbox_email');
INSERT INTO mailbox_lexicalcollectionstat (emails, average_length, refreshed_at)
SELECT count(*), coalesce(avg(search_length), 0), now() FROM mailbox_email;
"""


class Migration(migrations.Migration):

    dependencies = [
        ('mailbox', '0010_email_awaiting_draft_index'),
    ]

    operations = [
        migrations.RemoveIndex(model_name='email', name='email_search_vector'),
        migrations.RemoveField(model_name='email', name='search_vector'),
        migrations.AddField(
            model_name='email',
            name='search_vector',
            field=models.GeneratedField(db_persist=True, expression=django.contrib.postgres.search.CombinedSearchVector(django.contrib.postgres.search.CombinedSearchVector(django.contrib.postgres.search.SearchVector('subject', config='simple', weight='A'), '||', django.contrib.postgres.search.SearchVector('participants_text', config='simple', weight='B'), django.contrib.postgres.search.SearchConfig('simple')), '||', django.contrib.postgres.search.SearchVector(django.db.models.functions.text.Left('text_body', 100000), config='simple', weight='C'), django.contrib.postgres.search.SearchConfig('simple')), output_field=django.contrib.postgres.search.SearchVectorField()),
        ),
        migrations.AddField(
            model_name='email',
            name='search_length',
            field=models.GeneratedField(db_persist=True, expression=models.expressions.CombinedExpression(models.expressions.CombinedExpression(django.db.models.functions.text.Length('subject'), '+', django.db.models.functions.text.Length('participants_text')), '+', django.db.models.functions.text.Length(django.db.models.functions.text.Left('text_body', 100000))), output_field=models.IntegerField()),
        ),
        migrations.AddIndex(
            model_name='email',
            index=django.contrib.postgres.indexes.GinIndex(fields=['search_vector'], name='email_search_vector'),
        ),
        migrations.AddField(
            model_name='lexicaltermstat',
            name='english',
            field=models.TextField(blank=True, default=''),
        ),
        migrations.AddField(
            model_name='lexicaltermstat',
            name='german',
            field=models.TextField(blank=True, default=''),
        ),
        migrations.AddIndex(
            model_name='lexicaltermstat',
            index=models.Index(fields=['english'], name='term_stat_english'),
        ),
        migrations.AddIndex(
            model_name='lexicaltermstat',
            index=models.Index(fields=['german'], name='term_stat_german'),
        ),
        migrations.CreateModel(
            name='LexicalCollectionStat',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('emails', models.PositiveIntegerField()),
                ('average_length', models.FloatField(help_text='Mean Email.search_length, in characters.')),
                ('refreshed_at', models.DateTimeField(auto_now=True)),
            ],
        ),
        # The old snapshot counted stems as words: it is replaced, not kept.
        migrations.RunSQL("TRUNCATE mailbox_lexicaltermstat", reverse_sql=migrations.RunSQL.noop),
        migrations.RunSQL(REFRESH, reverse_sql="TRUNCATE mailbox_lexicaltermstat"),
    ]
