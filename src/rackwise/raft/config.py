"""The quorum's configuration, under Kafka's names and with Kafka's defaults (``QuorumConfig``).

Goals
    One frozen value holds every timing the Raft state machine obeys, so a simulation can run
    the same code with the same defaults a process runs with; ``controller.quorum.voters`` is
    parsed here (pure) so that a bad list is refused before anything starts.

Constraints
    Kafka's defaults: election timeout 1000 ms, election backoff at most 1000 ms, fetch timeout
    2000 ms, request timeout 2000 ms, retry backoff 20 ms. A quorum has 1, 3 or 5 voters
    (an even count adds a member without adding a failure it can survive).

Algorithm
    :func:`parse_voters` splits ``id@host:port`` entries on commas, checks each id is a
    non-negative integer not seen before and each port is an integer in 1-65535, and returns
    them ordered by id.

Worked example
    ``parse_voters("1@dc1:9093,2@dc2:9093,3@dc3:9093")`` gives three :class:`VoterEndpoint`
    values for ids 1, 2, 3; ``"1@dc1:9093,1@dc2:9093"`` raises ``InvalidConfigurationException``
    naming voter 1 twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from rackwise.common.errors import InvalidConfigurationException

QUORUM_VOTERS_CONFIG: Final = "controller.quorum.voters"
QUORUM_BOOTSTRAP_SERVERS_CONFIG: Final = "controller.quorum.bootstrap.servers"
QUORUM_ELECTION_TIMEOUT_MS_CONFIG: Final = "controller.quorum.election.timeout.ms"
QUORUM_ELECTION_BACKOFF_MAX_MS_CONFIG: Final = "controller.quorum.election.backoff.max.ms"
QUORUM_FETCH_TIMEOUT_MS_CONFIG: Final = "controller.quorum.fetch.timeout.ms"
QUORUM_REQUEST_TIMEOUT_MS_CONFIG: Final = "controller.quorum.request.timeout.ms"
QUORUM_RETRY_BACKOFF_MS_CONFIG: Final = "controller.quorum.retry.backoff.ms"

DEFAULT_QUORUM_ELECTION_TIMEOUT_MS: Final = 1_000
DEFAULT_QUORUM_ELECTION_BACKOFF_MAX_MS: Final = 1_000
DEFAULT_QUORUM_FETCH_TIMEOUT_MS: Final = 2_000
DEFAULT_QUORUM_REQUEST_TIMEOUT_MS: Final = 2_000
DEFAULT_QUORUM_RETRY_BACKOFF_MS: Final = 20
DEFAULT_FETCH_MAX_WAIT_MS: Final = 500
"""How long the leader holds a fetch that finds nothing new (Kafka's KRaft fetch max wait)."""
DEFAULT_FETCH_MAX_BATCHES: Final = 64
"""Batches the leader sends in one fetch answer at most."""
DEFAULT_SNAPSHOT_CHUNK_BYTES: Final = 1024 * 1024
"""Bytes of a snapshot sent in one FetchSnapshot answer at most."""
VOTER_COUNTS: Final = (1, 3, 5)
"""Quorum sizes allowed."""
MAX_PORT: Final = 65535


@dataclass(frozen=True, slots=True)
class VoterEndpoint:
    """One entry of ``controller.quorum.voters``: a controller's node id and where it listens."""

    node_id: int
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.node_id}@{self.host}:{self.port}"


@dataclass(frozen=True, slots=True)
class QuorumConfig:
    """The timings of the quorum, in milliseconds, and the limits of one answer."""

    election_timeout_ms: int = DEFAULT_QUORUM_ELECTION_TIMEOUT_MS
    election_backoff_max_ms: int = DEFAULT_QUORUM_ELECTION_BACKOFF_MAX_MS
    fetch_timeout_ms: int = DEFAULT_QUORUM_FETCH_TIMEOUT_MS
    request_timeout_ms: int = DEFAULT_QUORUM_REQUEST_TIMEOUT_MS
    retry_backoff_ms: int = DEFAULT_QUORUM_RETRY_BACKOFF_MS
    fetch_max_wait_ms: int = DEFAULT_FETCH_MAX_WAIT_MS
    fetch_max_batches: int = DEFAULT_FETCH_MAX_BATCHES
    snapshot_chunk_bytes: int = DEFAULT_SNAPSHOT_CHUNK_BYTES

    def __post_init__(self) -> None:
        for name in ("election_timeout_ms", "fetch_timeout_ms", "request_timeout_ms"):
            if getattr(self, name) <= 0:
                raise InvalidConfigurationException(
                    f"{name} must be positive, not {getattr(self, name)}"
                )
        if self.request_timeout_ms <= self.fetch_max_wait_ms:
            raise InvalidConfigurationException(
                f"request_timeout_ms ({self.request_timeout_ms}) must exceed fetch_max_wait_ms "
                f"({self.fetch_max_wait_ms}): a held fetch would otherwise time out"
            )


def quorum_config(properties: Mapping[str, str]) -> QuorumConfig:
    """The ``controller.quorum.*`` timings of a node's properties (Kafka's defaults for the
    keys it does not set)."""
    keys = {
        "election_timeout_ms": QUORUM_ELECTION_TIMEOUT_MS_CONFIG,
        "election_backoff_max_ms": QUORUM_ELECTION_BACKOFF_MAX_MS_CONFIG,
        "fetch_timeout_ms": QUORUM_FETCH_TIMEOUT_MS_CONFIG,
        "request_timeout_ms": QUORUM_REQUEST_TIMEOUT_MS_CONFIG,
        "retry_backoff_ms": QUORUM_RETRY_BACKOFF_MS_CONFIG,
    }
    values = {field: int(properties[key]) for field, key in keys.items() if key in properties}
    return QuorumConfig(**values)


def parse_voters(value: str) -> tuple[VoterEndpoint, ...]:
    """``controller.quorum.voters`` (``id@host:port,...``) as endpoints ordered by id."""
    voters: dict[int, VoterEndpoint] = {}
    for entry in (part.strip() for part in value.split(",")):
        if not entry:
            continue
        voter = _parse_voter(entry)
        if voter.node_id in voters:
            raise InvalidConfigurationException(
                f"{QUORUM_VOTERS_CONFIG} names voter {voter.node_id} twice: {value!r}"
            )
        voters[voter.node_id] = voter
    if len(voters) not in VOTER_COUNTS:
        raise InvalidConfigurationException(
            f"{QUORUM_VOTERS_CONFIG} must name 1, 3 or 5 voters, not {len(voters)}: {value!r}"
        )
    return tuple(voters[node_id] for node_id in sorted(voters))


def _parse_voter(entry: str) -> VoterEndpoint:
    node_part, at, address = entry.partition("@")
    host, colon, port_part = address.rpartition(":")
    if not at or not colon or not host:
        raise InvalidConfigurationException(
            f"{QUORUM_VOTERS_CONFIG} entry {entry!r} is not of the form id@host:port"
        )
    if not node_part.isdigit():
        raise InvalidConfigurationException(
            f"{QUORUM_VOTERS_CONFIG} entry {entry!r}: the id must be a non-negative integer"
        )
    if not port_part.isdigit() or not 1 <= int(port_part) <= MAX_PORT:
        raise InvalidConfigurationException(
            f"{QUORUM_VOTERS_CONFIG} entry {entry!r}: the port must be an integer in 1-{MAX_PORT}"
        )
    return VoterEndpoint(int(node_part), host.strip("[]"), int(port_part))
