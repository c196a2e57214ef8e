"""``--bootstrap-server`` checked as Kafka's clients check ``bootstrap.servers``, at once, before
any connection is tried (Kafka's ``ClientUtils.parseAndValidateAddresses``, same messages).

Each comma-separated entry, spaces trimmed and empty ones skipped, must read as ``host:port``
(``[::1]:9092`` for an IPv6 host; a leading ``scheme://`` is allowed), with a port from 0 to
65535; at least one entry must be given. ``localhost`` alone is refused: ``Invalid url in
bootstrap.servers: localhost``. :func:`bootstrap_addresses` gives the checked entries as
addresses.
"""

from __future__ import annotations

import re
from typing import Final

from rackwise.cli.errors import CommandError

_HOST_PORT: Final = re.compile(r"(?:[0-9a-zA-Z\-%._]*://)?\[?([0-9a-zA-Z\-%._:]*)]?:([0-9]+)")
_MAX_PORT: Final = 65535


def check_bootstrap_servers(text: str) -> str:
    """``text`` as it was given, once every entry in it is a ``host:port``."""
    entries = [entry.strip() for entry in text.split(",") if entry.strip()]
    for entry in entries:
        match = _HOST_PORT.fullmatch(entry)
        if match is None:
            raise CommandError(f"Invalid url in bootstrap.servers: {entry}")
        if int(match.group(2)) > _MAX_PORT:
            raise CommandError(f"Invalid port in bootstrap.servers: {entry}")
    if not entries:
        raise CommandError("No resolvable bootstrap urls given in bootstrap.servers")
    return text


def bootstrap_addresses(text: str) -> list[tuple[str, int]]:
    """``--bootstrap-server`` as addresses, once Kafka's checks pass (``[::1]:9092`` too)."""
    check_bootstrap_servers(text)
    addresses = []
    for entry in (e.strip() for e in text.split(",")):
        if entry:
            host, _, port = entry.split("://")[-1].rpartition(":")
            addresses.append((host.strip("[]"), int(port)))
    return addresses
