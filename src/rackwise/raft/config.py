"""The quorum's configuration, under Kafka's names and with Kafka's defaults (``QuorumConfig``).

Goals
    One frozen value holds every timing the Raft state machine obeys, so a simulation can run
    the same code with the same defaults a process runs with. ``controller.quorum.voters`` is
    read, with every other address a node is given, by :mod:`rackwise.node.addresses`.

Constraints
    Kafka's defaults: election timeout 1000 ms, election backoff at most 1000 ms, fetch timeout
    2000 ms, request timeout 2000 ms, retry backoff 20 ms.
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
