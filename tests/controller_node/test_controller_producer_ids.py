"""AllocateProducerIds against the real controller process: consecutive blocks of 1000 that
never overlap, across brokers, restarts and a snapshot; a stale broker epoch refused."""

from __future__ import annotations

import re
from typing import Any

import pytest

from rackwise.metalog import FileMetadataLog
from rackwise.net import KafkaConnection
from rackwise.protocol import ApiKey
from rackwise.records.metadata import ProducerIdsRecord
from tests.controller_node.test_controller_process import records_of
from tests.processes import ControllerProcess, fetch_log, register, run

STALE_BROKER_EPOCH = 77


async def allocate(conn: KafkaConnection, broker_id: int, epoch: int) -> tuple[int, int, int]:
    """(error code, first producer id, number of ids) of one AllocateProducerIds."""
    response = await conn.request(
        ApiKey.ALLOCATE_PRODUCER_IDS, broker_id=broker_id, broker_epoch=epoch
    )
    return int(response.error_code), int(response.producer_id_start), int(response.producer_id_len)


@pytest.mark.parametrize("voters", [1, 3])
def test_two_blocks_are_consecutive_and_the_next_after_a_restart_follows_them(
    controller_factory: Any, voters: int
) -> None:
    controller: ControllerProcess = controller_factory(voters=voters)
    controller.start()

    async def before_restart() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with await controller.connect() as conn:
            epochs = {b: int((await register(conn, b)).broker_epoch) for b in (2, 3)}
            seen["epochs"] = epochs
            seen["blocks"] = [
                await allocate(conn, 2, epochs[2]),
                await allocate(conn, 3, epochs[3]),
            ]
            seen["stale"] = await allocate(conn, 2, epochs[2] + 1)
            records = records_of((await fetch_log(conn, 0)).records)
            seen["records"] = [r for r in records if isinstance(r, ProducerIdsRecord)]
        return seen

    seen = run(before_restart())
    epochs = seen["epochs"]
    assert seen["blocks"] == [(0, 0, 1000), (0, 1000, 1000)]
    assert seen["stale"] == (STALE_BROKER_EPOCH, 0, 0)
    assert seen["records"] == [
        ProducerIdsRecord(broker_id=2, broker_epoch=epochs[2], next_producer_id=1000),
        ProducerIdsRecord(broker_id=3, broker_epoch=epochs[3], next_producer_id=2000),
    ]
    assert controller.stop() == 0
    log = controller.stderr()
    assert re.search(rf"INFO .* producer ids 0-999 to broker 2 \(epoch {epochs[2]}\)", log)
    assert re.search(
        rf"WARNING .* refused producer ids to broker 2 \(epoch {epochs[2] + 1}\): "
        r"STALE_BROKER_EPOCH \(77\)",
        log,
    )

    controller.start()

    async def after_restart() -> tuple[int, int, int]:
        async with await controller.connect() as conn:
            return await allocate(conn, 3, epochs[3])

    assert run(after_restart()) == (0, 2000, 1000)
    assert controller.stop() == 0


@pytest.mark.parametrize("voters", [1, 3])
def test_a_restart_from_a_snapshot_goes_on_after_the_last_block(
    controller_factory: Any, voters: int
) -> None:
    controller: ControllerProcess = controller_factory(
        voters=voters, metadata_log_max_record_bytes_between_snapshots=256
    )
    controller.start()

    async def allocate_many(count: int, broker_id: int = 2) -> list[int]:
        async with await controller.connect() as conn:
            epoch = int((await register(conn, broker_id)).broker_epoch)
            starts = []
            for _ in range(count):
                error, start, size = await allocate(conn, broker_id, epoch)
                assert (error, size) == (0, 1000)
                starts.append(start)
            return starts

    assert run(allocate_many(8)) == [1000 * i for i in range(8)]
    assert controller.stop() == 0
    log = FileMetadataLog(controller.metadata_dir, read_only=True)
    try:
        reader = log.read_snapshot()
        assert reader is not None
        snapshot = [r for batch in reader.batches() for r in batch]
    finally:
        log.close()
    kept = [r for r in snapshot if isinstance(r, ProducerIdsRecord)]
    assert len(kept) == 1 and (kept[0].broker_id, kept[0].broker_epoch) == (-1, -1)
    assert kept[0].next_producer_id % 1000 == 0 and kept[0].next_producer_id <= 8000

    controller.start()
    assert run(allocate_many(2, broker_id=3)) == [8000, 9000]
    assert controller.stop() == 0
