"""The controller's configuration, from Kafka's property names.

:meth:`ControllerConfig.from_properties` reads the keys the controller acts on, checks their
values (an invalid value is an :class:`InvalidConfigurationException` naming the key, worded as
Kafka's ``ConfigException``), and keeps every property given as the node's static
configuration, which DescribeConfigs reports as ``STATIC_BROKER_CONFIG``. Refusing keys nobody
knows is the process layer's job, which knows every component's keys; :data:`CONTROLLER_KEYS`
lists the controller's.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, Protocol

from rackwise.common.config_values import invalid_value, parse_int_config
from rackwise.common.errors import InvalidConfigurationException
from rackwise.placement import DEFAULT_REPLICA_PLACER, REPLICA_PLACER_CONFIG

NODE_ID: Final = "node.id"
CONTROLLER_QUORUM_VOTERS: Final = "controller.quorum.voters"
SESSION_TIMEOUT_MS: Final = "broker.session.timeout.ms"
HEARTBEAT_INTERVAL_MS: Final = "broker.heartbeat.interval.ms"
NUM_PARTITIONS: Final = "num.partitions"
DEFAULT_REPLICATION_FACTOR: Final = "default.replication.factor"
ELR_ENABLED: Final = "eligible.leader.replicas.enable"
DELETE_TOPIC_ENABLE: Final = "delete.topic.enable"
CREATE_TOPIC_POLICY: Final = "create.topic.policy.class.name"
MIN_INSYNC_REPLICAS: Final = "min.insync.replicas"
UNCLEAN_LEADER_ELECTION: Final = "unclean.leader.election.enable"
AUTO_LEADER_REBALANCE_ENABLE: Final = "auto.leader.rebalance.enable"
LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS: Final = "leader.imbalance.check.interval.seconds"
LEADER_IMBALANCE_PER_BROKER_PERCENTAGE: Final = "leader.imbalance.per.broker.percentage"

CONTROLLER_KEYS: Final = frozenset(
    {
        NODE_ID,
        CONTROLLER_QUORUM_VOTERS,
        SESSION_TIMEOUT_MS,
        HEARTBEAT_INTERVAL_MS,
        REPLICA_PLACER_CONFIG,
        NUM_PARTITIONS,
        DEFAULT_REPLICATION_FACTOR,
        ELR_ENABLED,
        DELETE_TOPIC_ENABLE,
        CREATE_TOPIC_POLICY,
        MIN_INSYNC_REPLICAS,
        UNCLEAN_LEADER_ELECTION,
        AUTO_LEADER_REBALANCE_ENABLE,
        LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS,
        LEADER_IMBALANCE_PER_BROKER_PERCENTAGE,
    }
)
"""The keys :meth:`ControllerConfig.from_properties` interprets."""

NO_NODE_ID: Final = -1
"""``node_id`` when ``node.id`` is not set."""


@dataclass(frozen=True, slots=True)
class TopicPolicyRequest:
    """What a create-topic policy sees (Kafka's ``CreateTopicPolicy.RequestMetadata``): either
    the counts (``replica_assignments`` None) or the manual assignment (counts None)."""

    topic: str
    num_partitions: int | None
    replication_factor: int | None
    replica_assignments: Mapping[int, tuple[int, ...]] | None
    configs: Mapping[str, str]


class CreateTopicPolicy(Protocol):
    """Kafka's ``CreateTopicPolicy``: ``validate`` raises
    :class:`~rackwise.controller.errors.PolicyViolationException` to refuse a topic."""

    def validate(self, request: TopicPolicyRequest) -> None: ...


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    """The settings the controller acts on (Kafka's defaults), and the node's static config.

    ``controller_ids`` are the node ids of the controllers (this one included): brokers may not
    register with them. ``elr_enabled`` turns on KIP-966's eligible leader replicas, which let a
    fenced broker leave every ISR (see :mod:`rackwise.controller.partition_change`); rackwise
    defaults it to true, Kafka 3.x to false.

    Preferred leaders (Kafka's KRaft controller): with ``auto_leader_rebalance_enable``
    (``auto.leader.rebalance.enable``, default true) the controller checks, every
    ``leader_imbalance_check_interval_s`` seconds (``leader.imbalance.check.interval.seconds``,
    default 300, at least 1) while some partition is not led by its first replica, and moves
    leadership back to the first replica wherever it is in the ISR and may lead (see
    :meth:`~rackwise.controller.replication.ReplicationControl.maybe_balance_partition_leaders`).
    ``leader.imbalance.per.broker.percentage`` is accepted (an integer, default 10) and kept
    in ``static``, but, as in Kafka 4's controller, it has no effect: any imbalance triggers
    the check.
    """

    node_id: int = NO_NODE_ID
    controller_ids: frozenset[int] = frozenset()
    session_timeout_ms: int = 9000
    heartbeat_interval_ms: int = 2000
    replica_placer: str = DEFAULT_REPLICA_PLACER
    num_partitions: int = 1
    default_replication_factor: int = 1
    elr_enabled: bool = True
    delete_topic_enable: bool = True
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_s: int = 300
    create_topic_policy: CreateTopicPolicy | None = None
    static: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @staticmethod
    def from_properties(props: Mapping[str, str]) -> ControllerConfig:
        """The configuration of ``props`` (a parsed ``.properties`` file)."""
        node_id = _int(props, NODE_ID, NO_NODE_ID, minimum=-1)
        controllers = set(_voter_ids(props.get(CONTROLLER_QUORUM_VOTERS, "")))
        if node_id >= 0:
            controllers.add(node_id)
        policy_name = props.get(CREATE_TOPIC_POLICY, "").strip()
        _int(props, MIN_INSYNC_REPLICAS, 1, minimum=1)  # topic defaults: checked, kept in static
        _bool(props, UNCLEAN_LEADER_ELECTION, False)
        _int(props, LEADER_IMBALANCE_PER_BROKER_PERCENTAGE, 10, minimum=-(1 << 31))  # ignored
        return ControllerConfig(
            node_id=node_id,
            controller_ids=frozenset(controllers),
            session_timeout_ms=_int(props, SESSION_TIMEOUT_MS, 9000, minimum=1),
            heartbeat_interval_ms=_int(props, HEARTBEAT_INTERVAL_MS, 2000, minimum=1),
            replica_placer=props.get(REPLICA_PLACER_CONFIG, DEFAULT_REPLICA_PLACER).strip(),
            num_partitions=_int(props, NUM_PARTITIONS, 1, minimum=1),
            default_replication_factor=_int(props, DEFAULT_REPLICATION_FACTOR, 1, minimum=1),
            elr_enabled=_bool(props, ELR_ENABLED, True),
            delete_topic_enable=_bool(props, DELETE_TOPIC_ENABLE, True),
            auto_leader_rebalance_enable=_bool(props, AUTO_LEADER_REBALANCE_ENABLE, True),
            leader_imbalance_check_interval_s=_int(
                props, LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS, 300, minimum=1
            ),
            create_topic_policy=load_policy(policy_name) if policy_name else None,
            static=MappingProxyType(dict(props)),
        )


def _invalid(key: str, value: str, reason: str) -> InvalidConfigurationException:
    return InvalidConfigurationException(invalid_value(key, value, reason))


def _int(props: Mapping[str, str], key: str, default: int, *, minimum: int) -> int:
    text = props.get(key)
    if text is None:
        return default
    return parse_int_config(key, text, minimum=minimum, error=InvalidConfigurationException)


def _bool(props: Mapping[str, str], key: str, default: bool) -> bool:
    text = props.get(key)
    if text is None:
        return default
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise _invalid(key, text, "Expected value to be either true or false")
    return lowered == "true"


def _voter_ids(text: str) -> list[int]:
    """The ids of ``controller.quorum.voters`` (``id@host:port,...``)."""
    ids = []
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        voter, at, _ = entry.partition("@")
        if not at or not voter.strip().isdigit():
            raise _invalid(
                CONTROLLER_QUORUM_VOTERS,
                text,
                f"'{entry}' is not in the form id@host:port",
            )
        ids.append(int(voter))
    return ids


def load_policy(name: str) -> CreateTopicPolicy:
    """The create-topic policy class ``package.module:Class`` (or ``package.module.Class``),
    constructed without arguments."""
    module_name, sep, class_name = name.partition(":")
    if not sep:
        module_name, _, class_name = name.rpartition(".")
    try:
        cls: Any = getattr(importlib.import_module(module_name), class_name)
        policy: Any = cls()
    except Exception as e:
        raise _invalid(
            CREATE_TOPIC_POLICY, name, f"Class cannot be loaded: {type(e).__name__}: {e}"
        ) from e
    if not callable(getattr(policy, "validate", None)):
        raise _invalid(CREATE_TOPIC_POLICY, name, "Class has no validate method")
    result: CreateTopicPolicy = policy
    return result
