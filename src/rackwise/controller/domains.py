"""The controller's rules on failure domains: ``min.insync.racks`` against an assignment, and
``leaders.preference`` in leader elections (:mod:`rackwise.topology.domains` holds the pure
counting and ordering).

Goals
    * :func:`check_assignment_domains`: a partition whose replicas lie in fewer domains (at
      ``min.insync.racks.level``) than ``min.insync.racks`` can never take an acks=all write,
      so CreateTopics, CreatePartitions and reassignments that would make one are refused,
      naming the domains: INVALID_REPLICA_ASSIGNMENT for an assignment the request gave,
      INVALID_CONFIG for a placement (the topic's config is impossible on this cluster).
    * :func:`leader_order`: the order leader elections try replicas in, by the topic's
      ``leaders.preference`` (None under ``none``: Kafka's replica order);
      :func:`preferred_leader`: where the preferred-leader balancing moves leadership: the
      first replica, or, with a preference, the first in-sync replica in the most preferred
      domain that has one (so leadership returns there when it is in sync again).

Constraints
    Pure: the image and the effective config values in, records' inputs or typed errors out.
    A stored value that no longer parses counts as the key's default (``none``, 1).

Worked example
    ``min.insync.racks=2`` on a cluster of racks ``/dc1/a``, ``/dc1/b`` only: CreateTopics
    answers INVALID_CONFIG "Partition 0 of t has replicas [1, 2] in 1 failure domain(s) at level
    1 (/dc1), fewer than min.insync.racks=2".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from rackwise.common.errors import InvalidConfigurationException
from rackwise.controller.configschema import (
    LEADERS_PREFERENCE,
    MIN_INSYNC_RACKS,
    MIN_INSYNC_RACKS_LEVEL,
)
from rackwise.controller.errors import InvalidReplicaAssignmentException
from rackwise.image import MetadataImage, PartitionRegistration
from rackwise.records.constants import NO_LEADER
from rackwise.topology import (
    NO_PREFERENCE,
    InvalidLeadersPreferenceException,
    LeadersPreference,
    domains_of,
    parse_leaders_preference,
)

LeaderOrder = Callable[[Sequence[int]], list[int]]


@dataclass(frozen=True, slots=True)
class RackRule:
    """A topic's ``min.insync.racks`` at ``min.insync.racks.level``."""

    required: int = 1
    level: int = 1

    @staticmethod
    def of(values: Mapping[str, str | None]) -> RackRule:
        """From effective values (a missing or unparsable one is its default)."""
        return RackRule(
            _positive(values.get(MIN_INSYNC_RACKS)), _positive(values.get(MIN_INSYNC_RACKS_LEVEL))
        )


def _positive(text: str | None) -> int:
    try:
        return max(1, int((text or "1").strip()))
    except ValueError:
        return 1


def racks_of(image: MetadataImage) -> dict[int, str | None]:
    """Each registered broker's rack."""
    return {b: registration.rack for b, registration in image.brokers.items()}


def check_assignment_domains(
    image: MetadataImage,
    topic: str,
    rows: Mapping[int, Sequence[int]],
    rule: RackRule,
    *,
    manual: bool,
) -> None:
    """Refuse ``rows`` (partition -> replicas) if a partition spans fewer domains than
    ``rule`` asks (module docstring)."""
    if rule.required <= 1:
        return
    racks = racks_of(image)
    for pid in sorted(rows):
        replicas = list(rows[pid])
        domains = sorted(set(domains_of(replicas, racks, rule.level).values()))
        if len(domains) >= rule.required:
            continue
        message = (
            f"Partition {pid} of {topic} has replicas {replicas} in {len(domains)} failure "
            f"domain(s) at level {rule.level} ({', '.join(domains)}), fewer than "
            f"{MIN_INSYNC_RACKS}={rule.required}"
        )
        if manual:
            raise InvalidReplicaAssignmentException(message)
        raise InvalidConfigurationException(message)


def parse_preference(value: str | None) -> LeadersPreference:
    """An effective ``leaders.preference`` (an unparsable stored value: ``none``)."""
    if value is None:
        return NO_PREFERENCE
    try:
        return parse_leaders_preference(value)
    except InvalidLeadersPreferenceException:
        return NO_PREFERENCE


def leader_order(image: MetadataImage, preference: LeadersPreference) -> LeaderOrder | None:
    """Replicas in the order elections try them (None: their own order)."""
    if preference.is_none:
        return None
    brokers = image.brokers

    def rack_of(broker: int) -> str | None:
        registration = brokers.get(broker)
        return None if registration is None else registration.rack

    return lambda replicas: preference.order(replicas, rack_of)


def preferred_leader(order: LeaderOrder | None, partition: PartitionRegistration) -> int:
    """Where balancing moves ``partition``'s leadership (module docstring), given its topic's
    :func:`leader_order`."""
    if not partition.replicas:
        return NO_LEADER
    if order is None:
        return int(partition.replicas[0])
    ordered = order(list(partition.replicas))
    isr = set(partition.isr)
    return next((r for r in ordered if r in isr), ordered[0])


def topic_preference(values: Mapping[str, str | None]) -> LeadersPreference:
    """The preference among a topic's effective values."""
    return parse_preference(values.get(LEADERS_PREFERENCE))
