"""Blocks of producer ids for brokers: AllocateProducerIds (Kafka's ``ProducerIdControlManager``).

Goals
    Every idempotent producer needs an id no other producer of the cluster ever had. Brokers
    hand ids out from blocks the controller allocates: each block is
    :data:`~rackwise.records.constants.PRODUCER_ID_BLOCK_SIZE` consecutive ids, and no two
    blocks overlap, ever, whichever broker asks, whenever, across controller restarts and
    snapshots.

Constraints
    * Hard state only, in the log: a block handed out is a ProducerIdsRecord (the broker, its
      epoch, the first id of the *next* block); the image keeps that next start
      (:attr:`~rackwise.image.MetadataImage.next_producer_id`) and a snapshot writes it back
      as a ProducerIdsRecord of no broker. Nothing here holds state of its own.
    * Only the current registration of a broker gets a block: an unknown broker or another
      epoch is refused with STALE_BROKER_EPOCH, as Kafka's ``checkBrokerEpoch`` does (a fenced
      broker with its current epoch is served, as in Kafka).
    * Producer ids are Java longs: a block that would end past 2**63 - 1 is refused with
      UNKNOWN_SERVER_ERROR, Kafka's message, and nothing is written.

Algorithm
    ``start`` is the image's next producer id, or 0 before the first block; the record says
    the next block starts at ``start + 1000``; the answer is the block ``(broker, start,
    1000)``. The record is replayed before the next command runs (even inside a group commit),
    so two requests in one group get consecutive blocks.

Worked example
    A fresh cluster; broker 1 (epoch 5) asks: ``ProducerIdsRecord(broker_id=1,
    broker_epoch=5, next_producer_id=1000)``, answer ids 0-999. Broker 2 (epoch 9) asks:
    ``(2, 9, 2000)``, ids 1000-1999. The controller restarts from a snapshot holding
    ``ProducerIdsRecord(-1, -1, 2000)``; broker 1 asks again: ids 2000-2999.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from rackwise.controller.cluster import ClusterControl
from rackwise.controller.errors import UnknownServerException
from rackwise.controller.state import ControllerState
from rackwise.records.constants import NO_NEXT_PRODUCER_ID, PRODUCER_ID_BLOCK_SIZE
from rackwise.records.metadata import ProducerIdsRecord

MAX_PRODUCER_ID: Final = 2**63 - 1
"""Java's ``Long.MAX_VALUE``: producer ids are int64 on the wire and in record batches."""
FIRST_PRODUCER_ID: Final = 0
"""Where the first block starts."""


@dataclass(frozen=True, slots=True)
class ProducerIdsBlock:
    """A block of producer ids (Kafka's ``ProducerIdsBlock``): ``size`` ids from
    ``first_producer_id``, handed to broker ``assigned_broker_id``."""

    assigned_broker_id: int
    first_producer_id: int
    size: int

    @property
    def last_producer_id(self) -> int:
        return self.first_producer_id + self.size - 1

    @property
    def next_block_first_id(self) -> int:
        return self.first_producer_id + self.size


class ProducerIdControl:
    """Allocates the blocks (see the module docstring)."""

    def __init__(self, block_size: int = PRODUCER_ID_BLOCK_SIZE) -> None:
        if block_size <= 0:
            raise ValueError(f"a producer id block holds at least one id, not {block_size}")
        self.block_size = block_size

    def next_block(self, state: ControllerState, broker_id: int) -> ProducerIdsBlock:
        """The block the next request of ``broker_id`` would get (nothing checked)."""
        start = state.image.next_producer_id
        if start == NO_NEXT_PRODUCER_ID:
            start = FIRST_PRODUCER_ID
        return ProducerIdsBlock(broker_id, start, self.block_size)

    def handle_allocate_producer_ids(
        self, state: ControllerState, broker_id: int, broker_epoch: int, records: list[Any]
    ) -> ProducerIdsBlock:
        """AllocateProducerIds (Kafka's ``generateNextProducerId``): appends the block's
        ProducerIdsRecord to ``records`` and returns the block. Raises
        StaleBrokerEpochException for a requester that is not the current registration and
        UnknownServerException once the ids run out."""
        ClusterControl.check_broker_epoch(state.image, broker_id, broker_epoch)
        block = self.next_block(state, broker_id)
        if block.first_producer_id > MAX_PRODUCER_ID - self.block_size:
            raise UnknownServerException(
                "Exhausted all producerIds as the next block's end producerId has exceeded "
                "the int64 type limit"
            )
        records.append(
            ProducerIdsRecord(
                broker_id=broker_id,
                broker_epoch=broker_epoch,
                next_producer_id=block.next_block_first_id,
            )
        )
        return block
