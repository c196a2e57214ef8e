"""Snapshots off the request path, against the real controller process: while a snapshot of a
large image is written, heartbeats keep being answered and writes keep being committed; the
snapshot holds the image as of its end offset, and is what a restart recovers from."""

from __future__ import annotations

import asyncio
import itertools
import random
import re
import time
import uuid
from pathlib import Path
from typing import Any, Final

from rackwise.controller import (
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    Controller,
    ControllerConfig,
    CreatableTopic,
    Listener,
)
from rackwise.image import MetadataDelta, replay
from rackwise.metalog import FileMetadataLog
from tests.processes import (
    ControllerProcess,
    create_topics,
    fetch_log,
    heartbeat,
    register,
    run,
    topic,
)

NUM_TOPICS: Final = 1000
PARTITIONS_PER_TOPIC: Final = 100
NUM_BROKERS: Final = 12
WROTE = re.compile(r"wrote snapshot \S+: end offset (\d+), (\d+) bytes, ([\d.]+) s")


def write_large_log(directory: Path) -> int:
    """A log of 100,000 partitions (RF 3) on 12 brokers, no snapshot; its end offset."""
    log = FileMetadataLog(directory, max_record_bytes_between_snapshots=1 << 62)
    controller = Controller(
        log, lambda: 0, ControllerConfig(session_timeout_ms=600_000), random=random.Random(3)
    )
    for b in range(1, NUM_BROKERS + 1):
        reply = controller.register_broker(
            BrokerRegistrationRequest(
                b,
                uuid.UUID(int=b, version=4),
                (Listener("PLAINTEXT", "127.0.0.1", 10_000 + b),),
                rack=f"/r{b % 3}",
                log_dirs=(uuid.UUID(int=1000 + b, version=4),),
            )
        )
        controller.broker_heartbeat(
            BrokerHeartbeatRequest(b, reply.broker_epoch, reply.broker_epoch)
        )
    with controller.group_commit():
        for i in range(NUM_TOPICS):
            controller.create_topics([CreatableTopic(f"big-{i:04d}", PARTITIONS_PER_TOPIC, 3)])
    end = log.end_offset
    log.close()
    return end


async def heartbeat_through_a_snapshot(controller: ControllerProcess) -> dict[str, Any]:
    """Register a broker (its commit makes the snapshot due), then heartbeat back to back
    until the controller logs the snapshot written; a CreateTopics goes in meanwhile."""
    seen: dict[str, Any] = {}
    async with await controller.connect() as conn, await controller.connect() as admin:
        reply = await register(conn, 50, incarnation=uuid.uuid4())
        epoch = int(reply.broker_epoch)
        answered = [time.monotonic()]
        created: asyncio.Task[Any] | None = None
        deadline = answered[0] + 60
        while time.monotonic() < deadline:
            response = await heartbeat(conn, 50, epoch, epoch)
            assert int(response.error_code) == 0, response
            answered.append(time.monotonic())
            if created is None and len(answered) == 5:
                created = asyncio.ensure_future(create_topics(admin, topic("during", 3, 1)))
            found = WROTE.search(controller.stderr())
            if found:
                break
        assert found is not None, controller.stderr()
        assert created is not None
        seen["created"] = int((await created).topics[0].error_code)
        seen["end_offset"] = int((await fetch_log(conn, 0, max_bytes=1)).high_watermark)
    gaps = [b - a for a, b in itertools.pairwise(answered)]
    seen["max_gap_s"] = max(gaps)
    seen["heartbeats"] = len(gaps)
    seen["snapshot_end_offset"] = int(found.group(1))
    seen["snapshot_bytes"] = int(found.group(2))
    seen["snapshot_s"] = float(found.group(3))
    # The snapshot ended just before the heartbeat after which its log line was seen: count
    # the heartbeats answered while it was being written (none if it blocked the event loop).
    written_at = answered[-1]
    started_at = written_at - seen["snapshot_s"]
    seen["during"] = sum(1 for t in answered if started_at < t < written_at - 0.05)
    return seen


def test_heartbeats_are_answered_while_a_snapshot_is_written(controller_factory: Any) -> None:
    controller: ControllerProcess = controller_factory(
        metadata_log_max_record_bytes_between_snapshots=1024
    )
    written_end = write_large_log(controller.metadata_dir)
    controller.start()
    seen = run(heartbeat_through_a_snapshot(controller))
    assert controller.stop() == 0

    # The snapshot took long enough to matter, and the event loop never waited for it.
    # (How many heartbeats went before the snapshot began depends on the machine's load; the
    # ones answered while it was written are the claim.)
    assert seen["snapshot_s"] > 0.1, seen
    assert seen["during"] >= 3, seen
    # Writes were committed meanwhile: the snapshot ends where its image did, before them.
    assert seen["created"] == 0
    assert written_end < seen["snapshot_end_offset"] < seen["end_offset"]

    log = FileMetadataLog(controller.metadata_dir, read_only=True)
    try:
        (snapshot_id,) = log.snapshot_ids()
        assert snapshot_id.end_offset == seen["snapshot_end_offset"]
        path = controller.metadata_dir / snapshot_id.file_name()
        assert path.stat().st_size == seen["snapshot_bytes"]
        reader = log.read_snapshot()
        assert reader is not None
        delta = MetadataDelta()
        for records in reader.batches():
            delta.replay_all(records)
        from_snapshot = delta.apply()
        # The snapshot is the image of the records below its end offset, exactly.
        below = [r for b in log.read_from(0) for r in b.records][: snapshot_id.end_offset]
        assert from_snapshot == replay(below)
        assert sum(len(t.partitions) for t in from_snapshot.topics_by_id.values()) == (
            NUM_TOPICS * PARTITIONS_PER_TOPIC
        )
    finally:
        log.close()

    # A restart recovers from that snapshot, then the records after it.
    controller.start()
    assert controller.stop() == 0
    assert re.search(
        rf"snapshot ending at offset {seen['snapshot_end_offset']} \(\d+ records\)",
        controller.stderr(),
    )
