"""A fleet's topic configs: the optional ``DIR/topic_configs/`` Parquet dataset, one row per
topic and key as DescribeConfigs names them (``cluster_id, topic, name, value``).

Goals
    Live clusters' topic configs come with their rows (DescribeConfigs: the topic's value or
    the broker's default, as the cluster applies it). The audit and the plan judge each topic
    by its own ``min.insync.racks``,
    ``min.insync.racks.level`` and ``leaders.preference``
    (:mod:`rackwise.pipeline.audit.rules`); the rows are read on the driver with pyarrow
    (metadata: a row per topic and key), whichever engine runs.
Constraints
    A fleet without the dataset has no topic configs (every topic takes the defaults). A
    dataset without one of the four string columns, or with another type, is refused with the
    column named. Rows with a null ``value`` say "the default" and are skipped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pyarrow as pa
import pyarrow.parquet as pq

from rackwise.common import InvalidFormatException
from rackwise.pipeline.ingest.json_input import JsonColumns
from rackwise.pipeline.ingest.source import InputSource, data_files

TOPIC_CONFIGS_DATASET: Final = "topic_configs"
TOPIC_CONFIGS_COLUMNS: Final = ("cluster_id", "topic", "name", "value")

TopicConfigRow = tuple[str, str, str, str | None]


def read_topic_configs(source: InputSource, columns: JsonColumns | None) -> list[TopicConfigRow]:
    """The topic config rows of ``source``: a fleet's dataset, the DescribeConfigs of live
    clusters (``columns``, as read); none for the other inputs."""
    if columns is not None:
        return list(columns.topic_configs)
    if source.fleet is None:
        return []
    path = Path(source.fleet) / TOPIC_CONFIGS_DATASET
    if not path.exists():
        return []
    files = data_files(path)
    if not files:
        return []
    table = pa.concat_tables([pq.read_table(f) for f in files], promote_options="permissive")
    for name in TOPIC_CONFIGS_COLUMNS:
        if name not in table.column_names:
            raise InvalidFormatException(f"fleet dataset {path}: no column {name!r}")
        if not pa.types.is_string(table.schema.field(name).type):
            found = table.schema.field(name).type
            raise InvalidFormatException(
                f"fleet dataset {path}: column {name!r} must be a string, got {found}"
            )
    values = [table.column(n).to_pylist() for n in TOPIC_CONFIGS_COLUMNS]
    return [
        (c, t, n, v)
        for c, t, n, v in zip(*values, strict=True)
        if c is not None and t is not None and n is not None
    ]
