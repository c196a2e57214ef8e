"""Validation in process: the rules of :mod:`rackwise.pipeline.ingest._validate`, with the same
messages, on Arrow tables with NumPy.

Goals
    The in-process engine keeps and rejects exactly the rows the Spark engine does, each
    rejected row with the same one-line reason (a test runs both on the same inputs).
Constraints
    The replicas can be millions of rows: every check on them is a vectorised NumPy or Arrow
    operation, and only rejected rows are formatted one by one. Brokers and reported
    directories are few and checked row by row.
Algorithm
    1. Brokers, then reported directories, row by row
       (:mod:`rackwise.pipeline.ingest._local_brokers`).
    2. Replicas: one code per row, the first problem in the Spark validator's order
       (:func:`_row_codes`), from a sorted join with what is known of each broker; string
       columns are checked on their distinct values. Partitions: a partition with a row problem
       takes the reason of its first such row by replica index; otherwise, unless the reader
       vouched for whole partitions, a broker twice (the first repeated one by replica index)
       or replica indexes other than ``0..n-1``: found cheaply among rows grouped by partition
       (each row against its next few), then looked at exactly for the partitions found.
    3. The kept replicas name directories of brokers of which nothing else is known.
Worked example
    Partition ``t-2`` with replicas ``(0, broker 1)`` and ``(1, broker 1)``: no row problem;
    sorted by index the brokers are ``[1, 1]``, broker 1 repeats, and both rows are rejected
    with "t-2: broker 1 appears more than once in the replicas".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rackwise.pipeline.ingest._local_brokers import (
    BrokerRow,
    RejectedRow,
    ReportedRow,
    check_brokers,
    check_reported,
    record_json,
)
from rackwise.pipeline.ingest.arrays import (
    NULL_CODE,
    Encoded,
    filled,
    flags,
    group_ids,
    member,
    valid,
)
from rackwise.pipeline.ingest.checks import (
    ABSOLUTE_PATH,
    MAX_REPLICA_INDEX,
    Directories,
)

_NO_CODE: Final = 0
_KEY_BITS: Final = 32
_LOW: Final = (1 << _KEY_BITS) - 1


@dataclass(frozen=True)
class LocalRaw:
    """Input rows before validation: ``replicas`` has the raw replica columns (``cluster_id,
    topic, partition, replica_index, broker_id, log_dir, size_bytes``); ``reported_dirs`` is
    ``None`` without ``kafka-log-dirs`` input; ``rejected`` holds rows the reader set aside.
    ``partitions_checked``: the reader checked each partition's replica list as a whole."""

    brokers: list[BrokerRow]
    brokers_source: str
    replicas: pa.Table
    replicas_source: str
    reported_dirs: list[ReportedRow] | None
    reported_source: str
    rejected: list[RejectedRow]
    partitions_checked: bool = False


@dataclass(frozen=True)
class Validated:
    """The kept rows and the rejected ones (``cluster_id, source, record, reason``)."""

    brokers: list[tuple[str, int, str | None]]
    log_dirs: list[tuple[str, int, str, int | None, bool]]
    replicas: pa.Table
    rejected: list[RejectedRow]


# --- replicas -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Lookup:
    """What is known of each listed broker, sorted by ``key`` (``cluster code << 32 | broker``),
    and the (broker row, directory) pairs known, as sorted ``row * len(paths) + path code``."""

    clusters: pa.Array
    keys: np.ndarray
    kept: np.ndarray
    has_dirs: np.ndarray
    paths: pa.Array
    pairs: np.ndarray

    @classmethod
    def of(cls, held: Directories) -> _Lookup:
        rows = held.lookup_rows()
        clusters = sorted({c for c, *_ in rows})
        code = {c: i for i, c in enumerate(clusters)}
        keys = np.array([(code[c] << _KEY_BITS) | (b & _LOW) for c, b, *_ in rows], np.int64)
        order = np.argsort(keys, kind="stable")
        rows = [rows[i] for i in order]
        paths = sorted({p for *_, dirs in rows for p in dirs or ()})
        path_code = {p: i for i, p in enumerate(paths)}
        pairs = [r * len(paths) + path_code[p] for r, row in enumerate(rows) for p in row[3] or ()]
        return cls(
            pa.array(clusters, pa.string()),
            keys[order],
            np.array([row[2] for row in rows], np.bool_),
            np.array([row[3] is not None for row in rows], np.bool_),
            pa.array(paths, pa.string()),
            np.sort(np.array(pairs, np.int64)),
        )


