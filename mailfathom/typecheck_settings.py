"""Settings the type checker loads: the product settings, without starting any server.

django-stubs' mypy plugin imports a settings module to learn the installed apps and models.
The product settings start (or find) the embedded PostgreSQL and Redis when DATABASE_URL and
REDIS_URL are unset; here both name servers that are never contacted (settings only parse
the URLs), so `mypy` starts nothing and reads no secret from var/.
"""

import os
import sys
from pathlib import Path

# mypy may put the project folder after the standard library on sys.path, where the stdlib's
# own `mailbox` module would shadow our app of that name when the plugin imports the models.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

os.environ["DATABASE_URL"] = "postgres://typecheck@localhost:1/typecheck"
os.environ["REDIS_URL"] = "redis://localhost:1/0"
os.environ["DJANGO_SECRET_KEY"] = "typecheck-only"  # noqa: S105  # a placeholder, signs nothing

from mailfathom.settings import *  # noqa: F403
