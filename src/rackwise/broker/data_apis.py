"""The broker's data-path requests: Produce, Fetch and DeleteRecords (Kafka's ``KafkaApis``
handlers for them, over :mod:`rackwise.replica`; ListOffsets and OffsetForLeaderEpoch are
:mod:`rackwise.broker.offset_apis`').

Goals
    * Answer as Kafka 4.x does, per partition: an error never fails the whole request; a
      NOT_LEADER_OR_FOLLOWER carries the current leader and its endpoint (KIP-951) so clients
      redirect without a metadata round trip.
    * Waiting is a registered condition (:class:`~rackwise.replica.purgatory.Purgatory`):
      acks=all waits for the high watermark to pass its records, up to the request's
      ``timeout_ms`` (then REQUEST_TIMED_OUT); a Fetch with less than ``min_bytes`` waits up to
      ``max_wait_ms`` for appends (a consumer) or for the log end to move (a follower);
      DeleteRecords waits for every live replica to move its log start offset.
    * Fetch sessions (KIP-227) are declined: every answer has session id 0, so clients send
      full fetches, which is what Kafka does for a client asking with session id 0 and what
      every client handles. The cost is the partition list in every request.
    * Records go out with ``sendfile`` (zero copy): a Fetch reads each partition's batches as
      a region of the segment file (:meth:`~rackwise.storage.log.PartitionLog.read` with
      ``zero_copy``) and the server sends the region straight from the page cache, so a
      broker serving consumers or followers does not copy their records through Python. A
      region whose file is cut or removed before it is sent (a truncation racing the answer)
      closes the connection; the client fetches again.

Constraints
    A handler does bounded work before it waits: each partition is one append or one read of at
    most its ``partition_max_bytes`` (and the request's ``max_bytes`` overall, always at least
    one whole batch for the first partition with data, as Kafka).

Worked example
    Produce acks=-1 to t-0 (RF 3, ISR [1, 2, 3]) with a batch of 10 records at log end 0: the
    append gives base offset 0; the handler waits for t-0's high watermark to reach 10, which
    happens when brokers 2 and 3 fetch from offset 10; the answer is error 0, base offset 0.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Hashable
from typing import Any, Final

from rackwise.broker.metadata_apis import INTERNAL_TOPICS
from rackwise.broker.replication_quotas import LeaderThrottle
from rackwise.broker.traffic import Traffic
from rackwise.common.error_codes import (
    FENCED_LEADER_EPOCH,
    INVALID_REQUIRED_ACKS,
    INVALID_TOPIC_EXCEPTION,
    NONE,
    NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    REQUEST_TIMED_OUT,
    TOPIC_AUTHORIZATION_FAILED,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    UNKNOWN_SERVER_ERROR,
    UNKNOWN_TOPIC_ID,
    UNKNOWN_TOPIC_OR_PARTITION,
)
from rackwise.common.errors import RackwiseError
from rackwise.image import MetadataImage
from rackwise.net import (
    NO_RESPONSE,
    CloseConnection,
    NoResponse,
    let_next_request_in,
    request_listener,
)
from rackwise.protocol import (
    ApiKey,
    FetchResponseValues,
    ProduceResponseValues,
    Request,
    Response,
    make,
    response_class,
)
from rackwise.protocol.fetch_request_reader import FetchRequestRead
from rackwise.protocol.produce_request_reader import ProduceRequestValues
from rackwise.protocol.values import millis
from rackwise.replica.errors import NotLeaderOrFollowerException
from rackwise.replica.manager import ReplicaManager
from rackwise.replica.purgatory import Purgatory
from rackwise.replica.selector import ClientMetadata, ReplicaSelector
from rackwise.replica.serving import ReadResult
from rackwise.storage.log import LogAppendInfo

LOG: Final = logging.getLogger("rackwise.broker.data")

ADMIN_CLIENT_ID: Final = "__admin_client"
"""The client id Kafka lets write to internal topics (``AdminUtils.ADMIN_CLIENT_ID``)."""
NO_OFFSET: Final = -1
NO_TIMESTAMP: Final = -1
NO_EPOCH: Final = -1
NO_REPLICA: Final = -1
READ_COMMITTED: Final = 1

Outcome = tuple[int, LogAppendInfo | None, str | None, list[tuple[int, str]]]
"""A partition's produce outcome: error code, the append, error message, record errors."""
AutoCreate = Callable[[str], None]
"""Starts creating a topic that a Produce or Metadata named (``auto.create.topics.enable``)."""


