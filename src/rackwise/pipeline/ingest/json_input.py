"""One cluster's JSON files read on the driver into columns, ready to become raw DataFrames.

The files are Kafka's (reassignment JSON, ``kafka-log-dirs`` output) and rackwise's broker
list. One cluster's files can hold millions of replicas on a single line, so the big arrays are
decoded one element at a time (:mod:`rackwise.formats._json_stream`) and their values appended
to plain column lists, then handed to Arrow in one piece; the cyclic garbage collector is paused
meanwhile (it would otherwise rescan the growing lists over and over for no garbage).

Entries that fail the formats' own checks become ``rejected`` rows here, with the formats'
messages; checks across files (unknown brokers, directories a broker does not have, a broker
twice in a partition) are left to :mod:`rackwise.pipeline.ingest._validate`.

Each replica gets its directory and size here, by joining the assignment with the reported
replicas on broker and partition (Arrow, on the driver, where both already are); reported
replicas the assignment does not place on that broker are rejected. Replicas ``kafka-log-dirs``
marks as future (the copy a move between directories is building)
are not placements and are left out; the replica's current copy carries its directory and size.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc

from rackwise.common.collector import paused_gc
from rackwise.common.errors import InvalidFormatException
from rackwise.formats._json_stream import STREAMED, stream_object
from rackwise.formats.brokers import parse_broker_list
from rackwise.formats.log_dirs import iter_log_dirs
from rackwise.formats.reassignment import ANY_LOG_DIR, REASSIGNMENT_VERSION

_REASSIGNMENT: Final = "reassignment JSON"
_RECORD_LIMIT: Final = 2000
_INT32_MIN: Final = -(2**31)
_INT32_MAX: Final = 2**31 - 1


def record_json(item: object) -> str:
    """A rejected entry as compact JSON, cut at a couple of thousand characters."""
    text = json.dumps(item, separators=(",", ":"), ensure_ascii=False, default=str)
    if len(text) > _RECORD_LIMIT:
        text = text[: _RECORD_LIMIT - 3] + "..."
    return text


@dataclass
class Rejects:
    """Rejected rows collected on the driver: ``(cluster_id, source, record, reason)``."""

    cluster_id: str
    rows: list[tuple[str, str, str, str]] = field(default_factory=list)

    def add(self, source: str, item: object, reason: str) -> None:
        self.rows.append((self.cluster_id, source, record_json(item), " ".join(reason.split())))

    def handler(self, source: str) -> Callable[[object, InvalidFormatException], None]:
        """An ``on_invalid`` for the format readers that rejects entries of ``source``."""

        def reject(item: object, error: InvalidFormatException) -> None:
            self.add(source, item, str(error))

        return reject


@dataclass
class JsonColumns:
    """One cluster's raw rows (``_source`` is added by the caller): brokers and reported
    directories as row tuples (they are few), replicas as an Arrow table; a running
    cluster's topic configs as ``(cluster_id, topic, name, value)`` rows (files carry none)."""

    brokers: list[tuple[object, ...]]
    replicas: pa.Table
    reported_dirs: list[tuple[object, ...]]
    rejects: Rejects
    topic_configs: list[tuple[str, str, str, str]] = field(default_factory=list)


def read_brokers(path: Path, cluster_id: str, rejects: Rejects) -> list[tuple[object, ...]]:
    """Raw broker rows: ``cluster_id``, ``broker_id``, ``rack``, ``log_dirs``, ``_ordinal``."""
    source = str(path)
    entries = parse_broker_list(path.read_text(), on_invalid=rejects.handler(source))
    return [
        (
            cluster_id,
            entry.id,
            entry.rack,
            [(d.path, d.total_bytes, d.is_live) for d in entry.log_dirs],
            ordinal,
        )
        for ordinal, entry in enumerate(entries)
    ]


def _fail(path: str, problem: str) -> InvalidFormatException:
    return InvalidFormatException(f"{_REASSIGNMENT}: {path}: {problem}")


def _type_name(value: object) -> str:
    return record_json(value)[:60]


