"""``rackwise pipeline generate``: a synthetic fleet, in both input forms.

Layout of ``out_dir``:

``brokers/``
    Parquet, one row per broker: ``cluster_id`` string, ``broker_id`` int, ``rack`` string,
    ``log_dirs`` array<struct<path string, total_bytes bigint, is_live boolean>>.
``replicas/``
    Parquet, one row per replica, the pipeline's ``replicas`` schema: ``cluster_id``, ``topic``,
    ``partition`` int, ``replica_index`` int (0 is the preferred leader), ``broker_id`` int,
    ``log_dir``, ``size_bytes`` bigint (null where the directory failed). Files of up to
    :data:`ROWS_PER_FILE` rows, row groups of about a million.
``json/<cluster_id>/``
    For clusters of at most ``json_max_replicas`` replicas, the first ``json_max_clusters`` of
    them: ``brokers.json`` (the broker list with ``log_dirs``), ``assignment.json``
    (reassignment JSON), ``log_dirs.json`` (``kafka-log-dirs --describe`` JSON, Kafka's shape).
    :func:`rackwise.pipeline.ingest.spark.read_cluster` reads them into the same tables
    :func:`~rackwise.pipeline.ingest.spark.read_fleet` reads from the Parquet form.
``generate.json``
    What was asked for and what was written.

Replicas are drawn chunk by chunk (:mod:`rackwise.pipeline.generate._synthetic`) with numpy and
streamed to Parquet with pyarrow, so memory stays bounded whatever the fleet's size; a
cluster's random streams derive from ``(seed, cluster index)`` alone, so the same arguments give
the same fleet.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Final

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from rackwise.common.errors import IllegalArgumentException
from rackwise.pipeline.generate._json_form import (
    concat_chunks,
    write_assignment,
    write_brokers,
    write_log_dirs,
)
from rackwise.pipeline.generate._synthetic import (
    Chunk,
    Layout,
    make_chunk,
    make_layout,
    parse_topology,
)

ROWS_PER_FILE: Final = 32 * 2**20
ROW_GROUP: Final = 2**20
CHUNK_PARTITIONS: Final = 2**20
JSON_MAX_REPLICAS: Final = 3_000_000
JSON_MAX_CLUSTERS: Final = 10
_PROGRESS_EVERY_S: Final = 2.0

REPLICAS_ARROW: Final = pa.schema(
    [
        ("cluster_id", pa.dictionary(pa.int32(), pa.string())),
        ("topic", pa.dictionary(pa.int32(), pa.string())),
        ("partition", pa.int32()),
        ("replica_index", pa.int32()),
        ("broker_id", pa.int32()),
        ("log_dir", pa.dictionary(pa.int32(), pa.string())),
        ("size_bytes", pa.int64()),
    ]
)
BROKERS_ARROW: Final = pa.schema(
    [
        ("cluster_id", pa.string()),
        ("broker_id", pa.int32()),
        ("rack", pa.string()),
        (
            "log_dirs",
            pa.list_(
                pa.struct(
                    [("path", pa.string()), ("total_bytes", pa.int64()), ("is_live", pa.bool_())]
                )
            ),
        ),
    ]
)

Progress = Callable[[str], None]


@dataclass(frozen=True)
class FleetSummary:
    """What :func:`generate_fleet` wrote."""

    clusters: int
    brokers: int
    partitions: int
    replicas: int
    json_clusters: tuple[str, ...]
    json_skipped: tuple[str, ...]
    seconds: float
    request: dict[str, object] = field(default_factory=dict)


class _ReplicaFiles:
    """``replicas/part-NNNNN.parquet``, a new file every :data:`ROWS_PER_FILE` rows."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.writer: pq.ParquetWriter | None = None
        self.files = 0
        self.rows_in_file = 0

    def write(self, table: pa.Table) -> None:
        if self.writer is None or self.rows_in_file >= ROWS_PER_FILE:
            self.close()
            path = self.directory / f"part-{self.files:05d}.parquet"
            self.writer = pq.ParquetWriter(path, REPLICAS_ARROW, compression="snappy")
            self.files += 1
            self.rows_in_file = 0
        self.writer.write_table(table, row_group_size=ROW_GROUP)
        self.rows_in_file += table.num_rows

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


