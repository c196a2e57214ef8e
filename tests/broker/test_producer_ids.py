"""A broker's producer ids against the real controller process, over real sockets: ids from
the controller's blocks, the next block fetched at 90%, a stale epoch and a controller down
answered COORDINATOR_LOAD_IN_PROGRESS and recovered from; InitProducerId as Kafka 4.1 answers
an idempotent producer, and a transactional one."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import pytest

from rackwise.broker.producer_ids import (
    CoordinatorLoadInProgressException,
    RpcProducerIdManager,
    init_producer_id,
)
from rackwise.controller import ProducerIdsBlock
from rackwise.net import KafkaConnection
from rackwise.protocol import ApiKey, make, request_class
from tests.processes import ControllerProcess, register, run

COORDINATOR_LOAD_IN_PROGRESS = 14
INVALID_REQUEST = 42
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53


def manager_for(
    controller: ControllerProcess, broker_id: int, epoch: list[int], **options: Any
) -> RpcProducerIdManager:
    """A manager asking ``controller`` (wherever it listens now) with the epoch in ``epoch``."""

    async def connect() -> KafkaConnection:
        return await KafkaConnection.connect("127.0.0.1", controller.port, timeout_s=2)

    return RpcProducerIdManager(broker_id, lambda: epoch[0], connect, **options)


async def registered(controller: ControllerProcess, broker_id: int) -> int:
    async with await controller.connect() as conn:
        response = await register(conn, broker_id)
        assert int(response.error_code) == 0
        return int(response.broker_epoch)


async def until(condition: Any, timeout_s: float = 10.0) -> None:
    began = time.monotonic()
    while not condition():
        assert time.monotonic() - began < timeout_s, "the condition never held"
        await asyncio.sleep(0.01)


def test_ids_come_from_the_controllers_blocks_and_the_next_is_fetched_at_90_percent(
    controller_factory: Any,
) -> None:
    controller: ControllerProcess = controller_factory()
    controller.start()

    async def scenario() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        a = manager_for(controller, 2, [await registered(controller, 2)])
        b = manager_for(controller, 3, [await registered(controller, 3)])
        try:
            ids = [await a.generate_producer_id() for _ in range(900)]
            seen["first_900"] = ids == list(range(900))
            seen["requests_before_90"] = a.num_requests
            ids.append(await a.generate_producer_id())  # id 900: the 90% mark
            await until(lambda: a.next_block is not None)
            seen["prefetched"] = a.next_block
            seen["other_broker"] = await b.generate_producer_id()  # its first block: the third
            ids += [await a.generate_producer_id() for _ in range(1100)]
            seen["a_ids"] = ids
            seen["a_requests"] = a.num_requests
        finally:
            await a.close()
            await b.close()
        return seen

    seen = run(scenario())
    assert seen["first_900"] and seen["requests_before_90"] == 1
    assert seen["prefetched"] == ProducerIdsBlock(2, 1000, 1000)
    assert seen["other_broker"] == 2000
    # 0-1999, then 3000-3000+: broker 3 holds 2000-2999; A fetched 3000 at its 1900th id.
    assert seen["a_ids"] == [*range(2000), *range(3000, 3001)]
    assert seen["a_requests"] == 3
    assert controller.stop() == 0


def test_a_stale_epoch_is_retried_until_it_is_current(controller_factory: Any) -> None:
    controller: ControllerProcess = controller_factory()
    controller.start()

    async def scenario() -> tuple[str, int, int]:
        epoch = await registered(controller, 2)
        current = [epoch + 5]
        manager = manager_for(controller, 2, current, block_wait_ms=300, retry_backoff_ms=20)
        try:
            began = time.monotonic()
            with pytest.raises(CoordinatorLoadInProgressException) as caught:
                await manager.generate_producer_id()
            waited_s = time.monotonic() - began
            assert 0.25 < waited_s < 5, waited_s
            assert manager.num_requests >= 2  # asked again after the backoff
            current[0] = epoch  # the broker's registration is known now
            first = await manager.generate_producer_id()
            return str(caught.value), caught.value.error_code, first
        finally:
            await manager.close()

    message, code, first = run(scenario())
    assert (message, code) == ("Producer ID block is full. Waiting for next block", 14)
    assert first == 0
    assert controller.stop() == 0
    assert re.search(
        r"refused producer ids to broker 2 .*STALE_BROKER_EPOCH \(77\)", (controller.stderr())
    )


def test_a_controller_restart_is_waited_out_and_ids_never_repeat(
    controller_factory: Any,
) -> None:
    controller: ControllerProcess = controller_factory()
    controller.start()

    async def scenario() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        manager = manager_for(controller, 2, [await registered(controller, 2)], block_wait_ms=300)
        try:
            ids = [await manager.generate_producer_id() for _ in range(901)]
            await until(lambda: manager.next_block is not None)  # 1000-1999 fetched
            assert controller.stop() == 0
            ids += [await manager.generate_producer_id() for _ in range(1099)]  # up to 1999
            with pytest.raises(CoordinatorLoadInProgressException):
                await manager.generate_producer_id()  # no controller, no block
            controller.start()
            manager.block_wait_ms = 10_000
            ids.append(await manager.generate_producer_id())
            seen["ids"] = ids
        finally:
            await manager.close()
        with pytest.raises(CoordinatorLoadInProgressException):
            await manager.generate_producer_id()  # closed
        return seen

    seen = run(scenario())
    assert seen["ids"] == [*range(2000), 2000]
    assert controller.stop() == 0


def init_request(version: int, transactional_id: str | None = None, **pid: int) -> Any:
    return make(
        request_class(ApiKey.INIT_PRODUCER_ID, version),
        transactional_id=transactional_id,
        transaction_timeout=60_000,
        **pid,
    )


def test_init_producer_id_answers_idempotent_producers_and_refuses_transactions(
    controller_factory: Any,
) -> None:
    controller: ControllerProcess = controller_factory()
    controller.start()

    async def scenario() -> list[tuple[int, int, int, int]]:
        manager = manager_for(controller, 2, [await registered(controller, 2)])
        requests = [
            *(init_request(v) for v in range(6)),
            # KIP-360's fields: for a producer without a transactional id, a new id anyway
            init_request(3, producer_id=7, producer_epoch=4),
            init_request(5, producer_id=-1, producer_epoch=-1),
            init_request(4, producer_id=7, producer_epoch=-1),
            init_request(4, producer_id=-1, producer_epoch=2),
            init_request(2, "payments"),
            init_request(5, ""),
        ]
        try:
            answers = [await init_producer_id(r, manager) for r in requests]
        finally:
            await manager.close()
        return [
            (
                int(type(a).__version__),
                int(a.error_code),
                int(a.producer_id),
                int(a.producer_epoch),
            )
            for a in answers
        ]

    assert run(scenario()) == [
        *((v, 0, v, 0) for v in range(6)),
        (3, 0, 6, 0),
        (5, 0, 7, 0),
        (4, INVALID_REQUEST, -1, -1),
        (4, INVALID_REQUEST, -1, -1),
        (2, TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, -1),
        (5, INVALID_REQUEST, -1, -1),
    ]
    assert controller.stop() == 0


def test_init_producer_id_without_a_controller_is_coordinator_load_in_progress(
    controller_factory: Any,
) -> None:
    controller: ControllerProcess = controller_factory()
    controller.start()

    async def scenario() -> tuple[int, int, int]:
        manager = manager_for(controller, 2, [await registered(controller, 2)], block_wait_ms=200)
        assert controller.stop() == 0
        try:
            answer = await init_producer_id(init_request(4), manager)
        finally:
            await manager.close()
        return int(answer.error_code), int(answer.producer_id), int(answer.producer_epoch)

    assert run(scenario()) == (COORDINATOR_LOAD_IN_PROGRESS, -1, -1)
