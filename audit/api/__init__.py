"""The compliance REST API under /api/: credentials, permissions, throttling, paging, export.

docs/operations/compliance-api.md describes it for operators; audit/api/urls.py holds the
ROUTES table every route is listed in.
"""
