"""The controller's logic (KIP-631): commands that produce metadata records and replies, and
the brokers' lifecycle, over an injected metadata log and clock. No sockets and no threads: the
network layer drives a :class:`Controller` one call at a time.

* :mod:`~rackwise.controller.controller`: :class:`Controller`, the facade: each command runs
  against the image, its records are appended durably and replayed, then it answers; it
  recovers from the log when it opens and snapshots when due.
* :mod:`~rackwise.controller.cluster`: :class:`ClusterControl`, registrations, heartbeats,
  fencing of brokers whose lease ran out.
* :mod:`~rackwise.controller.heartbeat`: :class:`BrokerHeartbeatTracker`, the soft state.
* :mod:`~rackwise.controller.replication`: :class:`ReplicationControl`, topics and partitions,
  leadership when brokers come and go, and the move back to preferred leaders;
  :mod:`~rackwise.controller.partition_change` builds each PartitionChangeRecord as Kafka's
  ``PartitionChangeBuilder`` does; :mod:`~rackwise.controller.new_partitions` gives the
  partitions of new topics and of CreatePartitions their replicas.
* :mod:`~rackwise.controller.configs`: :class:`ConfigControl`, topic and broker configurations.
* :mod:`~rackwise.controller.placing`: which brokers a placer sees; KIP-879's
  CreateReplicaPlacement.
* :mod:`~rackwise.controller.producer_ids`: :class:`ProducerIdControl`, blocks of producer ids
  for brokers (AllocateProducerIds).
* :mod:`~rackwise.controller.state`: :class:`ControllerState`, the image and what the controller
  derives from the records, and the replay that applies them.
* :mod:`~rackwise.controller.messages`: requests and replies; :mod:`~rackwise.controller.errors`:
  Kafka's error codes.

What is logged and what is not: registrations, fencing, topics, partitions, configs and
producer id blocks are records; heartbeat times and applied offsets are soft state and never
enter the log.
"""

from rackwise.common.error_codes import NONE
from rackwise.common.errors import (
    InvalidConfigurationException,
    InvalidTopicException,
    PolicyViolationException,
    UnknownTopicOrPartitionException,
)
from rackwise.controller.clock import Clock, ManualClock
from rackwise.controller.cluster import ClusterControl
from rackwise.controller.config import (
    CONTROLLER_KEYS,
    ControllerConfig,
    CreateTopicPolicy,
    TopicPolicyRequest,
)
from rackwise.controller.configs import ConfigControl
from rackwise.controller.controller import (
    MAX_RECORDS_PER_USER_OP,
    METADATA_VERSION_LEVEL,
    Controller,
    SnapshotJob,
)
from rackwise.controller.errors import (
    SUCCESS,
    ApiError,
    BrokerIdNotRegisteredException,
    DuplicateBrokerRegistrationException,
    InvalidRegistrationException,
    InvalidReplicaAssignmentException,
    StaleBrokerEpochException,
    TopicDeletionDisabledException,
    TopicExistsException,
    UnknownServerException,
    UnknownTopicIdException,
)
from rackwise.controller.heartbeat import BrokerControlState, BrokerHeartbeatTracker
from rackwise.controller.log import MetadataLogLike
from rackwise.controller.messages import (
    USE_DEFAULT,
    AlterableConfig,
    AlterConfigOp,
    AlterConfigsResourceResult,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    ConfigEntry,
    ConfigSource,
    CreatableTopic,
    CreatableTopicResult,
    CreatePartitionsTopic,
    CreatePartitionsTopicResult,
    CreateReplicaPlacementRequest,
    CreateReplicaPlacementResponse,
    DeletableTopicResult,
    DescribeConfigsResult,
    FeatureRange,
    Listener,
)
from rackwise.controller.partition_change import Election, build_partition_change
from rackwise.controller.producer_ids import ProducerIdControl, ProducerIdsBlock
from rackwise.controller.recovery import Recovery
from rackwise.controller.replication import ReplicationControl
from rackwise.controller.state import ControllerState, PartitionIndex
from rackwise.protocol.errors import UnsupportedVersionException

__all__ = [
    "CONTROLLER_KEYS",
    "MAX_RECORDS_PER_USER_OP",
    "METADATA_VERSION_LEVEL",
    "NONE",
    "SUCCESS",
    "USE_DEFAULT",
    "AlterConfigOp",
    "AlterConfigsResourceResult",
    "AlterableConfig",
    "ApiError",
    "BrokerControlState",
    "BrokerHeartbeatRequest",
    "BrokerHeartbeatResponse",
    "BrokerHeartbeatTracker",
    "BrokerIdNotRegisteredException",
    "BrokerRegistrationRequest",
    "BrokerRegistrationResponse",
    "Clock",
    "ClusterControl",
    "ConfigControl",
    "ConfigEntry",
    "ConfigSource",
    "Controller",
    "ControllerConfig",
    "ControllerState",
    "CreatableTopic",
    "CreatableTopicResult",
    "CreatePartitionsTopic",
    "CreatePartitionsTopicResult",
    "CreateReplicaPlacementRequest",
    "CreateReplicaPlacementResponse",
    "CreateTopicPolicy",
    "DeletableTopicResult",
    "DescribeConfigsResult",
    "DuplicateBrokerRegistrationException",
    "Election",
    "FeatureRange",
    "InvalidConfigurationException",
    "InvalidRegistrationException",
    "InvalidReplicaAssignmentException",
    "InvalidTopicException",
    "Listener",
    "ManualClock",
    "MetadataLogLike",
    "PartitionIndex",
    "PolicyViolationException",
    "ProducerIdControl",
    "ProducerIdsBlock",
    "Recovery",
    "ReplicationControl",
    "SnapshotJob",
    "StaleBrokerEpochException",
    "TopicDeletionDisabledException",
    "TopicExistsException",
    "TopicPolicyRequest",
    "UnknownServerException",
    "UnknownTopicIdException",
    "UnknownTopicOrPartitionException",
    "UnsupportedVersionException",
    "build_partition_change",
]
