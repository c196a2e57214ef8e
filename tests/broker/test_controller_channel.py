"""The broker's channel to the active controller: which answers mean "not the leader"."""

from __future__ import annotations

from rackwise.broker.controller_channel import carries_not_controller
from rackwise.protocol import make, response_class

BEAT = {"throttle_time": 0, "is_caught_up": False, "is_fenced": True, "should_shut_down": False}


def test_not_controller_is_seen_at_the_top_or_in_any_item() -> None:
    heartbeat = response_class(63, 1)
    assert carries_not_controller(make(heartbeat, BEAT, error_code=41))
    assert not carries_not_controller(make(heartbeat, BEAT, error_code=0))
    create = response_class(19, 7)
    topic = {
        "name": "t",
        "topic_id": None,
        "error_message": None,
        "num_partitions": -1,
        "replication_factor": -1,
        "configs": None,
        "topic_config_error_code": 0,
    }
    refused = make(create, throttle_time=0, topics=[{**topic, "error_code": 41}])
    accepted = make(
        create, throttle_time=0, topics=[{**topic, "error_code": 0}, {**topic, "error_code": 36}]
    )
    assert carries_not_controller(refused)
    assert not carries_not_controller(accepted)
    partitions = response_class(37, 3)
    item = {"name": "t", "error_message": None}
    answer = make(partitions, throttle_time=0, results=[{**item, "error_code": 41}])
    assert carries_not_controller(answer)
