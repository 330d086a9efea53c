"""Startup checks of reply drafting's settings (registered by the answering app)."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Error, register

from answering.drafting.fit import budget_problems, estimate_tokens
from answering.drafting.generate import longest_instruction
from mailfathom.providers import drafting_models, utility_models


@register()
def check_drafting_budget(app_configs: object = None, **kwargs: object) -> list[Error]:
    """Refuse retrieval settings the 12,000-token ceiling cannot carry (mailfathom.E030)."""
    problems = budget_problems(settings.MAILFATHOM, estimate_tokens(longest_instruction()))
    return [Error(message, id="mailfathom.E030") for message in problems]


@register()
def check_drafting_endpoints(app_configs: object = None, **kwargs: object) -> list[Error]:
    """Refuse MAILFATHOM_DRAFTING_* values that do not fit the provider they resolve to (E031)."""
    problems = utility_models.configuration_problems() + drafting_models.configuration_problems()
    return [Error(message, id="mailfathom.E031") for message in problems]
