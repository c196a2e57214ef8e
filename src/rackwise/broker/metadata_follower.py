"""A broker following the metadata log: fetch it from the active controller, apply it to the
image batch by batch, and load a snapshot when the records it needs are gone from the log
(Kafka's ``BrokerMetadataListener`` with KRaft's fetcher, for the one metadata partition).

Goals
    Keep an image equal to the controller's image at some offset, always advancing, with the
    offset of the last record applied known at every moment (heartbeats carry it, and the
    controller unfences a broker once that offset reaches its own registration).

Constraints
    * State changes only by replay (:class:`~rackwise.image.MetadataDelta`); a fetch response's
      records are applied as one delta, so a reader never sees half a response.
    * :class:`MetadataFollower` is pure (bytes in, image out); :class:`MetadataFetcher` is the
      asyncio loop around it, talking FetchMetadataLog (1001) and FetchMetadataSnapshot (1002)
      over one connection of its own (a long poll must not hold up heartbeats).
    * A controller that cannot be reached is retried with a backoff, never given up on.
    * A fetch the controller holds past its long poll by more than the quorum's fetch timeout
      (``controller.quorum.fetch.timeout.ms``, 2 s) times out: a paused leader keeps its
      connections open, and this deadline is how the broker notices it (as a KRaft observer
      does), forgets it and asks the controllers who leads now
      (:mod:`rackwise.broker.controller_channel`).

Algorithm
    Fetch from ``next_offset`` with ``MaxWaitMs`` (a long poll). Batches come whole from the
    one holding the fetch offset, so records below ``next_offset`` are skipped. When the answer
    names a snapshot (the fetch offset is below the log's start), read it in chunks, check it
    whole, replay it onto the empty image and go on from its end offset. An offset past the
    log's end (OFFSET_OUT_OF_RANGE without a snapshot) means the controller's log lost what
    this broker applied: start again from nothing, as a new broker would.

Worked example
    A new broker fetches from 0 and gets the batches at offsets 0-4 (metadata.version, its own
    RegisterBrokerRecord at 1, ...): ``next_offset`` becomes 5 and ``applied_offset`` 4, which
    its next heartbeat reports; the controller, seeing 4 >= 1, unfences it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Final

from rackwise.common.error_codes import NONE, OFFSET_OUT_OF_RANGE
from rackwise.common.errors import RackwiseError
from rackwise.image import MetadataDelta, MetadataImage
from rackwise.metalog.api import SnapshotId
from rackwise.metalog.snapshots import FileSnapshotReader
from rackwise.net import KafkaConnection, NetworkException
from rackwise.protocol import ApiKey, ProtocolError
from rackwise.raft.config import DEFAULT_QUORUM_FETCH_TIMEOUT_MS
from rackwise.records import CorruptRecordException, iter_batches

LOG: Final = logging.getLogger("rackwise.broker.metadata")

NO_OFFSET: Final = -1
"""``applied_offset`` before any record is applied."""
NO_EPOCH: Final = -1
DEFAULT_MAX_WAIT_MS: Final = 500
"""How long the controller may hold a fetch while there is nothing new (Kafka's
``replica.fetch.wait.max.ms``)."""
DEFAULT_MAX_BYTES: Final = 8 * 1024 * 1024
SNAPSHOT_CHUNK_BYTES: Final = 8 * 1024 * 1024
RETRY_BACKOFF_S: Final = 0.1
MAX_RETRY_BACKOFF_S: Final = 1.0


class MetadataFetchError(RackwiseError):
    """A fetch answered with an error the follower cannot act on (the error code and the
    controller's message)."""

    retriable = True


class MetadataFollower:
    """The image and where in the log it stands (pure). ``next_offset`` is the offset of the
    next record needed; ``applied_offset`` the last one applied (-1: none)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget everything: the next fetch starts from offset 0."""
        self.image = MetadataImage()
        self.next_offset = 0
        self.last_fetched_epoch = NO_EPOCH
        self.high_watermark = NO_OFFSET
        self.num_records_applied = 0

    @property
    def applied_offset(self) -> int:
        return self.next_offset - 1

    @property
    def is_caught_up(self) -> bool:
        """Whether every record the controller had committed at the last answer is applied."""
        return self.high_watermark >= 0 and self.next_offset >= self.high_watermark

    def apply_batches(self, data: bytes, high_watermark: int = NO_OFFSET) -> int:
        """Apply the records of ``data`` (whole batches) at or after ``next_offset``, as one
        delta; returns how many were applied. A gap (a batch starting after ``next_offset``)
        or a record the image refuses raises, leaving the image as it was."""
        delta = MetadataDelta(self.image)
        next_offset = self.next_offset
        epoch = self.last_fetched_epoch
        applied = 0
        for batch in iter_batches(data):
            base = batch.base_offset
            if base > next_offset:
                raise MetadataFetchError(
                    f"BUG: the metadata log answered a batch at offset {base} when offset "
                    f"{next_offset} was asked for"
                )
            skip = next_offset - base
            records = batch.records[skip:] if skip > 0 else batch.records
            if records:
                delta.replay_all(records)
                applied += len(records)
                next_offset = base + len(batch.records)
                epoch = batch.epoch
        if applied:
            self.image = delta.apply()
            self.next_offset = next_offset
            self.last_fetched_epoch = epoch
            self.num_records_applied += applied
        if high_watermark >= 0:
            self.high_watermark = high_watermark
        return applied

    def load_snapshot(self, snapshot_id: SnapshotId, data: bytes) -> int:
        """Replace the image with the snapshot in ``data`` (a whole snapshot file, checked);
        fetching goes on from its end offset. Returns the number of records loaded."""
        reader = FileSnapshotReader(Path(snapshot_id.file_name()), data)
        if reader.snapshot_id != snapshot_id:
            raise MetadataFetchError(
                f"asked for snapshot {snapshot_id}, got snapshot {reader.snapshot_id}"
            )
        delta = MetadataDelta()
        for records in reader.batches():
            delta.replay_all(records)
        self.image = delta.apply()
        self.next_offset = snapshot_id.end_offset
        self.last_fetched_epoch = snapshot_id.epoch
        self.num_records_applied += reader.record_count
        return reader.record_count


Connector = Callable[[], Awaitable[KafkaConnection]]
"""Opens a connection to the active controller (raises NetworkException when it cannot)."""


class MetadataFetcher:
    """The asyncio loop that keeps a :class:`MetadataFollower` up to date (see the module
    docstring). ``on_change`` is called after each change of the image."""

    def __init__(
        self,
        follower: MetadataFollower,
        connect: Connector,
        *,
        node_id: int,
        cluster_id: str | None,
        broker_epoch: Callable[[], int] = lambda: -1,
        max_wait_ms: int = DEFAULT_MAX_WAIT_MS,
        max_bytes: int = DEFAULT_MAX_BYTES,
        fetch_timeout_ms: int = DEFAULT_QUORUM_FETCH_TIMEOUT_MS,
        on_change: Callable[[MetadataImage], None] | None = None,
    ) -> None:
        self.follower = follower
        self.connect = connect
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.broker_epoch = broker_epoch
        self.max_wait_ms = max_wait_ms
        self.max_bytes = max_bytes
        self.fetch_timeout_ms = fetch_timeout_ms
        self.on_change = on_change
        self._changed = asyncio.Event()
        self._connection: KafkaConnection | None = None

    # ---- waiting for the image -----------------------------------------------------------

    async def wait_until(
        self, predicate: Callable[[MetadataFollower], bool], timeout_s: float
    ) -> bool:
        """Wait until ``predicate(follower)`` holds (checked after each change), at most
        ``timeout_s``; whether it holds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while not predicate(self.follower):
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            event = self._changed
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), remaining)
        return True

    def _notify(self) -> None:
        event, self._changed = self._changed, asyncio.Event()
        event.set()
        if self.on_change is not None:
            self.on_change(self.follower.image)

    # ---- the loop ------------------------------------------------------------------------

    async def run(self) -> None:
        """Fetch forever (until cancelled), reconnecting with a backoff."""
        backoff = RETRY_BACKOFF_S
        failures = 0
        try:
            while True:
                try:
                    if self._connection is None or self._connection.is_closed:
                        self._connection = await self.connect()
                    await self.fetch_once(self._connection)
                    if failures:
                        LOG.info("metadata fetch resumed after %d failed attempts", failures)
                    backoff, failures = RETRY_BACKOFF_S, 0
                except (
                    NetworkException,
                    ProtocolError,
                    MetadataFetchError,
                    CorruptRecordException,
                ) as e:
                    failures += 1
                    LOG.log(
                        logging.INFO if failures == 1 else logging.DEBUG,
                        "metadata fetch failed, retrying every %.1f s at most: %s",
                        MAX_RETRY_BACKOFF_S,
                        e,
                    )
                    await self._drop_connection()
                    await asyncio.sleep(backoff)
                    backoff = min(backoff * 2, MAX_RETRY_BACKOFF_S)
        finally:
            await self._drop_connection()

    async def _drop_connection(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            await connection.close()

    async def fetch_once(self, connection: KafkaConnection) -> int:
        """One FetchMetadataLog round (and the snapshot it names, if any); the number of
        records applied."""
        follower = self.follower
        response = await connection.request(
            ApiKey.FETCH_METADATA_LOG,
            version=0,
            timeout_s=(self.max_wait_ms + self.fetch_timeout_ms) / 1000,
            cluster_id=self.cluster_id,
            replica_id=self.node_id,
            broker_epoch=self.broker_epoch(),
            fetch_offset=follower.next_offset,
            last_fetched_epoch=follower.last_fetched_epoch,
            max_wait_ms=self.max_wait_ms,
            max_bytes=self.max_bytes,
        )
        error = int(response.error_code)
        if response.snapshot_end_offset >= 0:
            snapshot_id = SnapshotId(
                int(response.snapshot_end_offset), int(response.snapshot_epoch)
            )
            count = await self._fetch_snapshot(connection, snapshot_id)
            follower.high_watermark = int(response.high_watermark)
            self._notify()
            return count
        if error == OFFSET_OUT_OF_RANGE:
            LOG.warning(
                "the metadata log ends before offset %d (it ends at %d): starting again from 0",
                follower.next_offset,
                response.high_watermark,
            )
            follower.reset()
            self._notify()
            return 0
        if error != NONE:
            raise MetadataFetchError(f"FetchMetadataLog error {error}: {response.error_message}")
        count = follower.apply_batches(bytes(response.records), int(response.high_watermark))
        if count:
            self._notify()
        return count

    async def _fetch_snapshot(self, connection: KafkaConnection, snapshot_id: SnapshotId) -> int:
        chunks: list[bytes] = []
        position = 0
        size = None
        while size is None or position < size:
            response = await connection.request(
                ApiKey.FETCH_METADATA_SNAPSHOT,
                version=0,
                cluster_id=self.cluster_id,
                replica_id=self.node_id,
                snapshot_end_offset=snapshot_id.end_offset,
                snapshot_epoch=snapshot_id.epoch,
                position=position,
                max_bytes=SNAPSHOT_CHUNK_BYTES,
            )
            error = int(response.error_code)
            if error != NONE:
                raise MetadataFetchError(
                    f"FetchMetadataSnapshot {snapshot_id} error {error}: {response.error_message}"
                )
            data = bytes(response.bytes)
            if int(response.position) != position or (not data and position < response.size):
                raise MetadataFetchError(
                    f"snapshot {snapshot_id}: asked for position {position}, got "
                    f"{response.position} with {len(data)} bytes"
                )
            size = int(response.size)
            chunks.append(data)
            position += len(data)
        count = self.follower.load_snapshot(snapshot_id, b"".join(chunks))
        LOG.info("loaded metadata snapshot %s: %d records", snapshot_id, count)
        return count
