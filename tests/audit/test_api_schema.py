"""The OpenAPI schema documents every compliance route, its body and every status it answers.

A property-based run over the schema (schemathesis) can only check what the schema says;
these tests hold the schema to the ROUTES table.
"""

from __future__ import annotations

import re

import pytest
from drf_spectacular.drainage import GENERATOR_STATS
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.validation import validate_schema

from audit.api.urls import ROUTES

pytestmark = pytest.mark.django_db

# Routes written before the trails document their refusals in the shared prose only.
TOKEN_ROUTES = "/api/tokens/"


@pytest.fixture(scope="module")
def schema():
    GENERATOR_STATS.reset()
    generated = SchemaGenerator().get_schema(request=None, public=True)
    warnings, errors = dict(GENERATOR_STATS._warn_cache), dict(GENERATOR_STATS._error_cache)
    return generated, warnings, errors


def test_schema_is_valid_openapi_generated_without_warnings_or_errors(schema):
    generated, warnings, errors = schema

    validate_schema(generated)
    assert (warnings, errors) == ({}, {})


@pytest.mark.parametrize("route", ROUTES, ids=lambda route: f"{route.method} {route.path}")
def test_every_route_is_documented_with_its_success_and_refusal_statuses(schema, route):
    generated, _, _ = schema
    path = re.sub(r"\{[^}]+\}", "{id}", route.path)
    documented = {re.sub(r"\{[^}]+\}", "{id}", name): item for name, item in generated["paths"].items()}

    operation = documented[path][route.method.lower()]

    statuses = set(operation["responses"])
    assert str(route.success) in statuses
    if not route.path.startswith(TOKEN_ROUTES):
        assert {"401", "403", "429"} <= statuses
        if route.body:
            assert "requestBody" in operation and "400" in statuses
        if "{" in route.path:
            assert "404" in statuses
