"""A partition leader's side of ISR changes (Kafka's ``Partition.maybeExpandIsr`` and its
``AlterPartitionManager``): when a replica of a partition this broker leads is not in the ISR
but has caught up, ask the controller (AlterPartition, KIP-497) to add it.

Goals
    A broker that was fenced (its lease ran out, or it restarted) has left every ISR; once it
    is back and caught up, the leaders of its partitions bring it back into their ISRs within
    a heartbeat or two, as Kafka's leaders do once its fetches reach the log end.

Constraints
    * "Caught up" is one predicate, :func:`is_caught_up`. Without a data path a follower is
      caught up as soon as the image shows it unfenced and not shutting down (the controller
      unfences a broker only once it has applied the metadata log up to its registration, so
      it knows the partition). The data path replaces that predicate with its own (the
      follower's fetch offset at the leader's log end, Kafka's ``isFollowerInSync``), and
      adds the other half, shrinking the ISR of a follower that fell behind for
      ``replica.lag.time.max.ms``: :func:`plan_isr_shrinks` is where that goes, and plans
      nothing today.
    * One AlterPartition carries every change planned at once; a change is never sent twice
      for the same partition state: after an answer (accepted or refused) it is sent again
      only once the image changes it (new epochs, or a replica's eligibility). A request that
      failed as a whole (no connection, a timeout, a top-level error) or a partition
      answered with a retriable error is retried after a backoff, doubling from
      :data:`RETRY_BACKOFF_S` to :data:`MAX_RETRY_BACKOFF_S`. Nothing is planned until this
      broker's own registration is in the image, unfenced, with its current broker epoch.
    * The planning functions are pure (image in, changes out); :class:`IsrManager` holds the
      connection to the controller and the loop.

Algorithm
    Wake on every change of the image (or when a retry is due); plan the changes: for each
    partition this broker leads, the ISR plus each replica not in it that is caught up, in
    replica order, with the replicas' broker epochs from the image and the leader and
    partition epochs of the image; drop the changes already answered; send the rest.

Worked example
    Broker 1 leads t-0, replicas [1, 2, 3], ISR [1, 2] (leader epoch 0, partition epoch 1).
    Broker 3 restarts and is unfenced: the image changes, the plan is t-0 -> ISR [1, 2, 3] at
    epochs (0, 1); the controller accepts and writes it; the next image has partition epoch 2
    and ISR [1, 2, 3], and the plan is empty.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from rackwise.common.error_codes import NONE
from rackwise.image import MetadataImage, PartitionRegistration
from rackwise.net import ConnectionSlot, KafkaConnection, NetworkException
from rackwise.protocol import ApiKey, ProtocolError, UnsupportedVersionException
from rackwise.records.constants import LEADER_RECOVERED

LOG: Final = logging.getLogger("rackwise.broker.isr")

RETRIABLE_ERRORS: Final = frozenset(
    {
        -1,  # UNKNOWN_SERVER_ERROR
        7,  # REQUEST_TIMED_OUT
        41,  # NOT_CONTROLLER
        55,  # OPERATION_NOT_ATTEMPTED
    }
)
"""The partition errors after which the same change is sent again (after a backoff); any
other refusal (FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION, INELIGIBLE_REPLICA...) waits for
the image to change the partition, as it says this broker's view is behind."""
RETRY_BACKOFF_S: Final = 0.1
MAX_RETRY_BACKOFF_S: Final = 2.0
IDLE_WAIT_S: Final = 30.0
"""The longest the loop sleeps without an image change (it then plans again)."""
REQUEST_TIMEOUT_S: Final = 10.0

CaughtUp = Callable[[MetadataImage, PartitionRegistration, int], bool]
"""Whether ``replica`` of the partition has caught up with this broker, its leader."""
Connector = Callable[[], Awaitable[KafkaConnection]]
ImageWaiter = Callable[[Callable[[MetadataImage], bool], float], Awaitable[bool]]
"""Waits until the predicate holds of the broker's image (checked after each change), at most
the given seconds; whether it holds."""


def is_caught_up(image: MetadataImage, partition: PartitionRegistration, replica: int) -> bool:
    """The control plane's "caught up": registered, unfenced and not shutting down in the
    image. The data path replaces it (module docstring)."""
    registration = image.brokers.get(replica)
    return (
        registration is not None
        and not registration.fenced
        and not registration.in_controlled_shutdown
    )


