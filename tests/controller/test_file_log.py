"""The controller on the real file log: a controller process killed with SIGKILL during a burst
of CreateTopics, reopened: every acknowledged topic is there with all its partitions, and no
topic is there in part."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

from rackwise.controller import Controller, ManualClock
from rackwise.metalog import FileMetadataLog
from tests.controller.helpers import check_invariants, config

PARTITIONS = 20
_BURST = """
import random, sys, time
from rackwise.controller import (
    BrokerHeartbeatRequest, Controller, ControllerConfig, CreatableTopic)
from rackwise.metalog import FileMetadataLog
from tests.controller.helpers import registration

directory, first = sys.argv[1], int(sys.argv[2])
log = FileMetadataLog(directory, max_record_bytes_between_snapshots=16_384)
controller = Controller(
    log,
    lambda: time.monotonic_ns() // 1_000_000,
    ControllerConfig(node_id=1000, controller_ids=frozenset({1000})),
    random=random.Random(),
)
for broker_id in (1, 2, 3):
    controller.register_broker(registration(broker_id, f"/r{broker_id}"))  # same incarnation
    epoch = controller.image.brokers[broker_id].broker_epoch
    controller.broker_heartbeat(BrokerHeartbeatRequest(broker_id, epoch, controller.end_offset - 1))
print("ready", flush=True)
for i in range(first, first + 100_000):
    (result,) = controller.create_topics([CreatableTopic(f"t{i}", PARTITIONS, 3)])
    assert result.error.is_success, result.error
    print(f"t{i}", flush=True)
""".replace("PARTITIONS", str(PARTITIONS))


def _burst_and_kill(directory: Path, first: int, acks: int) -> list[str]:
    """Run a controller creating topics t<first>... and kill it after ``acks`` replies."""
    root = Path(__file__).resolve().parents[2]
    child = subprocess.Popen(
        [sys.executable, "-c", _BURST, str(directory), str(first)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    assert child.stdout is not None
    acknowledged: list[str] = []
    try:
        assert child.stdout.readline().strip() == "ready"
        while len(acknowledged) < acks:
            line = child.stdout.readline().strip()
            assert line, "the controller process stopped early"
            acknowledged.append(line)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
        child.stdout.close()
    assert child.returncode == -signal.SIGKILL
    return acknowledged


def test_every_acknowledged_topic_survives_sigkill_whole(tmp_path: Path) -> None:
    acknowledged = _burst_and_kill(tmp_path, first=0, acks=40)
    acknowledged += _burst_and_kill(tmp_path, first=1000, acks=40)  # recover, go on, die again
    log = FileMetadataLog(tmp_path)
    try:
        controller = Controller(log, ManualClock(0), config(), random=random.Random(1))
        topics = controller.image.topics_by_name
        assert set(acknowledged) <= set(topics)
        for name, topic in topics.items():
            assert sorted(topic.partitions) == list(range(PARTITIONS)), name
        assert len(topics) - len(acknowledged) <= 2  # at most one unacknowledged per run
        assert log.latest_snapshot_id() is not None
        check_invariants(controller.image)
    finally:
        log.close()
