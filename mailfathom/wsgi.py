"""WSGI entrypoint (no lifespan): the embedder starts loading in the background at import."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mailfathom.settings")
application = get_wsgi_application()

from mailfathom.providers import warm_embedder  # noqa: E402  (after Django is set up)

warm_embedder(wait=False)
