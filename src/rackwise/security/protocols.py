"""Kafka's security protocols: what a listener speaks, by name and by the id the wire and the
metadata log carry (``SecurityProtocol`` in Kafka's clients).

Worked example
    ``protocol_id("SASL_SSL")`` is 3, as BrokerRegistration's listeners carry it;
    ``uses_tls("SASL_SSL")`` and ``uses_sasl("SASL_SSL")`` are both true, and
    ``DEFAULT_PROTOCOL_MAP`` maps each protocol's name to itself, as Kafka's default
    ``listener.security.protocol.map`` does (controller listeners aside).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final

PLAINTEXT: Final = "PLAINTEXT"
SSL: Final = "SSL"
SASL_PLAINTEXT: Final = "SASL_PLAINTEXT"
SASL_SSL: Final = "SASL_SSL"
PROTOCOL_IDS: Final = MappingProxyType({PLAINTEXT: 0, SSL: 1, SASL_PLAINTEXT: 2, SASL_SSL: 3})
"""Each protocol's id, as Kafka numbers them."""
PROTOCOLS: Final = tuple(PROTOCOL_IDS)
DEFAULT_PROTOCOL_MAP: Final = MappingProxyType({p: p for p in PROTOCOLS})
"""Kafka's default ``listener.security.protocol.map``."""


def protocol_id(protocol: str) -> int:
    """The id of ``protocol`` (a name of :data:`PROTOCOLS`)."""
    return PROTOCOL_IDS[protocol]


def protocol_name(protocol_id_: int) -> str:
    """The name of the protocol numbered ``protocol_id_`` (KeyError for an unknown id)."""
    for name, number in PROTOCOL_IDS.items():
        if number == protocol_id_:
            return name
    raise KeyError(protocol_id_)


def uses_tls(protocol: str) -> bool:
    """Whether ``protocol`` runs over TLS (SSL, SASL_SSL)."""
    return protocol in (SSL, SASL_SSL)


def uses_sasl(protocol: str) -> bool:
    """Whether ``protocol`` authenticates with SASL (SASL_PLAINTEXT, SASL_SSL)."""
    return protocol in (SASL_PLAINTEXT, SASL_SSL)
