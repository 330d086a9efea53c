"""Push mode: watch one folder with IMAP IDLE and synchronize it as soon as the server says.

One watcher holds one connection on one folder. IDLE is re-issued before the server's
inactivity timeout (RFC 2177 allows a server to drop a client idle for 30 minutes), and the
watcher ends after `max_seconds` so a worker slot is never held forever; celery beat starts
a new one. Polling keeps running beside push on every account, so a server without IDLE,
or a watcher that died, only costs latency.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from imapclient import IMAPClient

from accounts.services.imap import close_client
from mailbox.models import Folder
from mailbox.sync import engine
from mailbox.sync.failures import classify

logger = logging.getLogger(__name__)

IDLE_REISSUE_SECONDS = 25 * 60
# Present while a watcher for the folder is started and not yet ended (mailbox.tasks sets it,
# with an expiry, so a watcher whose worker died stops counting on its own).
WATCHER_KEY = "mailfathom:idle-watcher:{folder_pk}"
CHANGE_RESPONSES = {b"EXISTS", b"EXPUNGE", b"FETCH", b"VANISHED"}


@dataclass
class WatchResult:
    synchronizations: int = 0
    stored: int = 0
    unsupported: bool = False
    failure_code: int | None = None


def watch_folder(
    folder_pk: int,
    *,
    max_seconds: float,
    client_factory: Callable[..., Any] | None = None,
    stop: threading.Event | None = None,
    poll_interval: float = 1.0,
) -> WatchResult:
    """IDLE on the folder until `max_seconds` pass, `stop` is set, or the connection dies.

    Each change the server announces triggers a synchronization of this folder over the
    same session. `poll_interval` bounds how long one idle_check waits, which is how soon
    `stop` and the deadline are noticed.
    """
    folder = Folder.objects.select_related("account", "mapping").get(pk=folder_pk)
    result = WatchResult()
    factory = client_factory or engine._default_client
    deadline = time.monotonic() + max_seconds
    try:
        client: IMAPClient = factory(folder.account)
    except Exception as error:
        result.failure_code = classify(error)
        return result
    client.normalise_times = False
    try:
        if b"IDLE" not in client.capabilities():
            result.unsupported = True
            return result
        _synchronize(client, folder, result)  # catch up before waiting
        while time.monotonic() < deadline and not (stop and stop.is_set()):
            client.select_folder(folder.remote_name, readonly=True)
            client.idle()
            changed = _wait_for_change(client, deadline, stop, poll_interval)
            client.idle_done()  # a dead connection raises here, not in idle_check
            if changed:
                _synchronize(client, folder, result)
    except _FolderRunFailed as failed:
        result.failure_code = failed.code  # already recorded on the folder by the run
    except Exception as error:
        result.failure_code = classify(error)
        logger.info("idle folder %s: ended with failure %s", folder.pk, result.failure_code)
    finally:
        close_client(client)
    return result


def _wait_for_change(
    client: IMAPClient, deadline: float, stop: threading.Event | None, poll_interval: float
) -> bool:
    reissue_at = time.monotonic() + IDLE_REISSUE_SECONDS
    while True:
        now = time.monotonic()
        if now >= deadline or now >= reissue_at or (stop and stop.is_set()):
            return False
        wait = min(poll_interval, deadline - now)
        responses = client.idle_check(timeout=wait)
        if any(len(response) > 1 and response[1] in CHANGE_RESPONSES for response in responses):
            return True
        if not responses and time.monotonic() - now < wait / 2:
            # idle_check swallows end-of-file and resets: an early, empty return means the
            # socket woke with nothing to say. Leaving IDLE tells a dead connection (raises)
            # from a spurious wake-up (a harmless extra check of the folder).
            return True


def _synchronize(client: IMAPClient, folder: Folder, result: WatchResult) -> None:
    run = engine.run_folder(client, folder)
    result.synchronizations += 1
    result.stored += run.stored
    if run.stored:
        engine.announce_synchronization(folder.account_id, run.stored)
    if run.failure_code is not None:
        raise _FolderRunFailed(run.failure_code)


class _FolderRunFailed(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code
