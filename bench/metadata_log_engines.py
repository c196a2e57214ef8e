"""What a durable append of a metadata batch costs through each log engine: the metadata log's
own segments (:class:`rackwise.metalog.FileMetadataLog`) and the brokers' partition log
(:class:`rackwise.storage.log.PartitionLog`), both writing the same Kafka v2 batches.

Each round appends one batch of ``--records`` PartitionChangeRecords and waits for it to be on
stable storage, as the active controller's commit does:

  metalog    ``FileMetadataLog.append_batches``: encode, write, one fsync, index
  storage    encode the same batch, ``PartitionLog.append_as_leader`` (the leader's
             validation and stamping, as Kafka's ``KafkaMetadataLog.appendAsLeader``), then
             ``flush()`` (Kafka's ``log.flush``: the segment, its indexes, the epoch checkpoint)

Both run in this process, in one temporary directory on the same disk, alternating in
``--rounds`` blocks so that a noisy neighbour touches both alike; the figures are the median
and the 99th percentile of one append's latency and the appends a second.

    .venv/bin/python bench/metadata_log_engines.py [--appends 2000] [--records 10] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rackwise.metalog import FileMetadataLog
from rackwise.records import PartitionChangeRecord
from rackwise.records.batch import encode_batch, encode_frames
from rackwise.storage.config import LogConfig
from rackwise.storage.files import FileCache
from rackwise.storage.log import PartitionLog


def _records(count: int) -> list[Any]:
    topic = uuid.UUID(int=7)
    return [
        PartitionChangeRecord(partition_id=i, topic_id=topic, leader=i % 3, isr=(0, 1, 2))
        for i in range(count)
    ]


def _metalog_appender(directory: Path, records: list[Any]) -> tuple[Callable[[], None], Any]:
    log = FileMetadataLog(directory)

    def append() -> None:
        log.append_batches([records], 1)

    return append, log


def _storage_appender(directory: Path, records: list[Any]) -> tuple[Callable[[], None], Any]:
    log = PartitionLog.open(
        directory,
        LogConfig(),
        topic_id=None,
        recovery_point=0,
        log_start_offset=0,
        had_clean_shutdown=True,
        files=FileCache(16),
        clock=lambda: time.time_ns() // 1_000_000,
        rng=random.Random(7),
    )

    def append() -> None:
        now = time.time_ns() // 1_000_000
        log.append_as_leader(encode_batch(0, 1, now, encode_frames(records)), leader_epoch=1)
        log.flush()

    return append, log


def run(appends: int, records: int, rounds: int) -> dict[str, dict[str, float]]:
    batch = _records(records)
    samples: dict[str, list[float]] = {"metalog": [], "storage": []}
    with tempfile.TemporaryDirectory(prefix="metalog-engines-") as name:
        root = Path(name)
        engines = {
            "metalog": _metalog_appender(root / "metalog", batch),
            "storage": _storage_appender(root / "__cluster_metadata-0", batch),
        }
        per_round = max(appends // rounds, 1)
        for _ in range(rounds):
            for engine, (append, _) in engines.items():
                for _ in range(per_round):
                    started = time.perf_counter()
                    append()
                    samples[engine].append(time.perf_counter() - started)
        for _, log in engines.values():
            log.close()
    return {engine: _summary(values) for engine, values in samples.items()}


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "appends": len(values),
        "median_ms": statistics.median(ordered) * 1000,
        "p99_ms": ordered[int(len(ordered) * 0.99) - 1] * 1000,
        "appends_per_s": len(values) / sum(values),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--appends", type=int, default=2000, help="appends per engine")
    parser.add_argument("--records", type=int, default=10, help="records per batch")
    parser.add_argument("--rounds", type=int, default=10, help="alternating blocks")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)
    result = run(args.appends, args.records, args.rounds)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{'engine':<9} {'appends':>8} {'median ms':>10} {'p99 ms':>8} {'appends/s':>10}")
    for engine, s in result.items():
        print(
            f"{engine:<9} {s['appends']:>8.0f} {s['median_ms']:>10.3f} {s['p99_ms']:>8.3f} "
            f"{s['appends_per_s']:>10.0f}"
        )
    return 0


if __name__ == "__main__":
    from _signals import stopping

    raise SystemExit(stopping(main))
