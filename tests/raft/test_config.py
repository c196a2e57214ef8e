from __future__ import annotations

import random

import pytest

from rackwise.common.errors import InvalidConfigurationException
from rackwise.raft import QuorumConfig
from rackwise.raft.roles import (
    binary_exponential_backoff_ms,
    majority,
    random_election_timeout_ms,
    strict_exponential_backoff_ms,
)


def test_defaults_are_kafkas() -> None:
    config = QuorumConfig()
    assert (config.election_timeout_ms, config.election_backoff_max_ms) == (1000, 1000)
    assert (config.fetch_timeout_ms, config.request_timeout_ms) == (2000, 2000)


def test_a_request_timeout_below_the_fetch_wait_is_refused() -> None:
    with pytest.raises(InvalidConfigurationException, match=r"request_timeout_ms \(400\)"):
        QuorumConfig(request_timeout_ms=400)


def test_backoffs_follow_kafkas_formulas() -> None:
    assert [strict_exponential_backoff_ms(p, 3, 1000) for p in (0, 1, 2, 3, -1)] == [
        0,
        250,
        500,
        1000,
        1000,
    ]
    rng = random.Random(1)
    assert {binary_exponential_backoff_ms(1, 1000, rng) for _ in range(100)} == {0, 100}
    assert {binary_exponential_backoff_ms(2, 1000, rng) for _ in range(200)} == {0, 100, 200, 300}
    assert max(binary_exponential_backoff_ms(30, 1000, rng) for _ in range(50)) == 1000
    with pytest.raises(ValueError, match="Retries 0 should be larger than zero"):
        binary_exponential_backoff_ms(0, 1000, rng)
    assert all(1000 <= random_election_timeout_ms(1000, rng) < 2000 for _ in range(100))
    assert [majority(n) for n in (1, 3, 5)] == [1, 2, 3]
