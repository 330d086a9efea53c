"""Migrate and seed a fresh database for the tests' authorization server.

Run as `python -m tests.oauth_server.prepare` with MF_OAUTH_SERVER_DB naming a new SQLite
file; the fixture copies the result for each session instead of migrating again.
"""

import django

# Who may sign in, and the applications registered. The fixture reads these names and secrets
# from here too, so the two never disagree.
USERS = {
    "alice@example.test": "alice-secret",
    "bob@example.test": "bob-secret",
    "carol@example.test": "carol-secret",
}
# MailFathom signing a user in: confidential, authorization code with PKCE, refresh tokens.
# Its redirect URIs are added at test time (the live server's port is not known yet).
DELEGATED_CLIENT = ("mailfathom", "mailfathom-client-secret")
# MailFathom app-only, for the domain example.test: client credentials. Dovecot lets a client
# named <name>@<domain> open every mailbox of <domain>, as Microsoft's app-only grant does.
APP_ONLY_CLIENT = ("mailfathom-app@example.test", "mailfathom-app-client-secret")
# Dovecot, the resource server: it authenticates to the introspection endpoint as this client.
RESOURCE_SERVER_CLIENT = ("dovecot", "dovecot-client-secret")


def seed() -> None:
    """Create the users and the three applications."""
    from django.contrib.auth import get_user_model
    from oauth2_provider.models import Application

    user_model = get_user_model()
    for name, password in USERS.items():
        user_model.objects.create_user(name, email=name, password=password)
    confidential = Application.CLIENT_CONFIDENTIAL
    Application.objects.create(
        name=DELEGATED_CLIENT[0],
        client_id=DELEGATED_CLIENT[0],
        client_secret=DELEGATED_CLIENT[1],
        client_type=confidential,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="",
        algorithm=Application.RS256_ALGORITHM,
        skip_authorization=False,
    )
    for client_id, secret in (APP_ONLY_CLIENT, RESOURCE_SERVER_CLIENT):
        Application.objects.create(
            name=client_id,
            client_id=client_id,
            client_secret=secret,
            client_type=confidential,
            authorization_grant_type=Application.GRANT_CLIENT_CREDENTIALS,
        )


def main() -> None:
    from django.core.management import call_command
    from django.db import connection

    django.setup()
    call_command("migrate", verbosity=0)
    seed()
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA journal_mode=WAL")  # readers and the test's writes do not block
    connection.close()


if __name__ == "__main__":
    main()
