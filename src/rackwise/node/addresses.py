"""The addresses in a node's configuration, as Kafka writes them: ``listeners`` and
``advertised.listeners`` (``NAME://host:port``), ``controller.quorum.voters``
(``id@host:port``) and ``controller.quorum.bootstrap.servers`` (``host:port``).

Goals
    Each list parses to values (:class:`Endpoint`, :class:`~rackwise.raft.config.VoterEndpoint`,
    ``(host, port)``) or raises :class:`~rackwise.node.properties_file.ConfigException` naming
    the key and quoting its whole value, in Kafka's words.

Constraints
    An address without a host means 127.0.0.1 (Kafka binds every interface); port 0 asks the
    system for a free port, so a listener may give it (the voters' and bootstrap servers'
    ports are checked for range only, 0-65535). IPv6 hosts may be bracketed (``[::1]:9093``).
    Entries are comma-separated; blanks around them are dropped.

Worked example
    ``parse_quorum_voters("1@:9093, 2@[::1]:9094")`` is ``(VoterEndpoint(1, "127.0.0.1",
    9093), VoterEndpoint(2, "::1", 9094))``; ``"1@a:9093,1@b:9093"`` is refused: a voter id
    appears twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from rackwise.node.properties_file import invalid_config
from rackwise.raft.config import QUORUM_VOTERS_CONFIG, VoterEndpoint

DEFAULT_HOST: Final = "127.0.0.1"


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One listener: its name (``CONTROLLER``), host and port (0: any free port)."""

    listener_name: str
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.listener_name}://{self.host}:{self.port}"


def parse_names(text: str) -> tuple[str, ...]:
    """The comma-separated entries of ``text``, blanks around them dropped, empty ones
    skipped."""
    return tuple(n.strip() for n in text.split(",") if n.strip())


def parse_host_port(key: str, text: str, address: str) -> tuple[str, int]:
    """``address`` (``host:port``, an entry of ``key``'s value ``text``) as a host and port."""
    host, sep, port_text = address.rpartition(":")
    if not sep:
        raise invalid_config(key, text, f"'{address}' has no port")
    host = host.strip().strip("[]") or DEFAULT_HOST
    try:
        port = int(port_text)
    except ValueError:
        raise invalid_config(key, text, f"'{port_text}' is not a port number") from None
    if not 0 <= port <= 65535:
        raise invalid_config(key, text, f"port {port} is outside 0-65535")
    return host, port


def parse_endpoints(
    key: str, text: str | None, *, distinct_ports: bool = True
) -> tuple[Endpoint, ...]:
    """The listeners of ``key`` (``NAME://host:port,...``; None: no listeners), names in upper
    case; a name twice, or two listeners on one port (unless not ``distinct_ports``, as
    ``advertised.listeners`` may share one behind a proxy), is refused."""
    if text is None:
        return ()
    endpoints: list[Endpoint] = []
    for entry in parse_names(text):
        name, sep, address = entry.partition("://")
        if not sep or not name.strip():
            raise invalid_config(key, text, f"'{entry}' is not in the form NAME://host:port")
        host, port = parse_host_port(key, text, address)
        endpoints.append(Endpoint(name.strip().upper(), host, port))
    seen: set[str] = set()
    for endpoint in endpoints:
        if endpoint.listener_name in seen:
            raise invalid_config(key, text, f"listener {endpoint.listener_name} appears twice")
        seen.add(endpoint.listener_name)
    ports = [e.port for e in endpoints if e.port != 0]
    if distinct_ports and len(ports) != len(set(ports)):
        raise invalid_config(key, text, "two listeners on one port")
    return tuple(endpoints)


def parse_quorum_voters(text: str | None) -> tuple[VoterEndpoint, ...]:
    """``controller.quorum.voters`` (None: not given) in the order written; a voter id twice
    is refused."""
    if text is None:
        return ()
    voters: list[VoterEndpoint] = []
    for entry in parse_names(text):
        voter, at, address = entry.partition("@")
        if not at or not voter.strip().isdigit():
            raise invalid_config(
                QUORUM_VOTERS_CONFIG, text, f"'{entry}' is not in the form id@host:port"
            )
        host, port = parse_host_port(QUORUM_VOTERS_CONFIG, text, address)
        voters.append(VoterEndpoint(int(voter), host, port))
    if len({v.node_id for v in voters}) != len(voters):
        raise invalid_config(QUORUM_VOTERS_CONFIG, text, "a voter id appears twice")
    return tuple(voters)


def parse_addresses(key: str, text: str | None) -> tuple[tuple[str, int], ...]:
    """The ``host:port`` entries of ``key`` (``controller.quorum.bootstrap.servers``)."""
    if text is None:
        return ()
    return tuple(parse_host_port(key, text, entry) for entry in parse_names(text))
