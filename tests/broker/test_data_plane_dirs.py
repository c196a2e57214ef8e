"""A broker's report of where its replicas are (KIP-858) when a directory fails before the
controller has heard it: the report still goes, so that the controller, which finds a failed
directory's replicas by the directories it has recorded, takes the replica out of its ISR."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

from rackwise.broker.data_plane import DataPlane
from rackwise.image import replay
from rackwise.node.data_config import DataPathConfig
from rackwise.records import TopicRecord
from tests.broker.test_broker_apis import partition
from tests.processes import run

TOPIC_ID = uuid.UUID(int=7)


def _image_with_one_replica_here() -> Any:
    """t-0 on this broker alone, with no directory recorded for it yet."""
    return replay(
        [
            TopicRecord(name="t", topic_id=TOPIC_ID),
            partition(0, (1,), (1,), 1, topic_id=TOPIC_ID, directories=()),
        ]
    )


async def _no_broker(broker_id: int) -> Any:
    raise OSError(f"no broker {broker_id} here")


def test_a_replica_in_a_dir_that_fails_before_the_controller_heard_of_it_is_still_reported(
    tmp_path: Path,
) -> None:
    dirs = [tmp_path / "d1", tmp_path / "d2"]
    ids = {d: uuid.uuid4() for d in dirs}
    sent: list[list[tuple[uuid.UUID, int, uuid.UUID]]] = []

    async def assign(items: list[tuple[uuid.UUID, int, uuid.UUID]]) -> dict[Any, int]:
        sent.append(list(items))
        if len(sent) == 1:
            raise OSError("the controller is away")  # the first report does not arrive
        return {(t, p): 0 for t, p, _ in items}

    async def scenario() -> None:
        plane = DataPlane(
            1,
            dirs,
            {},
            DataPathConfig.from_properties({}),
            connect_broker=_no_broker,
            broker_epoch=lambda: 1,
            assign_dirs=assign,
        )
        plane.load(ids)
        plane.apply(_image_with_one_replica_here())
        log = plane.logs.get("t", 0)
        assert log is not None
        home = log.directory.parent
        while not sent:
            await asyncio.sleep(0.01)
        plane.fail_dir(home, "a test")
        assert plane.logs.get("t", 0) is None
        deadline = asyncio.get_running_loop().time() + 10
        while len(sent) < 2 and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)
        assert sent[1:2] == [[(TOPIC_ID, 0, ids[home])]]
        while plane.replicas.dirs_to_assign and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)
        assert not plane.replicas.dirs_to_assign  # taken: not sent again
        await plane.log_dirs.close()
        plane.logs.shutdown()

    run(scenario(), 30)
