"""The group coordinator's offsets (Kafka's ``GroupCoordinatorService`` for simple groups):
FindCoordinator, OffsetCommit and OffsetFetch, with the offsets kept in ``__consumer_offsets``.

Goals
    A consumer that ``assign``s its partitions with a ``group.id`` commits its offsets and
    reads them back, from any broker, across restarts and leader changes, with the answers
    Kafka gives: kafka-python's ``KafkaConsumer(group_id=...)``, confluent-kafka's
    ``commit()``/``committed()`` and a closing consumer's last commit all work. The coordinator
    of a group is the leader of its ``__consumer_offsets`` partition
    (:func:`~rackwise.groups.offsets.partition_for`).

Constraints
    * Only simple groups: JoinGroup, SyncGroup and Heartbeat are not served, so ``subscribe``
      still fails at JoinGroup; the rules for a commit are
      :meth:`~rackwise.groups.offsets.GroupOffsets.commit_error`'s.
    * ``__consumer_offsets`` is created by the first FindCoordinator for a group (whatever
      ``auto.create.topics.enable`` says, as Kafka), with ``offsets.topic.num.partitions``,
      ``offsets.topic.replication.factor`` and ``offsets.topic.segment.bytes``, compacted;
      until it has a leader the answer is COORDINATOR_NOT_AVAILABLE, which clients retry (the
      creation is asked for at most once a second: a cluster with fewer brokers than the
      replication factor refuses it, and says so in the log, each time). A group's partition
      is found with the topic's own partition count.
    * A commit is one batch appended with acks=all (``offsets.commit.timeout.ms``); it is
      answered, and becomes visible to OffsetFetch, once the in-sync replicas have it. Commits
      to one partition are appended one at a time, so that the state takes them in the log's
      order. Append
      errors are answered as Kafka's coordinator maps them (NOT_ENOUGH_REPLICAS and a timeout:
      COORDINATOR_NOT_AVAILABLE; NOT_LEADER_OR_FOLLOWER: NOT_COORDINATOR). A commit that
      failed after it reached the local log drops the partition's state, so that the next
      request reloads it from the log rather than answer from a state that may lack it.
    * A partition's state belongs to one leader epoch: on the first request after this broker
      became its leader (or its epoch changed) the state is loaded from the log in the
      background, 1 MiB per turn of the event loop, while requests for its groups get
      COORDINATOR_LOAD_IN_PROGRESS. A record that does not parse is logged and skipped.
    * Clients may not write to ``__consumer_offsets`` themselves (INVALID_TOPIC_EXCEPTION, as
      Kafka; :mod:`rackwise.node.data_apis`).
    * Transactions are not served: FindCoordinator for a transactional id answers
      TRANSACTIONAL_ID_AUTHORIZATION_FAILED, which clients treat as final.

Algorithm
    FindCoordinator: the leader of the key's partition, if it has an endpoint on the
    listener. OffsetCommit: a partition the cluster does not have is UNKNOWN_TOPIC_OR_PARTITION
    (KafkaApis answers it before the coordinator sees the request); then check the group id,
    the coordinator and the group's rules, then each partition's metadata size (``offset.metadata.max.bytes``: OFFSET_METADATA_TOO_LARGE);
    append the accepted ones as one batch of ``OffsetCommitKey``/``OffsetCommitValue``
    records; once acknowledged, replay the same records into the state. OffsetFetch: the
    state's offsets (-1 for a partition never committed), for the named topics or, with none
    named, every partition the group committed.

Worked example
    A kafka-python consumer with ``group_id="billing"`` on a 3-broker cluster asks any broker
    FindCoordinator("billing"): ``__consumer_offsets`` is created and the first answers are
    COORDINATOR_NOT_AVAILABLE; then the leader of partition 38 is named. It commits offset 42
    for ``orders-0``; that broker appends one record and answers NONE once the ISR has it;
    ``kill -9`` of it moves the leadership, the new leader loads the partition, and the
    consumer's next OffsetFetch gets 42.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any, Final

from rackwise.common.errors import RackwiseError
from rackwise.groups.offsets import (
    NO_EXPIRE_TIMESTAMP,
    NO_LEADER_EPOCH,
    OFFSETS_TOPIC,
    CommittedOffset,
    GroupOffsets,
    OffsetsFormatError,
    encode_key,
    encode_value,
    partition_for,
)
from rackwise.image import MetadataImage
from rackwise.node.auto_create import AutoTopicCreator
from rackwise.node.broker_apis import endpoint_on
from rackwise.node.data_apis import DataApis
from rackwise.node.data_config import DataPathConfig
from rackwise.protocol import ApiKey, error_name, make, response_class
from rackwise.protocol.values import millis
from rackwise.replica.manager import ReplicaManager
from rackwise.storage.batch import build_batch
from rackwise.storage.batch_header import iter_headers
from rackwise.storage.record_codec import iter_records

LOG: Final = logging.getLogger("rackwise.node.groups")

NONE: Final = 0
UNKNOWN_SERVER_ERROR: Final = -1
UNKNOWN_TOPIC_OR_PARTITION: Final = 3
OFFSET_METADATA_TOO_LARGE: Final = 12
COORDINATOR_LOAD_IN_PROGRESS: Final = 14
COORDINATOR_NOT_AVAILABLE: Final = 15
NOT_COORDINATOR: Final = 16
INVALID_GROUP_ID: Final = 24
INVALID_REQUEST: Final = 42
TRANSACTIONAL_ID_AUTHORIZATION_FAILED: Final = 53

GROUP_KEY: Final = 0
TRANSACTION_KEY: Final = 1
NO_NODE: Final = {"node_id": -1, "host": "", "port": -1}
"""Kafka's ``Node.noNode()``, in an answer that names no coordinator."""
NO_OFFSET: Final = -1
LOAD_CHUNK_BYTES: Final = 1 << 20
CREATE_INTERVAL_S: Final = 1.0
CONTROL_BATCH: Final = 0x20

