"""A broker's data plane: its logs, its replicas following the metadata image, the fetchers
that replicate from leaders, the ISR changes it asks for, and the background work of the logs
(checkpoints, retention, flushes, the cleaner) (Kafka's ``BrokerServer`` wiring of
``LogManager``, ``ReplicaManager``, ``ReplicaFetcherManager`` and ``AlterPartitionManager``).

Goals
    * At start, load every partition log found in ``log.dirs`` (recovering those of an unclean
      shutdown); at stop, flush and checkpoint everything and mark each directory cleanly shut
      down, so the next start skips recovery.
    * Each new metadata image is applied at once: replicas become leaders or followers,
      fetchers follow, waiting requests are checked (a leadership change answers them).
    * High watermarks are checkpointed every ``replica.high.watermark.checkpoint.interval.ms``,
      recovery points and log start offsets every ``log.flush.offset.checkpoint.interval.ms``;
      retention runs every ``log.retention.check.interval.ms``; ``flush.ms`` is checked every
      ``log.flush.scheduler.interval.ms`` (or every second when a topic sets ``flush.ms``).

Constraints
    Runs on the broker's request loop: every step is short (one image, one retention pass) so
    client requests and the broker's own traffic interleave with it. Checkpoints and the
    flushes of ``flush.ms`` run on a thread (Kafka's scheduler threads): each takes an fsync,
    and while the disk has gigabytes of dirty pages to write back an fsync can take seconds,
    in which the loop would answer nothing.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from pathlib import Path
from typing import Final

from rackwise.broker.isr import IsrChange, broker_epoch_of, is_leader_ready
from rackwise.broker.log_dirs import Assign, LogDirs
from rackwise.broker.replica_fetcher import ReplicaFetcherManager
from rackwise.broker.replication_quotas import LeaderThrottle, ReplicationQuotas
from rackwise.common.errors import InvalidConfigurationException
from rackwise.image import MetadataImage
from rackwise.net import KafkaConnection
from rackwise.node.data_config import DataPathConfig, TopicSettingsSource
from rackwise.replica.hosting import ReplicaConfig
from rackwise.replica.manager import ReplicaManager
from rackwise.replica.purgatory import Purgatory
from rackwise.replica.selector import load_selector
from rackwise.storage.cleaner import LogCleaner
from rackwise.storage.manager import LogManager

LOG: Final = logging.getLogger("rackwise.broker.data")

ISR_CHECK_FRACTION: Final = 2
"""The ISR is checked every ``replica.lag.time.max.ms`` / this (Kafka's isr-expiration task)."""
MAX_FLUSH_CHECK_S: Final = 1.0
DIR_CHECK_INTERVAL_S: Final = 1.0


async def _no_controller(items: object) -> dict[tuple[uuid.UUID, int], int]:
    raise OSError("no controller to tell of log directories")


def cordoned_dirs(names: Sequence[str], log_dirs: Sequence[Path]) -> frozenset[Path]:
    """The directories of ``log_dirs`` that ``cordoned.log.dirs`` names (``*``: all); a name
    that is not one of them is ignored (refused at start, :func:`check_cordoned`)."""
    if "*" in names:
        return frozenset(log_dirs)
    wanted = {os.path.abspath(n) for n in names}
    return frozenset(d for d in log_dirs if os.path.abspath(d) in wanted)


def check_cordoned(names: Sequence[str], log_dirs: Sequence[Path]) -> None:
    """Refuse a ``cordoned.log.dirs`` entry that is not ``*`` or one of ``log.dirs``."""
    known = {os.path.abspath(d) for d in log_dirs}
    for name in names:
        if name != "*" and os.path.abspath(name) not in known:
            raise InvalidConfigurationException(
                f"Invalid value {','.join(names)} for configuration cordoned.log.dirs: {name} "
                f"is not one of log.dirs ({','.join(str(d) for d in log_dirs)})"
            )


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


class DataPlane:
    """The broker's logs and replicas (module docstring)."""

    def __init__(
        self,
        broker_id: int,
        log_dirs: list[Path],
        static: dict[str, str],
        config: DataPathConfig,
        *,
        connect_broker: Callable[[int], Awaitable[KafkaConnection]],
        broker_epoch: Callable[[], int],
        clock: Callable[[], int] = wall_clock_ms,
        assign_dirs: Assign | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.config = config
        self.clock = clock
        self.broker_epoch = broker_epoch
        self.settings = TopicSettingsSource(broker_id, static)
        defaults = self.settings(MetadataImage(), "")
        self.logs = LogManager(log_dirs, clock=clock, default_config=defaults.log_config)
        check_cordoned(config.cordoned_log_dirs, self.logs.log_dirs)
        self.logs.cordoned = lambda: cordoned_dirs(
            self.config.cordoned_log_dirs, self.logs.log_dirs
        )
        self.replicas = ReplicaManager(
            ReplicaConfig(broker_id, replica_lag_time_max_ms=config.replica_lag_time_max_ms),
            self.logs,
            self.settings,
            clock,
        )
        self.purgatory = Purgatory()
        self.selector = load_selector(config.replica_selector_class)
        self.quotas = ReplicationQuotas(broker_id, lambda: self.config)
        self.leader_throttle = LeaderThrottle(self.quotas.leader, self.replicas)
        self.fetchers = ReplicaFetcherManager(
            broker_id,
            self.replicas,
            config,
            connect_broker,
            broker_epoch,
            self.on_change,
            quota=self.quotas.follower,
        )
        self.cleaner = LogCleaner()
        self.log_dirs = LogDirs(
            self.logs,
            self.replicas,
            assign=assign_dirs or _no_controller,
            throttle_rate=lambda: self.config.replica_alter_log_dirs_io_max_bytes_per_second,
            threads=config.num_replica_alter_log_dirs_threads or len(log_dirs),
            file_delete_delay_ms=lambda: self.config.file_delete_delay_ms,
            on_swap=self.on_change,
        )
        self._cleaning: tuple[str, int] | None = None
        self.log_dirs.is_cleaning = lambda key: key == self._cleaning
        self.applied: MetadataImage | None = None
        self.isr_wake: Callable[[], None] = lambda: None
        self.on_dirs_failed: Callable[[], None] = lambda: None
        """Told when a log directory goes offline (the broker's heartbeat says so; with no
        directory left, the broker stops)."""
        self._tasks: list[asyncio.Task[None]] = []

    # ---- lifecycle ---------------------------------------------------------------------------

    def load(self, dir_ids: Mapping[Path, uuid.UUID] | None = None) -> None:
        """Open every log in ``log.dirs`` (recovery after an unclean shutdown)."""
        self.logs.dir_ids.update(dir_ids or {})
        started = time.monotonic()
        self.logs.startup()
        LOG.info(
            "loaded %d partition logs in %.2f s", len(self.logs.logs()), time.monotonic() - started
        )

    def start(self) -> None:
        loop = asyncio.get_running_loop()

        def dir_failed(log_dir: Path) -> None:  # any thread: the failure is handled on the loop
            loop.call_soon_threadsafe(self.fail_dir, log_dir, "an I/O error")

        self.logs.on_dir_failure = dir_failed
        self.log_dirs.resume()
        self._tasks = [
            asyncio.create_task(
                self._every(self._hw_interval_s, self.checkpoint_high_watermarks, on_thread=True)
            ),
            asyncio.create_task(
                self._every(self._offsets_interval_s, self.logs.checkpoint, on_thread=True)
            ),
            asyncio.create_task(self._every(self._retention_interval_s, self.run_retention)),
            asyncio.create_task(self._every(self._flush_interval_s, self.flush, on_thread=True)),
            asyncio.create_task(self._every(self._isr_interval_s, self.check_isr)),
            asyncio.create_task(self._every(lambda: DIR_CHECK_INTERVAL_S, self.check_dirs)),
        ]
        if self.config.log_cleaner_enable:
            self._tasks.append(asyncio.create_task(self._clean_forever(), name="log-cleaner"))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.log_dirs.close()
        await self.fetchers.close()
        try:
            self.logs.shutdown(broker_epoch=self.broker_epoch())
        except OSError as e:
            LOG.error("log shutdown failed (the next start recovers): %s", e)

    def _hw_interval_s(self) -> float:
        return self.config.replica_high_watermark_checkpoint_interval_ms / 1000

    def _offsets_interval_s(self) -> float:
        return max(self.config.log_flush_offset_checkpoint_interval_ms, 1_000) / 1000

    def _retention_interval_s(self) -> float:
        return self.config.log_retention_check_interval_ms / 1000

    def _flush_interval_s(self) -> float:
        return min(self.config.log_flush_scheduler_interval_ms / 1000, MAX_FLUSH_CHECK_S)

    def _isr_interval_s(self) -> float:
        return self.config.replica_lag_time_max_ms / ISR_CHECK_FRACTION / 1000

    async def _every(
        self,
        interval_s: Callable[[], float],
        step: Callable[[], object],
        *,
        on_thread: bool = False,
    ) -> None:
        while True:
            await asyncio.sleep(interval_s())
            try:
                if on_thread:
                    await asyncio.to_thread(step)
                else:
                    step()
            except Exception:
                LOG.exception("background step %s failed", getattr(step, "__name__", step))

    # ---- the image -----------------------------------------------------------------------------

    def apply(self, image: MetadataImage) -> None:
        """Become leader or follower as ``image`` says (module docstring)."""
        if image is self.applied:
            return
        transition = self.replicas.apply_image(image)
        self.applied = image
        self.quotas.apply(image)
        self.fetchers.update()
        self.log_dirs.report_directories()
        for key in transition.changed:
            self.purgatory.check(key)
        if transition.changed:
            self.purgatory.check_all()
        self.isr_wake()

    def on_change(self, key: Hashable) -> None:
        """A partition's log end, high watermark or log start moved: check what waits on it,
        and plan the ISR again when a follower outside it has caught up."""
        self.purgatory.check(key)
        partition = self.replicas.partitions.get(key)  # type: ignore[call-overload]
        if partition is not None and partition.is_leader and partition.has_joiner():
            self.isr_wake()

    # ---- failed log directories (KIP-112) ----------------------------------------------------

    def fail_dir(self, log_dir: Path, reason: object) -> None:
        """Take ``log_dir`` offline: its replicas stop (KAFKA_STORAGE_ERROR), their moves and
        fetches end, and the broker tells the controller."""
        lost = self.logs.fail_dir(log_dir, reason)
        keys = [(tp.topic, tp.partition) for tp in lost]
        for key in list(self.log_dirs.moves):
            if self.logs.future(*key) is None:
                self.log_dirs.cancel(key)
        self.replicas.take_offline(keys)
        self.log_dirs.report_directories()
        if keys:
            self.fetchers.update()
        for key in keys:
            self.purgatory.check(key)
        self.on_dirs_failed()

    def check_dirs(self) -> None:
        """A directory that is gone or no longer a directory (its disk unmounted, replaced) has
        failed, though open files in it may still take writes: noticed within a second
        rather than at the next checkpoint."""
        for log_dir in self.logs.log_dirs:
            if self.logs.is_online(log_dir) and not log_dir.is_dir():
                self.fail_dir(log_dir, f"{log_dir} is no longer a directory")

    @property
    def offline_dir_ids(self) -> list[uuid.UUID]:
        return [i for d, i in self.logs.dir_ids.items() if d in self.logs.offline_dirs]

    @property
    def online_dir_ids(self) -> list[uuid.UUID]:
        return [i for d, i in self.logs.dir_ids.items() if d not in self.logs.offline_dirs]

    # ---- the ISR -------------------------------------------------------------------------------

    def check_isr(self) -> None:
        self.isr_wake()

    def plan_isr(self, image: MetadataImage) -> list[IsrChange]:
        """The ISR changes this broker, as leader, wants now (joins and leaves)."""
        if image is not self.applied:
            return []
        epoch = self.broker_epoch()
        if epoch < 0 or not is_leader_ready(image, self.broker_id, epoch):
            return []
        eligible = [
            b
            for b, registration in image.brokers.items()
            if not registration.fenced and not registration.in_controlled_shutdown
        ]
        changes = []
        for (topic, index), isr in self.replicas.isr_wanted(eligible).items():
            partition = self.replicas.partitions[(topic, index)]
            state = partition.state
            changes.append(
                IsrChange(
                    state.topic_id,
                    index,
                    state.leader_epoch,
                    state.partition_epoch,
                    tuple((b, broker_epoch_of(image, b)) for b in isr),
                )
            )
        return changes

    # ---- background work ------------------------------------------------------------------

    def checkpoint_high_watermarks(self) -> None:
        self.logs.checkpoint_high_watermarks()

    def run_retention(self) -> None:
        deleted = self.logs.run_retention(self.clock())
        if deleted:
            for key in list(self.replicas.partitions):
                self.purgatory.check(key)

    def flush(self) -> None:
        self.logs.flush_dirty(self.clock())

    async def _clean_forever(self) -> None:
        """Kafka's log cleaner thread: clean the compacted logs one at a time on a thread of
        their own (copying segments must not hold up requests), then back off
        ``log.cleaner.backoff.ms``."""
        backoff_s = self.config.log_cleaner_backoff_ms / 1000
        while True:
            await asyncio.sleep(backoff_s)
            for log in [p.log for p in self.replicas.partitions.values()]:
                key = (log.topic, log.partition)
                if not log.config.is_compact or key in self.log_dirs.paused_cleaning:
                    continue
                self._cleaning = key
                try:
                    result = await asyncio.to_thread(self.cleaner.clean_once, log, self.clock())
                except Exception as e:  # truncated or deleted meanwhile: next round
                    LOG.info("cleaning %s-%d stopped: %s", log.topic, log.partition, e)
                    continue
                finally:
                    self._cleaning = None
                if result.cleaned:
                    LOG.info(
                        "cleaned %s-%d up to offset %d: %d of %d records kept",
                        log.topic,
                        log.partition,
                        result.end_offset,
                        result.records_retained,
                        result.records_read,
                    )
