"""The seam ask_mail is advertised through (mcp-tools.txt, When the tool is advertised).

ask_mail is listed only while this deployment can answer a question, decided on every
tools/list. The answering app owns that reading (an embedding profile in use and a chat
endpoint declared and not refusing); until it provides one, nothing here can answer, so
the reading is False and ask_mail is neither registered nor listed. When the answering use
case lands, its ToolSpec is added to the server with `advertised=answering_available`, and
this function calls the answering app's capability reading instead.
"""

from __future__ import annotations


def answering_available() -> bool:
    """Whether ask_mail is listed right now: never, while no answering capability exists."""
    return False
