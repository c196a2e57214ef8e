"""Producer ids on a broker: blocks from the controller (Kafka's ``RPCProducerIdManager``) and
the InitProducerId request of idempotent producers.

Goals
    Hand every idempotent producer an id no producer of the cluster ever had, at once: ids
    come from the current block of 1000 that the controller allocated to this broker
    (AllocateProducerIds, :mod:`rackwise.controller.producer_ids`), and the next block is
    asked for when 90% of the current one is used, so InitProducerId rarely waits for the
    controller. Answer InitProducerId as Kafka 4.1 answers a producer without a
    ``transactional.id``.

Constraints
    * Soft state only: the blocks live in memory; a restarted broker asks for a new block
      (ids are never reused, some are never handed out, as in Kafka).
    * One request for a block at a time, over one connection to the controller kept open
      between requests (``connect`` makes a new one when it is lost). A failed request (no
      connection, a timeout, an error from the controller: STALE_BROKER_EPOCH before this
      broker's registration is known, BROKER_ID_NOT_REGISTERED) is sent again after a
      backoff doubling from :data:`RETRY_BACKOFF_MS` (Kafka's) to
      :data:`MAX_RETRY_BACKOFF_MS`, until a block arrives. A block that starts below the
      current one's last id, or is empty or out of range, is refused (logged) and asked
      for again, as Kafka's ``sanityCheckResponse``.
    * A producer id request waits for a block at most ``block_wait_ms``, a registered
      wait, not a poll; then it fails with COORDINATOR_LOAD_IN_PROGRESS (14), Kafka's answer
      (retriable in every client; Kafka's comment: older clients take REQUEST_TIMED_OUT as
      fatal). Kafka 4.1 answers so at once, without waiting; waiting a little spares the
      client its retry when the block is on its way (the first InitProducerId after start).
    * InitProducerId (:func:`init_producer_id`), as Kafka's ``KafkaApis`` and
      ``TransactionCoordinator.handleInitProducerId`` with a null transactional id: a new id
      with epoch 0, always, whatever producer id and epoch a v3+ request carries (KIP-360's
      epoch bump is for transactional producers; for an idempotent one Kafka 4 allocates
      afresh); a producer id without an epoch, or an epoch without an id, is INVALID_REQUEST
      (checked first, as Kafka does). Failures answer producer id -1 and epoch -1.
    * Transactions are not served (no transaction coordinator, AddPartitionsToTxn, EndTxn...):
      FindCoordinator for a transactional id is answered TRANSACTIONAL_ID_AUTHORIZATION_FAILED
      (:mod:`rackwise.coordinator.group_coordinator`), so a transactional producer of librdkafka or
      kafka-python stops there, before it sends InitProducerId. A client that sends
      InitProducerId anyway with a transactional id gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED
      (53), with an empty one INVALID_REQUEST as in Kafka. 53 is the one code both librdkafka
      and kafka-python treat as fatal at once, naming the transactional id ("Failed to acquire
      transactional PID from broker ...: Broker: Transactional Id authorization failed";
      kafka-python raises TransactionalIdAuthorizationFailedError), and the one Kafka itself
      answers when a transactional feature is turned off (2PC without
      ``transaction.two.phase.commit.enable``). INVALID_REQUEST and UNSUPPORTED_VERSION are
      fatal in kafka-python ("Unexpected error in InitProducerIdResponse") but librdkafka
      retries them until ``init_transactions`` times out. The broker logs why.

Algorithm
    :meth:`RpcProducerIdManager.generate_producer_id`: claim the next id of the current
    block; claiming its 901st id starts the fetch of the next block. When the current block
    is used up, the prefetched block becomes current; when there is none, start the fetch
    and wait for its arrival (or the deadline), then claim again. The fetch is one task:
    request, and on failure sleep the backoff and request again; on success keep the block
    as the next one and wake the waiters.

Worked example
    Broker 2 (epoch 17) starts: the first InitProducerId finds no block, asks the controller
    (AllocateProducerIds(2, 17)), gets ids 3000-3999 (blocks 0-2999 went to others) and answers
    producer id 3000, epoch 0. The 901st producer (id 3900) starts the fetch of the next
    block, 5000-5999 (4000-4999 went to broker 1 meanwhile); producer 1001 gets 5000.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from rackwise.common.error_codes import (
    BROKER_ID_NOT_REGISTERED,
    COORDINATOR_LOAD_IN_PROGRESS,
    INVALID_REQUEST,
    NONE,
    NOT_CONTROLLER,
    STALE_BROKER_EPOCH,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
)
from rackwise.common.errors import RackwiseError
from rackwise.controller import ProducerIdsBlock
from rackwise.controller.producer_ids import MAX_PRODUCER_ID
from rackwise.net import ConnectionSlot, KafkaConnection, NetworkException
from rackwise.protocol import ApiKey, ProtocolError, Response, UnsupportedVersionException, make
from rackwise.protocol import response_class as protocol_response_class

LOG: Final = logging.getLogger("rackwise.broker.producer_ids")

NO_PRODUCER_ID: Final = -1
"""Kafka's ``RecordBatch.NO_PRODUCER_ID``: a request without one; the id of a failed answer."""
NO_PRODUCER_EPOCH: Final = -1
"""Kafka's ``RecordBatch.NO_PRODUCER_EPOCH``."""
FIRST_EPOCH: Final = 0
"""The epoch of a new producer id."""
RETRY_BACKOFF_MS: Final = 50
"""Kafka's ``RPCProducerIdManager.RETRY_BACKOFF_MS``: the first wait after a failed request."""
MAX_RETRY_BACKOFF_MS: Final = 1000
"""The longest wait between requests (Kafka's ``retry.backoff.max.ms`` default)."""
PREFETCH_THRESHOLD: Final = 0.9
"""The share of a block used when the next one is asked for (Kafka's 90%)."""
DEFAULT_BLOCK_WAIT_MS: Final = 1000
"""How long a producer id request waits for a block before COORDINATOR_LOAD_IN_PROGRESS."""
REQUEST_TIMEOUT_S: Final = 10.0