def _dictionary(indices: np.ndarray, values: list[str] | tuple[str, ...]) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(
        pa.array(indices.astype(np.int32)), pa.array(values, pa.string())
    )


def chunk_table(layout: Layout, chunk: Chunk) -> pa.Table:
    """A chunk of replicas as an Arrow table of :data:`REPLICAS_ARROW`."""
    rows = len(chunk.broker_id)
    first, last = (int(chunk.topic[0]), int(chunk.topic[-1])) if rows else (0, -1)
    return pa.table(
        [
            _dictionary(np.zeros(rows, np.int32), [layout.cluster_id]),
            _dictionary(chunk.topic - first, layout.topic_names[first : last + 1]),
            pa.array(chunk.partition.astype(np.int32)),
            pa.array(chunk.replica_index.astype(np.int32)),
            pa.array(chunk.broker_id.astype(np.int32)),
            _dictionary(chunk.log_dir, layout.log_dirs),
            pa.array(chunk.size_bytes, pa.int64(), mask=~chunk.size_known),
        ],
        schema=REPLICAS_ARROW,
    )


def broker_rows(layout: Layout) -> list[dict[str, object]]:
    """The cluster's rows of the ``brokers`` dataset, by broker id."""
    rows = []
    last = len(layout.log_dirs) - 1
    for slot in np.argsort(layout.broker_ids, kind="stable"):
        broker = int(layout.broker_ids[slot])
        dirs = [
            {
                "path": path,
                "total_bytes": layout.total_bytes,
                "is_live": not (broker == layout.failed_broker and index == last),
            }
            for index, path in enumerate(layout.log_dirs)
        ]
        rows.append(
            {
                "cluster_id": layout.cluster_id,
                "broker_id": broker,
                "rack": layout.slot_racks[slot],
                "log_dirs": dirs,
            }
        )
    return rows


def _check_out_dir(out: Path) -> None:
    for name in ("brokers", "replicas", "json", "generate.json"):
        if (out / name).exists():
            raise IllegalArgumentException(
                f"{out / name} already exists: remove it or choose another output directory"
            )


@dataclass(frozen=True)
class _Request:
    clusters: int
    brokers: int
    partitions: int
    topology: str
    seed: int
    replication_factor: int
    log_dirs_per_broker: int
    json_max_replicas: int
    json_max_clusters: int


def _check_request(request: _Request) -> None:
    """Refuse impossible sizes before anything is written, naming the option and its value."""
    parse_topology(request.topology)
    minimums = (
        ("--clusters", request.clusters, 1),
        ("--brokers", request.brokers, 1),
        ("--partitions", request.partitions, 1),
        ("--replication-factor", request.replication_factor, 1),
        ("--log-dirs-per-broker", request.log_dirs_per_broker, 1),
        ("--json-max-replicas", request.json_max_replicas, 0),
        ("--json-max-clusters", request.json_max_clusters, 0),
    )
    for option, value, least in minimums:
        if value < least:
            raise IllegalArgumentException(f"{option} must be at least {least}, got {value}")
    if request.replication_factor > request.brokers:
        raise IllegalArgumentException(
            f"--replication-factor {request.replication_factor} needs at least as many "
            f"brokers, got --brokers {request.brokers}"
        )


