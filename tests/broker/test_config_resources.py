"""ListConfigResources as a Kafka 4.1 broker answers it: the types each version may ask for,
Kafka's order of types, every registered broker with the listener (fenced too) as a logger and
as a broker, every topic, and the groups and client-metrics subscriptions with configs."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rackwise.broker.config_resources import list_config_resources
from rackwise.protocol import (
    Listener,
    Request,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    make,
    request_class,
)
from rackwise.records import ConfigRecord
from tests.broker.test_broker_apis import image_of

CONFIGS = (
    ConfigRecord(resource_type=32, resource_name="billing", name="consumer.session.timeout.ms",
                 value="45000"),
    ConfigRecord(resource_type=32, resource_name="audit", name="consumer.heartbeat.interval.ms",
                 value="5000"),
    ConfigRecord(resource_type=16, resource_name="all-metrics", name="metrics", value="*"),
    ConfigRecord(resource_type=2, resource_name="t", name="cleanup.policy", value="compact"),
)  # fmt: skip
IMAGE = image_of(*CONFIGS)


def _ask(version: int, types: list[int] | None = None) -> Any:
    """The request through the wire, answered, and the answer decoded as a client does."""
    values = {} if version == 0 else {"resource_types": types or []}
    body = make(request_class(74, version), values)
    outcome = decode_request(encode_request(body, 5)[4:], Listener.BROKER)
    assert isinstance(outcome, Request)
    response = list_config_resources(outcome.body, IMAGE, "PLAINTEXT")
    return decode_response(encode_response(outcome.header, response)[4:], 74, version, 5)


def _listed(answer: Any) -> list[tuple[str, int]]:
    return [(r.resource_name, int(r.resource_type)) for r in answer.config_resources]


def test_every_type_in_kafkas_order() -> None:
    answer = _ask(1)
    assert int(answer.error_code) == 0
    # brokers 1-3 have the PLAINTEXT listener (2 is fenced and listed all the same); 4 has not
    assert _listed(answer) == [
        ("audit", 32), ("billing", 32), ("all-metrics", 16),
        ("1", 8), ("2", 8), ("3", 8), ("1", 4), ("2", 4), ("3", 4),
        ("a", 2), ("t", 2),
    ]  # fmt: skip


def test_version_0_lists_client_metrics_only() -> None:
    answer = _ask(0)
    assert int(answer.error_code) == 0
    assert [r.resource_name for r in answer.config_resources] == ["all-metrics"]


@pytest.mark.parametrize("types", [[2, 64], [0], [1], [2, 4, -1]])
def test_a_type_outside_the_versions_set_is_unsupported_version(types: list[int]) -> None:
    answer = _ask(1, types)
    assert (int(answer.error_code), answer.config_resources) == (35, ())


@given(st.lists(st.sampled_from([2, 4, 8, 16, 32]), min_size=1, max_size=8))
def test_asking_for_some_types_lists_exactly_theirs_once(types: list[int]) -> None:
    everything = _listed(_ask(1))
    assert _listed(_ask(1, types)) == [(n, t) for n, t in everything if t in set(types)]
