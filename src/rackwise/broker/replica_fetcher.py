"""Followers fetch from leaders (Kafka's ``ReplicaFetcherManager`` and ``ReplicaFetcherThread``).

Goals
    Every partition this broker follows is fetched from its leader, from the local log end,
    with the follower's last fetched epoch, so that the leader can say where the two logs
    diverge; the batches are appended as they are, and the leader's high watermark is taken
    (bounded by the local log end). A diverging epoch truncates the local log to where the
    leader's log for that epoch ends; OFFSET_OUT_OF_RANGE truncates to the leader's log end (a
    leader whose log is shorter) or restarts the local log at the leader's log start (a
    leader that deleted what this follower would fetch next).

Constraints
    * Fetchers per source broker as Kafka's: ``num.replica.fetchers`` per leader, a partition
      going to fetcher ``hash(topic, partition) % num.replica.fetchers``; each fetcher has one
      connection and one request in flight (a Fetch of up to ``replica.fetch.max.bytes`` per
      partition, ``replica.fetch.response.max.bytes`` in all, waiting up to
      ``replica.fetch.wait.max.ms`` on the leader).
    * A failed fetch (no connection, an error for a partition) backs off
      ``replica.fetch.backoff.ms`` for that leader or partition; nothing stops for good: the
      metadata image moves partitions between fetchers.
    * Everything runs on the broker's request loop: appends and truncations happen between
      requests, never during one.
    * A partition on this broker's ``follower.replication.throttled.replicas`` list whose
      log is behind the leader's high watermark is left out of the fetches while
      ``follower.replication.throttled.rate`` is exceeded (Kafka's
      ``shouldFollowerThrottle``); the fetch that goes without it waits on the leader no
      longer than the quota needs, and with nothing else to fetch the fetcher sleeps that
      long, at most ``replica.fetch.backoff.ms`` (:mod:`rackwise.broker.replication_quotas`).

Worked example
    Broker 3 follows t-0 (leader 1, epoch 2) with log end 5 at epoch 1. It fetches from 5 with
    last fetched epoch 1; broker 1's log for epoch 1 ended at 4 (its epoch 2 began there), so
    the answer carries the diverging epoch (1, 4); broker 3 truncates to 4 and fetches from 4
    with last fetched epoch 1: now the batches of epoch 2 come back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import zlib
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Any, Final

from rackwise.broker.replication_quotas import follower_wait_s
from rackwise.common.error_codes import NONE, OFFSET_OUT_OF_RANGE
from rackwise.image import MetadataImage
from rackwise.net import KafkaConnection, NetworkException
from rackwise.node.data_config import DataPathConfig
from rackwise.protocol import ApiKey, ProtocolError
from rackwise.replica.manager import ReplicaManager
from rackwise.replica.quota import ReplicationQuota
from rackwise.replica.serving import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP

LOG: Final = logging.getLogger("rackwise.broker.fetcher")

NO_EPOCH: Final = -1
CONNECT_TIMEOUT_S: Final = 5.0

TopicPartition = tuple[str, int]
Connector = Callable[[int], Awaitable[KafkaConnection]]
"""Opens a connection to the broker with that id (its inter-broker listener)."""


def fetcher_index(key: TopicPartition, num_fetchers: int) -> int:
    """Which of a leader's fetchers serves ``key`` (Kafka: the partition's hash modulo
    ``num.replica.fetchers``); stable across processes."""
    return zlib.crc32(f"{key[0]}-{key[1]}".encode()) % num_fetchers


@dataclass(frozen=True, slots=True)
class FetcherId:
    leader: int
    index: int


class ReplicaFetcher:
    """One fetcher: a connection to one leader, a set of partitions (module docstring)."""

    def __init__(self, manager: ReplicaFetcherManager, fetcher_id: FetcherId) -> None:
        self.manager = manager
        self.id = fetcher_id
        self.partitions: set[TopicPartition] = set()
        self.changed = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self._connection: KafkaConnection | None = None
        self._backoff_until: dict[TopicPartition, float] = {}
        self._lag: dict[TopicPartition, int] = {}
        """Each partition's lag behind the leader's high watermark after its last fetch
        (Kafka's fetch state ``lag``: in sync at 0, unknown before the first answer)."""

    def start(self) -> None:
        self.task = asyncio.create_task(
            self.run(), name=f"replica-fetcher-{self.id.leader}-{self.id.index}"
        )

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.task
        await self._close()

    async def _close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            with contextlib.suppress(Exception):
                await connection.close()

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        backoff_s = self.manager.config.replica_fetch_backoff_ms / 1000
        while True:
            now = loop.time()
            ready = [p for p in self.partitions if self._backoff_until.get(p, 0.0) <= now]
            if not ready:
                self.changed.clear()
                wait = min((t - now for t in self._backoff_until.values() if t > now), default=1.0)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.changed.wait(), max(wait, 0.01))
                continue
            try:
                await self._fetch_once(ready)
            except (NetworkException, ProtocolError, OSError) as e:
                LOG.info(
                    "fetch from broker %d failed, retrying in %.1f s: %s",
                    self.id.leader,
                    backoff_s,
                    e,
                )
                await self._close()
                await asyncio.sleep(backoff_s)

    async def _connected(self) -> KafkaConnection:
        if self._connection is None or self._connection.is_closed:
            connection = await self.manager.connect(self.id.leader)
            try:
                await connection.negotiate_versions(timeout_s=CONNECT_TIMEOUT_S)
            except BaseException:
                await connection.close()
                raise
            self._connection = connection
        return self._connection

    async def _fetch_once(self, ready: list[TopicPartition]) -> None:
        replicas = self.manager.replicas
        config = self.manager.config
        connection = await self._connected()
        version = connection.version_for(ApiKey.FETCH)
        topics: dict[str, list[dict[str, Any]]] = {}
        asked: list[TopicPartition] = []
        held = False
        for key in ready:
            partition = replicas.partitions.get(key)
            if partition is None or partition.is_leader:
                continue
            if self._holds_back(key):
                held = True
                continue
            log = partition.log
            latest = log.latest_epoch
            topics.setdefault(key[0], []).append(
                {
                    "partition": key[1],
                    "current_leader_epoch": partition.leader_epoch,
                    "fetch_offset": log.log_end_offset,
                    "last_fetched_epoch": NO_EPOCH if latest is None else latest,
                    "log_start_offset": log.log_start_offset,
                    "partition_max_bytes": config.replica_fetch_max_bytes,
                }
            )
            asked.append(key)
        quota = self.manager.quota
        max_wait_ms = config.replica_fetch_wait_max_ms
        if held and quota is not None:
            # the held-back partitions are asked for again as soon as the quota allows
            max_wait_ms = min(max_wait_ms, int(follower_wait_s(quota, max_wait_ms / 1000) * 1000))
        if not asked:
            self.changed.clear()
            backoff_s = config.replica_fetch_backoff_ms / 1000
            wait_s = follower_wait_s(quota, backoff_s) if held and quota is not None else 0.05
            await asyncio.sleep(wait_s)
            return
        values = {
            "replica_id": self.manager.broker_id,
            "replica_state": {
                "replica_id": self.manager.broker_id,
                "replica_epoch": self.manager.broker_epoch(),
            },
            "max_wait": max_wait_ms,
            "min_bytes": config.replica_fetch_min_bytes,
            "max_bytes": config.replica_fetch_response_max_bytes,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {"topic": name, "topic_id": replicas.topic_id(name), "partitions": parts}
                for name, parts in topics.items()
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        }
        timeout_s = max_wait_ms / 1000 + 30.0
        answer = await connection.fetch(values, timeout_s=timeout_s)
        self._process(answer, version)

    def _holds_back(self, key: TopicPartition) -> bool:
        """Kafka's ``shouldFollowerThrottle``: this replica is behind the leader's high
        watermark (or has not heard it yet), the partition is throttled here and the
        follower's quota is exceeded."""
        quota = self.manager.quota
        if quota is None or self._lag.get(key, 1) <= 0 or not quota.is_throttled(*key):
            return False
        return quota.is_exceeded()

    def _process(self, response: Any, version: int) -> None:
        backoff_s = self.manager.config.replica_fetch_backoff_ms / 1000
        now = asyncio.get_running_loop().time()
        replicas = self.manager.replicas
        by_id = version >= 13
        for topic in response.responses:
            name = (replicas.topic_name(topic.topic_id) or "") if by_id else str(topic.topic)
            for data in topic.partitions:
                key = (name, int(data.partition_index))
                if key not in self.partitions:
                    continue
                code = int(data.error_code)
                try:
                    if code == NONE:
                        self._apply(key, data)
                    elif code == OFFSET_OUT_OF_RANGE:
                        self.manager.schedule_out_of_range(key, self.id.leader)
                        self._backoff_until[key] = now + backoff_s
                    else:
                        self._backoff_until[key] = now + backoff_s
                except Exception as e:  # a bad batch from the leader must not stop the others
                    LOG.warning("%s-%d: follower append failed: %s", key[0], key[1], e)
                    self._backoff_until[key] = now + backoff_s

    def _apply(self, key: TopicPartition, data: Any) -> None:
        replicas = self.manager.replicas
        diverging = getattr(data, "diverging_epoch", None)
        if diverging is not None and int(diverging.end_offset) >= 0:
            partition = replicas.partitions.get(key)
            if partition is None:
                return
            # Kafka's getOffsetTruncationState: where this log's own copy of the leader's
            # epoch ends, bounded by where the leader's ends; the next fetch checks again.
            leader_epoch, leader_end = int(diverging.epoch), int(diverging.end_offset)
            log_end = partition.log.log_end_offset
            epoch, end = partition.log.epochs.end_offset_for(leader_epoch, log_end)
            local_end = end if leader_epoch >= 0 and epoch >= 0 and end >= 0 else log_end
            replicas.truncate(key[0], key[1], min(leader_end, local_end))
            return
        records = data.records or b""  # a view of the answer's frame: written as it is
        moved = replicas.append_as_follower(
            key[0], key[1], records, int(data.high_watermark), int(data.log_start_offset)
        )
        partition = replicas.partitions.get(key)
        if partition is not None:
            self._lag[key] = max(0, int(data.high_watermark) - partition.log.log_end_offset)
        quota = self.manager.quota
        if quota is not None and records and quota.is_throttled(*key):
            quota.record(len(records))
        if records or moved:
            self.manager.on_change(key)


