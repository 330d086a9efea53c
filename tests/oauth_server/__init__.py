"""A real OAuth 2.0 / OpenID Connect authorization server for the tests (django-oauth-toolkit).

A Django project of its own, run by the test session as a separate process with its own
SQLite file (never pytest-django's database): settings, urls, a validator adding the `email`
and `preferred_username` claims, the login page, and `prepare` (migrate and seed). The
fixture `oauth_server` (tests/oauth_server/fixtures.py) starts it; nothing here is imported
by the test process but that module.
"""
