"""Reading the system status page in tests: the page as text, an element's data-* attributes."""

from __future__ import annotations

import re

from django.urls import reverse


def status_page(client) -> str:
    """The status page as `client` is shown it (the request must succeed)."""
    response = client.get(reverse("system-status"))
    assert response.status_code == 200
    return response.content.decode()


def data_attributes(page: str, element_id: str) -> dict[str, str]:
    """The data-* attributes of the element with `element_id` (the test fails if there is none)."""
    found = re.search(rf'<[a-z]+[^>]*\bid="{re.escape(element_id)}"([^>]*)>', page)
    assert found, f"no element #{element_id}"
    return dict(re.findall(r'data-([a-z-]+)="([^"]*)"', found.group(0)))