@dataclass(frozen=True, slots=True)
class IsrChange:
    """One partition's ISR as its leader wants it, at the epochs it saw: ``new_isr`` is
    ``(broker id, broker epoch)`` pairs."""

    topic_id: uuid.UUID
    partition_index: int
    leader_epoch: int
    partition_epoch: int
    new_isr: tuple[tuple[int, int], ...]


def is_leader_ready(image: MetadataImage, broker_id: int, broker_epoch: int) -> bool:
    """Whether the image shows this broker's current registration, unfenced (only then may
    it act as a leader)."""
    registration = image.brokers.get(broker_id)
    return (
        registration is not None
        and registration.broker_epoch == broker_epoch
        and not registration.fenced
    )


def plan_isr_expansions(
    image: MetadataImage, broker_id: int, caught_up: CaughtUp = is_caught_up
) -> list[IsrChange]:
    """For each partition ``broker_id`` leads, the ISR with every caught-up replica added
    (in replica order, after the current members), or nothing when none is missing."""
    changes = []
    for topic, partition in image.iter_partitions():
        if partition.leader != broker_id:
            continue
        isr = list(partition.isr)
        joining = [
            r
            for r in partition.replicas
            if r not in isr and r != broker_id and caught_up(image, partition, r)
        ]
        if not joining:
            continue
        members = [*isr, *joining]
        changes.append(
            IsrChange(
                topic.topic_id,
                partition.partition_id,
                partition.leader_epoch,
                partition.partition_epoch,
                tuple((b, broker_epoch_of(image, b)) for b in members),
            )
        )
    return changes


def plan_isr_shrinks(image: MetadataImage, broker_id: int) -> list[IsrChange]:
    """The ISR shrinks of followers that fell behind: the data path's (it knows the fetch
    offsets and ``replica.lag.time.max.ms``); without it, none."""
    del image, broker_id
    return []


def broker_epoch_of(image: MetadataImage, broker_id: int) -> int:
    """Broker ``broker_id``'s registration epoch in the image (-1: not registered)."""
    registration = image.brokers.get(broker_id)
    return -1 if registration is None else registration.broker_epoch


def alter_partition_values(
    broker_id: int, broker_epoch: int, changes: Sequence[IsrChange]
) -> dict[str, Any]:
    """An AlterPartition's fields for ``changes`` (v3's ``new_isr_with_epochs`` and v2's
    ``new_isr`` both given: the version's own is kept)."""
    by_topic: dict[uuid.UUID, list[dict[str, Any]]] = {}
    for change in changes:
        by_topic.setdefault(change.topic_id, []).append(
            {
                "partition_index": change.partition_index,
                "leader_epoch": change.leader_epoch,
                "partition_epoch": change.partition_epoch,
                "leader_recovery_state": LEADER_RECOVERED,
                "new_isr": [b for b, _ in change.new_isr],
                "new_isr_with_epochs": [
                    {"broker_id": b, "broker_epoch": e} for b, e in change.new_isr
                ],
            }
        )
    return {
        "broker_id": broker_id,
        "broker_epoch": broker_epoch,
        "topics": [{"topic_id": t, "partitions": p} for t, p in by_topic.items()],
    }


def answered(changes: Sequence[IsrChange], response: Any) -> tuple[set[IsrChange], list[str]]:
    """The changes the response settles (accepted, or refused for good) and one line per
    refusal; the others are retried."""
    by_key = {(c.topic_id, c.partition_index): c for c in changes}
    settled: set[IsrChange] = set()
    refusals: list[str] = []
    for topic in response.topics:
        for p in topic.partitions:
            change = by_key.get((topic.topic_id, int(p.partition_index)))
            if change is None:
                continue
            error = int(p.error_code)
            if error in RETRIABLE_ERRORS:
                continue
            settled.add(change)
            if error != NONE:
                refusals.append(f"{topic.topic_id}-{int(p.partition_index)}: error {error}")
    return settled, refusals


def _changed_since(seen: MetadataImage | None) -> Callable[[MetadataImage], bool]:
    return lambda image: image is not seen


