"""Which host names mean this machine: the one loopback test every gate applies.

Unencrypted IMAP (accounts), the unauthenticated /mcp posture at startup (mailfathom.checks)
and at request time (mailfathom.mcp.http) are allowed only on loopback, so the three ask
the same question here and cannot accept different names.
"""

from __future__ import annotations

import ipaddress


def is_loopback_host(host: str) -> bool:
    """Whether `host` names this machine's loopback interface, whatever resolver runs.

    Accepted:
    - `localhost`, in any letter case: the name RFC 6761 reserves, which the hosts file
      maps to loopback;
    - an IPv4 address in 127.0.0.0/8;
    - the IPv6 address ::1 in any spelling, bare or in brackets (`[::1]`, as in a URL);
    - an IPv4-mapped IPv6 address of 127.0.0.0/8 (`::ffff:127.0.0.1`): the local address
      a dual-stack socket reports for a connection to 127.0.0.1.

    Refused: every other name or address, including `localhost.` and
    `localhost.localdomain` (looked up in DNS, not the hosts file, so they may name
    another machine), names under localhost (`mail.localhost`), the unspecified addresses
    (`0.0.0.0`, `::`), short forms getaddrinfo would expand (`127.1`), brackets around
    anything but an IPv6 address, a port, and surrounding whitespace.
    """
    if host.lower() == "localhost":
        return True
    bracketed = host.startswith("[") and host.endswith("]")
    try:
        address = ipaddress.ip_address(host[1:-1] if bracketed else host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address):
        # Python before 3.13 does not look through the IPv4 mapping itself.
        return address.is_loopback or (address.ipv4_mapped is not None and address.ipv4_mapped.is_loopback)
    return not bracketed and address.is_loopback
