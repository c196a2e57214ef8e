"""Replaying records: the one way the metadata image changes.

Goals
    One replay path for the live log, recovery and snapshot loading (Kafka's
    ``MetadataDelta.replay``): each record type has one handler, and a record that has none, or
    that does not fit the image (a partition of an unknown topic, a fence of a registration that
    is not the current one), raises :class:`ReplayError` at once, never half-applied silently.

Constraints
    The image is immutable and may be shared (the controller keeps the committed image while it
    builds the next); a snapshot of a million partitions must load in seconds.

Algorithm
    A :class:`MetadataDelta` starts from an image and copies, on first write, only what the
    records touch: the broker map, the topic maps, the partition map of each changed topic, the
    keys of each changed config resource. :meth:`MetadataDelta.apply` wraps the copies in
    read-only views as the new image and starts the delta afresh from it, so a long stream of
    records can be applied batch by batch at the cost of the parts each batch changed.

Worked example
    From the empty image, ``RegisterBrokerRecord(broker_id=1, broker_epoch=10, fenced=True,
    ...)``, ``BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=10, fenced=-1)``,
    ``TopicRecord(name="t", topic_id=T)`` and ``PartitionRecord(partition_id=0, topic_id=T,
    replicas=(1,), isr=(1,), leader=1, leader_epoch=0, partition_epoch=0, ...)`` give an image
    with broker 1 unfenced and topic ``t`` of one partition led by 1; a following
    ``PartitionChangeRecord(partition_id=0, topic_id=T, isr=(), leader=-1)`` leaves it
    leaderless with leader epoch 1 and partition epoch 1.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Iterable
from types import MappingProxyType
from typing import Any, Final

from rackwise.common.errors import RackwiseError
from rackwise.image.acls import binding_of
from rackwise.image.model import (
    BrokerRegistration,
    ConfigResource,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
)
from rackwise.records.constants import (
    DIRECTORY_MIGRATING,
    FENCE,
    IN_CONTROLLED_SHUTDOWN,
    NO_FENCING_CHANGE,
    NO_LEADER_CHANGE,
    NO_NEXT_PRODUCER_ID,
    NO_RECOVERY_STATE_CHANGE,
    TOPIC_RESOURCE,
    UNFENCE,
)
from rackwise.records.control import CONTROL_RECORD_CLASSES
from rackwise.records.metadata import PartitionRecord
from rackwise.records.registry import RECORD_TYPES_BY_NAME
from rackwise.security.acl import AclBinding

_LATEST_PARTITION: Final = PartitionRecord
_PARTITION_TYPE: Final = RECORD_TYPES_BY_NAME["PartitionRecord"]
_BROKER_TYPE: Final = RECORD_TYPES_BY_NAME["RegisterBrokerRecord"]
_SCRAM_TYPE: Final = RECORD_TYPES_BY_NAME["UserScramCredentialRecord"]


class ReplayError(RackwiseError, RuntimeError):
    """A record that cannot be replayed onto the image: the log and the image disagree, which
    only a bug can cause. The message starts with ``BUG:`` and names the record."""


def _fail(record: Any, reason: str) -> ReplayError:
    return ReplayError(f"BUG: unable to replay {record!r}: {reason}")


class MetadataDelta:
    """Records replayed onto a base image; :meth:`apply` gives the resulting image. The base
    image never changes; a delta whose replay raised is half applied and must be dropped."""

    def __init__(self, image: MetadataImage | None = None) -> None:
        self._reset(image if image is not None else MetadataImage())

    def _reset(self, image: MetadataImage) -> None:
        self.image = image
        self._features: dict[str, int] | None = None
        self._brokers: dict[int, BrokerRegistration] | None = None
        self._topics_by_id: dict[uuid.UUID, TopicImage] | None = None
        self._topics_by_name: dict[str, TopicImage] | None = None
        self._partitions: dict[uuid.UUID, dict[int, PartitionRegistration]] = {}
        self._configs: dict[ConfigResource, Any] | None = None
        self._changed_configs: set[ConfigResource] = set()
        self._next_producer_id = image.next_producer_id
        self._acls: dict[uuid.UUID, AclBinding] | None = None
        self._scram: dict[tuple[str, int], Any] | None = None

    def replay(self, record: Any) -> None:
        """Apply one record (any version of any metadata record type)."""
        handler = _HANDLERS.get(type(record))
        if handler is None:
            raise ReplayError(
                f"BUG: no replay for {type(record).__qualname__}: not a metadata record type "
                "the image knows"
            )
        handler(self, record)

    def replay_all(self, records: Iterable[Any]) -> MetadataDelta:
        """Apply every record in order; returns the delta for chaining."""
        handlers = _HANDLERS
        for record in records:
            handler = handlers.get(type(record))
            if handler is None:
                self.replay(record)  # raises
            else:
                handler(self, record)
        return self

    def apply(self) -> MetadataImage:
        """The image with every replayed record applied. The delta goes on from that image."""
        base = self.image
        topics_by_id = self._topics_by_id
        topics_by_name = self._topics_by_name
        if self._partitions:
            topics_by_id = self._own_topics_by_id()
            topics_by_name = self._own_topics_by_name()
            for topic_id, partitions in self._partitions.items():
                old = topics_by_id[topic_id]
                new = TopicImage(old.name, topic_id, MappingProxyType(partitions))
                topics_by_id[topic_id] = new
                topics_by_name[old.name] = new
        configs = base.configs
        if self._configs is not None:
            for resource in self._changed_configs:
                keys = self._configs.get(resource)
                if keys is not None and not isinstance(keys, MappingProxyType):
                    self._configs[resource] = MappingProxyType(keys)
            configs = MappingProxyType(self._configs)
        image = MetadataImage(
            features=_view(self._features, base.features),
            brokers=_view(self._brokers, base.brokers),
            topics_by_id=_view(topics_by_id, base.topics_by_id),
            topics_by_name=_view(topics_by_name, base.topics_by_name),
            configs=configs,
            next_producer_id=self._next_producer_id,
            acls=_view(self._acls, base.acls),
            scram_credentials=_view(self._scram, base.scram_credentials),
        )
        self._reset(image)
        return image

    # ---- copy on write ----------------------------------------------------------------------

    def _own_features(self) -> dict[str, int]:
        if self._features is None:
            self._features = dict(self.image.features)
        return self._features

    def _own_brokers(self) -> dict[int, BrokerRegistration]:
        if self._brokers is None:
            self._brokers = dict(self.image.brokers)
        return self._brokers

    def _own_topics_by_id(self) -> dict[uuid.UUID, TopicImage]:
        if self._topics_by_id is None:
            self._topics_by_id = dict(self.image.topics_by_id)
        return self._topics_by_id

    def _own_topics_by_name(self) -> dict[str, TopicImage]:
        if self._topics_by_name is None:
            self._topics_by_name = dict(self.image.topics_by_name)
        return self._topics_by_name

    def _own_partitions(self, topic_id: uuid.UUID) -> dict[int, PartitionRegistration] | None:
        partitions = self._partitions.get(topic_id)
        if partitions is None:
            topics = (
                self._topics_by_id if self._topics_by_id is not None else self.image.topics_by_id
            )
            topic = topics.get(topic_id)
            if topic is None:
                return None
            partitions = self._partitions[topic_id] = dict(topic.partitions)
        return partitions

    def _own_configs(self) -> dict[ConfigResource, Any]:
        if self._configs is None:
            self._configs = dict(self.image.configs)
        return self._configs

    def _own_config(self, resource: ConfigResource) -> dict[str, str]:
        configs = self._own_configs()
        keys = configs.get(resource)
        if resource not in self._changed_configs or keys is None:
            keys = dict(keys or {})
            configs[resource] = keys
            self._changed_configs.add(resource)
        return keys

    def _drop_config(self, resource: ConfigResource) -> None:
        configs = self._configs if self._configs is not None else self.image.configs
        if resource in configs:
            del self._own_configs()[resource]

    # ---- brokers --------------------------------------------------------------------------------

    def _register_broker(self, record: Any) -> None:
        registration = _BROKER_TYPE.upgrade(record)
        if registration.broker_id < 0:
            raise _fail(record, "a broker id cannot be negative")
        self._own_brokers()[registration.broker_id] = registration

    def _current_registration(self, record: Any, broker_id: int, epoch: int) -> Any:
        brokers = self._brokers if self._brokers is not None else self.image.brokers
        registration = brokers.get(broker_id)
        if registration is None:
            raise _fail(record, "no broker registration found for that id")
        if registration.broker_epoch != epoch:
            raise _fail(
                record,
                f"no broker registration with that epoch found (current epoch "
                f"{registration.broker_epoch})",
            )
        return registration

    def _unregister_broker(self, record: Any) -> None:
        self._current_registration(record, record.broker_id, record.broker_epoch)
        del self._own_brokers()[record.broker_id]

    def _fence_broker(self, record: Any) -> None:
        self._change_registration(record, record.id, record.epoch, FENCE, NO_FENCING_CHANGE, ())

    def _unfence_broker(self, record: Any) -> None:
        self._change_registration(record, record.id, record.epoch, UNFENCE, NO_FENCING_CHANGE, ())

    def _broker_registration_change(self, record: Any) -> None:
        self._change_registration(
            record,
            record.broker_id,
            record.broker_epoch,
            record.fenced,
            getattr(record, "in_controlled_shutdown", NO_FENCING_CHANGE),
            getattr(record, "log_dirs", ()),
        )

    def _change_registration(
        self,
        record: Any,
        broker_id: int,
        epoch: int,
        fenced: int,
        in_controlled_shutdown: int,
        log_dirs: tuple[uuid.UUID, ...],
    ) -> None:
        registration = self._current_registration(record, broker_id, epoch)
        if fenced not in (FENCE, UNFENCE, NO_FENCING_CHANGE):
            raise _fail(record, f"unknown value for fenced field: {fenced}")
        if in_controlled_shutdown not in (IN_CONTROLLED_SHUTDOWN, NO_FENCING_CHANGE):
            raise _fail(
                record, f"unknown value for inControlledShutdown field: {in_controlled_shutdown}"
            )
        changes: dict[str, Any] = {}
        if fenced != NO_FENCING_CHANGE:
            changes["fenced"] = fenced == FENCE
        if in_controlled_shutdown == IN_CONTROLLED_SHUTDOWN:
            changes["in_controlled_shutdown"] = True
        if log_dirs:
            changes["log_dirs"] = tuple(log_dirs)
        if changes:
            self._own_brokers()[broker_id] = dataclasses.replace(registration, **changes)

    # ---- topics and partitions ------------------------------------------------------------------

    def _topic(self, record: Any) -> None:
        by_id = self._own_topics_by_id()
        by_name = self._own_topics_by_name()
        if record.topic_id in by_id:
            raise _fail(record, f"topic id is already topic {by_id[record.topic_id].name!r}")
        if record.name in by_name:
            raise _fail(record, "a topic of that name already exists")
        topic = TopicImage(record.name, record.topic_id, MappingProxyType({}))
        by_id[record.topic_id] = topic
        by_name[record.name] = topic

    def _partition(self, record: Any) -> None:
        if type(record) is not _LATEST_PARTITION:
            record = _PARTITION_TYPE.upgrade(record)
        partitions = self._own_partitions(record.topic_id)
        if partitions is None:
            raise _fail(record, "no such topic")
        if record.partition_id < 0:
            raise _fail(record, "a partition id cannot be negative")
        elr, last_elr = record.eligible_leader_replicas, record.last_known_elr
        if (
            len(record.directories) == len(record.replicas)
            and (elr is None or elr)
            and (last_elr is None or last_elr)
        ):
            partitions[record.partition_id] = record  # already as the image keeps it
            return
        normal = _normalize_partition(record)
        if normal is None:
            raise _fail(record, "the lengths for replicas and directories do not match")
        partitions[record.partition_id] = normal

    def _partition_change(self, record: Any) -> None:
        partitions = self._own_partitions(record.topic_id)
        if partitions is None:
            raise _fail(record, "no such topic")
        current = partitions.get(record.partition_id)
        if current is None:
            raise _fail(record, "no such partition")
        merged = _merge(current, record)
        if merged is None:
            raise _fail(record, "the lengths for replicas and directories do not match")
        partitions[record.partition_id] = merged

    def _remove_topic(self, record: Any) -> None:
        by_id = self._own_topics_by_id()
        topic = by_id.pop(record.topic_id, None)
        if topic is None:
            raise _fail(record, "no such topic found")
        del self._own_topics_by_name()[topic.name]
        self._partitions.pop(record.topic_id, None)
        self._drop_config(ConfigResource(TOPIC_RESOURCE, topic.name))

    # ---- configs and features -------------------------------------------------------------------

    def _config(self, record: Any) -> None:
        resource = ConfigResource(record.resource_type, record.resource_name)
        keys = self._own_config(resource)
        if record.value is None:
            keys.pop(record.name, None)
        else:
            keys[record.name] = record.value
        if not keys:
            self._drop_config(resource)

    def _feature_level(self, record: Any) -> None:
        features = self._own_features()
        if record.feature_level == 0:
            features.pop(record.name, None)
        else:
            features[record.name] = record.feature_level

    def _producer_ids(self, record: Any) -> None:
        """A block of producer ids handed out: the next one starts at ``next_producer_id``,
        which only ever grows (Kafka's controller refuses a replay that does not)."""
        current = self._next_producer_id
        if record.next_producer_id < 0 or (
            current != NO_NEXT_PRODUCER_ID and record.next_producer_id <= current
        ):
            raise _fail(
                record,
                f"the next producer id must be above the current one ({current}) and not negative",
            )
        self._next_producer_id = record.next_producer_id

    # ---- ACLs -----------------------------------------------------------------------------------

    def _access_control_entry(self, record: Any) -> None:
        if self._acls is None:
            self._acls = dict(self.image.acls)
        try:
            self._acls[record.id] = binding_of(record)
        except ValueError as e:
            raise _fail(record, str(e)) from None

    def _remove_access_control_entry(self, record: Any) -> None:
        if self._acls is None:
            self._acls = dict(self.image.acls)
        if self._acls.pop(record.id, None) is None:
            raise _fail(record, "no such ACL")

    def _user_scram_credential(self, record: Any) -> None:
        """A user's credential for one mechanism, set or replaced."""
        if self._scram is None:
            self._scram = dict(self.image.scram_credentials)
        self._scram[(record.name, record.mechanism)] = _SCRAM_TYPE.upgrade(record)

    def _remove_user_scram_credential(self, record: Any) -> None:
        """A user's credential for one mechanism deleted; it must exist (as Kafka's
        ``ScramControlManager`` replays it)."""
        if self._scram is None:
            self._scram = dict(self.image.scram_credentials)
        if self._scram.pop((record.name, record.mechanism), None) is None:
            raise _fail(record, "there is no such credential to delete")

    def _no_op(self, record: Any) -> None:
        """Nothing to apply: a NoOpRecord or a control record only moves the log's offset on."""


def _view(owned: dict[Any, Any] | None, base: Any) -> Any:
    return base if owned is None else MappingProxyType(owned)


def _normalize_partition(record: Any) -> Any | None:
    """The record as the image keeps it (Kafka's PartitionRegistration): directories default
    to MIGRATING for each replica, an empty ELR is no ELR. None if directories mismatch."""
    directories = record.directories
    changes: dict[str, Any] = {}
    count = len(record.replicas)
    if len(directories) != count:
        if any(d != DIRECTORY_MIGRATING for d in directories):
            return None
        changes["directories"] = (DIRECTORY_MIGRATING,) * count
    if record.eligible_leader_replicas == ():
        changes["eligible_leader_replicas"] = None
    if record.last_known_elr == ():
        changes["last_known_elr"] = None
    return dataclasses.replace(record, **changes) if changes else record


def _merge(current: Any, change: Any) -> Any | None:
    """Kafka's ``PartitionRegistration.merge``: apply a PartitionChangeRecord."""
    changes: dict[str, Any] = {"partition_epoch": current.partition_epoch + 1}
    for name in ("replicas", "isr", "removing_replicas", "adding_replicas"):
        value = getattr(change, name)
        if value is not None:
            changes[name] = tuple(value)
    for name in ("directories", "eligible_leader_replicas", "last_known_elr"):
        value = getattr(change, name, None)
        if value is not None:
            changes[name] = tuple(value)
    if change.leader != NO_LEADER_CHANGE:
        changes["leader"] = change.leader
        changes["leader_epoch"] = current.leader_epoch + 1
    if change.leader_recovery_state != NO_RECOVERY_STATE_CHANGE:
        changes["leader_recovery_state"] = change.leader_recovery_state
    return _normalize_partition(dataclasses.replace(current, **changes))


_BY_NAME: Final[dict[str, Callable[[MetadataDelta, Any], None]]] = {
    "RegisterBrokerRecord": MetadataDelta._register_broker,
    "UnregisterBrokerRecord": MetadataDelta._unregister_broker,
    "TopicRecord": MetadataDelta._topic,
    "PartitionRecord": MetadataDelta._partition,
    "ConfigRecord": MetadataDelta._config,
    "PartitionChangeRecord": MetadataDelta._partition_change,
    "FenceBrokerRecord": MetadataDelta._fence_broker,
    "UnfenceBrokerRecord": MetadataDelta._unfence_broker,
    "RemoveTopicRecord": MetadataDelta._remove_topic,
    "FeatureLevelRecord": MetadataDelta._feature_level,
    "BrokerRegistrationChangeRecord": MetadataDelta._broker_registration_change,
    "ProducerIdsRecord": MetadataDelta._producer_ids,
    "NoOpRecord": MetadataDelta._no_op,
    "AccessControlEntryRecord": MetadataDelta._access_control_entry,
    "RemoveAccessControlEntryRecord": MetadataDelta._remove_access_control_entry,
    "UserScramCredentialRecord": MetadataDelta._user_scram_credential,
    "RemoveUserScramCredentialRecord": MetadataDelta._remove_user_scram_credential,
}
_HANDLERS: Final[dict[type, Callable[[MetadataDelta, Any], None]]] = {
    cls: _BY_NAME[name]
    for name, record_type in RECORD_TYPES_BY_NAME.items()
    if name in _BY_NAME
    for cls in record_type.classes.values()
} | {cls: MetadataDelta._no_op for cls in CONTROL_RECORD_CLASSES}
"""The replay dispatch: every version's class of every record type the image applies, and the
control records (a leader change, a snapshot's header or footer), which only take offsets. A
record type without an entry (a schema added without its replay) falls to the loud default."""


def replay(records: Iterable[Any], image: MetadataImage | None = None) -> MetadataImage:
    """The image ``records`` make of ``image`` (the empty image by default)."""
    return MetadataDelta(image).replay_all(records).apply()