class IsrManager:
    """Sends this broker's ISR changes to the controller (module docstring). ``broker_epoch``
    reads the broker's current registration epoch (-1 before it registers)."""

    def __init__(
        self,
        broker_id: int,
        broker_epoch: Callable[[], int],
        image: Callable[[], MetadataImage],
        wait_image: ImageWaiter,
        connect: Connector,
        *,
        caught_up: CaughtUp = is_caught_up,
        planner: Callable[[MetadataImage], list[IsrChange]] | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.planner = planner
        self._wake = asyncio.Event()
        self.broker_epoch = broker_epoch
        self.image = image
        self.wait_image = wait_image
        self.caught_up = caught_up
        self._answered: set[IsrChange] = set()
        self._controller = ConnectionSlot(connect, negotiate_timeout_s=REQUEST_TIMEOUT_S)
        self.expands = 0
        """ISR changes accepted that added replicas (Kafka's ``IsrExpandsPerSec``)."""
        self.shrinks = 0
        """ISR changes accepted that removed replicas (``IsrShrinksPerSec``)."""

    def plan(self, image: MetadataImage) -> list[IsrChange]:
        """The changes to send now for ``image``: planned, not yet answered."""
        epoch = self.broker_epoch()
        if epoch < 0 or not is_leader_ready(image, self.broker_id, epoch):
            return []
        if self.planner is not None:
            planned = self.planner(image)
        else:
            planned = plan_isr_expansions(image, self.broker_id, self.caught_up)
            planned += plan_isr_shrinks(image, self.broker_id)
        self._answered &= set(planned)  # forget what the image has moved past
        return [c for c in planned if c not in self._answered]

    async def run(self) -> None:
        """Plan and send on every image change until cancelled."""
        loop = asyncio.get_running_loop()
        seen: MetadataImage | None = None
        backoff = RETRY_BACKOFF_S
        retry_at: float | None = None
        try:
            while True:
                wait_s = IDLE_WAIT_S if retry_at is None else max(retry_at - loop.time(), 0.0)
                await self._wait(seen, wait_s)
                seen = self.image()
                changes = self.plan(seen)
                if not changes:
                    retry_at = None
                    continue
                if await self.send(changes):
                    backoff, retry_at = RETRY_BACKOFF_S, None
                else:
                    retry_at = loop.time() + backoff
                    backoff = min(backoff * 2, MAX_RETRY_BACKOFF_S)
        finally:
            await self.close()

    def wake(self) -> None:
        """Plan again now (a follower's progress or a timer may have changed the plan)."""
        self._wake.set()

    async def _wait(self, seen: MetadataImage | None, wait_s: float) -> None:
        """Until the image changes, :meth:`wake` is called, or ``wait_s`` passes."""
        if self._wake.is_set():
            self._wake.clear()
            return
        image_task = asyncio.ensure_future(self.wait_image(_changed_since(seen), wait_s))
        wake_task = asyncio.ensure_future(self._wake.wait())
        try:
            await asyncio.wait({image_task, wake_task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (image_task, wake_task):
                task.cancel()
            await asyncio.gather(image_task, wake_task, return_exceptions=True)
        self._wake.clear()

    async def send(self, changes: Sequence[IsrChange]) -> bool:
        """One AlterPartition for ``changes``; whether every one was settled."""
        try:
            connection = await self._controller.get()
            response = await connection.request(
                ApiKey.ALTER_PARTITION,
                alter_partition_values(self.broker_id, self.broker_epoch(), changes),
                timeout_s=REQUEST_TIMEOUT_S,
            )
        except (NetworkException, ProtocolError, UnsupportedVersionException) as e:
            LOG.info("AlterPartition for %d partitions failed, will retry: %s", len(changes), e)
            await self.close()
            return False
        error = int(response.error_code)
        if error != NONE:
            LOG.info("AlterPartition refused as a whole (error %d), will retry", error)
            return False
        settled, refusals = answered(changes, response)
        self._count(changes, response)
        self._answered |= settled
        accepted = len(settled) - len(refusals)
        if accepted:
            LOG.info("ISR changes accepted for %d partitions", accepted)
        for line in refusals:
            LOG.info("ISR change refused: %s", line)
        return len(settled) == len(changes)

    def _count(self, changes: Sequence[IsrChange], response: Any) -> None:
        """Count the accepted changes that grow or shrink an ISR, against the image's."""
        accepted = {
            (topic.topic_id, int(p.partition_index))
            for topic in response.topics
            for p in topic.partitions
            if int(p.error_code) == NONE
        }
        topics = self.image().topics_by_id
        for change in changes:
            if (change.topic_id, change.partition_index) not in accepted:
                continue
            topic = topics.get(change.topic_id)
            partition = None if topic is None else topic.partitions.get(change.partition_index)
            if partition is None:
                continue
            if len(change.new_isr) > len(partition.isr):
                self.expands += 1
            elif len(change.new_isr) < len(partition.isr):
                self.shrinks += 1

    async def close(self) -> None:
        await self._controller.drop()
