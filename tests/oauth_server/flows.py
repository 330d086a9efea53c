"""OAuth 2.0 flows played against the tests' authorization server with `requests`, no browser.

Tokens come back as `Token`, a str whose repr hides it: pytest prints the arguments of a
failing helper and the operands of a failing assert, and a token must never reach test output.
"""

from __future__ import annotations

import base64
import hashlib
import html.parser
import secrets
import urllib.parse
from typing import Any

import requests

TIMEOUT = 10
SECRET_FIELDS = ("access_token", "refresh_token", "id_token")


class Token(str):
    """A token: usable as the str it is, shown as `<access_token>` by repr.

    pytest still prints both sides of a failed `==` between two strings in full: compare
    tokens inside a helper that returns a bool, never in the test's assert itself.
    """

    kind: str = "token"

    def __new__(cls, value: str, kind: str = "token") -> Token:
        token = super().__new__(cls, value)
        token.kind = kind
        return token

    def __repr__(self) -> str:
        return f"<{self.kind}>"

    __str__ = str.__str__


def _hidden(answer: dict[str, Any]) -> dict[str, Any]:
    return {key: Token(value, key) if key in SECRET_FIELDS else value for key, value in answer.items()}


class _Forms(html.parser.HTMLParser):
    """Collect each form's fields (name to value) of a page, submit buttons left out."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[dict[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "form":
            self.forms.append({})
        elif tag == "input" and self.forms and attributes.get("name") and attributes.get("type") != "submit":
            self.forms[-1][attributes["name"] or ""] = attributes.get("value") or ""


def _first_form(page: str) -> dict[str, str]:
    parser = _Forms()
    parser.feed(page)
    assert parser.forms, "the page has no form"
    return parser.forms[0]


def pkce_pair() -> tuple[str, str]:
    """Return a PKCE code verifier and its S256 challenge."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def authorization_code(
    issuer: str,
    client: tuple[str, str],
    user: tuple[str, str],
    redirect_uri: str,
    scope: str,
) -> dict[str, Any]:
    """Sign `user` (name, password) in through the login and consent pages; return the tokens.

    Authorization code with PKCE (S256), state and nonce checked as a client must; the code
    is redeemed with the confidential client's credentials (HTTP Basic).
    """
    verifier, challenge = pkce_pair()
    state = secrets.token_urlsafe(16)
    query = {
        "response_type": "code",
        "client_id": client[0],
        "redirect_uri": redirect_uri,
        "scope": scope,
        "state": state,
        "nonce": secrets.token_urlsafe(16),
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    with requests.Session() as browser:
        page = browser.get(f"{issuer}/authorize/?{urllib.parse.urlencode(query)}", timeout=TIMEOUT)
        assert "/accounts/login/" in page.url, f"no login page: {page.status_code} at {page.url}"
        fields = _first_form(page.text) | {"username": user[0], "password": user[1]}
        page = browser.post(page.url, data=fields, headers={"Referer": page.url}, timeout=TIMEOUT)
        assert 'id="authorizationForm"' in page.text, f"no consent page for {user[0]}: {page.status_code}"
        fields = _first_form(page.text) | {"allow": "Authorize"}
        answer = browser.post(
            page.url, data=fields, headers={"Referer": page.url}, allow_redirects=False, timeout=TIMEOUT
        )
    assert answer.status_code == 302, f"consent answered {answer.status_code}, not a redirect"
    location = urllib.parse.urlsplit(answer.headers["Location"])
    assert location._replace(query="").geturl() == redirect_uri, "redirected elsewhere"
    params = dict(urllib.parse.parse_qsl(location.query))
    assert params.get("state") == state, "state not returned"
    assert "code" in params, f"no code: {params.get('error', 'no error given')}"
    token = requests.post(
        f"{issuer}/token/",
        auth=client,
        data={
            "grant_type": "authorization_code",
            "code": params["code"],
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
        },
        timeout=TIMEOUT,
    )
    assert token.status_code == 200, f"code redemption answered {token.status_code}"
    return _hidden(token.json())


def client_credentials(issuer: str, client: tuple[str, str], scope: str) -> dict[str, Any]:
    """Return a client-credentials token for `client` (id, secret)."""
    token = requests.post(
        f"{issuer}/token/",
        auth=client,
        data={"grant_type": "client_credentials", "scope": scope},
        timeout=TIMEOUT,
    )
    assert token.status_code == 200, f"client credentials answered {token.status_code}"
    return _hidden(token.json())
