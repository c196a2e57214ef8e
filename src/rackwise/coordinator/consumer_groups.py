"""The KIP-848 consumer groups on a broker: the driver of
:class:`rackwise.groups.consumer_coordinator.ConsumerGroups` for each ``__consumer_offsets``
partition led here, and the APIs over it, ConsumerGroupHeartbeat (68) and
ConsumerGroupDescribe (69).

Goals
    librdkafka and Java consumers with ``group.protocol=consumer`` join, consume and commit,
    with the assignor they name in ``group.remote.assignor`` run on the coordinator.

Constraints
    * The rules are the pure coordinator's; here only its inputs and outputs: the wall clock,
      the topics from the metadata image (their replicas' racks, the leader's first), its
      records appended to the group's partition (:meth:`GroupCoordinator.append`), and its
      timers on the event loop, which fire only while the partition's state is the one they
      were set for.
    * A partition's consumer groups are loaded with its offsets (the same log, replayed by
      :meth:`GroupCoordinator._load`) and dropped with them; an answer whose records could
      not be appended drops them too, so the next request reloads what the log holds.
    * A heartbeat is answered once its records are in the in-sync replicas, as Kafka's
      coordinator answers after its write commits.
    * A large group's target assignment (``offload_partitions``) is computed on a worker
      thread, not on the event loop, as Kafka 4's coordinator runtime hands work too slow for
      its event loop to its executor: the loop hands the job over, goes on answering, and
      gives the result to :meth:`ConsumerGroups.assigned` as a new event when it is back.

Thread, not process
    Measured on two cores at 100 members x 100,000 partitions: the spec a job holds takes
    0.59 s to pickle and 0.83 s to unpickle, more than most assignors take to run on it
    (``uniform`` 0.03 s, ``leader-rack-aware-cooperative-sticky`` 0.45 s), and the pickling
    runs in the broker, holding the interpreter lock; a process pool doubled the time to a
    result and still stalled the loop by up to 170 ms. A thread gets the job for nothing (it
    holds frozen values and copies of two dicts); the loop gets the interpreter back every
    switch interval (5 ms). What still stalled the loop then (135 ms at the 99th percentile)
    was the cyclic collector, run by the worker's allocations over the whole heap, so the
    worker runs with it paused (reference counting frees the assignor's objects); the loop's
    lateness is then 5 ms at the median and 17 ms at the 99th percentile while the assignor
    runs. On a broker, 300 members joining one by one a ``rack-local-optimal`` group over
    1,000 partitions kept another group's heartbeats and Metadata under 85 ms at the 99th
    percentile (1.0 to 1.5 s with the targets computed on the loop).

Worked example
    A librdkafka consumer sends ConsumerGroupHeartbeat(group "billing", member id it made,
    epoch 0, topics ["orders"], rebalance timeout 300000 ms); the coordinator of "billing"
    appends the member's records and answers epoch 1 with its partitions and a heartbeat
    interval of 5000 ms. ConsumerGroupDescribe("billing") then shows it Stable with that
    member, its rack and its assignment.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

from rackwise.assignors.model import PartitionInfo
from rackwise.common.collector import paused_gc
from rackwise.common.error_codes import NONE
from rackwise.coordinator.timers import wall_clock_ms
from rackwise.groups.classic import ClassicGroup
from rackwise.groups.consumer_coordinator import ConsumerGroups, KeyValue, Outcome
from rackwise.groups.consumer_target import AssignmentJob, AssignmentResult, compute, failed
from rackwise.groups.consumer_types import ConsumerGroupConfig, Timer, TopicsView, TopicView
from rackwise.groups.offsets import OFFSETS_TOPIC, GroupOffsets
from rackwise.image import MetadataImage

LOG: Final = logging.getLogger("rackwise.coordinator")

Append = Callable[[int, Sequence[KeyValue], GroupOffsets], Awaitable[int]]
"""Write records the groups already hold: the error code; the partition's state is dropped
when they do not reach the log or fail there."""


def topics_view(image: MetadataImage, version: int) -> TopicsView:
    """The image's topics as the coordinator reads them (internal ones left out)."""
    topics: dict[str, TopicView] = {}
    for name, topic in image.topics_by_name.items():
        if name.startswith("__"):
            continue
        partitions = []
        for index in sorted(topic.partitions):
            p = topic.partitions[index]
            leader = p.leader
            order = [leader, *[r for r in p.replicas if r != leader]] if leader >= 0 else p.replicas
            racks = tuple(_rack(image, b) for b in order)
            partitions.append(PartitionInfo(racks, has_leader=leader >= 0))
        topics[name] = TopicView(name, topic.topic_id, tuple(partitions))
    return TopicsView(version, topics)


def _rack(image: MetadataImage, broker_id: int) -> str | None:
    broker = image.brokers.get(broker_id)
    return None if broker is None else broker.rack


