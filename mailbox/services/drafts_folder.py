"""Write to an account's Drafts-role folder: the one IMAP path that changes a mail server.

Synchronization never writes and stays apart from this. A session SELECTs the Drafts folder
read-write and offers three primitives: find copies by Message-ID fragment, APPEND, remove by
UID; the policy is answering.drafting.deliver's. Without UIDPLUS a removal only sets \\Deleted,
because a plain EXPUNGE would purge what others flagged too. Failures carry 63xxx codes with
no server text, since a server's words may quote mail.
"""

from __future__ import annotations

import imaplib
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from email.parser import BytesHeaderParser
from email.policy import compat32

from imapclient import IMAPClient
from imapclient.exceptions import IMAPClientAbortError, IMAPClientError, LoginError

from accounts.models import FolderRole, MailAccount
from accounts.services.imap import close_client, open_client
from mailbox.models import Folder
from mailbox.parsing.fields import parse_message_id
from mailbox.sync.failures import classify
from mailfathom.core.errors import Code, MailFathomError

logger = logging.getLogger(__name__)

DRAFTS_FOLDER_UNMAPPED = Code.DRAFTS_FOLDER_UNMAPPED
DRAFTS_FOLDER_MISSING = Code.DRAFTS_FOLDER_MISSING
WRITE_REFUSED = Code.WRITE_REFUSED
SERVER_UNAVAILABLE = Code.SERVER_UNAVAILABLE

DRAFT_FLAGS = (b"\\Draft", b"\\Seen")
TIMEOUT_SECONDS = 60.0
MAX_FRAGMENT_CHARS = 200
_APPENDUID = re.compile(rb"\[APPENDUID (\d+) (\d+)\]", re.IGNORECASE)
_MESSAGE_ID_ITEM = b"BODY[HEADER.FIELDS (MESSAGE-ID)]"
# Failures of the connection itself (ssl.SSLError and socket timeouts are OSErrors).
_TRANSPORT = (LoginError, IMAPClientAbortError, imaplib.IMAP4.abort, OSError, EOFError)


def drafts_folder_of(account: MailAccount) -> Folder:
    """Return the Folder row of the account's Drafts-role mapping, creating the row if needed.

    Raises 63001 when the account maps no folder with the Drafts role: nothing connects.
    """
    mapping = account.folders.filter(role=FolderRole.DRAFTS).first()
    if mapping is None:
        raise MailFathomError(
            DRAFTS_FOLDER_UNMAPPED,
            "The account maps no folder with the Drafts role; map one in the account's folders "
            "or set the Drafts-folder mode to never.",
        )
    folder = Folder.objects.filter(mapping=mapping).first()
    if folder is None:
        folder, _ = Folder.objects.get_or_create(
            account=account, remote_name=mapping.remote_name, defaults={"mapping": mapping}
        )
    return folder


class DraftsSession:
    """An IMAP session with the account's Drafts folder selected read-write."""

    def __init__(self, client: IMAPClient, folder: Folder, uidvalidity: int) -> None:
        self._client = client
        self.folder = folder
        self.uidvalidity = uidvalidity
        self.uidplus = bool(client.has_capability("UIDPLUS"))

    def copies(self, fragment: str) -> dict[int, str]:
        """UID -> Message-ID (as stored: no brackets) of every message whose Message-ID contains `fragment`.

        IMAP's HEADER search is a case-insensitive substring match, so callers check the
        returned ids exactly before acting on one.
        """
        if not fragment or len(fragment) > MAX_FRAGMENT_CHARS or not fragment.isascii():
            raise ValueError("a Message-ID fragment is 1 to 200 ASCII characters")
        with _step("search"):
            uids = self._client.search(["HEADER", "MESSAGE-ID", fragment])
            if not uids:
                return {}
            answer = self._client.fetch(uids, ["BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)]"])
        found = {}
        for uid, data in answer.items():
            header = BytesHeaderParser(policy=compat32).parsebytes(data.get(_MESSAGE_ID_ITEM) or b"")
            found[int(uid)] = parse_message_id(header.get("Message-ID"))
        return found

    def append(self, message: bytes, message_id: str) -> int:
        """APPEND `message` (whose Message-ID is `message_id`, no brackets); return its UID.

        The UID is APPENDUID's when the server offers UIDPLUS and names this folder's
        UIDVALIDITY, else a SEARCH by the Message-ID finds it.
        """
        with _step("append"):
            answer = self._client.append(self.folder.remote_name, message, flags=DRAFT_FLAGS)
        match = _APPENDUID.search(answer if isinstance(answer, bytes) else str(answer).encode())
        if self.uidplus and match and int(match.group(1)) == self.uidvalidity:
            return int(match.group(2))
        with _step("search"):
            self._client.noop()  # let the session learn of the message it just added
        exact = [uid for uid, found in self.copies(message_id).items() if found == message_id]
        if not exact:
            raise MailFathomError(
                WRITE_REFUSED, "The server accepted the draft but does not show it in the Drafts folder."
            )
        return max(exact)

    def remove(self, uids: list[int]) -> bool:
        """Flag `uids` \\Deleted and, with UIDPLUS, expunge exactly them; return whether expunged."""
        if not uids:
            return False
        with _step("remove"):
            self._client.add_flags(uids, [b"\\Deleted"], silent=True)
            if not self.uidplus:
                return False
            self._client.uid_expunge(uids)
        return True


@contextmanager
def drafts_session(account: MailAccount, *, timeout: float = TIMEOUT_SECONDS) -> Iterator[DraftsSession]:
    """Log in, SELECT the Drafts-role folder read-write, yield a DraftsSession, log out.

    Raises 63001 (no Drafts-role folder: before connecting), 63002 (the server has no
    such folder), 63004 (unreachable, login refused, TLS, timeout, connection lost).
    Errors raised by the caller's block pass through untouched.
    """
    folder = drafts_folder_of(account)
    with _step("login"):
        client = open_client(account, timeout=timeout)
    try:
        client.normalise_times = False
        try:
            selected = client.select_folder(folder.remote_name)
        except _TRANSPORT as error:
            raise _unavailable(error, "select") from error
        except (IMAPClientError, imaplib.IMAP4.error) as error:
            logger.warning("drafts folder of %s: the server cannot select it", account.account_id)
            raise MailFathomError(
                DRAFTS_FOLDER_MISSING,
                "The folder mapped with the Drafts role cannot be opened on the server; check the mapping.",
            ) from error
        yield DraftsSession(client, folder, int(selected[b"UIDVALIDITY"]))
    finally:
        close_client(client)


@contextmanager
def _step(step: str) -> Iterator[None]:
    """Turn transport failures into 63004 and server refusals into 63003, naming only the step."""
    try:
        yield
    except MailFathomError:
        raise
    except _TRANSPORT as error:
        raise _unavailable(error, step) from error
    except (IMAPClientError, imaplib.IMAP4.error) as error:
        logger.warning("drafts folder: the server refused the %s", step)
        message = f"The mail server refused the {step} in the Drafts folder."
        raise MailFathomError(WRITE_REFUSED, message) from error


def _unavailable(error: BaseException, step: str) -> MailFathomError:
    cause = classify(error)
    logger.warning("drafts folder: %s failed (%s, cause %s)", step, type(error).__name__, cause)
    return MailFathomError(
        SERVER_UNAVAILABLE,
        f"The mail server could not be reached, refused the login or dropped the connection "
        f"(cause {cause}); the draft is kept and can be delivered again.",
    )
