"""The input of one run, whichever engine reads it: what it is, whether it is there, how big.

Four forms (see :mod:`rackwise.pipeline.ingest`): one cluster as JSON (``--brokers``,
``--assignment``, ``--log-dirs``), a fleet as Parquet (``--fleet DIR``: ``DIR/brokers``,
``DIR/replicas``), one cluster's metadata export (``--metadata PATH``: ``PATH/brokers``,
``PATH/partitions``), and running clusters (``--bootstrap-server``, read through the admin APIs
by the command line into the rows the JSON files give, :class:`LiveCluster`).

Goals
    Refuse what cannot be read before any engine starts (Spark takes seconds to), with one
    line naming the file; know the input's size in replica rows, to choose the engine.
Constraints
    Nothing here reads the replicas themselves: a Parquet dataset's row count comes from its
    files' footers (milliseconds for a fleet of 100,000,000 rows). JSON is parsed whole (it is
    one cluster, read on the driver by either engine, so parsing it first costs nothing more).
Algorithm
    :meth:`InputSource.check`: every file exists, every dataset is a directory (or file) with
    a data file in it. :meth:`InputSource.replica_rows`: the parsed JSON's replica rows; the
    fleet's ``replicas`` row count; for a metadata export the number of entries of the
    partitions' ``replicas`` lists, from the footers' value counts.
Worked example
    ``--fleet /tmp/fleet`` written by ``rackwise pipeline generate --clusters 8 --brokers 24
    --partitions 4000``: ``replica_rows()`` is 96,000, read from one footer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

from rackwise.common.errors import InvalidFormatException

if TYPE_CHECKING:
    from rackwise.pipeline.ingest.json_input import JsonColumns

StrPath = str | PathLike[str]
LogDirsArg = StrPath | Sequence[StrPath | tuple[int, StrPath]] | None
"""One ``kafka-log-dirs`` file, or several; a KIP-113 document (one broker, not named in it)
is given as ``(broker_id, path)``."""

InputKind = Literal["json", "fleet", "metadata", "live"]
LIVE_BROKERS_SOURCE: Final = "live:DescribeCluster,DescribeLogDirs"
LIVE_REPLICAS_SOURCE: Final = "live:Metadata,DescribeLogDirs"
"""The ``source`` of a live cluster's rejected broker and replica rows."""
FLEET_BROKERS_DDL: Final = (
    "cluster_id string, broker_id int, rack string, "
    "log_dirs array<struct<path:string,total_bytes:bigint,is_live:boolean>>"
)
"""The fleet's ``brokers`` dataset: one row per broker, its log directories inline."""
FLEET_REPLICAS_DDL: Final = (
    "cluster_id string, topic string, partition int, replica_index int, broker_id int, "
    "log_dir string, size_bytes bigint"
)
"""The fleet's ``replicas`` dataset: the pipeline's ``replicas`` table."""
METADATA_BROKERS_DDL: Final = "broker_id int, rack string, log_dirs array<string>"
"""The columns read from a metadata export's ``brokers`` dataset."""
METADATA_PARTITIONS_DDL: Final = (
    "topic string, partition int, replicas array<int>, directories array<string>"
)
"""The columns read from a metadata export's ``partitions`` dataset."""
FLEET_DATASETS: Final = ("brokers", "replicas")
METADATA_DATASETS: Final = ("brokers", "partitions")
_METADATA_REPLICAS_COLUMN: Final = "replicas.list.element"


def log_dirs_paths(paths: LogDirsArg) -> list[tuple[int | None, Path]]:
    """``paths`` as ``(broker id or None, path)`` pairs."""
    if paths is None:
        return []
    if isinstance(paths, str | PathLike):
        return [(None, Path(paths))]
    result: list[tuple[int | None, Path]] = []
    for item in paths:
        if isinstance(item, tuple):
            result.append((item[0], Path(item[1])))
        else:
            result.append((None, Path(item)))
    return result