def _entry_columns(item: object, path: str) -> tuple[str, int, list[int], list[str | None] | None]:
    """An assignment entry's topic, partition, brokers and directories (``None`` for "any"),
    checked as the entry alone can be (types, a non-empty replica list without a broker twice,
    one directory per replica); what needs the other files (brokers known, directories the
    broker has) is checked later."""
    if type(item) is not dict:
        raise _fail(path, f"expected a JSON object, got {_type_name(item)}")
    for key in ("topic", "partition", "replicas"):
        if key not in item:
            raise _fail(path, f'missing required field "{key}"')
    topic, partition, replicas = item["topic"], item["partition"], item["replicas"]
    if type(topic) is not str or not topic:
        raise _fail(f"{path}.topic", f"expected a non-empty string, got {_type_name(topic)}")
    if type(partition) is not int or not _INT32_MIN <= partition <= _INT32_MAX:
        raise _fail(f"{path}.partition", f"expected a 32-bit integer, got {_type_name(partition)}")
    if type(replicas) is not list or not replicas:
        raise _fail(f"{path}.replicas", f"expected a non-empty array, got {_type_name(replicas)}")
    for index, broker in enumerate(replicas):
        if type(broker) is not int or not _INT32_MIN <= broker <= _INT32_MAX:
            where = f"{path}.replicas[{index}]"
            raise _fail(where, f"expected a 32-bit integer, got {_type_name(broker)}")
    if len(set(replicas)) != len(replicas):
        repeated = next(b for i, b in enumerate(replicas) if b in replicas[:i])
        raise _fail(
            f"{path}.replicas",
            f"broker {repeated} appears more than once in {_type_name(replicas)}",
        )
    log_dirs = item.get("log_dirs")
    if log_dirs is None and "log_dirs" not in item:
        return topic, partition, replicas, None
    if type(log_dirs) is not list or len(log_dirs) != len(replicas):
        raise _fail(
            f"{path}.log_dirs",
            f"expected an array of {len(replicas)} entries, one per replica, "
            f"got {_type_name(log_dirs)}",
        )
    dirs: list[str | None] = []
    for index, log_dir in enumerate(log_dirs):
        if type(log_dir) is not str:
            where = f"{path}.log_dirs[{index}]"
            raise _fail(where, f"expected a string, got {_type_name(log_dir)}")
        dirs.append(None if log_dir == ANY_LOG_DIR else log_dir)
    return topic, partition, replicas, dirs


def _check_reassignment_members(members: dict[str, object]) -> None:
    version = members.get("version", REASSIGNMENT_VERSION)
    if type(version) is not int or version != REASSIGNMENT_VERSION:
        raise InvalidFormatException(
            f"{_REASSIGNMENT}: version: unsupported version {_type_name(version)}; "
            f"only {REASSIGNMENT_VERSION} is defined"
        )
    partitions = members.get("partitions", STREAMED)
    if partitions is not STREAMED and partitions is not None:
        raise InvalidFormatException(
            f"{_REASSIGNMENT}: partitions: expected a JSON array, got {_type_name(partitions)}"
        )