class ConsumerGroupDriver:
    """The consumer groups of the partitions led here (module docstring)."""

    def __init__(
        self,
        config: ConsumerGroupConfig,
        image: Callable[[], MetadataImage],
        append: Append,
        drop: Callable[[int], None],
        adopt: Callable[[int, GroupOffsets, ClassicGroup, bool], None],
    ) -> None:
        self.config = config
        self._image = image
        self._append = append
        self._drop = drop
        self._adopt = adopt
        self._shards: dict[int, tuple[GroupOffsets, ConsumerGroups]] = {}
        self._timers: dict[tuple[int, str, str, str], asyncio.TimerHandle] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._seen_image: MetadataImage | None = None
        self._view = TopicsView(0)
        self._executor: ThreadPoolExecutor | None = None

    def new_shard(self) -> ConsumerGroups:
        return ConsumerGroups(self.config)

    # ---- partitions --------------------------------------------------------------------

    def loaded(self, index: int, state: GroupOffsets, shard: ConsumerGroups) -> None:
        self.unloaded(index)
        self._shards[index] = (state, shard)
        self.set_timers(index, state, shard.on_loaded(wall_clock_ms()))
        if shard.groups:
            LOG.info("%s-%d: loaded %d consumer groups", OFFSETS_TOPIC, index, len(shard.groups))

    def unloaded(self, index: int) -> None:
        self._shards.pop(index, None)
        for key in [k for k in self._timers if k[0] == index]:
            self._timers.pop(key).cancel()

    def shard(self, index: int, state: GroupOffsets | None) -> ConsumerGroups | None:
        """Partition ``index``'s consumer groups, if loaded with ``state``."""
        found = self._shards.get(index)
        return found[1] if found is not None and found[0] is state else None

    def view(self) -> TopicsView:
        image = self._image()
        if image is not self._seen_image:
            self._seen_image = image
            self._view = topics_view(image, self._view.version + 1)
        return self._view

    # ---- running the rules ------------------------------------------------------------

    async def run(self, index: int, state: GroupOffsets, out: Outcome) -> int:
        """Append ``out``'s records and set its timers: NONE, or the append's error (when
        the records did not reach the log, or failed there, the partition's state is dropped,
        to be reloaded from the log; a write only waiting longer than the commit timeout
        stays). A group that became
        a classic one goes to the classic groups at once, as the consumer group went from
        here, so that no request meets neither."""
        self.set_timers(index, state, out.timers)
        for job in out.jobs:
            self.spawn(self._compute(index, state, job))
        if out.downgraded is not None and self.shard(index, state) is not None:
            LOG.info(
                "group %s: the consumer group becomes a classic group", out.downgraded.group_id
            )
            self._adopt(index, state, out.downgraded, out.rebalance)
        if not out.records:
            return NONE
        return await self._append(index, out.records, state)

    async def _compute(self, index: int, state: GroupOffsets, job: AssignmentJob) -> None:
        """Run ``job`` on the worker thread, then hand its result to the partition's groups
        if they are still the ones it was made for."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="rackwise-assignor")
        started = time.monotonic()
        try:
            result = await asyncio.get_running_loop().run_in_executor(
                self._executor, _compute_paused, job
            )
        except Exception as e:  # a broken assignor is the group's error, not the loop's
            LOG.exception("group %s: assignor %s failed", job.group_id, job.assignor)
            result = failed(job, f"{type(e).__name__}: {e}")
        LOG.info(
            "group %s: target for epoch %d computed by %s in %.3f s (%d members)",
            job.group_id, job.epoch, job.assignor, time.monotonic() - started,
            len(job.members),
        )  # fmt: skip
        shard = self.shard(index, state)
        if shard is None:
            return
        out = shard.assigned(result, self.view())
        if out.answer is not None:
            LOG.warning("group %s: %s", job.group_id, out.answer.error_message)
        await self._write(index, state, out)

    def set_timers(self, index: int, state: GroupOffsets, timers: Sequence[Timer]) -> None:
        loop = asyncio.get_running_loop()
        now = wall_clock_ms()
        for timer in timers:
            key = (index, timer.kind, timer.group_id, timer.member_id)
            old = self._timers.pop(key, None)
            if old is not None:
                old.cancel()
            if timer.deadline_ms is None:
                continue
            delay_s = max(timer.deadline_ms - now, 0) / 1000
            self._timers[key] = loop.call_later(delay_s, self._fire, key, state, timer)

    def _fire(self, key: tuple[int, str, str, str], state: GroupOffsets, timer: Timer) -> None:
        self._timers.pop(key, None)
        shard = self.shard(key[0], state)
        if shard is None:
            return
        try:
            out = shard.expire(timer, wall_clock_ms(), self.view())
        except Exception:
            LOG.exception("group %s: timer %s failed", timer.group_id, timer.kind)
            self._drop(key[0])
            return
        if out.records:
            LOG.info(
                "group %s: member %s fenced (%s)",
                timer.group_id,
                timer.member_id,
                "session expired" if timer.kind == "session" else "rebalance timeout",
            )
        self.spawn(self._write(key[0], state, out))

    async def _write(self, index: int, state: GroupOffsets, out: Outcome) -> None:
        code = await self.run(index, state, out)
        if code != NONE:
            LOG.warning(
                "%s-%d: a consumer group write failed (error %d)", OFFSETS_TOPIC, index, code
            )

    def spawn(self, work: Any) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)

    def group_ids(self, index: int, state: GroupOffsets) -> dict[str, str]:
        """Each consumer group of partition ``index`` and its state."""
        shard = self.shard(index, state)
        return {} if shard is None else {g: group.state for g, group in shard.groups.items()}


def _compute_paused(job: AssignmentJob) -> AssignmentResult:
    """:func:`compute` with the cyclic collector paused (module docstring)."""
    with paused_gc():
        return compute(job)


def topic_partitions(partitions: Any) -> tuple[tuple[uuid.UUID, tuple[int, ...]], ...] | None:
    """A heartbeat's ``TopicPartitions`` as the pure coordinator reads them."""
    if partitions is None:
        return None
    return tuple(
        (t.topic_id or uuid.UUID(int=0), tuple(int(p) for p in t.partitions)) for t in partitions
    )
