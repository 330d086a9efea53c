from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    """Installed so Celery finds tasks.py and admin finds admin.py; it has no models."""

    name = "mailfathom.notifications"
    label = "notifications"
    verbose_name = "Notifications"
