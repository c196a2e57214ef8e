"""A broker's registration as a ZooKeeper-mode broker writes it to ``/brokers/ids/<id>``.

KIP-36 (rack-aware replica assignment, Kafka 0.10.0) added ``rack`` and raised the document to
version 3. The versions differ in what they carry:

* version 1: ``host`` and ``port`` of the one PLAINTEXT listener, ``jmx_port``, ``timestamp``;
* version 2: adds ``endpoints``, one ``LISTENER://host:port`` string per listener;
* version 3: adds ``rack``, written only when the broker has ``broker.rack`` set;
* versions 4 and 5 (later Kafka) add ``listener_security_protocol_map`` and ``features``.

Reading follows Kafka's own reader. A version below 1 is refused; every version from 1 up is
read, because Kafka deliberately reads future versions as it reads version 2 (KIP-36 needed a
0.9.0.1 fix precisely because 0.9.0.0 choked on a version it did not know). For version 1 the
single endpoint ``PLAINTEXT://host:port`` is derived from ``host`` and ``port``; from version 2
on ``endpoints`` is required and each entry must name a listener that maps to a security
protocol, through ``listener_security_protocol_map`` if present and by listener name otherwise.
``rack`` is read in any version and may be ``null``; ``features`` is not read. ``jmx_port`` is
required as Kafka requires it; ``host``, ``port`` and ``timestamp`` are required as the schema
has them (Kafka's reader skips them from version 2 on, but every broker writes them).

The writer prints version 3 exactly as the 0.10.0 brokers that introduced it did: compact, with
the members in the order that broker's Scala hash map happened to iterate them::

    {"jmx_port":-1,"timestamp":"1484245580054","endpoints":["PLAINTEXT://h:9092"],"host":"h","version":3,"port":9092,"rack":"dc1"}

``rack`` appears only when set. Unlike that broker, which pasted strings into the JSON
unescaped, strings are escaped as Jackson escapes them, so odd characters still give valid JSON.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from rackwise.formats._json import (
    INT32_MAX,
    INT32_MIN,
    JsonValue,
    dumps,
    expect_array,
    expect_int,
    expect_object,
    expect_optional_str,
    expect_str,
    fail,
    join,
    loads,
    preview,
    require,
)

WRITTEN_VERSION: Final = 3
"""The registration version :func:`format_broker_registration` writes (KIP-36's)."""

SECURITY_PROTOCOLS: Final = frozenset({"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"})
"""Kafka's security protocols; without a listener map a listener must be named after one."""

_DOCUMENT: Final = "broker registration JSON"
# Kafka's listener syntax: NAME://host:port, the host optionally in [brackets] (IPv6), the
# port a possibly negative decimal number; the whole string must match.
_ENDPOINT: Final = re.compile(r"(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)")


def _check_endpoint(
    endpoint: object, protocols: Mapping[str, str] | None, path: str, *, writing: bool = False
) -> str:
    """Validate one ``endpoints`` entry the way Kafka's listener parser would, against the
    listener map ``protocols`` (``None``: listeners must be named after security protocols)."""
    text = expect_str(endpoint, _DOCUMENT, path)
    match = _ENDPOINT.fullmatch(text)
    if "," in text or match is None:
        fail(_DOCUMENT, path, f"{preview(text)} is not of the form LISTENER://host:port")
    port = int(match.group(3))
    if not INT32_MIN <= port <= INT32_MAX:
        fail(_DOCUMENT, path, f"{preview(text)} has port {port}, outside the 32-bit range")
    listener = match.group(1).upper()
    if listener in (SECURITY_PROTOCOLS if protocols is None else protocols):
        return text
    if writing:
        why = f"is not a security protocol, and version {WRITTEN_VERSION} has no listener map"
    elif protocols is None:
        why = "is not a security protocol, and there is no listener_security_protocol_map"
    else:
        why = "is missing from listener_security_protocol_map"
    fail(_DOCUMENT, path, f"{preview(text)} names listener {listener}, which {why}")


def _format_address(host: str, port: int) -> str:
    """``host:port``, with an IPv6 host in brackets, as Kafka formats an address."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """What a broker registered: its PLAINTEXT ``host`` and ``port`` (``None`` and -1 when it
    has no PLAINTEXT listener), every listener in ``endpoints``, its JMX port (-1 for none),
    the registration time as Kafka writes it (milliseconds since the epoch, as a string) and
    its rack (``None`` without ``broker.rack``). The broker id is not part of the document; it
    is the name of the ZooKeeper node."""

    host: str | None
    port: int
    jmx_port: int
    timestamp: str
    endpoints: tuple[str, ...]
    rack: str | None = None

    def __post_init__(self) -> None:
        expect_optional_str(self.host, _DOCUMENT, "host")
        expect_int(self.port, _DOCUMENT, "port")
        expect_int(self.jmx_port, _DOCUMENT, "jmx_port")
        expect_str(self.timestamp, _DOCUMENT, "timestamp")
        endpoints = tuple(self.endpoints)
        for index, endpoint in enumerate(endpoints):
            expect_str(endpoint, _DOCUMENT, f"endpoints[{index}]")
        expect_optional_str(self.rack, _DOCUMENT, "rack")
        object.__setattr__(self, "endpoints", endpoints)


def _listener_map(root: Mapping[str, object]) -> dict[str, str] | None:
    """``listener_security_protocol_map`` checked and upper-cased, or ``None`` if absent."""
    key = "listener_security_protocol_map"
    if key not in root:
        return None
    raw = expect_object(root[key], _DOCUMENT, key)
    protocols: dict[str, str] = {}
    for listener, protocol in raw.items():
        name = expect_str(protocol, _DOCUMENT, join(key, listener)).upper()
        if name not in SECURITY_PROTOCOLS:
            fail(_DOCUMENT, join(key, listener), f"unknown security protocol {preview(protocol)}")
        protocols[listener] = name
    return protocols


def _endpoints(
    root: Mapping[str, object], version: int, host: str | None, port: int
) -> tuple[str, ...]:
    if version == 1:
        if host is None:
            fail(_DOCUMENT, "host", "a version 1 registration needs a host, got null")
        return (f"PLAINTEXT://{_format_address(host, port)}",)
    protocols = _listener_map(root)
    items = expect_array(require(root, "endpoints", _DOCUMENT, ""), _DOCUMENT, "endpoints")
    return tuple(
        _check_endpoint(item, protocols, f"endpoints[{index}]") for index, item in enumerate(items)
    )


def parse_broker_registration(text: str) -> BrokerRegistration:
    """Read a broker registration of any version from 1 up (see the module notes).

    Raises :class:`~rackwise.common.errors.InvalidFormatException` naming the offending field
    and value.
    """
    root = expect_object(loads(text, _DOCUMENT), _DOCUMENT, "")

    def field(key: str) -> object:
        return require(root, key, _DOCUMENT, "")

    version = expect_int(field("version"), _DOCUMENT, "version")
    if version < 1:
        fail(_DOCUMENT, "version", f"unsupported version {version}; versions start at 1")
    jmx_port = expect_int(field("jmx_port"), _DOCUMENT, "jmx_port")
    host = expect_optional_str(field("host"), _DOCUMENT, "host")
    port = expect_int(field("port"), _DOCUMENT, "port")
    timestamp = expect_str(field("timestamp"), _DOCUMENT, "timestamp")
    endpoints = _endpoints(root, version, host, port)
    rack = expect_optional_str(root.get("rack"), _DOCUMENT, "rack")
    return BrokerRegistration(host, port, jmx_port, timestamp, endpoints, rack)


def format_broker_registration(registration: BrokerRegistration) -> str:
    """Print ``registration`` as a version 3 document, byte for byte as a Kafka 0.10.0 broker
    wrote it (``rack`` only when set).

    Every endpoint must name its listener after a security protocol, since version 3 has no
    listener map; a registration read from a later version with custom listener names cannot be
    written back as version 3.
    """
    endpoints: list[JsonValue] = [
        _check_endpoint(endpoint, None, f"endpoints[{index}]", writing=True)
        for index, endpoint in enumerate(registration.endpoints)
    ]
    document: dict[str, JsonValue] = {
        "jmx_port": registration.jmx_port,
        "timestamp": registration.timestamp,
        "endpoints": endpoints,
        "host": registration.host,
        "version": WRITTEN_VERSION,
        "port": registration.port,
    }
    if registration.rack is not None:
        document["rack"] = registration.rack
    return dumps(document)


__all__ = [
    "SECURITY_PROTOCOLS",
    "WRITTEN_VERSION",
    "BrokerRegistration",
    "format_broker_registration",
    "parse_broker_registration",
]