@dataclass(frozen=True)
class _Replicas:
    """The raw replica columns as arrays (strings encoded once)."""

    cluster: Encoded
    topic: Encoded
    log_dir: Encoded
    partition: np.ndarray
    index: np.ndarray
    broker: np.ndarray
    size: np.ndarray
    has_partition: np.ndarray
    has_index: np.ndarray
    has_broker: np.ndarray
    has_size: np.ndarray

    @classmethod
    def of(cls, replicas: pa.Table) -> _Replicas:
        col = replicas.column
        return cls(
            Encoded.of(col("cluster_id")),
            Encoded.of(col("topic")),
            Encoded.of(col("log_dir")),
            filled(col("partition"), 0),
            filled(col("replica_index"), NULL_CODE),
            filled(col("broker_id"), 0),
            filled(col("size_bytes"), 0),
            valid(col("partition")),
            valid(col("replica_index")),
            valid(col("broker_id")),
            valid(col("size_bytes")),
        )

    def keyed(self) -> np.ndarray:
        """Rows with a partition key: a cluster id, a non-empty topic, a partition."""
        empty = flags(pc.equal(self.topic.values, ""), False)
        no_topic = self.topic.spread(empty, True)
        keyed: np.ndarray = (self.cluster.codes != NULL_CODE) & ~no_topic & self.has_partition
        return keyed

    def broker_keys(self, clusters: pa.Array) -> tuple[np.ndarray, np.ndarray]:
        """Each row's ``cluster code << 32 | broker`` against ``clusters``, and whether it has
        one (a cluster among them and a broker id)."""
        codes = self.cluster.index_in(clusters)
        has = (codes != NULL_CODE) & self.has_broker
        return (codes << _KEY_BITS) | (self.broker & _LOW), has

    def partition_ids(self, keyed: np.ndarray) -> np.ndarray:
        """A number per partition (``cluster_id, topic, partition``) for the keyed rows
        (:data:`NULL_CODE` for the others), in order of first row."""
        ids = np.full(self.partition.size, NULL_CODE, np.int64)
        ids[keyed] = group_ids(
            self.cluster.codes[keyed], self.topic.codes[keyed], self.partition[keyed] & _LOW
        )
        return ids


def _row_codes(rows: _Replicas, lookup: _Lookup) -> np.ndarray:
    """Each row's first problem, as the index (from 1) of its condition; 0 for none."""
    keys, has_key = rows.broker_keys(lookup.clusters)
    at, found = member(lookup.keys, keys)
    found &= has_key
    kept = found & lookup.kept[at] if lookup.keys.size else found
    has_dirs = found & lookup.has_dirs[at] if lookup.keys.size else found
    dir_valid = rows.log_dir.codes != NULL_CODE
    absolute = rows.log_dir.spread(
        flags(pc.match_substring_regex(rows.log_dir.values, ABSOLUTE_PATH), True), True
    )
    path_codes = rows.log_dir.index_in(lookup.paths)
    _, known = member(lookup.pairs, at * max(1, len(lookup.paths)) + path_codes)
    known &= path_codes != NULL_CODE
    empty_topic = rows.topic.spread(flags(pc.equal(rows.topic.values, ""), False), True)
    conditions = [
        rows.cluster.codes == NULL_CODE,
        empty_topic,
        ~rows.has_partition,
        rows.partition < 0,
        ~rows.has_index,
        (rows.index < 0) | (rows.index > MAX_REPLICA_INDEX),
        ~rows.has_broker,
        ~found,
        ~kept,
        dir_valid & ~absolute,
        dir_valid & has_dirs & ~known,
        rows.has_size & (rows.size < 0),
    ]
    codes: np.ndarray = np.select(conditions, list(range(1, len(conditions) + 1)), _NO_CODE)
    return codes


