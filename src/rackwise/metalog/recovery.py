"""Loading the image from a log: the newest snapshot, then every record after it, through the
image's one replay path (:class:`~rackwise.image.MetadataDelta`); and snapshotting on schedule.

The cyclic garbage collector is paused while a load builds its objects (a million partitions
are a few million objects, and each full collection would walk all of them again): the load
allocates but creates no cycles, and the collector's state is restored afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass

from rackwise.common.collector import paused_gc
from rackwise.image import MetadataDelta, MetadataImage
from rackwise.metalog.api import MetadataLog, MetadataLogError, SnapshotId


@dataclass(frozen=True, slots=True)
class LoadedImage:
    """The image a log holds and where it stands: ``end_offset`` is the offset the next record
    gets (so the image reflects every record below it), ``epoch`` the latest epoch."""

    image: MetadataImage
    end_offset: int
    epoch: int
    snapshot_id: SnapshotId | None
    num_snapshot_records: int
    num_log_records: int


def load_image(log: MetadataLog) -> LoadedImage:
    """Replay the newest snapshot and the log after it into an image."""
    with paused_gc():
        delta = MetadataDelta()
        reader = log.read_snapshot()
        snapshot_records = 0
        start = 0
        if reader is not None:
            for records in reader.batches():
                delta.replay_all(records)
                snapshot_records += len(records)
            start = reader.snapshot_id.end_offset
        if log.start_offset > start:
            raise MetadataLogError(
                f"the log starts at offset {log.start_offset} but the snapshot ends at {start}: "
                "the records between are lost"
            )
        log_records = 0
        for batch in log.read_from(start):
            delta.replay_all(batch.records)
            log_records += len(batch.records)
        image = delta.apply()
    return LoadedImage(
        image,
        log.end_offset,
        log.latest_epoch,
        reader.snapshot_id if reader else None,
        snapshot_records,
        log_records,
    )


def maybe_snapshot(log: MetadataLog, image: MetadataImage, end_offset: int) -> SnapshotId | None:
    """Write ``image`` (the image of every record below ``end_offset``) as a snapshot if
    ``metadata.log.max.record.bytes.between.snapshots`` bytes were appended since the last."""
    if not log.snapshot_due():
        return None
    with paused_gc():
        return log.write_snapshot(image.to_records(), end_offset)