_APPEND_ERRORS: Final = {
    # Kafka's CoordinatorRuntime / GroupCoordinatorService.normalizeException
    3: COORDINATOR_NOT_AVAILABLE,  # UNKNOWN_TOPIC_OR_PARTITION
    19: COORDINATOR_NOT_AVAILABLE,  # NOT_ENOUGH_REPLICAS
    20: COORDINATOR_NOT_AVAILABLE,  # NOT_ENOUGH_REPLICAS_AFTER_APPEND
    7: COORDINATOR_NOT_AVAILABLE,  # REQUEST_TIMED_OUT
    6: NOT_COORDINATOR,  # NOT_LEADER_OR_FOLLOWER
    56: NOT_COORDINATOR,  # KAFKA_STORAGE_ERROR
    10: UNKNOWN_SERVER_ERROR,  # MESSAGE_TOO_LARGE
    18: UNKNOWN_SERVER_ERROR,  # RECORD_LIST_TOO_LARGE
}


def _version(body: Any) -> int:
    return int(type(body).__version__)


class GroupCoordinator:
    """This broker's part of the group coordinator (module docstring)."""

    def __init__(
        self,
        replicas: ReplicaManager,
        data_apis: DataApis,
        image: Callable[[], MetadataImage],
        auto_create: AutoTopicCreator,
        config: DataPathConfig,
        listener_name: str,
    ) -> None:
        self.replicas = replicas
        self.data_apis = data_apis
        self.image = image
        self.auto_create = auto_create
        self.config = config
        self.listener_name = listener_name
        self._states: dict[int, tuple[int, GroupOffsets]] = {}
        """Per partition of ``__consumer_offsets`` led here: the leader epoch it was loaded in."""
        self._loading: dict[int, asyncio.Task[None]] = {}
        self._writing: dict[int, asyncio.Lock] = {}
        self._create_after = 0.0
        """Loop time before which ``__consumer_offsets`` is not asked for again."""

    async def close(self) -> None:
        for task in list(self._loading.values()):
            task.cancel()
        for task in list(self._loading.values()):
            with contextlib.suppress(BaseException):
                await task
        self._loading.clear()

    # ---- FindCoordinator ------------------------------------------------------------------

    def find_coordinator(self, body: Any) -> Any:
        version = _version(body)
        key_type = int(body.key_type)
        if version >= 4:
            coordinators = []
            for key in body.coordinator_keys:
                code, node = self._coordinator(key_type, str(key))
                coordinators.append(
                    {"key": str(key), "error_code": code, "error_message": None, **node}
                )
            values: dict[str, Any] = {"throttle_time": 0, "coordinators": coordinators}
        else:
            code, node = self._coordinator(key_type, str(body.key))
            values = {
                "throttle_time": 0,
                "error_code": code,
                "error_message": _message(code),
                **node,
            }
        return make(response_class(ApiKey.FIND_COORDINATOR, version), values)

    def _coordinator(self, key_type: int, key: str) -> tuple[int, dict[str, Any]]:
        if key_type == TRANSACTION_KEY:
            return TRANSACTIONAL_ID_AUTHORIZATION_FAILED, NO_NODE
        if key_type != GROUP_KEY:
            return INVALID_REQUEST, NO_NODE
        image = self.image()
        topic = image.topic(OFFSETS_TOPIC)
        if topic is None:
            now = asyncio.get_running_loop().time()
            if now >= self._create_after:  # clients retry every 100 ms: ask once a second
                self._create_after = now + CREATE_INTERVAL_S
                self.auto_create.create(
                    OFFSETS_TOPIC,
                    self.config.offsets_topic_num_partitions,
                    self.config.offsets_topic_replication_factor,
                    {
                        "cleanup.policy": "compact",
                        "compression.type": "producer",
                        "segment.bytes": str(self.config.offsets_topic_segment_bytes),
                    },
                )
            return COORDINATOR_NOT_AVAILABLE, NO_NODE
        partition = topic.partitions[partition_for(key, len(topic.partitions))]
        broker = image.brokers.get(partition.leader)
        endpoint = (
            None if broker is None or broker.fenced else endpoint_on(broker, self.listener_name)
        )
        if endpoint is None:
            return COORDINATOR_NOT_AVAILABLE, NO_NODE
        return NONE, {"node_id": partition.leader, "host": endpoint.host, "port": endpoint.port}

    # ---- state --------------------------------------------------------------------------------

    def _partition_of(self, group: str) -> int | None:
        topic = self.image().topic(OFFSETS_TOPIC)
        return None if topic is None else partition_for(group, len(topic.partitions))

    def _state(self, group: str) -> tuple[int, GroupOffsets | None, int]:
        """(error, the group's partition state, the partition) for a request about ``group``."""
        index = self._partition_of(group)
        if index is None:
            return COORDINATOR_NOT_AVAILABLE, None, -1
        partition = self.replicas.partitions.get((OFFSETS_TOPIC, index))
        if partition is None or not partition.is_leader:
            return NOT_COORDINATOR, None, index
        epoch = partition.leader_epoch
        loaded = self._states.get(index)
        if loaded is not None and loaded[0] == epoch:
            return NONE, loaded[1], index
        if index not in self._loading:
            self._states.pop(index, None)
            task = asyncio.create_task(self._load(index, epoch), name=f"load-offsets-{index}")
            self._loading[index] = task
            task.add_done_callback(lambda _: self._loading.pop(index, None))
        return COORDINATOR_LOAD_IN_PROGRESS, None, index

    async def _load(self, index: int, epoch: int) -> None:
        started = time.monotonic()
        state = GroupOffsets()
        skipped = 0
        try:
            partition = self.replicas.get(OFFSETS_TOPIC, index)
            log = partition.log
            offset, end = log.log_start_offset, log.log_end_offset
            while offset < end:
                data = log.read(
                    offset, max_bytes=LOAD_CHUNK_BYTES, max_offset=end, min_one_batch=True
                )
                records = bytes(data.records)
                if not records:
                    break
                for header in iter_headers(records):
                    offset = header.base_offset + header.last_offset_delta + 1
                    if header.attributes & CONTROL_BATCH:
                        continue
                    for record in iter_records(records[header.position : header.end]):
                        try:
                            state.replay(record.key, record.value)
                        except OffsetsFormatError as e:
                            skipped += 1
                            if skipped == 1:
                                LOG.warning(
                                    "%s-%d: skipping a record at offset %d: %s",
                                    OFFSETS_TOPIC,
                                    index,
                                    record.offset,
                                    e,
                                )
                await asyncio.sleep(0)  # the event loop belongs to everyone
        except RackwiseError as e:
            LOG.warning("%s-%d: loading the groups' offsets failed: %s", OFFSETS_TOPIC, index, e)
            return
        current = self.replicas.partitions.get((OFFSETS_TOPIC, index))
        if current is None or not current.is_leader or current.leader_epoch != epoch:
            return  # leadership moved on while loading: the next request loads again
        self._states[index] = (epoch, state)
        LOG.info(
            "%s-%d: loaded the offsets of %d groups in %.0f ms (leader epoch %d%s)",
            OFFSETS_TOPIC,
            index,
            sum(1 for _ in state.groups()),
            (time.monotonic() - started) * 1000,
            epoch,
            f", {skipped} records skipped" if skipped else "",
        )

    # ---- OffsetCommit -------------------------------------------------------------------------

    async def offset_commit(self, body: Any) -> Any:
        version = _version(body)
        group = str(body.group_id)
        generation = int(body.generation_id_or_member_epoch)
        asked = [(str(t.name), p) for t in body.topics for p in t.partitions]
        # As KafkaApis: a topic or partition the cluster does not have is answered at once.
        image = self.image()
        outcome = {
            (t, int(p.partition_index)): UNKNOWN_TOPIC_OR_PARTITION
            for t, p in asked
            if not _has_partition(image.topic(t), int(p.partition_index))
        }
        known = [(t, p) for t, p in asked if (t, int(p.partition_index)) not in outcome]
        if not known:
            return _commit_response(version, asked, outcome, NONE)
        code, state, index = (INVALID_GROUP_ID, None, -1) if not group else self._state(group)
        if state is not None:
            code = state.commit_error(group, generation, version)
        if code != NONE or state is None:
            return _commit_response(version, asked, outcome, code)
        now_ms = int(time.time() * 1000)
        retention_ms = millis(body.retention_time) if version <= 4 else -1
        expire_ms = NO_EXPIRE_TIMESTAMP if retention_ms < 0 else now_ms + retention_ms
        accepted: list[tuple[bytes, bytes]] = []
        for topic, p in known:
            where = (topic, int(p.partition_index))
            metadata = p.committed_metadata or ""
            if len(metadata) > self.config.offset_metadata_max_bytes:
                outcome[where] = OFFSET_METADATA_TOO_LARGE
                continue
            epoch = int(getattr(p, "committed_leader_epoch", NO_LEADER_EPOCH))
            committed = CommittedOffset(int(p.committed_offset), epoch, metadata, now_ms, expire_ms)
            accepted.append((encode_key(group, *where), encode_value(committed)))
        if accepted:
            code = await self._append(index, accepted, state)
        return _commit_response(version, asked, outcome, code)

    async def _append(
        self, index: int, records: list[tuple[bytes, bytes]], state: GroupOffsets
    ) -> int:
        """Append ``records`` to partition ``index`` and, once the in-sync replicas have them,
        replay them into ``state``; one commit at a time per partition, so that the state
        takes the records in the log's order."""
        async with self._writing.setdefault(index, asyncio.Lock()):
            batch = build_batch(
                [(key, value, ()) for key, value in records], timestamp_ms=int(time.time() * 1000)
            )
            timeout_s = self.config.offsets_commit_timeout_ms / 1000
            code, info = await self.data_apis.append_internal(
                OFFSETS_TOPIC, index, batch, timeout_s
            )
            if code == NONE:
                for key, value in records:
                    state.replay(key, value)
            elif info is not None:
                self._states.pop(index, None)  # it may be in the log after all: load it again
        return _APPEND_ERRORS.get(code, code)

    # ---- OffsetFetch --------------------------------------------------------------------------

    def offset_fetch(self, body: Any) -> Any:
        version = _version(body)
        if version >= 8:
            groups = [self._fetch_group(str(g.group_id), g.topics, version) for g in body.groups]
            values: dict[str, Any] = {"throttle_time": 0, "groups": groups}
        else:
            answer = self._fetch_group(str(body.group_id), body.topics, version)
            values = {
                "throttle_time": 0,
                "topics": answer["topics"],
                "error_code": answer["error_code"],
            }
        return make(response_class(ApiKey.OFFSET_FETCH, version), values)

    def _fetch_group(
        self, group: str, topics: Iterable[Any] | None, version: int
    ) -> dict[str, Any]:
        code, state, _ = (INVALID_GROUP_ID, None, -1) if not group else self._state(group)
        if code != NONE and version >= 2:
            return {"group_id": group, "topics": [], "error_code": code}
        offsets = state.offsets(group) if state is not None else {}
        wanted: dict[str, list[int]] = {}
        if topics is None:
            for name, p in sorted(offsets):
                wanted.setdefault(name, []).append(p)
        else:
            for t in topics:
                wanted.setdefault(str(t.name), []).extend(int(i) for i in t.partition_indexes)
        answered = [
            {"name": name, "partitions": [_fetched(i, offsets.get((name, i)), code) for i in ps]}
            for name, ps in wanted.items()
        ]
        return {"group_id": group, "topics": answered, "error_code": NONE}


