"""A log's records and image as tables, for ``rackwise metadata dump`` and the fleet pipeline.

Records, as ``kafka-dump-log --cluster-metadata-decoder`` lists them: the newest snapshot's
(``source`` "snapshot", no offset) then every record the log holds (``source`` "log"). The
image's tables are :mod:`rackwise.image.tables`'.

Parquet output is one dataset directory per table under the output path, as Spark writes them
(``OUT/records/part-00000.parquet``, ``OUT/brokers/...``, ``topics``, ``partitions``,
``configs``), with the schemas below; ``spark.read.parquet("OUT/partitions")`` reads one.

records
    ``source`` string ("snapshot" or "log"), ``offset`` int64 (null for snapshot records),
    ``epoch`` int32 (the batch's, or the snapshot's), ``append_time_ms`` int64 (ms since the
    epoch), ``type`` string (Kafka's, e.g. PARTITION_RECORD), ``version`` int16, ``record``
    string (the record's fields as Kafka's JSON converter writes them).
brokers
    ``broker_id`` int32, ``rack`` string, ``incarnation_id`` string, ``broker_epoch`` int64,
    ``fenced`` bool, ``in_controlled_shutdown`` bool, ``listeners`` list<string>,
    ``log_dirs`` list<string>.
topics
    ``topic`` string, ``topic_id`` string, ``partitions`` int32, ``replication_factor`` int32.
partitions
    ``topic`` string, ``topic_id`` string, ``partition`` int32, ``replicas`` list<int32>,
    ``isr`` list<int32>, ``leader`` int32, ``leader_epoch`` int32, ``partition_epoch`` int32,
    ``directories`` list<string>, ``removing_replicas`` list<int32>, ``adding_replicas``
    list<int32>, ``leader_recovery_state`` int8, ``eligible_leader_replicas`` list<int32>.
configs
    ``resource_type`` int8, ``resource_name`` string, ``name`` string, ``value`` string.

Uuids are Kafka's base64 strings throughout (as ``kafka-topics --describe`` prints topic ids).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from rackwise.image import MetadataImage
from rackwise.image.tables import Row, image_tables
from rackwise.metalog.api import MetadataLog
from rackwise.records.jsonform import record_json

PART_FILE: Final = "part-00000.parquet"
CHUNK_ROWS: Final = 100_000


def record_rows(log: MetadataLog) -> Iterator[Row]:
    """The snapshot's records, then the log's, each with where it came from."""
    reader = log.read_snapshot()
    if reader is not None:
        epoch = reader.snapshot_id.epoch
        for batch in reader.batches():
            for record in batch:
                yield _row("snapshot", None, epoch, reader.last_append_time_ms, record)
    for log_batch in log.read_from(log.start_offset):
        header = log_batch.header
        for i, record in enumerate(log_batch.records):
            yield _row("log", header.base_offset + i, header.epoch, header.append_time_ms, record)


def _row(source: str, offset: int | None, epoch: int, time_ms: int, record: Any) -> Row:
    return {"source": source, "offset": offset, "epoch": epoch, "append_time_ms": time_ms} | (
        record_json(record)
    )


def _schemas() -> dict[str, Any]:
    import pyarrow as pa  # noqa: PLC0415 (a heavy import, only for Parquet output)

    ints = pa.list_(pa.int32())
    strings = pa.list_(pa.string())
    return {
        "records": pa.schema(
            [
                ("source", pa.string()),
                ("offset", pa.int64()),
                ("epoch", pa.int32()),
                ("append_time_ms", pa.int64()),
                ("type", pa.string()),
                ("version", pa.int16()),
                ("record", pa.string()),
            ]
        ),
        "brokers": pa.schema(
            [
                ("broker_id", pa.int32()),
                ("rack", pa.string()),
                ("incarnation_id", pa.string()),
                ("broker_epoch", pa.int64()),
                ("fenced", pa.bool_()),
                ("in_controlled_shutdown", pa.bool_()),
                ("listeners", strings),
                ("log_dirs", strings),
            ]
        ),
        "topics": pa.schema(
            [
                ("topic", pa.string()),
                ("topic_id", pa.string()),
                ("partitions", pa.int32()),
                ("replication_factor", pa.int32()),
            ]
        ),
        "partitions": pa.schema(
            [
                ("topic", pa.string()),
                ("topic_id", pa.string()),
                ("partition", pa.int32()),
                ("replicas", ints),
                ("isr", ints),
                ("leader", pa.int32()),
                ("leader_epoch", pa.int32()),
                ("partition_epoch", pa.int32()),
                ("directories", strings),
                ("removing_replicas", ints),
                ("adding_replicas", ints),
                ("leader_recovery_state", pa.int8()),
                ("eligible_leader_replicas", ints),
            ]
        ),
        "configs": pa.schema(
            [
                ("resource_type", pa.int8()),
                ("resource_name", pa.string()),
                ("name", pa.string()),
                ("value", pa.string()),
            ]
        ),
    }


def write_parquet(log: MetadataLog, image: MetadataImage, out: Path) -> dict[str, int]:
    """Write every table under ``out``; the number of rows of each."""
    import pyarrow as pa  # noqa: PLC0415
    import pyarrow.parquet as pq  # noqa: PLC0415

    schemas = _schemas()
    counts: dict[str, int] = {}
    records = (
        {**{k: v for k, v in row.items() if k != "data"}, "record": json.dumps(row["data"])}
        for row in record_rows(log)
    )
    tables: dict[str, Iterator[Row]] = {"records": records}
    tables.update({name: iter(rows) for name, rows in image_tables(image).items()})
    for name, rows in tables.items():
        directory = out / name
        directory.mkdir(parents=True, exist_ok=True)
        for old in directory.glob("part-*.parquet"):
            old.unlink()
        schema = schemas[name]
        counts[name] = 0
        with pq.ParquetWriter(directory / PART_FILE, schema) as writer:
            chunk: list[Row] = []
            for row in rows:
                chunk.append(row)
                if len(chunk) >= CHUNK_ROWS:
                    writer.write_table(pa.Table.from_pylist(chunk, schema=schema))
                    counts[name] += len(chunk)
                    chunk = []
            writer.write_table(pa.Table.from_pylist(chunk, schema=schema))
            counts[name] += len(chunk)
    return counts
