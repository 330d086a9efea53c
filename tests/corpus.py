"""Where the team's shared mail corpus is: `shared/corpus` beside the checkout.

MAILFATHOM_CORPUS_DIR points elsewhere (a checkout in another place than CI's layout).
Tests that need it fail, never skip, when it is missing.
"""

import os
from pathlib import Path

CORPUS = Path(
    os.environ.get("MAILFATHOM_CORPUS_DIR") or Path(__file__).resolve().parents[2] / "shared" / "corpus"
)
