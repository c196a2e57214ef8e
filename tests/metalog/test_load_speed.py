"""Restart time: a fresh process opens a log whose snapshot holds many partitions and replays
the snapshot and the log after it. The issue asks for 1,000,000 partitions in under 10 s; the
suite runs a smaller cluster to stay quick. For the full figure::

    RACKWISE_LOAD_PARTITIONS=1000000 .venv/bin/pytest -s tests/metalog/test_load_speed.py
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from rackwise.common.collector import paused_gc
from rackwise.image import MetadataDelta
from rackwise.metalog import FileMetadataLog
from rackwise.records import PartitionChangeRecord, PartitionRecord, TopicRecord
from tests.metalog.helpers import broker

PARTITIONS = int(os.environ.get("RACKWISE_LOAD_PARTITIONS", "50000"))
PARTITIONS_PER_TOPIC = 100
BROKERS = 100
LOAD_BUDGET_S = 10.0

_LOAD = """
import json, resource, sys, time
started = time.perf_counter()
cpu = time.process_time()
from rackwise.metalog import FileMetadataLog, load_image
imported = time.perf_counter()
log = FileMetadataLog(sys.argv[1])
opened = time.perf_counter()
loaded = load_image(log)
done = time.perf_counter()
print(json.dumps({
    "import_s": imported - started, "open_s": opened - imported, "replay_s": done - opened,
    "total_s": done - started, "cpu_s": time.process_time() - cpu,
    "partitions": loaded.image.num_partitions, "snapshot_records": loaded.num_snapshot_records,
    "log_records": loaded.num_log_records, "events": [str(e) for e in log.recovery_events],
    "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
}))
"""


def _cluster_log(directory: Path, partitions: int) -> tuple[int, int]:
    """Brokers, topics of 100 partitions with random replicas (RF 3, each replica in one of its
    broker's three log directories), a snapshot of them all, then changes after it."""
    rnd = random.Random(631)
    dirs = [uuid.UUID(int=rnd.getrandbits(128)) for _ in range(3 * BROKERS)]
    delta = MetadataDelta()
    with FileMetadataLog(directory) as log, paused_gc():
        brokers = [broker(b) for b in range(BROKERS)]
        log.append(brokers, epoch=1)
        delta.replay_all(brokers)
        batch: list[Any] = []
        for t in range(partitions // PARTITIONS_PER_TOPIC):
            topic_id = uuid.UUID(int=rnd.getrandbits(128))
            batch.append(TopicRecord(name=f"topic-{t}", topic_id=topic_id))
            for p in range(PARTITIONS_PER_TOPIC):
                replicas = tuple(rnd.sample(range(BROKERS), 3))
                batch.append(
                    PartitionRecord(
                        partition_id=p,
                        topic_id=topic_id,
                        replicas=replicas,
                        isr=replicas,
                        removing_replicas=(),
                        adding_replicas=(),
                        leader=replicas[0],
                        leader_epoch=0,
                        partition_epoch=0,
                        directories=tuple(dirs[3 * b + rnd.randrange(3)] for b in replicas),
                    )
                )
            if len(batch) >= 20_000:
                log.append(batch, epoch=1)
                delta.replay_all(batch)
                batch = []
        if batch:
            log.append(batch, epoch=1)
            delta.replay_all(batch)
        image = delta.apply()
        log.write_snapshot(image.to_records(), log.end_offset)
        some_topic = image.topics_by_name["topic-0"].topic_id
        changes = [
            PartitionChangeRecord(partition_id=p, topic_id=some_topic, leader=-1, isr=())
            for p in range(PARTITIONS_PER_TOPIC)
        ]
        log.append(changes, epoch=2)
    return image.num_partitions, len(changes)


def test_restart_replays_snapshot_and_log_in_time(tmp_path: Path) -> None:
    partitions, after = _cluster_log(tmp_path, PARTITIONS)
    result = subprocess.run(
        [sys.executable, "-c", _LOAD, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    figures = json.loads(result.stdout)
    print(f"\nrestart with {partitions} partitions: {figures}")
    assert figures["partitions"] == partitions == PARTITIONS
    assert figures["log_records"] == after
    assert figures["events"] == []
    assert figures["total_s"] < LOAD_BUDGET_S
