"""Building controllers and brokers for the controller's tests, and the image's invariants."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterable
from typing import Any

from rackwise.controller import (
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    Controller,
    ControllerConfig,
    Listener,
    ManualClock,
)
from rackwise.image import MetadataImage
from rackwise.metalog import InMemoryMetadataLog

CONTROLLER_ID = 1000


def config(**changes: Any) -> ControllerConfig:
    """The test configuration: controller 1000, Kafka's defaults otherwise."""
    base: dict[str, Any] = {"node_id": CONTROLLER_ID, "controller_ids": frozenset({CONTROLLER_ID})}
    base.update(changes)
    return ControllerConfig(**base)


def new_controller(
    log: Any = None, clock: ManualClock | None = None, seed: int = 7, **changes: Any
) -> Controller:
    return Controller(
        log if log is not None else InMemoryMetadataLog(),
        clock if clock is not None else ManualClock(0),
        config(**changes),
        random=random.Random(seed),
    )


def log_dir(broker_id: int, index: int = 0) -> uuid.UUID:
    return uuid.UUID(int=(1 << 64) + 16 * broker_id + index)


def registration(
    broker_id: int,
    rack: str | None = None,
    *,
    incarnation: int = 0,
    dirs: int = 1,
) -> BrokerRegistrationRequest:
    return BrokerRegistrationRequest(
        broker_id=broker_id,
        incarnation_id=uuid.UUID(int=(broker_id << 32) + incarnation + 1),
        listeners=(Listener("PLAINTEXT", "127.0.0.1", 9092 + broker_id),),
        rack=rack,
        log_dirs=tuple(log_dir(broker_id, i) for i in range(dirs)),
    )


def heartbeat(controller: Controller, broker_id: int, **flags: Any) -> Any:
    """A heartbeat from a broker that has applied the whole log."""
    epoch = controller.image.brokers[broker_id].broker_epoch
    return controller.broker_heartbeat(
        BrokerHeartbeatRequest(broker_id, epoch, controller.end_offset - 1, **flags)
    )


def start_brokers(controller: Controller, racks: dict[int, str | None] | Iterable[int]) -> None:
    """Register each broker and heartbeat it until unfenced."""
    items = racks.items() if isinstance(racks, dict) else ((b, None) for b in racks)
    for broker_id, rack in items:
        controller.register_broker(registration(broker_id, rack))
        reply = heartbeat(controller, broker_id)
        assert not reply.is_fenced


def partitions(image: MetadataImage, topic: str) -> list[Any]:
    current = image.topic(topic)
    assert current is not None, topic
    return [current.partitions[p] for p in sorted(current.partitions)]


def check_invariants(image: MetadataImage, *, elr: bool = True) -> None:
    """What must hold of every image the controller makes: each leader is in its ISR and
    active; replicas are distinct; ISR and ELR are replicas, disjoint; with ELR, no fenced
    broker is in an ISR; directories match replicas."""
    for topic, p in image.iter_partitions():
        where = f"{topic.name}-{p.partition_id} {p}"
        assert len(set(p.replicas)) == len(p.replicas), where
        assert set(p.isr) <= set(p.replicas), where
        assert len(set(p.isr)) == len(p.isr), where
        assert len(p.directories) == len(p.replicas), where
        elr_set = set(p.eligible_leader_replicas or ())
        assert elr_set <= set(p.replicas) and not elr_set & set(p.isr), where
        if p.leader != -1:
            assert p.leader in p.isr, where
            broker = image.brokers.get(p.leader)
            assert broker is not None and not broker.fenced, where
            assert not broker.in_controlled_shutdown, where
        if elr:
            for member in p.isr:
                broker = image.brokers.get(member)
                assert broker is not None and not broker.fenced, where
