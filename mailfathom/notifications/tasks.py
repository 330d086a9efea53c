"""Beat's pass over everyone's notifications (mailfathom.settings.CELERY_BEAT_SCHEDULE)."""

from __future__ import annotations

from celery import shared_task

from mailfathom.notifications.services import send_due_notifications


@shared_task(name="notifications.send_due", ignore_result=True)
def send_due() -> dict[str, int]:
    """Send what is due to each person; a delivery that fails is tried again on the next pass."""
    return send_due_notifications().as_counts()
