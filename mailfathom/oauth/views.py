"""The authorization server's HTTP side: each view parses, calls accounts' use cases, answers.

The metadata documents, the token, registration and revocation endpoints are read by
programs (no session, no CSRF token, CORS open, as browser-based MCP clients need); the
authorization endpoint and the connections page are read by a person signed in with
Django's login (/oauth/login/, open to people who are not staff).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import wraps
from urllib.parse import urlsplit

from authlib.oauth2.rfc6749 import OAuth2Error
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import LoginView
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from accounts.services import mcp_oauth_tokens
from accounts.services.mcp_oauth_server import (
    McpAuthorizationServer,
    answer_consent,
    consent_grant,
    offered_accounts,
)
from mailfathom.login_throttle import ThrottledLoginForm

logger = logging.getLogger("mailfathom.oauth")

View = Callable[[HttpRequest], HttpResponse]


def _server(request: HttpRequest) -> McpAuthorizationServer:
    return McpAuthorizationServer(mcp_oauth_tokens.base_url(request.build_absolute_uri("/")))


def _oauth_on() -> bool:
    return bool(settings.MAILFATHOM.mcp_enabled and str(settings.MAILFATHOM.mcp_auth).startswith("oauth"))


def only_with_oauth(view: View) -> View:
    """404 unless /mcp is on in an oauth posture: a server taking keys only offers no OAuth at all."""

    @wraps(view)
    def wrapped(request: HttpRequest) -> HttpResponse:
        if not _oauth_on():
            return JsonResponse({"error": "not found"}, status=404)
        return view(request)

    return wrapped


def _open_to_programs(view: View) -> View:
    """Answer CORS preflights and let any origin read the answer (no cookie is ever involved)."""

    def wrapped(request: HttpRequest) -> HttpResponse:
        if request.method == "OPTIONS":
            response = HttpResponse(status=204)
            response["Access-Control-Allow-Methods"] = "GET, POST, OPTIONS"
            response["Access-Control-Allow-Headers"] = "Authorization, Content-Type, MCP-Protocol-Version"
            response["Access-Control-Max-Age"] = "86400"
        else:
            response = view(request)
        response["Access-Control-Allow-Origin"] = "*"
        return response

    return only_with_oauth(csrf_exempt(wraps(view)(wrapped)))


@_open_to_programs
@require_http_methods(["GET", "HEAD"])
def resource_metadata(request: HttpRequest) -> HttpResponse:
    """Protected resource metadata of /mcp (RFC 9728), at the root and the path-aware location."""
    return JsonResponse(_server(request).resource_metadata())


@_open_to_programs
@require_http_methods(["GET", "HEAD"])
def server_metadata(request: HttpRequest) -> HttpResponse:
    """Authorization server metadata (RFC 8414)."""
    return JsonResponse(_server(request).metadata())


@_open_to_programs
@require_http_methods(["POST"])
def token(request: HttpRequest) -> HttpResponse:
    """The token endpoint: a code (with its PKCE verifier) or a refresh token for new tokens."""
    response: HttpResponse = _server(request).create_token_response(request)
    return response


@_open_to_programs
@require_http_methods(["POST"])
def register(request: HttpRequest) -> HttpResponse:
    """Dynamic client registration (RFC 7591), while the operator allows it."""
    response: HttpResponse = _server(request).create_endpoint_response("client_registration", request)
    return response


@_open_to_programs
@require_http_methods(["POST"])
def revoke(request: HttpRequest) -> HttpResponse:
    """Token revocation (RFC 7009): an access token ends alone, a refresh token ends its connection."""
    response: HttpResponse = _server(request).create_endpoint_response("revocation", request)
    return response


class SignIn(LoginView):
    """Django's login page for anyone with an account here, staff or not; throttled like admin's."""

    template_name = "oauth/login.html"
    authentication_form = ThrottledLoginForm
    redirect_authenticated_user = False


@only_with_oauth
@never_cache
@login_required(login_url="oauth-login")
@require_http_methods(["GET", "POST"])
def authorize(request: HttpRequest) -> HttpResponse:
    """Show the consent page for a client's authorization request, and send its answer back."""
    server = _server(request)
    try:
        grant = consent_grant(server, request)
    except OAuth2Error as error:
        if error.redirect_uri:  # the client and its redirect URI are known: tell the client
            return server.with_issuer(server.handle_error_response(request, error))
        logger.info("oauth: authorization request refused before consent: %s", error.error)
        return render(request, "oauth/error.html", {"error": error}, status=400)
    offered = offered_accounts(request.user)
    problem = ""
    if request.method == "POST":
        if request.POST.get("decision") != "allow":
            return answer_consent(server, request, grant, None)
        by_pk = {str(account.pk): account.pk for account in offered}
        chosen = [by_pk[value] for value in request.POST.getlist("account") if value in by_pk]
        if chosen:
            return answer_consent(server, request, grant, chosen)
        problem = "Choose at least one account, or deny."
    client = grant.client.record
    return render(
        request,
        "oauth/consent.html",
        {
            "client": client,
            "redirect_host": _host_of(grant.redirect_uri),
            "accounts": offered,
            "problem": problem,
            "connections_url": reverse("oauth-connections"),
        },
    )


def _host_of(uri: str) -> str:
    parts = urlsplit(uri)
    return parts.netloc or f"{parts.scheme}:"


@never_cache
@login_required(login_url="oauth-login")
@require_http_methods(["GET", "POST"])
def connections(request: HttpRequest) -> HttpResponse:
    """The signed-in person's connected assistants, with when each was last used, and Revoke."""
    if request.method == "POST":
        try:
            pk = int(request.POST.get("connection", ""))
        except ValueError:
            pk = 0
        mcp_oauth_tokens.revoke_connection_of(request.user, pk)
        return HttpResponseRedirect(reverse("oauth-connections"))
    return render(
        request,
        "oauth/connections.html",
        {"connections": mcp_oauth_tokens.connections_of(request.user), "oauth_on": _oauth_on()},
    )
