"""Reply drafting: from one incoming email to one reviewed draft (docs/operations/drafting.md)."""
