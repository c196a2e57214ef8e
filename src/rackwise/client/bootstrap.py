"""Bootstrap servers that refuse at once: a command given only dead addresses says so in one
line instead of waiting out its request timeout.

A third-party client (kafka-python's admin client, librdkafka) retries a refused bootstrap
connection until its own timeout, as Kafka's clients do, since a broker may be starting. The
commands run once and a person waits for them, so before such a client is built
:func:`check_bootstrap_reachable` opens (and closes at once) one TCP connection to each
address in turn; the first that accepts ends the check. When every address refuses the
connection, cannot be resolved, or has no route, :class:`BootstrapUnreachable` names each
address and why. An address that neither accepts nor refuses within the timeout is left to the
client, which times out on it as before (the check waits at most :data:`PROBE_TIMEOUT_S`
for it, so a silent address costs at most that much more than before).
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from typing import Final

from rackwise.common import RackwiseError

Address = tuple[str, int]

PROBE_TIMEOUT_S: Final = 1.0
"""How long the check waits for an address to accept or refuse (a refusal from a live host
comes back within a round trip)."""


class BootstrapUnreachable(RackwiseError):
    """No bootstrap server accepts a connection: ``str(e)`` names each address and why."""


def bootstrap_addresses_of(text: str) -> list[Address]:
    """The ``host:port`` entries of a ``bootstrap.servers`` list (``[::1]:9092`` for IPv6, a
    leading ``scheme://`` dropped, empty entries skipped); the syntax is assumed checked."""
    addresses = []
    for entry in (e.strip() for e in text.split(",")):
        if entry:
            host, _, port = entry.split("://")[-1].rpartition(":")
            addresses.append((host.strip("[]"), int(port)))
    return addresses


def unreachable_reason(address: Address, timeout_s: float) -> str | None:
    """Why ``address`` cannot be connected to at once, or None when it accepts a connection or
    does not answer within ``timeout_s`` (a timeout is the client's to report)."""
    host, port = address
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return None
    except TimeoutError:
        return None
    except socket.gaierror as e:
        return f"Connection to {host}:{port} failed: cannot resolve {host} ({e.strerror})"
    except ConnectionRefusedError:
        return f"Connection to {host}:{port} refused"
    except OSError as e:
        return f"Connection to {host}:{port} failed: {e.strerror or e}"


def check_bootstrap_reachable(
    addresses: Sequence[Address], timeout_s: float = PROBE_TIMEOUT_S
) -> None:
    """Raise :class:`BootstrapUnreachable` unless some address may accept a connection
    (waiting at most ``timeout_s``, or :data:`PROBE_TIMEOUT_S` if less, for each)."""
    reasons = []
    for address in addresses:
        reason = unreachable_reason(address, min(timeout_s, PROBE_TIMEOUT_S))
        if reason is None:
            return
        reasons.append(reason)
    if reasons:
        raise BootstrapUnreachable("; ".join(reasons))
