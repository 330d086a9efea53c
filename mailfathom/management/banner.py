"""What `make run`'s banner says is on, and the one next step the deployment's state calls for.

Read once, when the banner is printed: counts and switches only, never a name or an address.
"""

from __future__ import annotations

from django.conf import settings

from accounts.models import FolderMapping, MailAccount, McpApiKey
from answering.capability import chat_declared
from mailbox.models import Email

_POSTURES = {
    "api-key": "clients send an MCP key (admin > MCP keys)",
    "oauth": "people sign in with OAuth",
    "oauth+api-key": "OAuth sign-in or an MCP key",
    "none": "NO authentication: anyone who reaches it reads the mail",
    "": "not chosen yet (MAILFATHOM_MCP_AUTH)",
}


def features() -> list[str]:
    """One line per capability: the MCP posture, ask_mail, drafting."""
    values = settings.MAILFATHOM
    drafting = MailAccount.objects.filter(drafting_enabled=True).count()
    return [
        f"  Access:  {_POSTURES.get(values.mcp_auth, values.mcp_auth)}",
        "  ask_mail: on"
        if chat_declared()
        else "  ask_mail: off (no chat endpoint: MAILFATHOM_CHAT_PROVIDER)",
        f"  Drafting: on for {drafting} account(s)" if drafting else "  Drafting: off on every account",
    ]


def next_step() -> str:
    """The step a newcomer takes next, from what exists so far."""
    if not MailAccount.objects.exists():
        return "Next: log in to admin and add a mail account under 'Mail accounts'."
    if not FolderMapping.objects.exists():
        return "Next: open the account and use 'Test connection and map folders'."
    if not Email.objects.exists():
        return "Next: mail is synchronizing; watch it on the status page (admin > System status)."
    if not settings.MAILFATHOM.mcp_enabled:
        return "Next: set MAILFATHOM_MCP_ENABLED=true (and MAILFATHOM_MCP_AUTH) to let assistants in."
    if (
        settings.MAILFATHOM.mcp_auth in ("api-key", "oauth+api-key")
        and not McpApiKey.objects.active().exists()
    ):
        return "Next: create an MCP key in admin > MCP keys and paste its client configuration."
    return "Next: connect an assistant (docs/operations/connecting-assistants.md)."