def _row_reason(code: int, row: dict[str, Any]) -> str:
    topic, partition = row["topic"], row["partition"]
    tp = "-".join(str(v) for v in (topic, partition) if v is not None)
    index, broker, log_dir = row["replica_index"], row["broker_id"], row["log_dir"]
    reasons = {
        1: "replica row has no cluster_id",
        2: "replica row has no topic",
        3: f'replica row of topic "{topic}" has no partition',
        4: f"{tp}: partition {partition} is negative",
        5: f"{tp}: a replica has no replica_index",
        6: f"{tp}: replica index {index} is out of range",
        7: f"{tp}: replica {index} has no broker_id",
        8: f"{tp}: replica on broker {broker}, which is not in the broker list",
        9: f"{tp}: replica on broker {broker}, which was rejected from the broker list",
        10: f'{tp}: log directory "{log_dir}" of the replica on broker {broker} is not an '
        "absolute path",
        11: f"{tp}: broker {broker} has no log directory {log_dir}",
        12: f"{tp}: the replica on broker {broker} has a negative size {row['size_bytes']}",
    }
    return reasons[code]


def _first_row_problems(pid: np.ndarray, codes: np.ndarray, index: np.ndarray) -> dict[int, int]:
    """For each partition with a row problem, the row whose problem names it: the first by
    replica index (a missing index first), then by position."""
    rows = np.flatnonzero(codes != _NO_CODE)
    order = np.lexsort((rows, index[rows], pid[rows]))
    chosen = rows[order]
    first = np.unique(pid[chosen], return_index=True)[1]
    return {int(pid[r]): int(r) for r in chosen[first]}


_SHIFTS_UP_TO: Final = 8
"""Partitions of up to this many replicas are checked for a broker twice by comparing each
row with its next few (rows grouped by partition); larger ones by hashing the pairs."""


def _suspects(
    pid: np.ndarray, index: np.ndarray, broker: np.ndarray, rows: np.ndarray
) -> np.ndarray:
    """Of ``rows``, those of partitions that may have a broker twice or indexes other than
    ``0..n-1``: cheap over millions of rows (a stable sort by partition, which is fast when the
    rows come partition by partition, and comparisons of neighbours)."""
    rows = rows[np.argsort(pid[rows], kind="stable")]
    p, i, b = pid[rows], index[rows], broker[rows]
    starts = np.flatnonzero(np.r_[True, p[1:] != p[:-1]]) if p.size else np.zeros(0, np.int64)
    counts = np.diff(np.r_[starts, p.size])
    odd = i != np.arange(p.size) - np.repeat(starts, counts)
    widest = int(counts.max(initial=0))
    if widest <= _SHIFTS_UP_TO:
        for k in range(1, widest):
            hit = (p[k:] == p[:-k]) & (b[k:] == b[:-k])
            odd[k:] |= hit
            odd[:-k] |= hit
    else:
        odd |= pd.DataFrame({"p": p, "b": b}).duplicated(keep=False).to_numpy()
    flagged = np.unique(p[odd])
    chosen: np.ndarray = rows[np.isin(p, flagged)]
    return chosen


def _slot_problems(
    pid: np.ndarray, index: np.ndarray, broker: np.ndarray, rows: np.ndarray
) -> tuple[dict[int, int], set[int]]:
    """Among ``rows`` (whole partitions without a row problem): the first broker, by replica
    index, that repeats in each partition that has one; and the partitions whose indexes are
    not ``0..n-1``, each once."""
    rows = _suspects(pid, index, broker, rows)
    order = rows[np.lexsort((broker[rows], index[rows], pid[rows]))]
    p, i, b = pid[order], index[order], broker[order]
    twice = pd.DataFrame({"p": p, "b": b}).duplicated(keep=False).to_numpy()
    repeated = {}
    if twice.any():
        dup_p, dup_b = p[twice], b[twice]
        firsts = np.unique(dup_p, return_index=True)[1]
        repeated = {int(dup_p[k]): int(dup_b[k]) for k in firsts}
    starts = np.flatnonzero(np.r_[True, p[1:] != p[:-1]]) if p.size else np.zeros(0, np.int64)
    position = np.arange(p.size) - np.repeat(starts, np.diff(np.r_[starts, p.size]))
    bad = {int(x) for x in np.unique(p[i != position])}
    return repeated, bad


