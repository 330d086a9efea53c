"""factory-boy factories for the models tests build on, plus fixtures that use them."""

from __future__ import annotations

import factory

from accounts.models import FolderMapping, MailAccount, Security


class MailAccountFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = MailAccount

    account_id = factory.Sequence(lambda n: f"account-{n}")
    display_name = factory.Sequence(lambda n: f"Account {n}")
    imap_host = "127.0.0.1"
    imap_port = 143
    security = Security.NONE
    username = factory.Sequence(lambda n: f"user{n}")


class FolderMappingFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = FolderMapping

    account = factory.SubFactory(MailAccountFactory)
    alias = factory.Sequence(lambda n: f"folder-{n}")
    remote_name = factory.LazyAttribute(lambda o: o.alias.upper())
    role = ""
    visible_to_tools = True