def _code(error: BaseException) -> int:
    if isinstance(error, RackwiseError):
        return int(error.error_code)
    return UNKNOWN_SERVER_ERROR


def _version(body: Any) -> int:
    return int(type(body).__version__)


class DataApis:
    """Produce, Fetch, ListOffsets, OffsetForLeaderEpoch, DeleteRecords (module docstring)."""

    def __init__(
        self,
        replicas: ReplicaManager,
        purgatory: Purgatory,
        image: Callable[[], MetadataImage],
        listener_name: str,
        selector: ReplicaSelector,
        *,
        auto_create: AutoCreate | None = None,
        on_change: Callable[[Hashable], None] | None = None,
        leader_throttle: LeaderThrottle | None = None,
    ) -> None:
        self.replicas = replicas
        self.purgatory = purgatory
        self.image = image
        self.listener_name = listener_name
        self.selector = selector
        self.auto_create = auto_create
        self.on_change = on_change or purgatory.check
        self.leader_throttle = leader_throttle
        self.bytes_served: dict[str, int] = {}
        """Record bytes this broker has sent to consumers (not to followers), by topic."""
        self.bytes_replicated = 0
        """Record bytes this broker has sent to followers."""
        self.traffic = Traffic()
        """The bytes in, and out by follower and by consumer domain, for the metrics."""
        self._reported: dict[str, int] = {}
        self._reported_replicated = 0

    def report_bytes_out(self) -> None:
        """Log the record bytes sent so far, to consumers and to followers (Kafka's
        ``BytesOutPerSec`` and ``ReplicationBytesOutPerSec``), when they changed."""
        changed = {t: n for t, n in self.bytes_served.items() if self._reported.get(t) != n}
        if not changed and self._reported_replicated == self.bytes_replicated:
            return
        self._reported.update(changed)
        self._reported_replicated = self.bytes_replicated
        by_topic = " ".join(f"{t}={n}" for t, n in sorted(changed.items())) or "-"
        LOG.info(
            "bytes out to consumers (totals of the topics that changed): %s; to followers: %d",
            by_topic,
            self.bytes_replicated,
        )

    # ---- Produce ------------------------------------------------------------------------------

    async def produce(
        self, request: Request, may_write: Callable[[str], bool] | None = None
    ) -> Response | NoResponse:
        """Produce; with ``may_write`` (an authorizer's WRITE on a topic), a partition of a
        topic the caller may not write is TOPIC_AUTHORIZATION_FAILED, never appended."""
        body: ProduceRequestValues = request.body
        version = body.version
        acks = body.acks
        timeout_s = body.timeout_ms / 1000
        results: dict[tuple[str, int], Outcome] = {}
        by_id = version >= 13  # Produce v13 names topics by id (KIP-516)
        topic_keys: dict[str, Any] = {}
        for topic in body.topic_data:
            name = (self.replicas.topic_name(topic.topic_id) or "") if by_id else str(topic.name)
            for data in topic.partition_data:
                if by_id and not name:
                    # An unknown topic id: answered under its id, never appended.
                    name = f"\0{topic.topic_id}"
                topic_keys[name] = topic.topic_id if by_id else name
                key = (name, data.partition_index)
                if name.startswith("\0"):
                    results[key] = (UNKNOWN_TOPIC_ID, None, None, [])
                    continue
                if acks not in (0, 1, -1):
                    results[key] = (INVALID_REQUIRED_ACKS, None, None, [])
                    continue
                if body.transactional_id:
                    results[key] = (TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None, None, [])
                    continue
                if may_write is not None and not may_write(name):
                    results[key] = (TOPIC_AUTHORIZATION_FAILED, None, None, [])
                    continue
                if name in INTERNAL_TOPICS and request.header.client_id != ADMIN_CLIENT_ID:
                    message = f"Cannot append to internal topic {name}"
                    results[key] = (INVALID_TOPIC_EXCEPTION, None, message, [])
                    continue
                results[key] = self._append(name, data.partition_index, data.records or b"", acks)
        if acks == -1:
            pending = [k for k, (code, info, _, _) in results.items() if code == NONE and info]
            if pending:
                let_next_request_in()  # appended: the rest is waiting for the followers
                await self._wait_acks_all(results, pending, timeout_s)
        if acks == 0:
            if any(outcome[0] != NONE for outcome in results.values()):
                # Kafka closes the connection so that the producer refreshes its metadata.
                raise CloseConnection("a produce with acks=0 failed")
            return NO_RESPONSE
        return self._produce_response(version, results, topic_keys)

    def append_now(
        self, topic: str, index: int, records: bytes
    ) -> tuple[int, LogAppendInfo | None]:
        """Append ``records`` as this partition's leader with acks=all, for a writer inside
        the broker (the group coordinator's ``__consumer_offsets``, Kafka's
        ``CoordinatorPartitionWriter.append``): the error code and where the records went.
        Nothing waits, so that writes to a partition go into its log in the order they are
        made; :meth:`wait_acks` waits for the in-sync replicas."""
        code, info, _, _ = self._append(topic, index, records, -1)
        return code, info

    async def wait_acks(self, topic: str, index: int, info: LogAppendInfo, timeout_s: float) -> int:
        """Wait until the in-sync replicas have the records :meth:`append_now` appended at
        ``info`` (the purgatory, alongside every other write waiting on the partition): NONE,
        the error acks=all ends with, or REQUEST_TIMED_OUT after ``timeout_s``."""
        key = (topic, index)
        results: dict[tuple[str, int], Outcome] = {key: (NONE, info, None, [])}
        await self._wait_acks_all(results, [key], timeout_s)
        return results[key][0]

    def _append(self, topic: str, index: int, records: bytes | memoryview, acks: int) -> Outcome:
        try:
            info = self.replicas.append(topic, index, records, acks)
        except RackwiseError as e:
            code = _code(e)
            if code == UNKNOWN_TOPIC_OR_PARTITION and self.auto_create is not None:
                self.auto_create(topic)
            # INVALID_RECORD and INVALID_TIMESTAMP name the records at fault, as Kafka does.
            return code, None, e.message, list(getattr(e, "record_errors", ()))
        except Exception as e:  # a bug must not take the broker down: answer it, log it
            LOG.exception("produce to %s-%d failed", topic, index)
            return UNKNOWN_SERVER_ERROR, None, f"{type(e).__name__}: {e}", []
        self.traffic.appended(topic, len(records))
        self.on_change((topic, index))
        return NONE, info, None, []

    async def _wait_acks_all(
        self,
        results: dict[tuple[str, int], Outcome],
        pending: list[tuple[str, int]],
        timeout_s: float,
    ) -> None:
        required = {k: results[k][1].last_offset + 1 for k in pending}  # type: ignore[union-attr]
        outcome_of = self.replicas.acks_all_outcome

        def acked(key: tuple[str, int]) -> Callable[[], bool]:
            return lambda: outcome_of(key[0], key[1], required[key]) is not None

        # Each partition's acks checked on its own changes, and not again once in.
        await self.purgatory.wait({k: acked(k) for k in pending}, timeout_s, every=True)
        for key in pending:
            outcome = self.replicas.acks_all_outcome(key[0], key[1], required[key])
            info = results[key][1]
            if outcome is None:
                results[key] = (REQUEST_TIMED_OUT, info, None, [])
            elif outcome != NONE:
                results[key] = (outcome, info, None, [])

    def _produce_response(
        self,
        version: int,
        results: dict[tuple[str, int], Outcome],
        topic_keys: dict[str, Any],
    ) -> Response:
        by_topic: dict[str, list[dict[str, Any]]] = {}
        leaders: set[int] = set()
        for (topic, index), (code, info, message, errors) in results.items():
            record_errors = [{"batch_index": i, "batch_index_error_message": m} for i, m in errors]
            entry: dict[str, Any] = {
                "index": index,
                "error_code": code,
                "base_offset": NO_OFFSET,
                "log_append_time": NO_TIMESTAMP,
                "log_start_offset": NO_OFFSET,
                "record_errors": record_errors,
                "error_message": message,
            }
            if info is not None and code in (NONE, NOT_ENOUGH_REPLICAS_AFTER_APPEND):
                entry["base_offset"] = info.first_offset
                entry["log_start_offset"] = info.log_start_offset
                entry["log_append_time"] = info.log_append_time_ms
            if code == NotLeaderOrFollowerException.error_code:
                leader, epoch = self.replicas.leader_of(topic, index)
                entry["current_leader"] = {"leader_id": leader, "leader_epoch": epoch}
                if leader >= 0:
                    leaders.add(leader)
            by_topic.setdefault(topic, []).append(entry)
        values = {
            "responses": [
                {"name": t, "topic_id": topic_keys[t], "partition_responses": p}
                if version >= 13
                else {"name": t, "partition_responses": p}
                for t, p in by_topic.items()
            ],
            "throttle_time": 0,
            "node_endpoints": self._endpoints(leaders),
        }
        return ProduceResponseValues(version, values)

    def _endpoints(self, broker_ids: set[int]) -> list[dict[str, Any]]:
        image = self.image()
        out = []
        listener = request_listener(self.listener_name)
        for broker_id in sorted(broker_ids):
            registration = image.brokers.get(broker_id)
            if registration is None:
                continue
            for endpoint in registration.end_points:
                if endpoint.name == listener:
                    out.append(
                        {
                            "node_id": broker_id,
                            "host": endpoint.host,
                            "port": endpoint.port,
                            "rack": registration.rack,
                        }
                    )
        return out

    # ---- Fetch ---------------------------------------------------------------------------------

    async def fetch(
        self, request: Request, may_read: Callable[[str], bool] | None = None
    ) -> Response:
        """Fetch; with ``may_read`` (an authorizer's READ on a topic, or for a follower its
        CLUSTER_ACTION), a partition the caller may not read is TOPIC_AUTHORIZATION_FAILED and
        is not waited for."""
        body: FetchRequestRead = request.body
        version = body.version
        replica_id = body.replica_id
        is_follower = replica_id >= 0
        wanted = _fetch_partitions(body, self.replicas.topic_name)
        refused: list[tuple[tuple[str, int], Any, int, ReadResult | None]] = []
        if may_read is not None:
            refused = [
                (key, topic_key, TOPIC_AUTHORIZATION_FAILED, None)
                for key, _, _, topic_key in wanted
                if key[0] and not may_read(key[0])
            ]
            wanted = [w for w in wanted if not w[0][0] or may_read(w[0][0])]
        client = None
        if not is_follower and version >= 11:
            client = ClientMetadata(body.rack_id, request.header.client_id or "")
        max_wait_s = body.max_wait_ms / 1000
        min_bytes = body.min_bytes
        max_bytes = body.max_bytes
        throttle = self.leader_throttle if is_follower else None
        results = self._read_all(wanted, replica_id, max_bytes, client)
        if _total(results) < min_bytes and max_wait_s > 0 and not _any_error(results):
            available = self.replicas.bytes_available
            held = throttle.holds_back if throttle is not None else lambda _k, _r: False

            def has_bytes(key: tuple[str, int], offset: int) -> Callable[[], bool]:
                return lambda: available(*key, offset, is_follower) and not held(key, replica_id)

            # Any partition with records completes it: each checked on its own changes; a
            # partition the leader's throttle holds back does not count (Kafka's DelayedFetch).
            conditions = {w[0]: has_bytes(w[0], w[1]) for w in wanted}
            wait_s = max_wait_s
            if throttle is not None:
                wait_s = throttle.wait_s(conditions, replica_id, max_wait_s)
            ready = await self.purgatory.wait(conditions, wait_s, every=False)
            if ready or wait_s < max_wait_s:
                results = self._read_all(wanted, replica_id, max_bytes, client)
        if throttle is not None:
            throttle.record(results)
        if is_follower:
            sent = _total(results)
            self.bytes_replicated += sent
            self.traffic.replicated(replica_id, sent)
        else:
            sent = 0
            for (topic, _), _, _, result in results:
                if result is not None and result.records:
                    size = len(result.records)
                    sent += size
                    self.bytes_served[topic] = self.bytes_served.get(topic, 0) + size
            self.traffic.served(client.rack_id if client is not None else None, sent)
        return self._fetch_response(version, results + refused)

    def _read_all(
        self,
        wanted: list[tuple[tuple[str, int], int, Any, Any]],
        replica_id: int,
        max_bytes: int,
        client: ClientMetadata | None,
    ) -> list[tuple[tuple[str, int], Any, int, ReadResult | None]]:
        out: list[tuple[tuple[str, int], Any, int, ReadResult | None]] = []
        remaining = max_bytes
        for key, fetch_offset, partition, topic_key in wanted:
            if key[0] == "":
                out.append((key, topic_key, UNKNOWN_TOPIC_ID, None))
                continue
            limit = min(int(partition.partition_max_bytes), max(remaining, 0))
            try:
                result = self.replicas.read(
                    key[0],
                    key[1],
                    fetch_offset=fetch_offset,
                    max_bytes=limit,
                    replica_id=replica_id,
                    current_leader_epoch=int(getattr(partition, "current_leader_epoch", -1)),
                    last_fetched_epoch=int(getattr(partition, "last_fetched_epoch", -1)),
                    log_start_offset=int(getattr(partition, "log_start_offset", -1)),
                    min_one_batch=remaining == max_bytes,
                    client=client,
                    selector=self.selector,
                    zero_copy=True,
                )
            except RackwiseError as e:
                out.append((key, topic_key, _code(e), None))
                continue
            except Exception:
                LOG.exception("fetch from %s-%d failed", key[0], key[1])
                out.append((key, topic_key, UNKNOWN_SERVER_ERROR, None))
                continue
            if replica_id >= 0:
                self.on_change(key)  # a follower's fetch may move the high watermark
                if self.leader_throttle and self.leader_throttle.holds_back(key, replica_id):
                    result = dataclasses.replace(result, records=b"")
            remaining -= len(result.records)
            out.append((key, topic_key, NONE, result))
        return out

    def _fetch_response(
        self,
        version: int,
        results: list[tuple[tuple[str, int], Any, int, ReadResult | None]],
    ) -> Response:
        topics: dict[Any, list[dict[str, Any]]] = {}
        leaders: set[int] = set()
        for (topic, index), topic_key, code, result in results:
            entry: dict[str, Any] = {
                "partition_index": index,
                "error_code": code,
                "high_watermark": NO_OFFSET,
                "last_stable_offset": NO_OFFSET,
                "log_start_offset": NO_OFFSET,
                "aborted_transactions": [] if version >= 4 else None,
                "preferred_read_replica": NO_REPLICA,
                "records": b"",
            }
            if result is not None:
                entry["high_watermark"] = result.high_watermark
                entry["last_stable_offset"] = result.high_watermark
                entry["log_start_offset"] = result.log_start_offset
                entry["preferred_read_replica"] = result.preferred_read_replica
                entry["records"] = result.records
                if result.diverging_epoch is not None:
                    epoch, end = result.diverging_epoch
                    entry["diverging_epoch"] = {"epoch": epoch, "end_offset": end}
            if code in (NotLeaderOrFollowerException.error_code, FENCED_LEADER_EPOCH):
                leader, epoch = self.replicas.leader_of(topic, index)
                entry["current_leader"] = {"leader_id": leader, "leader_epoch": epoch}
                if leader >= 0:
                    leaders.add(leader)
            topics.setdefault(topic_key, []).append(entry)
        responses = []
        for topic_key, partitions in topics.items():
            if version >= 13:
                responses.append({"topic_id": topic_key, "partitions": partitions})
            else:
                responses.append({"topic": topic_key, "partitions": partitions})
        values = {
            "throttle_time": 0,
            "error_code": NONE,
            "session_id": 0,
            "responses": responses,
            "node_endpoints": self._endpoints(leaders),
        }
        # Plain values, written straight to buffers (record bytes are not copied).
        return FetchResponseValues(version, values)

    # ---- DeleteRecords ---------------------------------------------------------------------------

    async def delete_records(self, request: Request) -> Response:
        body = request.body
        version = _version(body)
        timeout_s = millis(body.timeout) / 1000
        codes: dict[tuple[str, int], int] = {}
        targets: dict[tuple[str, int], int] = {}
        for topic in body.topics:
            for p in topic.partitions:
                key = (str(topic.name), int(p.partition_index))
                try:
                    targets[key] = self.replicas.delete_records(key[0], key[1], int(p.offset))
                    codes[key] = NONE
                    self.on_change(key)
                except RackwiseError as e:
                    codes[key] = _code(e)

        def reached(key: tuple[str, int], target: int) -> Callable[[], bool]:
            return lambda: self._low_watermark(key) >= target

        conditions = {k: reached(k, t) for k, t in targets.items()}
        if targets and not await self.purgatory.wait(conditions, timeout_s, every=True):
            for key, target in targets.items():
                if self._low_watermark(key) < target:
                    codes[key] = REQUEST_TIMED_OUT
        topics: dict[str, list[dict[str, Any]]] = {}
        for key, code in codes.items():
            low = self._low_watermark(key) if code == NONE else NO_OFFSET
            topics.setdefault(key[0], []).append(
                {"partition_index": key[1], "low_watermark": low, "error_code": code}
            )
        return make(
            response_class(ApiKey.DELETE_RECORDS, version),
            {
                "throttle_time": 0,
                "topics": [{"name": t, "partitions": p} for t, p in topics.items()],
            },
        )

    def _low_watermark(self, key: tuple[str, int]) -> int:
        try:
            return self.replicas.low_watermark(key[0], key[1])
        except RackwiseError:
            return NO_OFFSET


# ---- request fields across versions --------------------------------------------------------------


def _fetch_partitions(
    body: FetchRequestRead, topic_name: Callable[[Any], str | None]
) -> list[tuple[tuple[str, int], int, Any, Any]]:
    """((topic name, partition), fetch offset, the partition's fields, the topic as the
    response names it) for each partition asked for; an unknown topic id has name ""."""
    out = []
    by_id = body.version >= 13
    for topic in body.topics:
        topic_key: Any = topic.topic_id if by_id else topic.topic
        name = (topic_name(topic_key) or "") if by_id else str(topic_key)
        for partition in topic.partitions:
            out.append(((name, partition.partition), partition.fetch_offset, partition, topic_key))
    return out


def _total(results: list[tuple[tuple[str, int], Any, int, ReadResult | None]]) -> int:
    return sum(len(r.records) for _, _, _, r in results if r is not None)


def _any_error(results: list[tuple[tuple[str, int], Any, int, ReadResult | None]]) -> bool:
    return any(
        code != NONE
        or (r is not None and (r.diverging_epoch is not None or r.preferred_read_replica >= 0))
        for _, _, code, r in results
    )
