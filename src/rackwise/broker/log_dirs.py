"""A broker's log directories at work: AlterReplicaLogDirs and DescribeLogDirs, the moves
between directories, and telling the controller where each replica is (KIP-113, KIP-858;
Kafka's ``ReplicaManager.alterReplicaLogDirs`` and ``describeLogDirs``,
``ReplicaAlterLogDirsManager`` and ``DirectoryEventHandler``).

Goals
    * AlterReplicaLogDirs (34) starts, re-targets or ("any") cancels a move, and remembers a
      destination for a replica this broker does not have yet; answers are Kafka's:
      LOG_DIR_NOT_FOUND for a path not in ``log.dirs``, KAFKA_STORAGE_ERROR for an offline
      destination, an offline replica, or any new move while a directory is offline (so
      that no partition gets future logs in two directories), UNKNOWN_TOPIC_OR_PARTITION
      for a partition the metadata does not have, REPLICA_NOT_AVAILABLE for one not
      assigned here, INVALID_TOPIC_EXCEPTION for a future directory name over 255
      characters, INVALID_REPLICA_ASSIGNMENT for a move into a cordoned directory
      (``cordoned.log.dirs``, KIP-1066: it keeps its replicas and takes no new one).
    * DescribeLogDirs (35) reports every configured directory (an offline one with
      KAFKA_STORAGE_ERROR and sizes -1), each replica's size and ``OffsetLag`` (a future
      log's: how far it is behind the current one), ``IsFutureKey``, the volume's
      ``TotalBytes`` and ``UsableBytes``, and (v5) ``IsCordoned``.
    * A move runs to its end while producers append: steps of :func:`copy_step`, paced by
      one :class:`Throttle` for the broker, at most ``num.replica.alter.log.dirs.threads``
      steps at a time, each on a worker thread; then the swap (below).
    * Every replica whose directory the metadata does not know yet is reported with
      AssignReplicasToDirs (73), retried until the controller has it.

Constraints
    The swap holds appends: it runs on the broker's request loop without yielding, so no
    Produce, follower append or read is served between its first and last step. Before it,
    the controller records the new directory (AssignReplicasToDirs), as Kafka 3.7+ does:
    the round trip happens while appends go on, then the tail written meanwhile is copied
    and the directories renamed, appends held only for that. A crash after the controller
    recorded the new directory but before the renames restarts the copy (KIP-113's rule for
    a current and a future log) and the swap completes later, to the directory the
    controller already names.

Worked example
    Broker 1 has /d1 and /d2, t-0 on /d1. AlterReplicaLogDirs(/d2: t-0) creates
    /d2/t-0.<hex>-future and answers NONE. Steps of 1 MiB copy it; DescribeLogDirs shows the
    future replica on /d2 with OffsetLag falling to 0; then AssignReplicasToDirs(t-0 -> id of
    /d2), the tail, /d2/t-0.<hex>-future -> /d2/t-0, /d1/t-0 -> /d1/t-0.<hex>-delete, deleted
    ``file.delete.delay.ms`` later.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final

from rackwise.common.error_codes import NONE, NOT_LEADER_OR_FOLLOWER, UNKNOWN_SERVER_ERROR
from rackwise.common.errors import RackwiseError, ReplicaNotAvailableException
from rackwise.common.types import TopicPartition as LogKey
from rackwise.controller.errors import InvalidReplicaAssignmentException
from rackwise.protocol import ApiKey, Response, make, response_class
from rackwise.replica.manager import ReplicaManager
from rackwise.storage.errors import KafkaStorageException, LogDirNotFoundException
from rackwise.storage.manager import LogManager
from rackwise.storage.moves import MAX_STEP_BYTES, Throttle, caught_up, copy_step

LOG: Final = logging.getLogger("rackwise.broker.log_dirs")

ANY_LOG_DIR: Final = "any"
CRASH_AT_ENV: Final = "RACKWISE_CRASH_AT"
"""Fault injection for the tests: the broker exits at once (as ``kill -9`` would stop it) at
the named step of a move: ``move.caught-up`` (before the controller records the new
directory), ``move.recorded`` (after), ``move.future-renamed`` (between the two renames),
``move.current-renamed`` (before the old directory is deleted)."""
CRASHED_EXIT_STATUS: Final = 137
RETRY_S: Final = 1.0
IDLE_STEP_S: Final = 0.05

Assign = Callable[
    [list[tuple[uuid.UUID, int, uuid.UUID]]], Awaitable[dict[tuple[uuid.UUID, int], int]]
]
"""Sends AssignReplicasToDirs: (topic id, partition, directory id) in, error code by (topic
id, partition) out; raises on a network error."""


class LogDirs:
    """The log directories of one broker at work (module docstring)."""

    def __init__(
        self,
        logs: LogManager,
        replicas: ReplicaManager,
        *,
        assign: Assign,
        throttle_rate: Callable[[], int],
        threads: int,
        file_delete_delay_ms: Callable[[], int],
        on_swap: Callable[[tuple[str, int]], None],
    ) -> None:
        self.logs = logs
        self.replicas = replicas
        self.assign = assign
        self.throttle = Throttle(throttle_rate)
        self.file_delete_delay_ms = file_delete_delay_ms
        self.on_swap = on_swap
        self.moves: dict[tuple[str, int], asyncio.Task[None]] = {}
        self.paused_cleaning: set[tuple[str, int]] = set()
        """Partitions the log cleaner leaves alone while they move (Kafka's
        abortAndPauseCleaning)."""
        self.is_cleaning: Callable[[tuple[str, int]], bool] = lambda key: False
        self._steps = asyncio.Semaphore(max(threads, 1))
        self._assigning: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    # ---- AlterReplicaLogDirs -----------------------------------------------------------------

    def alter_replica_log_dirs(self, body: Any, version: int) -> Response:
        results: dict[str, list[dict[str, int]]] = {}
        for directory in body.dirs:
            for topic in directory.topics:
                for index in topic.partitions:
                    code = self._alter_one(str(topic.name), int(index), str(directory.path))
                    results.setdefault(str(topic.name), []).append(
                        {"partition_index": int(index), "error_code": code}
                    )
        return make(
            response_class(ApiKey.ALTER_REPLICA_LOG_DIRS, version),
            {
                "throttle_time": 0,
                "results": [
                    {"topic_name": name, "partitions": parts} for name, parts in results.items()
                ],
            },
        )

    def _alter_one(self, topic: str, index: int, path: str) -> int:
        key = (topic, index)
        try:
            if path == ANY_LOG_DIR:
                self.logs.preferred_dirs.pop(LogKey(topic, index), None)
                self.cancel(key)
                return NONE
            log_dir = self._configured(path)
            if not self.logs.is_online(log_dir):
                raise KafkaStorageException(f"Log directory {path} is offline")
            self._refuse_cordoned(topic, index, log_dir)
            if key in self.replicas.offline:
                raise KafkaStorageException(f"Partition {topic}-{index} is offline")
            future = self.logs.future(topic, index)
            if future is not None and future.directory.parent != log_dir:
                self.cancel(key)
            self.logs.preferred_dirs[LogKey(topic, index)] = log_dir
            self.replicas.get(topic, index)  # UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER
            current = self.logs.get(topic, index)
            if current is None:
                raise ReplicaNotAvailableException(f"No replica of {topic}-{index} here")
            if current.directory.parent == log_dir:
                return NONE
            if self.logs.offline_dirs:
                raise KafkaStorageException(
                    "Cannot start moving a replica while a log directory is offline: "
                    + ", ".join(sorted(str(d) for d in self.logs.offline_dirs))
                )
            if self.logs.create_future(topic, index, log_dir) is not None:
                self._start(key)
            return NONE
        except RackwiseError as e:
            code = int(getattr(e, "error_code", UNKNOWN_SERVER_ERROR))
            if code == NOT_LEADER_OR_FOLLOWER:  # Kafka keeps REPLICA_NOT_AVAILABLE here
                code = ReplicaNotAvailableException.error_code
            LOG.info("AlterReplicaLogDirs %s-%d to %s: %s", topic, index, path, e)
            return code

    def _refuse_cordoned(self, topic: str, index: int, log_dir: Path) -> None:
        current = self.logs.get(topic, index)
        if log_dir in self.logs.cordoned() and (
            current is None or current.directory.parent != log_dir
        ):
            raise InvalidReplicaAssignmentException(
                f"Log directory {log_dir} is cordoned (cordoned.log.dirs): it takes no new "
                f"replica, so {topic}-{index} cannot move there"
            )

    def _configured(self, path: str) -> Path:
        wanted = os.path.abspath(path)
        for log_dir in self.logs.log_dirs:
            if os.path.abspath(log_dir) == wanted:
                return log_dir
        raise LogDirNotFoundException(f"Log dir {path} is not found in the config.")

    # ---- DescribeLogDirs -------------------------------------------------------------------

    def describe_log_dirs(self, body: Any, version: int) -> Response:
        wanted: dict[str, set[int]] | None = None
        if body.topics is not None:
            wanted = {}
            for topic in body.topics:
                wanted.setdefault(str(topic.topic), set()).update(int(p) for p in topic.partitions)
        results = [self._describe_dir(log_dir, wanted) for log_dir in self.logs.log_dirs]
        return make(
            response_class(ApiKey.DESCRIBE_LOG_DIRS, version),
            {"throttle_time": 0, "error_code": NONE, "results": results},
        )

    def _describe_dir(self, log_dir: Path, wanted: dict[str, set[int]] | None) -> dict[str, Any]:
        if not self.logs.is_online(log_dir):
            return {
                "error_code": KafkaStorageException.error_code,
                "log_dir": str(log_dir),
                "topics": [],
                "total_bytes": -1,
                "usable_bytes": -1,
                "is_cordoned": log_dir in self.logs.cordoned(),
            }
        topics: dict[str, list[dict[str, Any]]] = {}
        entries = [(g, False) for g in self.logs.logs()]
        entries += [(g, True) for g in self.logs.futures.values()]
        for log, is_future in entries:
            if log.directory.parent != log_dir:
                continue
            if wanted is not None and log.partition not in wanted.get(log.topic, ()):
                continue
            if is_future:
                current = self.logs.get(log.topic, log.partition)
                lag = current.log_end_offset - log.log_end_offset if current else 0
            else:
                lag = max(log.high_watermark - log.log_end_offset, 0)
            topics.setdefault(log.topic, []).append(
                {
                    "partition_index": log.partition,
                    "partition_size": log.size_bytes(),
                    "offset_lag": lag,
                    "is_future_key": is_future,
                }
            )
        try:
            stats = os.statvfs(log_dir)
            total, usable = stats.f_blocks * stats.f_frsize, stats.f_bavail * stats.f_frsize
        except OSError:
            total = usable = -1
        return {
            "error_code": NONE,
            "log_dir": str(log_dir),
            "topics": [{"name": t, "partitions": p} for t, p in sorted(topics.items())],
            "total_bytes": total,
            "usable_bytes": usable,
            "is_cordoned": log_dir in self.logs.cordoned(),
        }

    # ---- moves -------------------------------------------------------------------------------

    def resume(self) -> None:
        """Start the moves found at startup (a current and a future log of one partition)."""
        for tp in list(self.logs.futures):
            self._start((tp.topic, tp.partition))

    def _start(self, key: tuple[str, int]) -> None:
        if key in self.moves and not self.moves[key].done():
            return
        self.paused_cleaning.add(key)
        self.moves[key] = asyncio.create_task(self._move(key), name=f"move-{key[0]}-{key[1]}")

    def cancel(self, key: tuple[str, int]) -> None:
        task = self.moves.pop(key, None)
        if task is not None:
            task.cancel()
        self.paused_cleaning.discard(key)
        self.logs.remove_future(*key)

    async def _move(self, key: tuple[str, int]) -> None:
        try:
            while True:
                current, future = self.logs.get(*key), self.logs.future(*key)
                if current is None or future is None:
                    return
                size = self.throttle.step_bytes()
                wait = self.throttle.book(size)
                if wait > 0:
                    await asyncio.sleep(wait)
                async with self._steps:
                    copied = await asyncio.to_thread(copy_step, current, future, size)
                self.throttle.settle(size, copied)
                if caught_up(current, future):  # by offsets: steps end on batch boundaries
                    if await self._finish(key):
                        return
                    await asyncio.sleep(RETRY_S)
                elif copied == 0:
                    await asyncio.sleep(IDLE_STEP_S)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # the move stops; AlterReplicaLogDirs may start it again
            LOG.error("moving %s-%d stopped: %s", key[0], key[1], e, exc_info=True)
        finally:
            if self.moves.get(key) is asyncio.current_task():
                del self.moves[key]
                self.paused_cleaning.discard(key)

    async def _finish(self, key: tuple[str, int]) -> bool:
        """Record the new directory with the controller, then the swap (module docstring)."""
        future = self.logs.future(*key)
        partition = self.replicas.partitions.get(key)
        if future is None or partition is None:
            return False
        directory = self.logs.dir_ids.get(future.directory.parent)
        topic_id = partition.state.topic_id
        crash_at("move.caught-up")
        if directory is not None:
            try:
                answer = await self.assign([(topic_id, key[1], directory)])
            except Exception as e:  # no controller now: the move tries again
                LOG.info("%s-%d: the controller did not take the new directory: %s", *key, e)
                return False
            code = answer.get((topic_id, key[1]), NONE)
            if code != NONE:
                LOG.info("%s-%d: AssignReplicasToDirs answered %d", key[0], key[1], code)
                return False
        crash_at("move.recorded")
        await asyncio.to_thread(future.flush)  # the bulk fsynced off the loop, before the hold
        # From here to the end nothing yields: appends wait for the swap.
        current, future = self.logs.get(*key), self.logs.future(*key)
        partition = self.replicas.partitions.get(key)
        if current is None or future is None or partition is None or self.is_cleaning(key):
            return False
        held = time.monotonic()
        if os.environ.get(CRASH_AT_ENV):
            current.crash_point = crash_at
        while not caught_up(current, future):
            copy_step(current, future, MAX_STEP_BYTES)
        moved, doomed = self.logs.replace_current_with_future(*key)
        LOG.info(
            "%s-%d: appends held %.1f ms for the swap",
            key[0],
            key[1],
            (time.monotonic() - held) * 1000,
        )
        partition.log = moved
        self.replicas.dirs_to_assign.pop(key, None)
        self.paused_cleaning.discard(key)
        self.on_swap(key)
        loop = asyncio.get_running_loop()
        loop.call_later(self.file_delete_delay_ms() / 1000, self._delete_later, doomed)
        return True

    def _delete_later(self, doomed: Path) -> None:
        task = asyncio.create_task(asyncio.to_thread(self.logs.delete_later, doomed))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ---- directories the controller does not know yet ---------------------------------------

    def report_directories(self) -> None:
        """Send AssignReplicasToDirs for every replica in :attr:`ReplicaManager.dirs_to_assign`
        (one request at a time, retried every :data:`RETRY_S` until taken)."""
        if self.replicas.dirs_to_assign and (self._assigning is None or self._assigning.done()):
            self._assigning = asyncio.create_task(self._report())

    async def _report(self) -> None:
        while self.replicas.dirs_to_assign:
            pending = dict(self.replicas.dirs_to_assign)
            try:
                answer = await self.assign(
                    [(topic_id, key[1], d) for key, (topic_id, d) in pending.items()]
                )
            except Exception as e:  # no controller now: retried
                LOG.info("AssignReplicasToDirs failed, retrying: %s", e)
                await asyncio.sleep(RETRY_S)
                continue
            for key, (topic_id, directory) in pending.items():
                code = answer.get((topic_id, key[1]), NONE)
                if code == NONE and self.replicas.dirs_to_assign.get(key) == (topic_id, directory):
                    del self.replicas.dirs_to_assign[key]
            if self.replicas.dirs_to_assign:
                await asyncio.sleep(RETRY_S)

    async def close(self) -> None:
        tasks = [*self.moves.values(), *self._tasks]
        if self._assigning is not None:
            tasks.append(self._assigning)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        self.moves.clear()


def crash_at(point: str) -> None:
    """Exit at once if the environment names ``point`` (:data:`CRASH_AT_ENV`)."""
    if os.environ.get(CRASH_AT_ENV) == point:
        LOG.error("exiting at %s, as %s asks", point, CRASH_AT_ENV)
        logging.shutdown()
        os._exit(CRASHED_EXIT_STATUS)


class DirectoryAssigner:
    """AssignReplicasToDirs to the controller, one request per call, on a connection kept
    between calls (``connect`` opens a new one when it is lost)."""

    def __init__(
        self,
        broker_id: int,
        broker_epoch: Callable[[], int],
        connect: Callable[[], Awaitable[Any]],
        timeout_s: float = 30.0,
    ) -> None:
        self.broker_id = broker_id
        self.broker_epoch = broker_epoch
        self.connect = connect
        self.timeout_s = timeout_s
        self._connection: Any = None

    async def __call__(
        self, items: list[tuple[uuid.UUID, int, uuid.UUID]]
    ) -> dict[tuple[uuid.UUID, int], int]:
        by_dir: dict[uuid.UUID, dict[uuid.UUID, list[int]]] = {}
        for topic_id, index, directory in items:
            by_dir.setdefault(directory, {}).setdefault(topic_id, []).append(index)
        values = {
            "broker_id": self.broker_id,
            "broker_epoch": self.broker_epoch(),
            "directories": [
                {
                    "id_": directory,
                    "topics": [
                        {"topic_id": t, "partitions": [{"partition_index": p} for p in parts]}
                        for t, parts in topics.items()
                    ],
                }
                for directory, topics in by_dir.items()
            ],
        }
        if self._connection is None or self._connection.is_closed:
            connection = await self.connect()
            try:
                await connection.negotiate_versions(timeout_s=self.timeout_s)
            except BaseException:
                with contextlib.suppress(Exception):
                    await connection.close()
                raise
            self._connection = connection
        try:
            response = await self._connection.request(
                ApiKey.ASSIGN_REPLICAS_TO_DIRS, values, timeout_s=self.timeout_s
            )
        except BaseException:
            connection, self._connection = self._connection, None
            with contextlib.suppress(Exception):
                await connection.close()
            raise
        top = int(response.error_code)
        answer: dict[tuple[uuid.UUID, int], int] = {}
        for directory in response.directories:
            for topic in directory.topics:
                for p in topic.partitions:
                    answer[(topic.topic_id, int(p.partition_index))] = int(p.error_code) or top
        for topic_id, index, _ in items:
            answer.setdefault((topic_id, index), top)
        return answer

    async def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            with contextlib.suppress(Exception):
                await connection.close()
