"""``--bootstrap-server`` checked as Kafka's clients check ``bootstrap.servers``, at once, before
any connection is tried (Kafka's ``ClientUtils.parseAndValidateAddresses``, same messages).

Each comma-separated entry, spaces trimmed and empty ones skipped, must read as ``host:port``
(``[::1]:9092`` for an IPv6 host; a leading ``scheme://`` is allowed), with a port from 0 to
65535; at least one entry must be given. ``localhost`` alone is refused: ``Invalid url in
bootstrap.servers: localhost``. :func:`bootstrap_addresses` gives the checked entries as
addresses; :func:`refuse_dead_bootstrap` refuses at once a ``bootstrap.servers`` whose every
address refuses connections, for the commands whose clients would retry it until a timeout.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
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
    from rackwise.client.bootstrap import bootstrap_addresses_of  # noqa: PLC0415

    return bootstrap_addresses_of(check_bootstrap_servers(text))


def refuse_dead_bootstrap(properties: Mapping[str, str]) -> None:
    """Raise :class:`CommandError` naming each address when no server of the
    ``bootstrap.servers`` property accepts a connection (one that reads as no address is left
    to the client to refuse in its own words)."""
    from rackwise.client.bootstrap import (  # noqa: PLC0415
        BootstrapUnreachable,
        bootstrap_addresses_of,
        check_bootstrap_reachable,
    )

    try:
        addresses = bootstrap_addresses_of(properties.get("bootstrap.servers", ""))
    except ValueError:
        return
    try:
        check_bootstrap_reachable(addresses)
    except BootstrapUnreachable as e:
        raise CommandError(str(e)) from None
