"""Translatable labels for fields and models declared without one, kept out of migrations.

A field's verbose_name argument is part of its deconstruction (Field._verbose_name), and a
model's Meta verbose_name part of its migration options (Options.original_attrs). Passing
verbose_name=_("remote name") to a field that had none would therefore make makemigrations
write an AlterField for words that did not change in English. Instead, the label Django
derived from the name ("remote_name" -> "remote name") is replaced here by the same words,
lazily translated; migrations keep reading what was declared, and the admin reads the label.

The English text must stay what Django derived (tests/mailfathom/test_german_admin.py checks
every label given here), so nothing but the language changes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import models

if TYPE_CHECKING:  # a type only (django-stubs-ext is a development requirement)
    from django_stubs_ext import StrPromise

# What was given, for the test to compare with what Django would have derived.
FIELD_LABELS: list[tuple[type[models.Model], str, StrPromise]] = []
MODEL_NAMES: list[tuple[type[models.Model], StrPromise, StrPromise]] = []


def label_fields(model: type[models.Model], **labels: StrPromise) -> None:
    """Give the named fields of `model` these (lazy) labels, without touching migration state."""
    for name, label in labels.items():
        field = model._meta.get_field(name)
        field.verbose_name = label  # type: ignore[union-attr]  # a concrete field, not a reverse relation
        FIELD_LABELS.append((model, name, label))


def label_model(model: type[models.Model], singular: StrPromise, plural: StrPromise) -> None:
    """Give `model` these (lazy) names, singular and plural, without touching migration state."""
    model._meta.verbose_name = singular
    model._meta.verbose_name_plural = plural
    MODEL_NAMES.append((model, singular, plural))