class ReplicaFetcherManager:
    """The fetchers, following :attr:`ReplicaManager.followed` (module docstring)."""

    def __init__(
        self,
        broker_id: int,
        replicas: ReplicaManager,
        config: DataPathConfig,
        connect: Connector,
        broker_epoch: Callable[[], int],
        on_change: Callable[[Hashable], None],
        *,
        quota: ReplicationQuota | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.quota = quota
        """``follower.replication.throttled.rate`` over the throttled partitions."""
        self.replicas = replicas
        self.config = config
        self.connect = connect
        self.broker_epoch = broker_epoch
        self.on_change = on_change
        self.fetchers: dict[FetcherId, ReplicaFetcher] = {}
        self._repairs: set[asyncio.Task[None]] = set()

    def update(self) -> None:
        """Give every followed partition to its leader's fetcher; stop idle fetchers."""
        wanted: dict[FetcherId, set[TopicPartition]] = {}
        for key, leader in self.replicas.followed.items():
            fid = FetcherId(leader, fetcher_index(key, self.config.num_replica_fetchers))
            wanted.setdefault(fid, set()).add(key)
        for fid, keys in wanted.items():
            fetcher = self.fetchers.get(fid)
            if fetcher is None:
                fetcher = ReplicaFetcher(self, fid)
                self.fetchers[fid] = fetcher
                fetcher.start()
            if fetcher.partitions != keys:
                fetcher.partitions = keys
                fetcher._backoff_until = {
                    k: t for k, t in fetcher._backoff_until.items() if k in keys
                }
                fetcher._lag = {k: lag for k, lag in fetcher._lag.items() if k in keys}
            fetcher.changed.set()
        for fid in [f for f in self.fetchers if f not in wanted]:
            fetcher = self.fetchers.pop(fid)
            task = asyncio.create_task(fetcher.stop())
            self._repairs.add(task)
            task.add_done_callback(self._repairs.discard)

    def schedule_out_of_range(self, key: TopicPartition, leader: int) -> None:
        task = asyncio.create_task(self._handle_out_of_range(key, leader))
        self._repairs.add(task)
        task.add_done_callback(self._repairs.discard)

    async def _handle_out_of_range(self, key: TopicPartition, leader: int) -> None:
        """Kafka's ``handleOutOfRangeError``: truncate to a shorter leader log, or restart at
        the leader's log start."""
        try:
            connection = await self.connect(leader)
        except (NetworkException, OSError):
            return
        try:
            await connection.negotiate_versions(timeout_s=CONNECT_TIMEOUT_S)
            end = await self._leader_offset(connection, key, LATEST_TIMESTAMP)
            start = await self._leader_offset(connection, key, EARLIEST_TIMESTAMP)
        except (NetworkException, ProtocolError):
            return
        finally:
            with contextlib.suppress(Exception):
                await connection.close()
        if end is None or start is None:
            return
        partition = self.replicas.partitions.get(key)
        if partition is None or partition.is_leader:
            return
        if end < partition.log_end_offset:
            self.replicas.truncate(key[0], key[1], end)
        elif start > partition.log_end_offset or start < partition.log.log_start_offset:
            self.replicas.reset_to(key[0], key[1], start)

    async def _leader_offset(
        self, connection: KafkaConnection, key: TopicPartition, timestamp: int
    ) -> int | None:
        partition = self.replicas.partitions.get(key)
        epoch = partition.leader_epoch if partition is not None else NO_EPOCH
        response = await connection.request(
            ApiKey.LIST_OFFSETS,
            {
                "replica_id": self.broker_id,
                "isolation_level": 0,
                "topics": [
                    {
                        "name": key[0],
                        "partitions": [
                            {
                                "partition_index": key[1],
                                "current_leader_epoch": epoch,
                                "timestamp": timestamp,
                            }
                        ],
                    }
                ],
                "timeout": 30_000,
            },
            timeout_s=30.0,
        )
        for topic in response.topics:
            for p in topic.partitions:
                if int(p.error_code) == NONE:
                    return int(p.offset)
        return None

    async def close(self) -> None:
        for fetcher in list(self.fetchers.values()):
            await fetcher.stop()
        self.fetchers.clear()
        for task in list(self._repairs):
            task.cancel()


def image_endpoint(image: MetadataImage, broker_id: int, listener: str) -> tuple[str, int] | None:
    """The host and port of broker ``broker_id``'s ``listener`` in the image."""
    registration = image.brokers.get(broker_id)
    if registration is None:
        return None
    for endpoint in registration.end_points:
        if endpoint.name == listener:
            return endpoint.host, endpoint.port
    return None
