"""Log directories in the controller (KIP-858): where each replica lives, and what happens when
a broker says a directory failed (Kafka's ``ReplicationControlManager.handleAssignReplicasToDirs``
and ``handleDirectoriesOffline``).

Goals
    * AssignReplicasToDirs: a broker says which of its directories holds each of its
      replicas; the partition's ``Directories`` entry for that broker changes (a
      PartitionChangeRecord carrying only the directories), so that the controller knows which
      replicas a failed directory takes with it. A replica reported in a directory that is not
      online loses its leadership and ISR place at once.
    * A heartbeat naming offline directories: every replica of that broker in one of them
      leaves its ISR and its leadership (a leader is elected among the other acceptable
      replicas), and the broker's registration keeps only its online directories (a
      BrokerRegistrationChangeRecord), so later elections skip those replicas too.

Constraints
    Per partition answers as Kafka's: UNKNOWN_TOPIC_ID for a topic id the image lacks,
    UNKNOWN_TOPIC_OR_PARTITION for a partition it lacks, NOT_LEADER_OR_FOLLOWER when the
    broker holds no replica of it; a stale broker epoch fails the whole request. A directory
    already offline in the registration is not handled twice.

Worked example
    Broker 2 (directories A and B) holds t-0 in B, as its leader, with ISR [2, 1, 3]. Its
    heartbeat names B offline: t-0 gets leader 1 and ISR [1, 3]; the registration of broker 2
    now lists only A. Broker 2 keeps serving its replicas in A.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from rackwise.common.error_codes import (
    NONE,
    NOT_LEADER_OR_FOLLOWER,
    UNKNOWN_TOPIC_ID,
    UNKNOWN_TOPIC_OR_PARTITION,
)
from rackwise.controller.brokers import replica_directory
from rackwise.controller.replication import ReplicationControl
from rackwise.controller.state import ControllerState
from rackwise.records import BrokerRegistrationChangeRecord
from rackwise.records.constants import (
    DIRECTORY_LOST,
    DIRECTORY_MIGRATING,
    DIRECTORY_UNASSIGNED,
    NO_FENCING_CHANGE,
)
from rackwise.records.metadata import PartitionChangeRecord

Assignment = tuple[uuid.UUID, int, uuid.UUID]
"""(topic id, partition, directory id)."""


def is_online_dir(state: ControllerState, broker_id: int, directory: uuid.UUID) -> bool:
    registration = state.image.brokers.get(broker_id)
    if registration is None or directory == DIRECTORY_LOST:
        return False
    if directory in (DIRECTORY_UNASSIGNED, DIRECTORY_MIGRATING) or not registration.log_dirs:
        return True
    return directory in registration.log_dirs


def assign_replicas_to_dirs(
    replication: ReplicationControl,
    state: ControllerState,
    broker_id: int,
    assignments: Iterable[Assignment],
    records: list[Any],
) -> dict[tuple[uuid.UUID, int], int]:
    """The records of an AssignReplicasToDirs (module docstring), its broker epoch checked by
    the caller; the code of each item."""
    codes: dict[tuple[uuid.UUID, int], int] = {}
    offline: list[tuple[uuid.UUID, int]] = []
    for topic_id, index, directory in assignments:
        topic = state.image.topics_by_id.get(topic_id)
        partition = topic.partitions.get(index) if topic is not None else None
        if topic is None:
            codes[(topic_id, index)] = UNKNOWN_TOPIC_ID
        elif partition is None:
            codes[(topic_id, index)] = UNKNOWN_TOPIC_OR_PARTITION
        elif broker_id not in partition.replicas:
            codes[(topic_id, index)] = NOT_LEADER_OR_FOLLOWER
        else:
            codes[(topic_id, index)] = NONE
            if replica_directory(partition, broker_id) != directory:
                directories = [
                    directory if replica == broker_id else known
                    for replica, known in zip(
                        partition.replicas, _padded(partition.directories, partition), strict=True
                    )
                ]
                records.append(
                    PartitionChangeRecord(
                        partition_id=index, topic_id=topic_id, directories=tuple(directories)
                    )
                )
            if not is_online_dir(state, broker_id, directory):
                offline.append((topic_id, index))
    if offline:
        replication.update_leaders_and_isrs(state.image, offline, records, remove=broker_id)
    return codes


def _padded(directories: Sequence[uuid.UUID], partition: Any) -> list[uuid.UUID]:
    if len(directories) == len(partition.replicas):
        return list(directories)
    return [DIRECTORY_UNASSIGNED] * len(partition.replicas)


def handle_directories_offline(
    replication: ReplicationControl,
    state: ControllerState,
    broker_id: int,
    broker_epoch: int,
    offline_dirs: Sequence[uuid.UUID],
    records: list[Any],
) -> None:
    """A heartbeat's offline directories (module docstring)."""
    registration = state.image.brokers.get(broker_id)
    if registration is None:
        return
    newly = {d for d in offline_dirs if d in registration.log_dirs}
    if not newly:
        return
    hit = [
        (topic_id, index)
        for topic_id, topic in state.image.topics_by_id.items()
        for index, partition in topic.partitions.items()
        if broker_id in partition.replicas and replica_directory(partition, broker_id) in newly
    ]
    replication.update_leaders_and_isrs(state.image, hit, records, remove=broker_id)
    records.append(
        BrokerRegistrationChangeRecord(
            broker_id=broker_id,
            broker_epoch=broker_epoch,
            fenced=NO_FENCING_CHANGE,
            in_controlled_shutdown=NO_FENCING_CHANGE,
            log_dirs=tuple(d for d in registration.log_dirs if d not in newly),
        )
    )
