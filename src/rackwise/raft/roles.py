"""A voter's roles and the timings that move it between them (Kafka's ``QuorumState`` and its
``*State`` classes, and ``KafkaRaftClient``'s election backoffs).

Goals
    Elections that settle: timeouts drawn at random so that two voters rarely stand at once,
    a backoff that grows with each failed election, and a resigning leader's successors
    ordered so the most up to date stands first.

Constraints
    Kafka's formulas: an election timeout is ``timeout + random(timeout)``; after ``retries``
    failed elections the backoff is ``min(100 * random(2 << min(20, retries - 1)), max)``; the
    ``i``-th preferred successor of ``n`` waits ``min(max, (max >> (n - 1)) << (i - 1))``
    (0 for the first, ``max`` for a voter not in the list).

Algorithm
    UNATTACHED (no leader known in the epoch; may have voted) -> PROSPECTIVE when its election
    timer fires; FOLLOWER -> PROSPECTIVE when no fetch succeeded for the fetch timeout;
    PROSPECTIVE asks for pre-votes (KIP-996) and becomes CANDIDATE (epoch + 1, votes for
    itself) with a majority, or goes back to following the leader it knew; CANDIDATE becomes
    LEADER with a majority of votes, or backs off and tries again; LEADER becomes RESIGNED on
    shutdown or when a majority has not fetched within 1.5 fetch timeouts; RESIGNED becomes
    PROSPECTIVE after an election timeout. A higher epoch seen anywhere makes the voter
    UNATTACHED (or FOLLOWER of the leader named) in that epoch.

Worked example
    Three voters, election timeout 1000 ms: voter 2 draws 1370 ms, voter 3 draws 1822 ms.
    Voter 2 stands first, wins voter 3's pre-vote and vote, and leads before voter 3's timer
    fires.
"""

from __future__ import annotations

from enum import Enum
from typing import Final

from rackwise.common.java import SupportsRandrange

RETRY_BACKOFF_BASE_MS: Final = 100
"""Unit of the election backoff (Kafka's ``RETRY_BACKOFF_BASE_MS``)."""
MAX_BACKOFF_EXPONENT: Final = 20
CHECK_QUORUM_TIMEOUT_FACTOR: Final = 1.5
"""A leader resigns when a majority has not fetched within this many fetch timeouts."""


class Role(Enum):
    UNATTACHED = "Unattached"
    PROSPECTIVE = "Prospective"
    CANDIDATE = "Candidate"
    LEADER = "Leader"
    FOLLOWER = "Follower"
    RESIGNED = "Resigned"


def random_election_timeout_ms(election_timeout_ms: int, random: SupportsRandrange) -> int:
    """Kafka's ``randomElectionTimeoutMs``: between one and two election timeouts."""
    return election_timeout_ms + random.randrange(election_timeout_ms)


def binary_exponential_backoff_ms(
    retries: int, backoff_max_ms: int, random: SupportsRandrange
) -> int:
    """Kafka's ``binaryExponentialElectionBackoffMs`` after ``retries`` (>= 1) failed elections."""
    if retries <= 0:
        raise ValueError(f"Retries {retries} should be larger than zero")
    draw = random.randrange(2 << min(MAX_BACKOFF_EXPONENT, retries - 1))
    return min(RETRY_BACKOFF_BASE_MS * draw, backoff_max_ms)


def strict_exponential_backoff_ms(position: int, num_successors: int, backoff_max_ms: int) -> int:
    """Kafka's ``strictExponentialElectionBackoffMs``: how long the successor at ``position``
    (not found: a negative position) waits before standing after the leader resigned."""
    if position == 0:
        return 0
    if position < 0 or position >= num_successors:
        return backoff_max_ms
    base_ms = backoff_max_ms >> (num_successors - 1)
    return min(backoff_max_ms, base_ms << (position - 1))


def majority(num_voters: int) -> int:
    """Votes (or durable copies) a decision needs among ``num_voters``."""
    return num_voters // 2 + 1