def _has_partition(topic: Any, index: int) -> bool:
    return topic is not None and 0 <= index < len(topic.partitions)


def _fetched(index: int, found: CommittedOffset | None, error: int) -> dict[str, Any]:
    return {
        "partition_index": index,
        "committed_offset": NO_OFFSET if found is None else found.offset,
        "committed_leader_epoch": NO_LEADER_EPOCH if found is None else found.leader_epoch,
        "metadata": "" if found is None else found.metadata,
        "error_code": error,  # before v2 a group's error is each partition's
    }


def _commit_response(
    version: int, asked: Iterable[tuple[str, Any]], outcome: dict[tuple[str, int], int], code: int
) -> Any:
    """Each asked partition's error: its own in ``outcome``, else ``code``."""
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for topic, p in asked:
        index = int(p.partition_index)
        error = outcome.get((topic, index), code)
        by_topic.setdefault(topic, []).append({"partition_index": index, "error_code": error})
    values = {
        "throttle_time": 0,
        "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
    }
    return make(response_class(ApiKey.OFFSET_COMMIT, version), values)


def _message(code: int) -> str:
    """FindCoordinator's error message before v4: Kafka's ``Errors.message()`` (the name for
    NONE)."""
    return _MESSAGES.get(code, error_name(code))


_MESSAGES: Final = {
    COORDINATOR_NOT_AVAILABLE: "The coordinator is not available.",
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "Transactional Id authorization failed.",
    INVALID_REQUEST: (
        "This most likely occurs because of a request being malformed by the client library "
        "or the message was sent to an incompatible broker. See the broker logs for more "
        "details."
    ),
}