def check_dataset(path: Path, kind: str = "fleet dataset") -> None:
    """Refuse a dataset that is not a directory (or file) with Parquet data in it, naming it:
    Spark's own message for an empty directory is a page of stack."""
    if not path.exists():
        raise FileNotFoundError(2, f"No such {kind}", str(path))
    if path.is_dir() and not any(_is_data_file(f) for f in path.rglob("*")):
        raise InvalidFormatException(f"{kind} {path}: no data files in it")


def data_files(path: Path) -> list[Path]:
    """The data files of a dataset (a file, or every file under a directory but Spark's and
    Hadoop's bookkeeping: names starting with ``_`` or ``.``), in name order."""
    if path.is_file():
        return [path]
    return sorted(f for f in path.rglob("*") if _is_data_file(f))


def _is_data_file(path: Path) -> bool:
    return path.is_file() and not path.name.startswith(("_", "."))


@dataclass(frozen=True)
class LiveCluster:
    """A running cluster to read: its bootstrap servers (``host:port[,host:port...]``) and the
    name its rows carry (None: the one ``--cluster-id`` gives a single cluster, else the
    cluster's own id)."""

    bootstrap: str
    name: str | None = None


_NAME: Final = re.compile(r"[^\s=,#]+")


def live_clusters(flags: list[str], listing: str | None) -> list[LiveCluster]:
    """The clusters of ``--bootstrap-server`` then of ``--bootstrap-servers-file`` (one
    ``[NAME=]HOST:PORT[,HOST:PORT]`` a line; blank lines and ``#`` comments skipped)."""
    entries = [("--bootstrap-server", value) for value in flags]
    if listing is not None:
        try:
            lines = Path(listing).read_text(encoding="utf-8").splitlines()
        except OSError as error:
            raise ValueError(f"--bootstrap-servers-file {listing}: {error.strerror}") from None
        numbered = [(n, line.split("#", 1)[0].strip()) for n, line in enumerate(lines, 1)]
        entries += [(f"{listing}:{n}", text) for n, text in numbered if text]
        if not any(text for _, text in numbered):
            raise ValueError(f"--bootstrap-servers-file {listing}: no cluster in it")
    clusters = []
    for where, value in entries:
        name, sep, servers = (part.strip() for part in value.rpartition("="))
        if sep and not _NAME.fullmatch(name):
            raise ValueError(f"{where}: {value!r}: a cluster name has no blanks, ',' or '#'")
        for server in servers.split(","):
            host, colon, port = server.strip().rpartition(":")
            if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise ValueError(f"{where}: {value!r}: expected [NAME=]HOST:PORT[,HOST:PORT]")
        clusters.append(LiveCluster(servers, name or None))
    return clusters


