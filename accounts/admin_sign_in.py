"""Admin pages that sign a mailbox in at its OAuth 2.0 provider and come back.

`start` (from the account page's "Sign in with …" button) sends the browser to the
provider; `callback` is where the provider sends it back: SIGN_IN_CALLBACK_PATH, the
redirect URI an operator registers (docs/operations/mailbox-providers.md). Both need a
staff login and change permission on the account; what the callback must check is kept in
the operator's session under the sign-in's state, so a sign-in started in one browser
cannot be completed from another.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import reverse

from accounts.models import MailAccount
from accounts.services import oauth_providers, oauth_sign_in, people

SIGN_IN_CALLBACK_PATH = "sign-in/mailbox/callback/"
_PENDING = "mailfathom.mailbox_sign_in"
_KEPT = 5  # sign-ins pending at once per browser session; the oldest goes first


def redirect_uri(request: HttpRequest) -> str:
    """The callback's full address: under MAILFATHOM_PUBLIC_BASE_URL when set."""
    path = reverse("mailbox-sign-in-callback")
    base = settings.MAILFATHOM.public_base_url.rstrip("/")
    return base + path if base else request.build_absolute_uri(path)


def _change_page(account_pk: int) -> str:
    return reverse("admin:accounts_mailaccount_change", args=[quote(account_pk)])


def start(model_admin: admin.ModelAdmin[Any], request: HttpRequest, object_id: str) -> HttpResponse:
    # POST only, checked here: require_POST would take `model_admin` for the request.
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    account = model_admin.get_object(request, unquote(object_id))
    if account is None:
        raise Http404("No such account.")
    if not model_admin.has_change_permission(request, account):
        raise PermissionDenied
    try:
        url, pending = oauth_sign_in.begin(account, redirect_uri(request))
    except oauth_sign_in.SignInFailed as failure:
        messages.error(request, str(failure))
        return HttpResponseRedirect(_change_page(account.pk))
    except oauth_providers.DiscoveryFailed:
        messages.error(
            request,
            "The provider's discovery document could not be read at the registration's issuer URL; "
            "check the issuer URL.",
        )
        return HttpResponseRedirect(_change_page(account.pk))
    kept = dict(list(request.session.get(_PENDING, {}).items())[-(_KEPT - 1) :])
    kept[pending["state"]] = pending
    request.session[_PENDING] = kept
    return HttpResponseRedirect(url)


def callback(request: HttpRequest) -> HttpResponse:
    answer = {key: request.GET.get(key, "") for key in ("state", "code", "error") if key in request.GET}
    kept: dict[str, Any] = request.session.get(_PENDING, {})
    pending = kept.pop(answer.get("state", ""), None)
    request.session[_PENDING] = kept
    if pending is not None:
        account = MailAccount.objects.filter(pk=pending["account"]).first()
        if account is None or not people.within(people.reviewable_accounts(request.user), account.pk):
            raise Http404("No such account.")
        if not request.user.has_perm("accounts.change_mailaccount"):
            raise PermissionDenied
    back = _change_page(pending["account"]) if pending else reverse("admin:accounts_mailaccount_changelist")
    try:
        done = oauth_sign_in.complete(pending, answer)
    except oauth_sign_in.SignInFailed as failure:
        messages.error(request, str(failure))
        return HttpResponseRedirect(back)
    except oauth_providers.DiscoveryFailed:
        messages.error(request, "The provider's discovery document could not be read; try again.")
        return HttpResponseRedirect(back)
    who = done.subject or "an account the provider did not name"
    messages.success(request, f"Signed in as {who}. Synchronization uses this sign-in from now on.")
    if done.other_than_username:
        messages.warning(
            request,
            f"The IMAP user name is {done.account.username}, but the provider signed in {who}; "
            "unless that identity may open the mailbox, the server will refuse it (code 61018).",
        )
    return HttpResponseRedirect(_change_page(done.account.pk))
