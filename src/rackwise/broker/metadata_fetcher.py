"""The loop that keeps a broker's :class:`~rackwise.broker.metadata_follower.MetadataFollower`
up to date: Fetch and FetchSnapshot of ``__cluster_metadata-0`` from the quorum's leader, as an
observer (the module docstring of :mod:`rackwise.broker.metadata_follower` says how).

Constraints
    One connection of its own, to the leader the answers name; one request in flight. A
    fetch waits on the leader at most its long poll plus the quorum's fetch timeout.

Algorithm
    ``run``: connect (to the leader's address in ``controller.quorum.voters`` when both are
    known, else wherever the controllers say the leader is), then fetch forever; a network or
    protocol failure drops the connection and waits a backoff (doubling to a second).
    ``fetch_once``: one Fetch; learn the leader and epoch it names; act on its error, its
    diverging epoch, its snapshot id or its batches.

Worked example
    Voters 3000-3002 at known addresses; 3000 leads epoch 4. Broker 1 fetches from 3000 in
    epoch 4. 3000 is killed: the fetch fails (connection lost), the broker forgets the leader
    and asks the controllers, reaching 3001, which answers NOT_LEADER_OR_FOLLOWER naming no
    leader (an election is on); after a backoff it asks again, 3001 answers FENCED_LEADER_EPOCH
    naming itself in epoch 5, and the broker fetches from 3001 in epoch 5.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import Any, Final

from rackwise.broker.metadata_follower import (
    DEFAULT_MAX_WAIT_MS,
    LEADER_ERRORS,
    LOG,
    MAX_RETRY_BACKOFF_S,
    NO_EPOCH,
    NO_LEADER,
    RETRY_BACKOFF_S,
    Address,
    AddressConnector,
    Connector,
    MetadataFetchError,
    MetadataFollower,
)
from rackwise.common.error_codes import NONE, NOT_LEADER_OR_FOLLOWER
from rackwise.image import MetadataImage
from rackwise.metalog.api import SnapshotId
from rackwise.net import KafkaConnection, NetworkException
from rackwise.node.quorum_wire import parse_response, request_for
from rackwise.protocol import ProtocolError
from rackwise.raft.config import DEFAULT_QUORUM_FETCH_TIMEOUT_MS
from rackwise.raft.messages import (
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    OffsetAndEpoch,
)
from rackwise.records import CorruptRecordException

FAILURES: Final = (NetworkException, ProtocolError, MetadataFetchError, CorruptRecordException)


class MetadataFetcher:
    """Keeps ``follower`` up to date from the quorum's leader (see the module docstring).
    ``connect`` finds the leader by asking the controllers; ``connect_to`` opens a known
    address of ``voters`` (id -> address); ``forget`` tells the controller channel an address
    does not lead; ``on_change`` is called after each change of the image."""

    def __init__(
        self,
        follower: MetadataFollower,
        connect: Connector,
        *,
        node_id: int,
        cluster_id: str | None,
        voters: Mapping[int, Address] | None = None,
        connect_to: AddressConnector | None = None,
        forget: Callable[[Address], None] | None = None,
        max_wait_ms: int = DEFAULT_MAX_WAIT_MS,
        fetch_timeout_ms: int = DEFAULT_QUORUM_FETCH_TIMEOUT_MS,
        on_change: Callable[[MetadataImage], None] | None = None,
    ) -> None:
        self.follower = follower
        self.connect = connect
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.voters = dict(voters or {})
        self.connect_to = connect_to
        self.forget = forget
        self.max_wait_ms = max_wait_ms
        self.fetch_timeout_ms = fetch_timeout_ms
        self.on_change = on_change
        self.leader_id = NO_LEADER
        self.epoch = NO_EPOCH
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
                        self._connection = await self._open()
                    await self.fetch_once(self._connection)
                    if failures:
                        LOG.info("metadata fetch resumed after %d failed attempts", failures)
                    backoff, failures = RETRY_BACKOFF_S, 0
                except FAILURES as e:
                    failures += 1
                    LOG.log(
                        logging.INFO if failures == 1 else logging.DEBUG,
                        "metadata fetch failed, retrying every %.1f s at most: %s",
                        MAX_RETRY_BACKOFF_S,
                        e,
                    )
                    if isinstance(e, NetworkException):
                        self.leader_id = NO_LEADER  # ask the controllers who leads now
                    await self._drop_connection()
                    await asyncio.sleep(backoff)
                    backoff = min(backoff * 2, MAX_RETRY_BACKOFF_S)
        finally:
            await self._drop_connection()

    async def _open(self) -> KafkaConnection:
        address = self.voters.get(self.leader_id)
        if address is not None and self.connect_to is not None:
            return await self.connect_to(address)
        return await self.connect()

    async def _drop_connection(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            await connection.close()

    def _learn(self, leader_id: int, epoch: int) -> bool:
        """The leader and epoch an answer names; whether they are news (a later epoch, or the
        leader of this one once it is known)."""
        later = epoch > self.epoch
        if not later and (epoch < self.epoch or leader_id in (NO_LEADER, self.leader_id)):
            return False
        self.leader_id, self.epoch = leader_id, epoch
        if leader_id != NO_LEADER:
            LOG.info("following the metadata log from leader %d (epoch %d)", leader_id, epoch)
        return True

    async def _request(self, connection: KafkaConnection, message: Any, timeout_s: float) -> Any:
        api_key, version, fields = request_for(message, self.cluster_id)
        body = await connection.request(api_key, fields, version=version, timeout_s=timeout_s)
        if int(body.error_code) != NONE:
            raise MetadataFetchError(f"the controller refused the fetch: error {body.error_code}")
        return parse_response(message, body)

    async def fetch_once(self, connection: KafkaConnection) -> int:
        """One Fetch (and the snapshot it names, if any); the number of records applied."""
        follower = self.follower
        request = FetchRequest(
            self.node_id,
            self.epoch,
            follower.fetch_offset,
            follower.last_fetched_epoch,
            self.max_wait_ms,
        )
        timeout_s = (self.max_wait_ms + self.fetch_timeout_ms) / 1000
        response = await self._request(connection, request, timeout_s)
        assert isinstance(response, FetchResponse)
        changed = self._learn(response.leader_id, response.leader_epoch)
        error = response.error_code
        if error in LEADER_ERRORS and changed:
            return 0  # fetch again at once, in the epoch it named
        if error == NOT_LEADER_OR_FOLLOWER:
            await self._leave(connection)
            if self.leader_id in self.voters and self.connect_to is not None:
                return 0  # to the leader it named
        if error != NONE:
            raise MetadataFetchError(
                f"Fetch of the metadata log: error {error} (leader {response.leader_id}, "
                f"epoch {response.leader_epoch})"
            )
        return await self._fetched(connection, response)

    async def _leave(self, connection: KafkaConnection) -> None:
        """``connection`` goes to a controller that does not lead."""
        if self.forget is not None:
            self.forget(connection.address)
        if connection is self._connection:
            await self._drop_connection()

    async def _fetched(self, connection: KafkaConnection, response: FetchResponse) -> int:
        follower = self.follower
        if response.diverging_epoch is not None:
            if not follower.truncate(response.diverging_epoch):
                self._notify()
            return 0
        if response.snapshot_id is not None:
            count = await self._fetch_snapshot(connection, response.snapshot_id)
            follower.append((), response.high_watermark)
            self._notify()
            return count
        count = follower.append(response.batches, response.high_watermark)
        if count:
            self._notify()
        return count

    async def _fetch_snapshot(self, connection: KafkaConnection, sid: OffsetAndEpoch) -> int:
        chunks = bytearray()
        size: int | None = None
        timeout_s = (self.max_wait_ms + self.fetch_timeout_ms) / 1000
        while size is None or len(chunks) < size:
            request = FetchSnapshotRequest(self.node_id, self.epoch, sid, len(chunks))
            response = await self._request(connection, request, timeout_s)
            assert isinstance(response, FetchSnapshotResponse)
            if response.error_code != NONE:
                raise MetadataFetchError(
                    f"FetchSnapshot of {sid.offset}-{sid.epoch}: error {response.error_code}"
                )
            if not response.chunk and len(chunks) < response.size:
                raise MetadataFetchError(
                    f"snapshot {sid.offset}-{sid.epoch}: no bytes at position {len(chunks)} "
                    f"of {response.size}"
                )
            size = response.size
            chunks += response.chunk
        snapshot_id = SnapshotId(sid.offset, sid.epoch)
        count = self.follower.load_snapshot(snapshot_id, bytes(chunks))
        LOG.info("loaded metadata snapshot %s: %d records", snapshot_id, count)
        return count