@dataclass(frozen=True)
class InputSource:
    """What one run reads. ``kind`` says which of the other fields are set: ``json``:
    ``brokers``, ``assignment`` and ``log_dirs`` (possibly empty); ``fleet``: ``fleet``;
    ``metadata``: ``metadata`` and ``log_dirs`` (possibly empty); ``live``: ``live`` and
    ``command_config`` (possibly None). ``cluster_id`` names a single cluster (JSON,
    metadata, one live cluster without a name)."""

    kind: InputKind
    cluster_id: str
    brokers: Path | None = None
    assignment: Path | None = None
    log_dirs: tuple[tuple[int | None, Path], ...] = ()
    fleet: Path | None = None
    metadata: Path | None = None
    live: tuple[LiveCluster, ...] = ()
    command_config: Path | None = None

    @classmethod
    def json_cluster(
        cls, brokers: StrPath, assignment: StrPath, log_dirs: LogDirsArg, cluster_id: str
    ) -> InputSource:
        return cls(
            "json", cluster_id, Path(brokers), Path(assignment), tuple(log_dirs_paths(log_dirs))
        )

    @classmethod
    def fleet_dir(cls, fleet: StrPath) -> InputSource:
        return cls("fleet", "", fleet=Path(fleet))

    @classmethod
    def metadata_export(
        cls, export: StrPath, cluster_id: str, log_dirs: LogDirsArg = None
    ) -> InputSource:
        return cls(
            "metadata", cluster_id, log_dirs=tuple(log_dirs_paths(log_dirs)), metadata=Path(export)
        )

    @classmethod
    def live_clusters(
        cls, clusters: Sequence[LiveCluster], cluster_id: str, command_config: StrPath | None
    ) -> InputSource:
        config = None if command_config is None else Path(command_config)
        return cls("live", cluster_id, live=tuple(clusters), command_config=config)

    @property
    def row_sources(self) -> tuple[str, str, str]:
        """The ``source`` rejected rows name: of brokers, of replicas, of reported directories
        (JSON and live input)."""
        if self.kind == "live":
            return LIVE_BROKERS_SOURCE, LIVE_REPLICAS_SOURCE, ""
        reported = ",".join(str(p) for _, p in self.log_dirs)
        return str(self.brokers), str(self.assignment), reported

    def check(self) -> None:
        """Refuse a file or dataset that is not there (no engine needed)."""
        if self.kind == "live":
            self._check_files([self.command_config] if self.command_config else [])
        elif self.fleet is not None:
            if not self.fleet.is_dir():
                raise FileNotFoundError(2, "No such fleet directory", str(self.fleet))
            for name in FLEET_DATASETS:
                check_dataset(self.fleet / name)
        elif self.metadata is not None:
            if not self.metadata.is_dir():
                raise FileNotFoundError(2, "No such metadata export directory", str(self.metadata))
            for name in METADATA_DATASETS:
                check_dataset(self.metadata / name, "metadata dataset")
            self._check_files(p for _, p in self.log_dirs)
        else:
            assert self.brokers is not None and self.assignment is not None
            self._check_files((self.brokers, self.assignment, *(p for _, p in self.log_dirs)))

    @staticmethod
    def _check_files(paths: Iterable[Path]) -> None:
        for path in paths:
            if not path.is_file():
                raise FileNotFoundError(2, "No such file", str(path))

    def parse_json(self) -> JsonColumns:
        """The JSON files parsed (a document that does not parse raises, naming its file)."""
        from rackwise.pipeline.ingest.json_input import read_json_cluster  # noqa: PLC0415

        assert self.kind == "json" and self.brokers is not None and self.assignment is not None
        return read_json_cluster(
            self.brokers, self.assignment, list(self.log_dirs), self.cluster_id
        )

    def replica_rows(self, columns: JsonColumns | None = None) -> int:
        """The input's size in replica rows (before validation): exact for JSON (``columns``,
        parsed already) and for a fleet; for a metadata export, the entries of the
        partitions' replica lists as the footers count them."""
        if self.kind in ("json", "live"):
            assert columns is not None
            return int(columns.replicas.num_rows)
        if self.fleet is not None:
            return _footer_rows(self.fleet / "replicas")
        assert self.metadata is not None
        return _footer_values(self.metadata / "partitions", _METADATA_REPLICAS_COLUMN)


def _footer_rows(dataset: Path) -> int:
    import pyarrow.parquet as pq  # noqa: PLC0415

    return sum(pq.ParquetFile(f).metadata.num_rows for f in data_files(dataset))


def _footer_values(dataset: Path, column_path: str) -> int:
    """The values the footers count for one (nested) column: for a list column, its entries
    (an empty or null list counts one)."""
    import pyarrow.parquet as pq  # noqa: PLC0415

    total = 0
    for file in data_files(dataset):
        meta = pq.ParquetFile(file).metadata
        names = [meta.schema.column(i).path for i in range(meta.num_columns)]
        if column_path not in names:
            total += meta.num_rows
            continue
        index = names.index(column_path)
        total += sum(meta.row_group(g).column(index).num_values for g in range(meta.num_row_groups))
    return total