def _partition_reasons(
    replicas: pa.Table, rows: _Replicas, codes: np.ndarray, partitions_checked: bool
) -> tuple[np.ndarray, np.ndarray, dict[int, str]]:
    """Which rows are keyed, each keyed row's partition number (:data:`NULL_CODE` for a
    keyless row), and the
    reason of each partition to reject."""
    keyed = rows.keyed()
    pid = rows.partition_ids(keyed)
    first = _first_row_problems(pid, np.where(keyed, codes, _NO_CODE), rows.index)
    reasons = {p: _row_reason(int(codes[r]), _row(replicas, r)) for p, r in first.items()}
    if partitions_checked:
        return keyed, pid, reasons
    clean = keyed & ~np.isin(pid, np.fromiter(first, np.int64, len(first)))
    assert not (clean & (codes != _NO_CODE)).any(), "BUG: a row with a problem, clean"
    repeated, bad = _slot_problems(pid, rows.index, rows.broker, np.flatnonzero(clean))
    if not repeated and not bad:
        return keyed, pid, reasons
    at = np.flatnonzero(clean & np.isin(pid, np.fromiter({*repeated, *bad}, np.int64)))
    sample = {int(pid[r]): int(r) for r in at}
    sizes = np.bincount(pid[clean])
    for p, b in repeated.items():
        tp = _tp(replicas, sample[p])
        reasons[p] = f"{tp}: broker {b} appears more than once in the replicas"
    for p in bad - set(repeated):
        n = int(sizes[p])
        reasons[p] = (
            f"{_tp(replicas, sample[p])}: {n} replicas whose replica indexes are not 0 to "
            f"{n - 1}, each once"
        )
    return keyed, pid, reasons


def _row(replicas: pa.Table, row: int) -> dict[str, Any]:
    return {name: replicas.column(name)[row].as_py() for name in _RECORD}


def _tp(replicas: pa.Table, row: int) -> str:
    values = _row(replicas, row)
    return f"{values['topic']}-{values['partition']}"


_RECORD: Final = (
    "cluster_id",
    "topic",
    "partition",
    "replica_index",
    "broker_id",
    "log_dir",
    "size_bytes",
)


def check_replicas(
    replicas: pa.Table, source: str, held: Directories, partitions_checked: bool
) -> tuple[pa.Table, list[RejectedRow]]:
    """The kept replicas (whole partitions) and the rejected rows: a keyless row for its own
    reason, every row of a rejected partition for the partition's."""
    rows = _Replicas.of(replicas)
    codes = _row_codes(rows, _Lookup.of(held))
    keyed, pid, reasons = _partition_reasons(replicas, rows, codes, partitions_checked)
    if not reasons and keyed.all():
        return replicas, []
    bad_ids = np.fromiter(reasons, np.int64, len(reasons))
    rejected_rows = ~keyed | np.isin(pid, bad_ids)
    at = np.flatnonzero(rejected_rows)
    records = replicas.select(list(_RECORD)).take(pa.array(at)).to_pylist()
    rejected: list[RejectedRow] = []
    for r, row in zip(at.tolist(), records, strict=True):
        reason = reasons[int(pid[r])] if keyed[r] else _row_reason(int(codes[r]), row)
        rejected.append((row["cluster_id"], source, record_json(row), reason))
    return replicas.filter(pa.array(~rejected_rows)), rejected


def assignment_dirs(replicas: pa.Table, held: Directories) -> None:
    """``held`` learns the directories the kept replicas name on kept brokers of which no
    directory is otherwise known (capacity unknown, live)."""
    without = held.without_dirs()
    if not without:
        return
    clusters = pa.array(sorted({c for c, _ in without}), pa.string())
    code = {c: i for i, c in enumerate(clusters.to_pylist())}
    wanted = np.sort(np.array([(code[c] << _KEY_BITS) | (b & _LOW) for c, b in without]))
    rows = _Replicas.of(replicas)
    keys, has = rows.broker_keys(clusters)
    _, found = member(wanted, keys)
    chosen = replicas.filter(pa.array(found & has & (rows.log_dir.codes != NULL_CODE)))
    named = chosen.select(["cluster_id", "broker_id", "log_dir"]).group_by(
        ["cluster_id", "broker_id", "log_dir"]
    )
    for row in named.aggregate([]).to_pylist():
        held.add((row["cluster_id"], row["broker_id"], row["log_dir"]), None, True)


def validate(raw: LocalRaw) -> Validated:
    """Validate ``raw``: see the module notes."""
    held = Directories()
    brokers, rejected = check_brokers(raw.brokers, raw.brokers_source, held)
    rejected = list(raw.rejected) + rejected
    if raw.reported_dirs is not None:
        rejected += check_reported(raw.reported_dirs, raw.reported_source, held)
    kept, rejected_replicas = check_replicas(
        raw.replicas, raw.replicas_source, held, raw.partitions_checked
    )
    assignment_dirs(kept, held)
    return Validated(brokers, held.rows(), kept, rejected + rejected_replicas)
