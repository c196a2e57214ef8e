"""A follower told to truncate at its own log end still drops the leader epochs that start
there. A broker that led an epoch without appending to it keeps that epoch at its log end; the
leader, which never had it, answers each of its fetches with the same diverging epoch, so
unless the follower drops it the two exchange fetches as fast as they can, for ever."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from rackwise.broker.data_plane import DataPlane
from rackwise.image import replay
from rackwise.node.data_config import DataPathConfig
from rackwise.records import TopicRecord
from rackwise.storage.batch import build_batch
from tests.broker.test_broker_apis import partition
from tests.processes import run

TOPIC_ID = uuid.UUID(int=11)


async def _no_broker(broker_id: int) -> Any:
    raise OSError(f"no broker {broker_id} here")


async def _no_controller(items: Any) -> Any:
    raise OSError("no controller here")


def test_truncating_at_the_log_end_drops_the_epochs_that_start_there(tmp_path: Path) -> None:
    async def scenario() -> None:
        plane = DataPlane(
            1,
            [tmp_path / "d"],
            {},
            DataPathConfig.from_properties({}),
            connect_broker=_no_broker,
            broker_epoch=lambda: 1,
            assign_dirs=_no_controller,
        )
        plane.load({tmp_path / "d": uuid.uuid4()})
        # t-0 led by broker 2: this broker follows it.
        plane.apply(
            replay(
                [
                    TopicRecord(name="t", topic_id=TOPIC_ID),
                    partition(0, (2, 1), (2, 1), 2, topic_id=TOPIC_ID, directories=()),
                ]
            )
        )
        log = plane.logs.get("t", 0)
        assert log is not None
        records = [(None, b"r%d" % i, ()) for i in range(10)]
        log.append_as_follower(build_batch(records, timestamp_ms=1, partition_leader_epoch=0))
        log.epochs.assign(3, 10)  # led epoch 3 once, appended nothing in it
        assert (log.log_end_offset, log.latest_epoch) == (10, 3)

        # The leader's answer: epoch 0 ends at 10 there; the follower's own copy of epoch 0
        # ends at 10 too, so it truncates to its log end.
        plane.replicas.truncate("t", 0, 10)
        assert (log.log_end_offset, log.latest_epoch) == (10, 0)
        plane.replicas.truncate("t", 0, 10)  # again: nothing left to drop
        assert (log.log_end_offset, log.latest_epoch) == (10, 0)
        await plane.log_dirs.close()
        plane.logs.shutdown()

    run(scenario(), 30)
