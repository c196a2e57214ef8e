"""The active controller's timers: one fences the brokers whose lease ran out (Kafka's
``maybeFenceStaleBroker``), the other moves leadership back to preferred replicas
(``auto.leader.rebalance.enable``, every ``leader.imbalance.check.interval.seconds`` while some
partition needs it). Each queues its command through the node's group commit (``submit``), so
that what it writes is committed like any other write; both run while the node is the active
controller and are cancelled when it stops being one.

Algorithm
    :func:`fence_loop`: sleep until ``next_check_time_ms`` (at most
    :data:`FENCE_CHECK_MAX_INTERVAL_S`), then queue ``maybe_fence_stale_brokers`` with the
    heartbeats heard on the listener's thread since the last check. :func:`balance_loop`: the
    same over ``next_balance_time_ms`` and ``maybe_balance_partition_leaders``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Final

from rackwise.controller import Controller
from rackwise.controller_node.handlers import Submit

LOG: Final = logging.getLogger("rackwise.controller")
FENCE_CHECK_MAX_INTERVAL_S: Final = 0.25
"""The longest the fencing timer sleeps (a registration may bring its next check closer)."""


async def fence_loop(
    controller: Controller,
    submit: Submit,
    clock: Callable[[], int],
    take_heard: Callable[[], dict[int, tuple[int, int]]],
    session_timeout_ms: int,
) -> None:
    """Fence brokers whose lease ran out (``take_heard``: broker id -> epoch and arrival time
    of the heartbeats heard since the last call); logs each broker fenced."""
    while True:
        due = controller.next_check_time_ms()
        now = clock()
        if due is not None and due <= now:
            fenced = await submit(
                lambda: controller.maybe_fence_stale_brokers(heard=take_heard()),
                lambda error: error,
            )
            if isinstance(fenced, list) and fenced:
                for broker_id in fenced:
                    LOG.info(
                        "fenced broker %d: lease expired (no heartbeat for %d ms)",
                        broker_id,
                        session_timeout_ms,
                    )
                continue
        wait_s = FENCE_CHECK_MAX_INTERVAL_S
        if due is not None and due > now:
            wait_s = min(wait_s, (due - now) / 1000)
        await asyncio.sleep(wait_s)


async def balance_loop(controller: Controller, submit: Submit, clock: Callable[[], int]) -> None:
    """Elect preferred leaders when due; logs each run that wrote records."""
    while True:
        due = controller.next_balance_time_ms()
        now = clock()
        if due is not None and due <= now:
            written = await submit(controller.maybe_balance_partition_leaders, lambda error: error)
            if isinstance(written, int) and written:
                LOG.info(
                    "preferred leader election: %d partition change record(s) written",
                    written,
                )
            continue
        wait_s = FENCE_CHECK_MAX_INTERVAL_S
        if due is not None:
            wait_s = min(wait_s, (due - now) / 1000)
        await asyncio.sleep(wait_s)
