"""Sending one message: by mail through Django's email settings, or as a signed webhook POST.

A webhook's body is the message's JSON; its `X-MailFathom-Signature` header is
`t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>." + body under the subscription's secret>`
(docs/operations/notifications.md shows a receiver checking it). Redirects are never followed,
so a delivery cannot be led to another address, plain http included: a 3xx is a failure.
Failures are logged as a status or an exception's type, never the URL or the message.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import smtplib
import time

import requests
from django.conf import settings
from django.core.mail import EmailMessage, get_connection

from accounts.notification_models import NotificationPreference, webhook_url_problem
from mailfathom.core.version import VERSION
from mailfathom.notifications.messages import Message

logger = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-MailFathom-Signature"


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The signature header's value for `body` sent at `timestamp`."""
    digest = hmac.new(secret.encode("utf-8"), f"{timestamp}.".encode("ascii") + body, hashlib.sha256)
    return f"t={timestamp},v1={digest.hexdigest()}"


def by_mail(preference: NotificationPreference, message: Message) -> bool:
    """Send `message` to the person's own address; whether the SMTP server took it.

    Through Django's EMAIL_BACKEND, with the MAILFATHOM_EMAIL_* values read at send time.
    """
    values = settings.MAILFATHOM
    connection = get_connection(
        host=values.email_host,
        port=values.email_port,
        username=values.email_user,
        password=values.email_password,
        use_tls=values.email_security == "starttls",
        use_ssl=values.email_security == "tls",
        timeout=settings.EMAIL_TIMEOUT,
    )
    mail = EmailMessage(
        subject=message.subject,
        body=message.text,
        from_email=values.email_from,
        to=[preference.user.email],
        connection=connection,
    )
    try:
        return mail.send() == 1
    except (smtplib.SMTPException, OSError) as error:
        logger.warning("notifications: mail not sent: kind=%s error=%s", message.kind, type(error).__name__)
        return False


def by_webhook(preference: NotificationPreference, message: Message) -> bool:
    """POST `message` to the person's webhook, signed; whether it answered 2xx in time."""
    url = preference.webhook_url
    if webhook_url_problem(url):
        logger.warning("notifications: webhook refused: kind=%s reason=url", message.kind)
        return False
    body = json.dumps(message.payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    headers = {
        "Content-Type": "application/json",
        "User-Agent": f"MailFathom/{VERSION}",
        "X-MailFathom-Kind": message.kind,
        SIGNATURE_HEADER: sign(preference.webhook_secret(), int(time.time()), body),
    }
    try:
        response = requests.post(
            url,
            data=body,
            headers=headers,
            timeout=settings.MAILFATHOM.notifications_webhook_timeout_seconds,
            allow_redirects=False,
        )
    except requests.RequestException as error:
        logger.warning("notifications: webhook failed: kind=%s error=%s", message.kind, type(error).__name__)
        return False
    if not 200 <= response.status_code < 300:
        logger.warning("notifications: webhook failed: kind=%s status=%d", message.kind, response.status_code)
        return False
    return True
