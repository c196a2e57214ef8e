"""The cluster checked and laid out as a partition matrix: one row per partition, one column per
replica position (0 = preferred leader), broker *indices* (0..B-1, brokers sorted by id) with
``-1`` padding rows shorter than the longest replication factor."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np

from rackwise.balance.model import (
    NO_LOG_DIR,
    UNKNOWN_BYTES,
    BoolArray,
    ClusterInput,
    IntArray,
)
from rackwise.common import InvalidRequestException, UnknownBrokerException

PAD: Final = -1
"""An empty replica position in a partition matrix."""


@dataclass(frozen=True, eq=False)
class Layout:
    """``cur[p, j]``: broker index of replica j of partition p (``PAD`` past ``rf[p]``);
    ``cur_dir`` its log directory row (``NO_LOG_DIR`` unknown; a broker with a single directory
    holds its replicas there); ``size`` its bytes (an unknown size is estimated: the largest
    known size of the same partition, else the cluster's mean); ``keepable`` False for a replica
    that cannot stay where it is: in a failed directory, on a broker without a live directory,
    or, when the cluster's directories were reported at all (some replica's directory is known),
    of unknown directory on a broker with a failed one: ``kafka-log-dirs`` lists every replica
    of a live directory and none of an offline one, so an unlisted replica is on the failed
    directory."""

    broker_ids: IntArray
    racks: tuple[str | None, ...]
    dir_broker: IntArray
    dir_paths: tuple[str, ...]
    dir_total: IntArray
    dir_live: BoolArray
    usable: BoolArray
    has_failed_dir: BoolArray
    topic_names: tuple[str, ...]
    topics: IntArray
    partitions: IntArray
    rf: IntArray
    cur: IntArray
    cur_dir: IntArray
    size: IntArray
    num_estimated_sizes: int
    keepable: BoolArray
    dir_draining: BoolArray

    @property
    def num_brokers(self) -> int:
        return int(self.broker_ids.size)

    @property
    def num_partitions(self) -> int:
        return int(self.rf.size)

    def name(self, p: int) -> str:
        return f"{self.topic_names[int(self.topics[p])]}-{int(self.partitions[p])}"


def _broker_index(sorted_ids: IntArray, ids: IntArray) -> tuple[IntArray, BoolArray]:
    pos = np.searchsorted(sorted_ids, ids)
    pos = np.minimum(pos, max(sorted_ids.size - 1, 0))
    found = sorted_ids[pos] == ids if sorted_ids.size else np.zeros(ids.size, np.bool_)
    return pos.astype(np.int64), found


def _brokers(cluster: ClusterInput) -> tuple[IntArray, tuple[str | None, ...]]:
    ids = cluster.brokers.ids
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    repeated = sorted_ids[1:][sorted_ids[1:] == sorted_ids[:-1]]
    if repeated.size:
        raise InvalidRequestException(f"Broker id {int(repeated[0])} is listed twice")
    racks = tuple(cluster.brokers.racks[int(i)] for i in order)
    return sorted_ids, racks


def _dirs(cluster: ClusterInput, broker_ids: IntArray) -> IntArray:
    dirs = cluster.log_dirs
    owner, found = _broker_index(broker_ids, dirs.broker_ids)
    if not found.all():
        bad = int(np.flatnonzero(~found)[0])
        raise UnknownBrokerException(
            f"Log directory {dirs.paths[bad]!r} belongs to broker {int(dirs.broker_ids[bad])}, "
            "which is not a broker of the cluster"
        )
    seen: set[tuple[int, str]] = set()
    for d, path in enumerate(dirs.paths):
        key = (int(owner[d]), path)
        if key in seen:
            raise InvalidRequestException(
                f"Broker {int(dirs.broker_ids[d])} lists log directory {path!r} twice"
            )
        seen.add(key)
    return owner


def layout(cluster: ClusterInput) -> Layout:
    """Check ``cluster`` and lay it out; raises a typed error naming the first bad row."""
    broker_ids, racks = _brokers(cluster)
    dir_broker = _dirs(cluster, broker_ids)
    reps = cluster.replicas
    owner, found = _broker_index(broker_ids, reps.broker_ids)
    if not found.all():
        r = int(np.flatnonzero(~found)[0])
        raise UnknownBrokerException(
            f"Replica of {reps.topic_names[int(reps.topics[r])]}-{int(reps.partitions[r])} is "
            f"on broker {int(reps.broker_ids[r])}, which is not a broker of the cluster"
        )
    _check_replica_dirs(cluster, owner, dir_broker)
    order = _partition_order(reps.topics, reps.partitions, reps.replica_index)
    topics, parts = reps.topics[order], reps.partitions[order]
    index = reps.replica_index[order]
    is_start = np.ones(order.size, np.bool_)
    is_start[1:] = (topics[1:] != topics[:-1]) | (parts[1:] != parts[:-1])
    starts = np.flatnonzero(is_start)
    rf = np.diff(np.append(starts, order.size)).astype(np.int64)
    row = np.cumsum(is_start) - 1
    col = np.arange(order.size) - starts[row]
    repeated = ~is_start & np.append(False, index[1:] == index[:-1])
    if repeated.any():
        r = int(np.flatnonzero(repeated)[0])
        raise InvalidRequestException(
            f"Partition {reps.topic_names[int(topics[r])]}-{int(parts[r])} lists replica index "
            f"{int(index[r])} twice"
        )
    width = max(int(rf.max()) if rf.size else 1, 1)
    shape = (starts.size, width)
    cur = np.full(shape, PAD, np.int64)
    cur[row, col] = owner[order]
    _check_distinct(cur, reps.topic_names, topics[starts], parts[starts], broker_ids)
    cur_dir = np.full(shape, NO_LOG_DIR, np.int64)
    cur_dir[row, col] = reps.log_dirs[order]
    raw_size = np.full(shape, UNKNOWN_BYTES, np.int64)
    raw_size[row, col] = reps.size_bytes[order]
    size, estimated = _estimate_sizes(raw_size, cur != PAD)
    cur_dir, usable, has_failed, keepable = _where(cluster, cur, cur_dir, dir_broker)
    return Layout(
        broker_ids=broker_ids,
        racks=racks,
        dir_broker=dir_broker,
        dir_paths=cluster.log_dirs.paths,
        dir_total=cluster.log_dirs.total_bytes,
        dir_live=cluster.log_dirs.is_live,
        usable=usable,
        has_failed_dir=has_failed,
        topic_names=reps.topic_names,
        topics=topics[starts],
        partitions=parts[starts],
        rf=rf,
        cur=cur,
        cur_dir=cur_dir,
        size=size,
        num_estimated_sizes=estimated,
        keepable=keepable,
        dir_draining=np.asarray(cluster.log_dirs.draining, np.bool_),
    )


def _where(
    cluster: ClusterInput, cur: IntArray, cur_dir: IntArray, dir_broker: IntArray
) -> tuple[IntArray, BoolArray, BoolArray, BoolArray]:
    """Each replica's directory (inferred where its broker has one), which brokers can hold
    replicas and which have a failed directory, and which replicas may stay."""
    num = int(cluster.brokers.ids.size)
    reported = bool((cur_dir != NO_LOG_DIR).any())
    cur_dir = _infer_single_dirs(cur, cur_dir, dir_broker, num)
    dir_live = cluster.log_dirs.is_live
    num_dirs = np.bincount(dir_broker, minlength=num)
    num_live = np.bincount(dir_broker, weights=dir_live, minlength=num)
    usable = (num_dirs == 0) | (num_live > 0)
    has_failed = num_live < num_dirs
    dir_ok = (cur_dir < 0) | (dir_live[np.maximum(cur_dir, 0)] if dir_live.size else True)
    if reported:  # directories were reported: an unlisted replica is on a failed one
        dir_ok &= ~((cur_dir < 0) & has_failed[np.maximum(cur, 0)])
    keepable = (cur != PAD) & usable[np.maximum(cur, 0)] & dir_ok
    return cur_dir, usable, has_failed, keepable


def _partition_order(topics: IntArray, parts: IntArray, index: IntArray) -> IntArray:
    """The rows sorted by (topic, partition, replica index): one sort of a combined key when it
    fits in 62 bits (and none when the rows come sorted), else a three-key sort."""
    if topics.size == 0:
        return np.zeros(0, np.int64)
    low = [int(a.min()) for a in (topics, parts, index)]
    span = [int(a.max()) - m + 1 for a, m in zip((topics, parts, index), low, strict=True)]
    if low[1] < 0 or low[2] < 0 or span[0] * span[1] * span[2] >= 2**62:
        return np.lexsort((index, parts, topics))
    key = ((topics - low[0]) * span[1] + (parts - low[1])) * span[2] + (index - low[2])
    if bool((key[1:] >= key[:-1]).all()):
        return np.arange(key.size)
    return np.argsort(key, kind="stable")


def _check_replica_dirs(cluster: ClusterInput, owner: IntArray, dir_broker: IntArray) -> None:
    reps = cluster.replicas
    given = reps.log_dirs != NO_LOG_DIR
    in_range = (reps.log_dirs >= 0) & (reps.log_dirs < dir_broker.size)
    bad = given & ~in_range
    if not bad.any() and dir_broker.size:
        bad = given & (dir_broker[np.where(in_range, reps.log_dirs, 0)] != owner)
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        raise InvalidRequestException(
            f"Replica of {reps.topic_names[int(reps.topics[r])]}-{int(reps.partitions[r])} on "
            f"broker {int(reps.broker_ids[r])} is in log directory row {int(reps.log_dirs[r])}, "
            "which that broker does not have"
        )


def _check_distinct(
    cur: IntArray, names: tuple[str, ...], topics: IntArray, parts: IntArray, ids: IntArray
) -> None:
    srt = np.sort(cur, axis=1)
    dup = (srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] != PAD)
    if dup.any():
        p, j = (int(v[0]) for v in np.nonzero(dup))
        raise InvalidRequestException(
            f"Partition {names[int(topics[p])]}-{int(parts[p])} lists broker "
            f"{int(ids[srt[p, j]])} twice"
        )


def _estimate_sizes(raw: IntArray, present: BoolArray) -> tuple[IntArray, int]:
    """Unknown sizes: the partition's largest known size, else the cluster's mean known size."""
    unknown = present & (raw < 0)
    if not unknown.any():
        return np.where(present, raw, 0), 0
    known = present & (raw >= 0)
    mean = int(raw[known].mean()) if known.any() else 0
    row_max = np.where(known, raw, -1).max(axis=1)
    fill = np.where(row_max >= 0, row_max, mean)
    size = np.where(unknown, fill[:, None], np.where(present, raw, 0))
    return size.astype(np.int64), int(unknown.sum())


def _infer_single_dirs(
    cur: IntArray, cur_dir: IntArray, dir_broker: IntArray, num_brokers: int
) -> IntArray:
    """A replica of unknown directory on a broker with exactly one directory is in that one."""
    counts = np.bincount(dir_broker, minlength=num_brokers)
    only = np.full(num_brokers, NO_LOG_DIR, np.int64)
    single = np.flatnonzero(counts == 1)
    only[dir_broker[np.isin(dir_broker, single)]] = np.flatnonzero(np.isin(dir_broker, single))
    guess = only[np.maximum(cur, 0)]
    return np.where((cur_dir == NO_LOG_DIR) & (cur != PAD), guess, cur_dir)
