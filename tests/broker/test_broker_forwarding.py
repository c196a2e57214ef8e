"""Forwarding admin writes: conversion between versions, the error answers, the predicates that
say when the broker's image shows a write, and a forwarder over a real socket."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest

from rackwise.broker.forwarding import (
    MAX_RETRY_S,
    MIN_RETRY_S,
    Forwarder,
    applied_predicate,
    convert,
    error_response,
    forward_version,
    retry_window_s,
)
from rackwise.common.error_codes import REQUEST_TIMED_OUT
from rackwise.image import MetadataImage, replay
from rackwise.net import KafkaConnection, start_server
from rackwise.protocol import (
    ApiKey,
    Listener,
    Request,
    UnsupportedVersionException,
    make,
    request_class,
    response_class,
)
from rackwise.records import PartitionRecord, TopicRecord

T = uuid.UUID(int=3)


def create_topics(
    version: int, *names: str, validate_only: bool = False, timeout_ms: int = 5000
) -> Any:
    return make(
        request_class(ApiKey.CREATE_TOPICS, version),
        topics=[
            {
                "name": n,
                "num_partitions": 2,
                "replication_factor": 1,
                "assignments": [],
                "configs": [],
            }
            for n in names
        ],
        timeout=timeout_ms,
        validate_only=validate_only,
    )


def image_with(name: str, partitions: int) -> MetadataImage:
    records: list[Any] = [TopicRecord(name=name, topic_id=T)]
    records += [
        PartitionRecord(
            partition_id=i,
            topic_id=T,
            replicas=(1,),
            isr=(1,),
            removing_replicas=(),
            adding_replicas=(),
            leader=1,
            leader_epoch=0,
            partition_epoch=0,
            directories=(),
        )
        for i in range(partitions)
    ]
    return replay(records)


def test_convert_goes_down_and_up_versions() -> None:
    request = create_topics(7, "a")
    down = convert(request, request_class(ApiKey.CREATE_TOPICS, 4))
    assert type(down).__version__ == 4 and down.topics[0].name == "a"
    assert down.timeout == request.timeout
    answer = make(
        response_class(ApiKey.CREATE_TOPICS, 4),
        throttle_time=0,
        topics=[{"name": "a", "error_code": 0, "error_message": None}],
    )
    up = convert(answer, response_class(ApiKey.CREATE_TOPICS, 7))
    assert (up.topics[0].name, up.topics[0].num_partitions) == ("a", -1)


def test_delete_topics_names_move_between_v5_and_v6() -> None:
    v6 = make(
        request_class(ApiKey.DELETE_TOPICS, 6),
        topics=[{"name": "a", "topic_id": None}],
        timeout=1000,
    )
    v5 = convert(v6, request_class(ApiKey.DELETE_TOPICS, 5))
    assert v5.topic_names == ("a",)
    back = convert(v5, request_class(ApiKey.DELETE_TOPICS, 6))
    assert [t.name for t in back.topics] == ["a"]


def test_forward_version_is_the_highest_both_speak() -> None:
    assert forward_version(19, 7, {19: (2, 7)}) == 7
    assert forward_version(19, 7, {19: (2, 4)}) == 4
    with pytest.raises(UnsupportedVersionException, match="speaks versions 5-7"):
        forward_version(19, 3, {19: (5, 7)})


def test_error_response_gives_every_item_the_error() -> None:
    response = error_response(create_topics(7, "a", "b"), 41, "gone")
    assert [(t.name, int(t.error_code), t.error_message) for t in response.topics] == [
        ("a", 41, "gone"),
        ("b", 41, "gone"),
    ]
    deletes = make(request_class(ApiKey.DELETE_TOPICS, 4), topic_names=["x"], timeout=1)
    assert int(error_response(deletes, 7, None).responses[0].error_code) == 7
    partitions = make(
        request_class(ApiKey.CREATE_PARTITIONS, 3),
        topics=[{"name": "x", "count": 3, "assignments": None}],
        timeout=1,
        validate_only=False,
    )
    assert int(error_response(partitions, 7, None).results[0].error_code) == 7
    placement = make(request_class(1000, 0), num_partitions=1, replication_factor=1, node_id=[])
    assert int(error_response(placement, 41, "x").error_code) == 41
    for version in (0, 1, 2):
        elect = make(
            request_class(ApiKey.ELECT_LEADERS, version),
            election_type=0,
            topic_partitions=[{"topic": "x", "partitions": [0, 2]}],
            timeout=1,
        )
        answer = error_response(elect, 7, "late")
        (result,) = answer.replica_election_results
        items = [
            (r.partition_id, int(r.error_code), r.error_message) for r in result.partition_result
        ]
        assert items == [(0, 7, "late"), (2, 7, "late")]
        assert version == 0 or int(answer.error_code) == 7


def test_applied_predicates() -> None:
    request = create_topics(7, "t", "u")
    answer = make(
        response_class(ApiKey.CREATE_TOPICS, 7),
        throttle_time=0,
        topics=[
            {
                "name": "t",
                "topic_id": T,
                "error_code": 0,
                "error_message": None,
                "num_partitions": 2,
                "configs": [],
            },
            {
                "name": "u",
                "topic_id": None,
                "error_code": 36,
                "error_message": "exists",
                "configs": [],
            },
        ],
    )
    created = applied_predicate(request, answer)
    assert created is not None
    assert not created(MetadataImage()) and not created(image_with("t", 1))
    assert created(image_with("t", 2))
    assert applied_predicate(create_topics(7, "t", validate_only=True), answer) is None
    grow = make(
        request_class(ApiKey.CREATE_PARTITIONS, 3),
        topics=[{"name": "t", "count": 3, "assignments": None}],
        timeout=1,
        validate_only=False,
    )
    grown = make(
        response_class(ApiKey.CREATE_PARTITIONS, 3),
        throttle_time=0,
        results=[{"name": "t", "error_code": 0}],
    )
    predicate = applied_predicate(grow, grown)
    assert predicate is not None
    assert not predicate(image_with("t", 2)) and predicate(image_with("t", 3))
    delete = make(request_class(ApiKey.DELETE_TOPICS, 4), topic_names=["t"], timeout=1)
    deleted = make(
        response_class(ApiKey.DELETE_TOPICS, 4),
        throttle_time=0,
        responses=[{"name": "t", "error_code": 0}],
    )
    gone = applied_predicate(delete, deleted)
    assert gone is not None
    assert not gone(image_with("t", 1)) and gone(MetadataImage())


def old_controller_handler(seen: list[int]) -> Any:
    """A stand-in controller speaking CreateTopics 2-4 only, creating every topic asked."""

    async def handle(request: Request) -> Any:
        key, version = request.header.api_key, request.header.api_version
        if key == ApiKey.API_VERSIONS:
            return make(
                response_class(key, version),
                error_code=0,
                throttle_time=0,
                api_keys=[
                    {"api_key": 18, "min_version": 0, "max_version": 4},
                    {"api_key": 19, "min_version": 2, "max_version": 4},
                ],
            )
        seen.append(version)
        return make(
            response_class(key, version),
            throttle_time=0,
            topics=[
                {"name": t.name, "error_code": 0, "error_message": None}
                for t in request.body.topics
            ],
        )

    return handle


async def always_applied(predicate: Any, timeout_s: float) -> bool:
    return True


async def forward_to_old_controller() -> None:
    """A v7 request goes on as v4 and the v4 answer comes back as v7; once the controller is
    gone, the request is retried for its timeout (at least MIN_RETRY_S), then
    REQUEST_TIMED_OUT."""
    seen: list[int] = []
    server = await start_server(old_controller_handler(seen), Listener.CONTROLLER, port=0)
    port = server.port
    waits: list[float] = []

    async def wait_applied(predicate: Any, timeout_s: float) -> bool:
        waits.append(timeout_s)
        return True

    async def connect() -> KafkaConnection:
        return await KafkaConnection.connect("127.0.0.1", port, timeout_s=2)

    forwarder = Forwarder(connect, wait_applied, apply_wait_s=1.5)
    try:
        answer = await forwarder.forward(create_topics(7, "a"))
        assert seen == [4]
        assert type(answer).__version__ == 7 and int(answer.topics[0].error_code) == 0
        assert waits == [1.5]  # a write succeeded: the broker waited for its image
        await server.close()
        began = time.monotonic()
        lost = await forwarder.forward(create_topics(7, "b", timeout_ms=0))
        waited = time.monotonic() - began
        assert int(lost.topics[0].error_code) == REQUEST_TIMED_OUT
        assert "not reachable within the request's timeout" in lost.topics[0].error_message
        assert MIN_RETRY_S <= waited < MIN_RETRY_S + 1.5
    finally:
        await forwarder.close()
        await server.close()


def test_forwarder_over_a_socket() -> None:
    asyncio.run(asyncio.wait_for(forward_to_old_controller(), 30))


async def forward_across_a_controller_restart() -> None:
    """The controller is down when the request arrives and back 1 s later: the request waits
    and goes through, once."""
    seen: list[int] = []
    server = await start_server(old_controller_handler(seen), Listener.CONTROLLER, port=0)
    port = server.port
    await server.close()

    async def connect() -> KafkaConnection:
        return await KafkaConnection.connect("127.0.0.1", port, timeout_s=2)

    forwarder = Forwarder(connect, always_applied)
    restarted = None
    try:
        pending = asyncio.create_task(forwarder.forward(create_topics(7, "a", timeout_ms=10_000)))
        await asyncio.sleep(1.0)
        assert not pending.done()
        restarted = await start_server(old_controller_handler(seen), Listener.CONTROLLER, port=port)
        answer = await asyncio.wait_for(pending, 5)
        assert int(answer.topics[0].error_code) == 0
        assert seen == [4]
    finally:
        await forwarder.close()
        if restarted is not None:
            await restarted.close()


def test_a_forwarded_write_outlives_a_controller_restart() -> None:
    asyncio.run(asyncio.wait_for(forward_across_a_controller_restart(), 30))


def test_retry_window_is_the_request_timeout_within_bounds() -> None:
    assert retry_window_s(create_topics(7, "a", timeout_ms=5000)) == 5.0
    assert retry_window_s(create_topics(7, "a", timeout_ms=0)) == MIN_RETRY_S
    assert retry_window_s(create_topics(7, "a", timeout_ms=10**9)) == MAX_RETRY_S