Connector = Callable[[], Awaitable[KafkaConnection]]


class CoordinatorLoadInProgressException(RackwiseError):
    """Kafka's COORDINATOR_LOAD_IN_PROGRESS (14): no producer id block is available yet."""

    error_code = COORDINATOR_LOAD_IN_PROGRESS
    retriable = True
    default_message: ClassVar[str] = "Producer ID block is full. Waiting for next block"


@dataclass(slots=True)
class _Block:
    """The block ids are claimed from: ``next_id`` is the next one to hand out."""

    block: ProducerIdsBlock
    next_id: int

    @property
    def prefetch_id(self) -> int:
        """Claiming this id starts the fetch of the next block (Kafka's 90% mark)."""
        return self.block.first_producer_id + int(self.block.size * PREFETCH_THRESHOLD)


class RpcProducerIdManager:
    """Producer ids from blocks the controller allocates (see the module docstring).
    ``broker_epoch`` reads this broker's current registration epoch; ``connect`` opens a
    connection to the controller (versions are negotiated here)."""

    def __init__(
        self,
        broker_id: int,
        broker_epoch: Callable[[], int],
        connect: Connector,
        *,
        block_wait_ms: int = DEFAULT_BLOCK_WAIT_MS,
        retry_backoff_ms: int = RETRY_BACKOFF_MS,
        max_retry_backoff_ms: int = MAX_RETRY_BACKOFF_MS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.broker_id = broker_id
        self.broker_epoch = broker_epoch
        self.block_wait_ms = block_wait_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.max_retry_backoff_ms = max_retry_backoff_ms
        self.clock = clock
        self._current: _Block | None = None
        self._next: ProducerIdsBlock | None = None
        self._arrived = asyncio.Event()
        self._fetch: asyncio.Task[None] | None = None
        self._controller = ConnectionSlot(connect, negotiate_timeout_s=REQUEST_TIMEOUT_S)
        self._is_closed = False
        self.num_requests = 0
        """AllocateProducerIds requests sent (for tests and metrics)."""

    @property
    def current_block(self) -> ProducerIdsBlock | None:
        return None if self._current is None else self._current.block

    @property
    def next_block(self) -> ProducerIdsBlock | None:
        """The block fetched ahead, waiting for the current one to run out."""
        return self._next

    async def generate_producer_id(self) -> int:
        """A new producer id; raises CoordinatorLoadInProgressException when no block came
        within ``block_wait_ms``."""
        deadline = self.clock() + self.block_wait_ms / 1000
        while True:
            if self._is_closed:
                raise CoordinatorLoadInProgressException(
                    CoordinatorLoadInProgressException.default_message
                )
            producer_id = self._claim()
            if producer_id is not None:
                return producer_id
            self._start_fetch()
            remaining_s = deadline - self.clock()
            if remaining_s <= 0:
                raise CoordinatorLoadInProgressException(
                    CoordinatorLoadInProgressException.default_message
                )
            arrived = self._arrived
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(arrived.wait(), remaining_s)

    def _claim(self) -> int | None:
        current = self._current
        if current is None or current.next_id > current.block.last_producer_id:
            if self._next is None:
                return None
            current = self._current = _Block(self._next, self._next.first_producer_id)
            self._next = None
        producer_id = current.next_id
        current.next_id += 1
        if producer_id == current.prefetch_id:
            self._start_fetch()
        return producer_id

    # ---- fetching blocks -------------------------------------------------------------------

    def _start_fetch(self) -> None:
        if self._next is not None or self._is_closed:
            return
        if self._fetch is None or self._fetch.done():
            self._fetch = asyncio.get_running_loop().create_task(
                self._fetch_next_block(), name=f"producer-ids-{self.broker_id}"
            )

    async def _fetch_next_block(self) -> None:
        """Ask until a good block arrives; keep it as the next one and wake the waiters."""
        backoff_ms = self.retry_backoff_ms
        while True:
            block = await self._request_block()
            if block is not None:
                self._next = block
                arrived, self._arrived = self._arrived, asyncio.Event()
                arrived.set()
                return
            await asyncio.sleep(backoff_ms / 1000)
            backoff_ms = min(backoff_ms * 2, self.max_retry_backoff_ms)

    async def _request_block(self) -> ProducerIdsBlock | None:
        """One AllocateProducerIds; the block, or None (logged) when there is none to use."""
        epoch = self.broker_epoch()
        try:
            connection = await self._controller.get()
            self.num_requests += 1
            response = await connection.request(
                ApiKey.ALLOCATE_PRODUCER_IDS,
                broker_id=self.broker_id,
                broker_epoch=epoch,
                timeout_s=REQUEST_TIMEOUT_S,
            )
        except (NetworkException, ProtocolError, UnsupportedVersionException) as e:
            LOG.warning("asking the controller for producer ids failed, will retry: %s", e)
            await self._controller.drop()
            return None
        error = int(response.error_code)
        if error == STALE_BROKER_EPOCH:
            LOG.warning("producer ids refused: broker epoch %d is stale, will retry", epoch)
        elif error == BROKER_ID_NOT_REGISTERED:
            LOG.warning("producer ids refused: broker %d is not registered yet", self.broker_id)
        elif error == NOT_CONTROLLER:
            LOG.info("producer ids: the active controller changed, will retry")
        elif error != NONE:
            LOG.error("producer ids refused with error %d, will retry", error)
        else:
            return self._checked(int(response.producer_id_start), int(response.producer_id_len))
        return None

    def _checked(self, start: int, length: int) -> ProducerIdsBlock | None:
        """Kafka's ``sanityCheckResponse``: monotonic and within int64 (and not empty)."""
        current = self.current_block
        if current is not None and start < current.last_producer_id:
            LOG.error(
                "producer id block %d+%d is not after the current one (%d-%d)",
                start,
                length,
                current.first_producer_id,
                current.last_producer_id,
            )
        elif start < 0 or length <= 0 or start > MAX_PRODUCER_ID - length:
            LOG.error("producer id block %d+%d is not a range of ids", start, length)
        else:
            LOG.info("producer ids %d-%d from the controller", start, start + length - 1)
            return ProducerIdsBlock(self.broker_id, start, length)
        return None

    async def close(self) -> None:
        """Stop fetching and handing out ids: waiting and later requests fail with
        COORDINATOR_LOAD_IN_PROGRESS."""
        self._is_closed = True
        fetch, self._fetch = self._fetch, None
        if fetch is not None:
            fetch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await fetch
        self._arrived.set()
        await self._controller.drop()


# ---- InitProducerId --------------------------------------------------------------------------


def _init_response(body: Any, error_code: int, producer_id: int, epoch: int) -> Response:
    cls = protocol_response_class(ApiKey.INIT_PRODUCER_ID, int(type(body).__version__))
    return make(
        cls,
        throttle_time=0,
        error_code=error_code,
        producer_id=producer_id,
        producer_epoch=epoch,
    )


def init_producer_id_error(body: Any, error_code: int) -> Response:
    """An InitProducerId failure: the error, producer id -1, epoch -1 (Kafka's
    ``initTransactionError``)."""
    return _init_response(body, error_code, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)


async def init_producer_id(body: Any, manager: RpcProducerIdManager) -> Response:
    """The answer to an InitProducerId request (any version served) of an idempotent producer
    (see the module docstring)."""
    producer_id = int(getattr(body, "producer_id", NO_PRODUCER_ID))
    epoch = int(getattr(body, "producer_epoch", NO_PRODUCER_EPOCH))
    if (producer_id == NO_PRODUCER_ID) != (epoch == NO_PRODUCER_EPOCH):
        return init_producer_id_error(body, INVALID_REQUEST)
    transactional_id = body.transactional_id
    if transactional_id is not None:
        if transactional_id == "":
            return init_producer_id_error(body, INVALID_REQUEST)
        LOG.info(
            "refused InitProducerId for transactional id %r: transactions are not supported",
            transactional_id,
        )
        return init_producer_id_error(body, TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    try:
        new_id = await manager.generate_producer_id()
    except RackwiseError as e:
        return init_producer_id_error(body, e.error_code)
    return _init_response(body, NONE, new_id, FIRST_EPOCH)