def generate_fleet(
    out_dir: str | Path,
    clusters: int,
    brokers: int,
    partitions: int,
    topology: str,
    seed: int,
    *,
    replication_factor: int = 3,
    log_dirs_per_broker: int = 2,
    json_max_replicas: int = JSON_MAX_REPLICAS,
    json_max_clusters: int = JSON_MAX_CLUSTERS,
    progress: Progress | None = None,
) -> FleetSummary:
    """Write a synthetic fleet of ``clusters`` clusters of ``brokers`` brokers and
    ``partitions`` partitions each into ``out_dir`` (see the module notes), and say what was
    written. ``progress`` receives a line now and then on long runs."""
    request = _Request(
        clusters,
        brokers,
        partitions,
        topology,
        seed,
        replication_factor,
        log_dirs_per_broker,
        json_max_replicas,
        json_max_clusters,
    )
    _check_request(request)
    out = Path(out_dir)
    _check_out_dir(out)
    (out / "replicas").mkdir(parents=True, exist_ok=True)
    (out / "brokers").mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    ticker = _Ticker(progress, clusters * partitions * replication_factor, began)
    files = _ReplicaFiles(out / "replicas")
    try:
        all_brokers, written, skipped = _write_clusters(request, out, files, ticker)
    finally:
        files.close()
    pq.write_table(
        pa.Table.from_pylist(all_brokers, BROKERS_ARROW), out / "brokers" / "part-00000.parquet"
    )
    summary = FleetSummary(
        clusters=clusters,
        brokers=clusters * brokers,
        partitions=clusters * partitions,
        replicas=clusters * partitions * replication_factor,
        json_clusters=tuple(written),
        json_skipped=tuple(skipped),
        seconds=round(time.monotonic() - began, 3),
        request=asdict(request),
    )
    (out / "generate.json").write_text(json.dumps(asdict(summary), indent=2) + "\n")
    return summary


def _write_clusters(
    request: _Request, out: Path, files: _ReplicaFiles, ticker: _Ticker
) -> tuple[list[dict[str, object]], list[str], list[str]]:
    """Every cluster's replicas (and JSON form, within the limits); the brokers' rows and the
    clusters written as JSON and not."""
    levels = parse_topology(request.topology)
    width = max(3, len(str(request.clusters - 1)))
    all_brokers: list[dict[str, object]] = []
    written: list[str] = []
    skipped: list[str] = []
    for index in range(request.clusters):
        cluster_id = f"cluster-{index:0{width}d}"
        layout_seed, replica_seed = np.random.SeedSequence([request.seed, index]).spawn(2)
        layout = make_layout(
            cluster_id,
            layout_seed,
            levels,
            request.brokers,
            request.partitions,
            request.replication_factor,
            request.log_dirs_per_broker,
        )
        all_brokers.extend(broker_rows(layout))
        as_json = (
            request.partitions * request.replication_factor <= request.json_max_replicas
            and len(written) < request.json_max_clusters
        )
        rng = np.random.default_rng(replica_seed)
        chunks = _write_cluster(layout, rng, files, ticker, as_json)
        if as_json:
            _write_json(layout, chunks, out / "json" / cluster_id)
            written.append(cluster_id)
        else:
            skipped.append(cluster_id)
    return all_brokers, written, skipped


class _Ticker:
    """Progress lines at most every couple of seconds: replicas written, rate, time."""

    def __init__(self, progress: Progress | None, total: int, began: float) -> None:
        self.progress, self.total, self.began = progress, total, began
        self.done = 0
        self.last = began

    def add(self, rows: int) -> None:
        self.done += rows
        now = time.monotonic()
        if self.progress is None or (
            now - self.last < _PROGRESS_EVERY_S and self.done < self.total
        ):
            return
        self.last = now
        elapsed = now - self.began
        self.progress(
            f"generate: {self.done:,}/{self.total:,} replicas "
            f"({100 * self.done / self.total:.0f}%, {self.done / max(elapsed, 1e-9):,.0f}/s, "
            f"{elapsed:.1f} s)"
        )


def _write_cluster(
    layout: Layout, rng: np.random.Generator, files: _ReplicaFiles, ticker: _Ticker, keep: bool
) -> list[Chunk]:
    kept: list[Chunk] = []
    for start in range(0, layout.num_partitions, CHUNK_PARTITIONS):
        stop = min(start + CHUNK_PARTITIONS, layout.num_partitions)
        chunk = make_chunk(rng, layout, start, stop)
        files.write(chunk_table(layout, chunk))
        ticker.add(len(chunk.broker_id))
        if keep:
            kept.append(chunk)
    return kept


def _write_json(layout: Layout, chunks: list[Chunk], directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    chunk = concat_chunks(chunks)
    write_brokers(layout, directory / "brokers.json")
    write_assignment(layout, chunk, directory / "assignment.json")
    write_log_dirs(layout, chunk, directory / "log_dirs.json")