class Topics:
    """Topic names interned as small integers, so that replicas join on numbers."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def id_of(self, topic: str) -> int:
        return self.ids.setdefault(topic, len(self.ids))

    def names_array(self) -> pa.Array:
        """Every name, in id order."""
        return pa.array(list(self.ids), pa.string())

    def names(self, ids: pa.Array | pa.ChunkedArray) -> pa.Array:
        """The names of ``ids``, as a string array."""
        return self.names_array().take(ids)


def read_assignment(path: Path, topics: Topics, rejects: Rejects) -> pa.Table:
    """Raw replica rows, one per replica of each entry in file order: ``topic_id``,
    ``partition``, ``replica_index``, ``broker_id``, ``log_dir`` (the entry's directory, null
    for "any"), ``_ordinal`` (the entry's index)."""
    source = str(path)
    columns: dict[str, list[Any]] = {k: [] for k in _ASSIGNMENT_COLUMNS}
    topic_ids, partitions, indexes = (
        columns["topic_id"],
        columns["partition"],
        columns["replica_index"],
    )
    brokers, dirs, ordinals = columns["broker_id"], columns["log_dir"], columns["_ordinal"]
    first_seen: dict[tuple[str, int], int] = {}
    members: dict[str, object] = {}
    text = path.read_text()
    for ordinal, (_, item) in enumerate(
        stream_object(text, _REASSIGNMENT, ("partitions",), members)
    ):
        where = f"partitions[{ordinal}]"
        try:
            topic, partition, replicas, log_dirs = _entry_columns(item, where)
            earlier = first_seen.setdefault((topic, partition), ordinal)
            if earlier != ordinal:
                raise _fail(
                    where,
                    f"partition {topic}-{partition} is already listed at partitions[{earlier}]",
                )
        except InvalidFormatException as error:
            rejects.add(source, item, str(error))
            continue
        count = len(replicas)
        topic_ids.extend([topics.id_of(topic)] * count)
        partitions.extend([partition] * count)
        indexes.extend(range(count))
        brokers.extend(replicas)
        dirs.extend(log_dirs if log_dirs is not None else [None] * count)
        ordinals.extend([ordinal] * count)
    _check_reassignment_members(members)
    return pa.table({k: pa.array(v, _ARROW_TYPES[k]) for k, v in columns.items()})


_ASSIGNMENT_COLUMNS: Final = (
    "topic_id",
    "partition",
    "replica_index",
    "broker_id",
    "log_dir",
    "_ordinal",
)
_REPORTED_COLUMNS: Final = ("broker_id", "topic", "partition", "_reported_dir", "size_bytes")
_ARROW_TYPES: Final = {
    "topic_id": pa.int32(),
    "topic": pa.string(),
    "partition": pa.int32(),
    "replica_index": pa.int32(),
    "broker_id": pa.int32(),
    "log_dir": pa.string(),
    "_reported_dir": pa.string(),
    "size_bytes": pa.int64(),
    "_ordinal": pa.int64(),
}


def read_log_dirs(
    paths: Sequence[tuple[int | None, Path]], cluster_id: str, topics: Topics, rejects: Rejects
) -> tuple[list[tuple[object, ...]], pa.Table]:
    """Reported directories (``cluster_id``, ``broker_id``, ``log_dir``, ``is_live``,
    ``_ordinal``) and the replicas in them (``broker_id``, ``topic``, ``partition``,
    ``_reported_dir``, ``size_bytes``, and ``topic_id``, null for a topic the assignment does
    not have) from one or more ``kafka-log-dirs`` files, each with the
    broker id a KIP-113 document needs (``None`` for Kafka's shape). A broker described by an
    earlier file is set aside in a later one."""
    dir_rows: list[tuple[object, ...]] = []
    columns: dict[str, list[Any]] = {k: [] for k in _REPORTED_COLUMNS}
    described_in: dict[int, str] = {}
    for broker_hint, path in paths:
        source = str(path)
        for broker, described in iter_log_dirs(
            path.read_text(), broker_id=broker_hint, on_invalid=rejects.handler(source)
        ):
            first = described_in.setdefault(broker, source)
            if first != source:
                reason = f"log-dirs JSON: broker {broker} is already described by {first}"
                rejects.add(source, {"broker": broker, "logDir": described.path}, reason)
                continue
            dir_rows.append((cluster_id, broker, described.path, described.is_live, len(dir_rows)))
            current = [r for r in described.replicas if not r.is_future]
            columns["broker_id"].extend([broker] * len(current))
            columns["topic"].extend(map(_TOPIC, current))
            columns["partition"].extend(map(_PARTITION, current))
            columns["_reported_dir"].extend([described.path] * len(current))
            columns["size_bytes"].extend(map(_SIZE, current))
    table = pa.table({k: pa.array(v, _ARROW_TYPES[k]) for k, v in columns.items()})
    ids = pc.index_in(table["topic"], value_set=topics.names_array()).cast(pa.int32())
    return dir_rows, table.append_column("topic_id", ids)


_TOPIC: Final = attrgetter("topic")
_PARTITION: Final = attrgetter("partition")
_SIZE: Final = attrgetter("size_bytes")
_KEYS: Final = ["broker_id", "topic_id", "partition"]


def attach_sizes(
    replicas: pa.Table, reported: pa.Table, topics: Topics, source: str, rejects: Rejects
) -> pa.Table:
    """The assignment's replicas with their directory (the assignment's when it names one,
    else the reported one) and size (the reported one, by broker and partition); a reported
    replica the assignment does not place on that broker is rejected."""
    joined = replicas.join(reported.drop_columns(["topic"]), keys=_KEYS, join_type="left outer")
    log_dir = pc.coalesce(joined["log_dir"], joined["_reported_dir"])
    resolved = joined.set_column(joined.schema.get_field_index("log_dir"), "log_dir", log_dir)
    stray = reported.join(replicas.select(_KEYS), keys=_KEYS, join_type="left anti")
    for row in stray.to_pylist():
        name = row["topic"]
        reason = (
            f"kafka-log-dirs reports a replica of {name}-{row['partition']} on broker "
            f"{row['broker_id']} that the assignment does not place there"
        )
        record = {
            "broker_id": row["broker_id"],
            "log_dir": row["_reported_dir"],
            "topic": name,
            "partition": row["partition"],
            "size_bytes": row["size_bytes"],
        }
        rejects.add(source, record, reason)
    return resolved


def _replica_table(replicas: pa.Table, topics: Topics, cluster_id: str) -> pa.Table:
    """``replicas`` in the raw replicas schema: topic names back, the cluster id added."""
    rows = replicas.num_rows
    size = (
        replicas["size_bytes"]
        if "size_bytes" in replicas.column_names
        else pa.nulls(rows, pa.int64())
    )
    return pa.table(
        {
            "cluster_id": pa.array([cluster_id] * rows, pa.string()),
            "topic": topics.names(replicas["topic_id"]),
            "partition": replicas["partition"],
            "replica_index": replicas["replica_index"],
            "broker_id": replicas["broker_id"],
            "log_dir": replicas["log_dir"],
            "size_bytes": size,
            "_ordinal": replicas["_ordinal"],
        }
    )


def place_reported(
    replicas: pa.Table,
    log_dirs_paths: Sequence[tuple[int | None, Path]],
    cluster_id: str,
    rejects: Rejects,
) -> tuple[list[tuple[object, ...]], pa.Table]:
    """Replicas read elsewhere (raw replica rows with topic names: a metadata export's) given
    the directory and size ``kafka-log-dirs`` reports for each, as :func:`read_json_cluster`
    gives the assignment's; the reported directories beside them."""
    topics = Topics()
    for name in pc.unique(replicas["topic"]).to_pylist():
        if name is not None:
            topics.id_of(name)
    ids = pc.index_in(replicas["topic"], value_set=topics.names_array()).cast(pa.int32())
    keyed = replicas.select(list(_ASSIGNMENT_COLUMNS[1:])).add_column(0, "topic_id", ids)
    source = ",".join(str(p) for _, p in log_dirs_paths)
    with paused_gc(), _naming(source):
        reported_dirs, reported = read_log_dirs(log_dirs_paths, cluster_id, topics, rejects)
    placed = attach_sizes(keyed, reported, topics, source, rejects)
    order = [("_ordinal", "ascending"), ("replica_index", "ascending")]
    return reported_dirs, _replica_table(placed.sort_by(order), topics, cluster_id)


@contextmanager
def _naming(path: Path | str) -> Iterator[None]:
    """A whole document that cannot be read raises an error that names its file, unless the
    message names it already."""
    try:
        yield
    except InvalidFormatException as error:
        if str(path) in str(error):
            raise
        raise InvalidFormatException(f"{path}: {error}") from error


def read_json_cluster(
    brokers_path: Path,
    assignment_path: Path,
    log_dirs_paths: Sequence[tuple[int | None, Path]],
    cluster_id: str,
) -> JsonColumns:
    """All of one cluster's JSON files as columns plus the entries they reject; each replica
    with its directory and size when ``kafka-log-dirs`` output is given."""
    rejects = Rejects(cluster_id)
    topics = Topics()
    with paused_gc():
        with _naming(brokers_path):
            brokers = read_brokers(brokers_path, cluster_id, rejects)
        with _naming(assignment_path):
            replicas = read_assignment(assignment_path, topics, rejects)
        reported_dirs: list[tuple[object, ...]] = []
        if log_dirs_paths:
            source = ",".join(str(p) for _, p in log_dirs_paths)
            with _naming(source):
                reported_dirs, reported = read_log_dirs(log_dirs_paths, cluster_id, topics, rejects)
            replicas = attach_sizes(replicas, reported, topics, source, rejects)
    return JsonColumns(
        brokers, _replica_table(replicas, topics, cluster_id), reported_dirs, rejects
    )
