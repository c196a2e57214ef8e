"""The durable metadata log and its snapshots, behind an interface, with an in-memory fake.

* :mod:`~rackwise.metalog.api`: :class:`MetadataLog`, snapshot ids, recovery events, errors.
* :mod:`~rackwise.metalog.filelog`: :class:`FileMetadataLog`, segments and snapshots on disk.
* :mod:`~rackwise.metalog.memory`: :class:`InMemoryMetadataLog`, for tests.
* :mod:`~rackwise.metalog.recovery`: :func:`load_image` and :func:`maybe_snapshot`.
* :mod:`~rackwise.metalog.export`: the records and image as rows and Parquet tables.

How a controller uses it: at start, ``loaded = load_image(log)`` gives the image and
``loaded.end_offset``; its epoch is ``log.latest_epoch + 1``. For each command, the records it
produces are appended (``log.append(records, epoch)``; ``append_batches`` commits several
commands with one fsync), and only once that returns are they replayed into the image
(``MetadataDelta(image).replay_all(records).apply()``) and the command answered; a broker
registration's epoch is the offset its ``RegisterBrokerRecord`` gets (``log.end_offset``
before the append). After each commit, ``maybe_snapshot(log, image, log.end_offset)``.

How a broker follows it: ``log.read_raw(offset, max_bytes)`` is what a fetch from ``offset``
returns (whole CRC-checked batches, decoded on the broker with
:func:`rackwise.records.iter_batches`); an offset below ``log.start_offset`` raises
:class:`OffsetOutOfRangeException`, and the broker must start from the snapshot instead
(``log.read_snapshot()``).
"""

from rackwise.common.errors import FencedLeaderEpochException, OffsetOutOfRangeException
from rackwise.metalog.api import (
    DEFAULT_MAX_RECORD_BYTES_BETWEEN_SNAPSHOTS,
    DEFAULT_SEGMENT_BYTES,
    NO_EPOCH,
    SNAPSHOTS_RETAINED,
    MetadataLog,
    MetadataLogError,
    RecoveryEvent,
    SnapshotId,
    SnapshotReader,
)
from rackwise.metalog.filelog import FileMetadataLog
from rackwise.metalog.memory import InMemoryMetadataLog
from rackwise.metalog.recovery import LoadedImage, load_image, maybe_snapshot

__all__ = [
    "DEFAULT_MAX_RECORD_BYTES_BETWEEN_SNAPSHOTS",
    "DEFAULT_SEGMENT_BYTES",
    "NO_EPOCH",
    "SNAPSHOTS_RETAINED",
    "FencedLeaderEpochException",
    "FileMetadataLog",
    "InMemoryMetadataLog",
    "LoadedImage",
    "MetadataLog",
    "MetadataLogError",
    "OffsetOutOfRangeException",
    "RecoveryEvent",
    "SnapshotId",
    "SnapshotReader",
    "load_image",
    "maybe_snapshot",
]
