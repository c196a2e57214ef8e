"""A synthetic cluster written as the JSON files Kafka's tools print: the broker list,
reassignment JSON (the current assignment, as ``kafka-reassign-partitions --generate`` prints
it) and ``kafka-log-dirs --describe`` JSON in Kafka's shape.

The documents are built directly as text, a few million entries at a time being too many for
the value objects of :mod:`rackwise.formats`; the tests check that the formats' own readers
read them and their writers print them back byte for byte.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import numpy as np

from rackwise.formats._json import dump_string
from rackwise.formats.brokers import BrokerEntry, BrokerLogDir, format_broker_list
from rackwise.formats.log_dirs import LOG_DIRS_VERSION, STORAGE_ERROR
from rackwise.formats.reassignment import ANY_LOG_DIR, REASSIGNMENT_VERSION
from rackwise.pipeline.generate._synthetic import Chunk, Layout

NUM_MOVES: Final = 3
"""Replicas shown in the middle of a move between directories (a future copy) per cluster."""


def concat_chunks(chunks: list[Chunk]) -> Chunk:
    """One chunk of all of ``chunks``' rows."""
    return Chunk(
        *(np.concatenate([getattr(c, name) for c in chunks]) for name in Chunk.__dataclass_fields__)
    )


def write_brokers(layout: Layout, path: Path) -> None:
    entries = []
    for slot in np.argsort(layout.broker_ids, kind="stable"):
        broker = int(layout.broker_ids[slot])
        dirs = tuple(
            BrokerLogDir(
                d,
                layout.total_bytes,
                is_live=not (broker == layout.failed_broker and i == len(layout.log_dirs) - 1),
            )
            for i, d in enumerate(layout.log_dirs)
        )
        entries.append(BrokerEntry(broker, layout.slot_racks[slot], log_dirs=dirs))
    path.write_text(format_broker_list(entries))


def write_assignment(layout: Layout, chunk: Chunk, path: Path) -> None:
    """Reassignment JSON: entries sorted as Kafka sorts them (the topics are named so that
    generation order is that order), ``log_dirs`` "any" but for replicas in the failed
    directory, which name it (``kafka-log-dirs`` cannot say where they are)."""
    rf = layout.replication_factor
    topics = [dump_string(name) for name in layout.topic_names]
    any_dirs = ",".join([dump_string(ANY_LOG_DIR)] * rf)
    dir_names = [dump_string(d) for d in layout.log_dirs]
    brokers = chunk.broker_id.reshape(-1, rf).tolist()
    unknown = np.flatnonzero(~chunk.size_known.reshape(-1, rf).all(axis=1))
    named = {
        int(p): ",".join(
            dir_names[d] if not known else dump_string(ANY_LOG_DIR)
            for d, known in zip(
                chunk.log_dir[p * rf : (p + 1) * rf],
                chunk.size_known[p * rf : (p + 1) * rf],
                strict=True,
            )
        )
        for p in unknown
    }
    topic_of = chunk.topic[::rf].tolist()
    partition_of = chunk.partition[::rf].tolist()
    entries = [
        f'{{"topic":{topics[t]},"partition":{p},"replicas":[{",".join(map(str, row))}],'
        f'"log_dirs":[{named.get(i, any_dirs)}]}}'
        for i, (t, p, row) in enumerate(zip(topic_of, partition_of, brokers, strict=True))
    ]
    path.write_text(f'{{"version":{REASSIGNMENT_VERSION},"partitions":[' + ",".join(entries) + "]}")


def write_log_dirs(layout: Layout, chunk: Chunk, path: Path) -> None:
    """``kafka-log-dirs --describe`` JSON: per broker (by id) and directory, the replicas
    there; the failed directory with Kafka's storage error and no partitions; and a few
    replicas with a future copy in another directory, a move in progress."""
    order = np.lexsort((chunk.log_dir, chunk.broker_id))
    brokers, dirs = chunk.broker_id[order], chunk.log_dir[order]
    names = [
        f"{layout.topic_names[t]}-{p}"
        for t, p in zip(chunk.topic[order].tolist(), chunk.partition[order].tolist(), strict=True)
    ]
    sizes = chunk.size_bytes[order].tolist()
    entries = [
        f'{{"partition":{dump_string(n)},"size":{s},"offsetLag":0,"isFuture":false}}'
        for n, s in zip(names, sizes, strict=True)
    ]
    moves = _moves(layout, brokers, dirs, names, sizes)
    key = brokers * len(layout.log_dirs) + dirs
    parts = []
    for broker in sorted(int(b) for b in layout.broker_ids):
        dir_texts = []
        for index, log_dir in enumerate(layout.log_dirs):
            k = broker * len(layout.log_dirs) + index
            lo, hi = np.searchsorted(key, k), np.searchsorted(key, k, side="right")
            failed = broker == layout.failed_broker and index == len(layout.log_dirs) - 1
            listed = [] if failed else entries[lo:hi] + moves.get((broker, index), [])
            error = dump_string(STORAGE_ERROR) if failed else "null"
            dir_texts.append(
                f'{{"partitions":[{",".join(listed)}],"error":{error},"logDir":{dump_string(log_dir)}}}'
            )
        parts.append(f'{{"broker":{broker},"logDirs":[{",".join(dir_texts)}]}}')
    path.write_text(f'{{"brokers":[{",".join(parts)}],"version":{LOG_DIRS_VERSION}}}')


def _moves(
    layout: Layout, brokers: np.ndarray, dirs: np.ndarray, names: list[str], sizes: list[int]
) -> dict[tuple[int, int], list[str]]:
    """Future copies of the first few replicas on a live directory of a broker with another
    live directory to move to."""
    moves: dict[tuple[int, int], list[str]] = {}
    live_dirs = len(layout.log_dirs) - (1 if layout.failed_broker >= 0 else 0)
    count = 0
    for row in range(0, len(names), max(1, len(names) // (NUM_MOVES + 1))):
        broker, index = int(brokers[row]), int(dirs[row])
        usable = live_dirs if broker == layout.failed_broker else len(layout.log_dirs)
        if count == NUM_MOVES or usable < 2 or index >= usable:
            continue
        target = (index + 1) % usable
        half = sizes[row] // 2
        moves.setdefault((broker, target), []).append(
            f'{{"partition":{dump_string(names[row])},"size":{half},'
            f'"offsetLag":{sizes[row] - half},"isFuture":true}}'
        )
        count += 1
    return moves
