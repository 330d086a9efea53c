"""One search_emails caller for bench/search.py --anchor-tree, run from a product tree of choice.

    python bench/search_child.py TREE    (environment: DATABASE_URL and the rest, as for a server)

Imports the product from TREE (this checkout, or another one unpacked with
`git archive <commit> | tar -x -C DIR`) and answers one JSON request a line on stdin with
one JSON line on stdout:

    {"provider": "none"}                  -> {"ok": true}   (embedding provider from now on)
    {"query": "...", "limit": 20}         -> {"seconds": s, "mode": "lexical", "ids": [...]}

The time is taken around search_emails alone, inside this process, so both trees are
measured the same way and the pipe is not counted. Only the call's public signature is
relied on (query text and result_limit), which is the same in every tree measured so far.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def main() -> None:
    tree = Path(sys.argv[1]).resolve()
    # The product's app named `mailbox` must shadow the standard library's, from TREE only.
    sys.path[:] = [str(tree), *(p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent)]
    os.chdir(tree)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mailfathom.settings")
    import django

    django.setup()
    from django.conf import settings

    from mailbox.services.search import search_emails
    from mailfathom.providers import embedders

    for line in sys.stdin:
        request = json.loads(line)
        if "provider" in request:
            settings.MAILFATHOM = settings.MAILFATHOM.replace(embedding_provider=request["provider"])
            embedders.reset()  # a plain assignment sends no setting_changed
            answer: dict[str, object] = {"ok": True}
        else:
            started = time.perf_counter()
            result = search_emails(request["query"], result_limit=request["limit"])
            seconds = time.perf_counter() - started
            answer = {
                "seconds": seconds,
                "mode": result.retrieval_mode,
                "ids": [match.summary.stored_email_id for match in result.matches],
            }
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
