"""The leader's ISR planning (pure), the AlterPartition it sends, and the controller's reading
of it, with the controller's answer fed back: the wire values of both versions."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import Any

import pytest

from rackwise.broker.isr import (
    IsrChange,
    IsrManager,
    alter_partition_values,
    answered,
    is_leader_ready,
    plan_isr_expansions,
    plan_isr_shrinks,
)
from rackwise.common.error_codes import INELIGIBLE_REPLICA, NOT_CONTROLLER
from rackwise.controller import ApiError, CreatableTopic
from rackwise.controller_node.apis.partitions import (
    alter_partition_args,
    alter_partition_error,
    alter_partition_response,
)
from rackwise.protocol import make, request_class, response_class
from tests.controller.helpers import heartbeat, new_controller, partitions, start_brokers


def _controller_with_3_out() -> Any:
    controller = new_controller()
    start_brokers(controller, [1, 2, 3])
    controller.create_topics([CreatableTopic("t", 3, 3)])
    heartbeat(controller, 3, want_fence=True)
    return controller


def test_a_leader_plans_to_add_each_unfenced_replica() -> None:
    controller = _controller_with_3_out()
    image = controller.image
    assert plan_isr_expansions(image, 1) == []  # 3 is fenced
    heartbeat(controller, 3)
    image = controller.image
    topic = image.topic("t")
    assert topic is not None
    plans = {b: plan_isr_expansions(image, b) for b in (1, 2, 3)}
    assert plans[3] == []  # leads nothing
    led = {b: [p for p in partitions(image, "t") if p.leader == b] for b in (1, 2)}
    for broker, mine in led.items():
        assert [c.partition_index for c in plans[broker]] == [p.partition_id for p in mine]
        for change, p in zip(plans[broker], mine, strict=True):
            epochs = {b: image.brokers[b].broker_epoch for b in (1, 2, 3)}
            assert change == IsrChange(
                topic.topic_id,
                p.partition_id,
                p.leader_epoch,
                p.partition_epoch,
                tuple((b, epochs[b]) for b in (*p.isr, 3)),
            )
    assert plan_isr_shrinks(image, 1) == []


def test_a_broker_not_unfenced_in_its_image_plans_nothing() -> None:
    controller = _controller_with_3_out()
    heartbeat(controller, 3)
    image = controller.image
    epoch = image.brokers[1].broker_epoch
    assert is_leader_ready(image, 1, epoch)
    assert not is_leader_ready(image, 1, epoch + 1)
    manager = IsrManager(1, lambda: epoch + 1, lambda: image, _never, _never)
    assert manager.plan(image) == []
    manager = IsrManager(1, lambda: epoch, lambda: image, _never, _never)
    assert manager.plan(image) == plan_isr_expansions(image, 1) != []


async def _never(*args: Any) -> Any:
    raise AssertionError("not called")


@pytest.mark.parametrize("version", [2, 3])
def test_the_request_the_leader_sends_is_the_one_the_controller_reads(version: int) -> None:
    controller = _controller_with_3_out()
    heartbeat(controller, 3)
    image = controller.image
    changes = plan_isr_expansions(image, 1)
    values = alter_partition_values(1, image.brokers[1].broker_epoch, changes)
    body: Any = make(request_class(56, version), values)
    request = alter_partition_args(body)
    assert request.broker_id == 1
    read = [(t.topic_id, p) for t in request.topics for p in t.partitions]
    assert [(t, p.partition_index) for t, p in read] == [
        (c.topic_id, c.partition_index) for c in changes
    ]
    for (_, data), change in zip(read, changes, strict=True):
        assert [m.broker_id for m in data.new_isr] == [b for b, _ in change.new_isr]
        expected = [e if version == 3 else -1 for _, e in change.new_isr]
        assert [m.broker_epoch for m in data.new_isr] == expected
    results = controller.alter_partition(request)
    response = alter_partition_response(body, results)
    assert type(response) is response_class(56, version)
    settled, refusals = answered(changes, response)
    assert settled == set(changes) and refusals == []
    assert all(3 in p.isr for p in partitions(controller.image, "t") if p.leader == 1)


def _response(topic_id: uuid.UUID, codes: dict[int, int]) -> Any:
    return make(
        response_class(56, 3),
        throttle_time=0,
        error_code=0,
        topics=[
            {
                "topic_id": topic_id,
                "partitions": [
                    {
                        "partition_index": i,
                        "error_code": code,
                        "leader_id": 1,
                        "leader_epoch": 0,
                        "partition_epoch": 1,
                    }
                    for i, code in codes.items()
                ],
            }
        ],
    )


def test_retriable_errors_are_not_settled_and_refusals_are_reported() -> None:
    topic_id = uuid.UUID(int=9)
    changes = [IsrChange(topic_id, i, 0, 1, ((1, 5), (2, 6))) for i in range(3)]
    response = _response(topic_id, {0: 0, 1: NOT_CONTROLLER, 2: INELIGIBLE_REPLICA})
    settled, refusals = answered(changes, response)
    assert settled == {changes[0], changes[2]}
    assert refusals == [f"{topic_id}-2: error {INELIGIBLE_REPLICA}"]


def test_the_whole_request_refused_is_an_error_response() -> None:
    body: Any = make(request_class(56, 3), alter_partition_values(1, 5, []))
    refused = alter_partition_error(body, ApiError(77, "stale"))
    assert int(refused.error_code) == 77 and refused.topics == ()


class _FakeController:
    """A controller connection that answers every partition with ``code`` and counts the
    requests."""

    def __init__(self, code: int) -> None:
        self.code = code
        self.requests: list[dict[str, Any]] = []
        self.is_closed = False

    async def negotiate_versions(self, **_: Any) -> None:
        return None

    async def request(self, api_key: int, values: dict[str, Any], **_: Any) -> Any:
        assert api_key == 56
        self.requests.append(values)
        (topic,) = values["topics"]
        codes = {p["partition_index"]: self.code for p in topic["partitions"]}
        return _response(topic["topic_id"], codes)

    async def close(self) -> None:
        self.is_closed = True


@pytest.mark.parametrize(("code", "at_most"), [(INELIGIBLE_REPLICA, 1), (NOT_CONTROLLER, 5)])
def test_refusals_wait_for_the_image_and_retries_back_off(code: int, at_most: int) -> None:
    """An unchanging image: a refusal for good is sent once; a retriable one is retried with
    a doubling backoff (0.1 + 0.2 + 0.4 + 0.8 s within 1.6 s: at most 5 requests)."""
    controller = _controller_with_3_out()
    heartbeat(controller, 3)
    image = controller.image
    epoch = image.brokers[1].broker_epoch
    fake = _FakeController(code)

    async def connect() -> Any:
        return fake

    async def wait_image(predicate: Any, timeout_s: float) -> bool:
        if predicate(image):
            return True
        await asyncio.sleep(timeout_s)
        return False

    async def go() -> None:
        manager = IsrManager(1, lambda: epoch, lambda: image, wait_image, connect)
        task = asyncio.create_task(manager.run())
        await asyncio.sleep(1.6)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(go())
    assert 1 <= len(fake.requests) <= at_most, len(fake.requests)
    if code == NOT_CONTROLLER:
        assert len(fake.requests) >= 3
    assert len({str(r) for r in fake.requests}) == 1  # the same request each time
    assert fake.is_closed
