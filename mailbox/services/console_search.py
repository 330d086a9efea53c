"""Search the local copy from the operator's console with the product's own lexical ranking.

The console's search box is not Django's `icontains` over columns: it ranks the rows the
console has already narrowed (its filters) with the same BM25 ranking search_emails uses,
so an operator finds what an MCP client would, in the same order. The query is bounded as
the MCP tool bounds it and is never logged.
"""

from __future__ import annotations

from mailbox.models import EmailQuerySet
from mailbox.services.lexical_search import rank_lexical
from mailbox.services.search import checked_query

# Two console pages of results: a search is for finding a message, not for paging through
# the mailbox, which the filters do.
CONSOLE_SEARCH_LIMIT = 200


def rank_for_console(candidates: EmailQuerySet, query_text: object) -> list[str]:
    """Return the ids of up to CONSOLE_SEARCH_LIMIT of `candidates` matching the query, best first.

    A query a search refuses (blank, over 512 characters, a control character) raises
    MailFathomError 51002 naming queryText, as search_emails does.
    """
    query = checked_query(query_text)
    return [hit.email_id for hit in rank_lexical(candidates, query, CONSOLE_SEARCH_LIMIT)]
