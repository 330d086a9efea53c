"""Reply drafting: one incoming mail becomes one reviewed draft (docs/operations/drafting.md)."""
