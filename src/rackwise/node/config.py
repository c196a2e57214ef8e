"""A node's configuration: the keys a controller or a broker process accepts, with Kafka's names,
and the checks of their values.

Goals
    ``load_node_config(path)`` gives a checked :class:`NodeConfig` or raises
    :class:`ConfigException` naming the offending key in one line. Every key a process does not
    know is an error (Kafka only warns; a typo that silently does nothing is worse here).
    ``--override KEY=VALUE`` settings
    (:func:`~rackwise.node.properties_file.parse_overrides`) win over the file's, as with
    Kafka's ``kafka-server-start.sh``; :func:`overrides_for_role` takes each key's role from
    :data:`ROLE_KEYS`.

Constraints
    * One role per process: ``process.roles`` is ``controller`` or ``broker``; KRaft's combined
      mode (``broker,controller``) is refused.
    * Listeners without a host bind 127.0.0.1 (Kafka binds every interface); port 0 asks the
      system for a free port. Each listener speaks the protocol
      ``listener.security.protocol.map`` gives it (:mod:`rackwise.node.listeners`).
    * A broker's ``node.id`` may not be a voter's id (controllers and brokers share one id
      space); a controller's must be one of the voters, when voters are listed.

Algorithm
    :func:`~rackwise.node.properties_file.load_properties` reads the file as
    ``java.util.Properties.load`` does; :meth:`NodeConfig.from_properties` checks the keys
    against the role's set (:data:`ROLE_KEYS`), then each value (the listeners' and voters'
    addresses with :mod:`rackwise.node.addresses`).

Worked example
    ``node.id=1``, ``process.roles=controller``, ``listeners=CONTROLLER://:9093``,
    ``controller.listener.names=CONTROLLER``, ``controller.quorum.voters=1@127.0.0.1:9093``,
    ``metadata.log.dir=/var/rackwise/meta``: a controller bound to 127.0.0.1:9093 whose
    ``controller_endpoint`` is ``Endpoint("CONTROLLER", "127.0.0.1", 9093)``. Adding
    ``broker.rack=/dc1/r1`` is refused: ``broker.rack`` is a broker's key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Final

from rackwise.common.config_values import parse_int_config
from rackwise.common.errors import InvalidConfigurationException
from rackwise.controller import CONTROLLER_KEYS, ControllerConfig
from rackwise.metalog import DEFAULT_MAX_RECORD_BYTES_BETWEEN_SNAPSHOTS, DEFAULT_SEGMENT_BYTES
from rackwise.net.limits import (
    CONNECTIONS_MAX_IDLE_MS,
    DEFAULT_CONNECTIONS_MAX_IDLE_MS,
    DEFAULT_QUEUED_MAX_REQUEST_BYTES,
    MAX_CONNECTIONS,
    MAX_CONNECTIONS_PER_IP,
    QUEUED_MAX_REQUEST_BYTES,
    UNLIMITED_CONNECTIONS,
    ServerLimits,
)
from rackwise.node import listeners as listeners_config
from rackwise.node.addresses import (
    Endpoint,
    parse_addresses,
    parse_endpoints,
    parse_names,
    parse_quorum_voters,
)
from rackwise.node.authorization import AUTHORIZER_KEYS
from rackwise.node.data_config import (
    DATA_PATH_KEYS,
    TOPIC_SYNONYM_KEYS,
    DataConfigException,
    DataPathConfig,
)
from rackwise.node.metrics import METRICS_KEYS, metrics_address
from rackwise.node.properties_file import (
    ConfigException,
    apply_overrides,
    invalid_config,
    load_properties,
)
from rackwise.placement import BUILT_IN, DEFAULT_REPLICA_PLACER, REPLICA_PLACER_CONFIG
from rackwise.raft import config as raft_config
from rackwise.raft.config import VoterEndpoint
from rackwise.security.protocols import uses_sasl
from rackwise.security.sasl_config import (
    SASL_KEYS,
    SaslConfigException,
    is_listener_sasl_key,
    listener_settings,
)
from rackwise.security.ssl_config import SSL_KEYS, unprefixed

NODE_ID: Final = "node.id"
PROCESS_ROLES: Final = "process.roles"
LISTENERS: Final = listeners_config.LISTENERS
ADVERTISED_LISTENERS: Final = listeners_config.ADVERTISED_LISTENERS
SECURITY_PROTOCOL_MAP: Final = listeners_config.SECURITY_PROTOCOL_MAP
CONTROLLER_LISTENER_NAMES: Final = listeners_config.CONTROLLER_LISTENER_NAMES
INTER_BROKER_LISTENER_NAME: Final = listeners_config.INTER_BROKER_LISTENER_NAME
INTER_BROKER_SECURITY_PROTOCOL: Final = listeners_config.INTER_BROKER_SECURITY_PROTOCOL
QUORUM_VOTERS: Final = raft_config.QUORUM_VOTERS_CONFIG
QUORUM_BOOTSTRAP_SERVERS: Final = "controller.quorum.bootstrap.servers"
QUORUM_TIMING_KEYS: Final = (
    raft_config.QUORUM_ELECTION_TIMEOUT_MS_CONFIG,
    raft_config.QUORUM_ELECTION_BACKOFF_MAX_MS_CONFIG,
    raft_config.QUORUM_FETCH_TIMEOUT_MS_CONFIG,
    raft_config.QUORUM_REQUEST_TIMEOUT_MS_CONFIG,
    raft_config.QUORUM_RETRY_BACKOFF_MS_CONFIG,
)
"""The Raft quorum's timings (KIP-595), read by :func:`rackwise.raft.config.quorum_config`."""
METADATA_LOG_DIR: Final = "metadata.log.dir"
METADATA_LOG_SEGMENT_BYTES: Final = "metadata.log.segment.bytes"
MAX_BYTES_BETWEEN_SNAPSHOTS: Final = "metadata.log.max.record.bytes.between.snapshots"
LOG_DIRS: Final = "log.dirs"
LOG_DIR: Final = "log.dir"
BROKER_RACK: Final = "broker.rack"
HEARTBEAT_INTERVAL_MS: Final = "broker.heartbeat.interval.ms"
SESSION_TIMEOUT_MS: Final = "broker.session.timeout.ms"
SOCKET_REQUEST_MAX_BYTES: Final = "socket.request.max.bytes"
CLUSTER_ID: Final = "cluster.id"

CONTROLLER_ROLE: Final = "controller"
BROKER_ROLE: Final = "broker"
DEFAULT_SOCKET_REQUEST_MAX_BYTES: Final = 104_857_600

COMMON_KEYS: Final = frozenset(
    {
        NODE_ID,
        PROCESS_ROLES,
        LISTENERS,
        ADVERTISED_LISTENERS,
        SECURITY_PROTOCOL_MAP,
        CONTROLLER_LISTENER_NAMES,
        QUORUM_VOTERS,
        QUORUM_BOOTSTRAP_SERVERS,
        *QUORUM_TIMING_KEYS,
        METADATA_LOG_DIR,
        LOG_DIRS,
        LOG_DIR,
        HEARTBEAT_INTERVAL_MS,
        SESSION_TIMEOUT_MS,
        SOCKET_REQUEST_MAX_BYTES,
        CLUSTER_ID,
        CONNECTIONS_MAX_IDLE_MS,
        QUEUED_MAX_REQUEST_BYTES,
        MAX_CONNECTIONS,
        MAX_CONNECTIONS_PER_IP,
        *AUTHORIZER_KEYS,
        *METRICS_KEYS,
        *SSL_KEYS,
        *SASL_KEYS,
    }
)
"""Keys both roles accept."""
LISTENER_SCOPED_KEYS: Final = SSL_KEYS
"""Keys a listener may have its own value of, as ``listener.name.<name>.<key>``."""
CONTROLLER_ONLY_KEYS: Final = frozenset(
    {MAX_BYTES_BETWEEN_SNAPSHOTS, METADATA_LOG_SEGMENT_BYTES}
    | (CONTROLLER_KEYS - COMMON_KEYS - {REPLICA_PLACER_CONFIG})
)
BROKER_ONLY_KEYS: Final = frozenset(
    {BROKER_RACK, INTER_BROKER_LISTENER_NAME, INTER_BROKER_SECURITY_PROTOCOL}
    | (DATA_PATH_KEYS - TOPIC_SYNONYM_KEYS)
)
ROLE_KEYS: Final = MappingProxyType(
    {
        # The broker-level names of topic keys (log.segment.bytes...) are accepted by both
        # roles, as Kafka's: a controller reports them as the topics' defaults.
        CONTROLLER_ROLE: COMMON_KEYS
        | CONTROLLER_ONLY_KEYS
        | TOPIC_SYNONYM_KEYS
        | {REPLICA_PLACER_CONFIG},
        # A broker accepts the topic defaults too (Kafka's brokers read num.partitions and
        # default.replication.factor), and broker.replica.placer (KIP-879 names it a broker
        # config): a broker keeps them as its static configuration.
        BROKER_ROLE: COMMON_KEYS
        | BROKER_ONLY_KEYS
        | CONTROLLER_KEYS
        | TOPIC_SYNONYM_KEYS
        | {REPLICA_PLACER_CONFIG},
    }
)
"""The keys each role accepts."""


# ---- values ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NodeConfig:
    """A checked configuration of one process (see the module docstring). ``properties`` holds
    every key given, as written."""

    node_id: int
    role: str
    listeners: tuple[Endpoint, ...]
    advertised_listeners: tuple[Endpoint, ...]
    security_protocols: Mapping[str, str]
    controller_listener_names: tuple[str, ...]
    voters: tuple[VoterEndpoint, ...]
    bootstrap_servers: tuple[tuple[str, int], ...]
    metadata_log_dir: Path | None
    log_dirs: tuple[Path, ...]
    rack: str | None
    replica_placer: str
    heartbeat_interval_ms: int
    session_timeout_ms: int
    max_record_bytes_between_snapshots: int
    metadata_log_segment_bytes: int
    socket_request_max_bytes: int
    cluster_id: str | None
    inter_broker_listener_name: str | None
    """A broker's inter-broker listener (None for a controller)."""
    properties: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def is_controller(self) -> bool:
        return self.role == CONTROLLER_ROLE

    @property
    def is_broker(self) -> bool:
        return self.role == BROKER_ROLE

    @property
    def controller_endpoint(self) -> Endpoint:
        """The listener a controller serves brokers on: the first of
        ``controller.listener.names`` among its ``listeners``."""
        for name in self.controller_listener_names:
            for endpoint in self.listeners:
                if endpoint.listener_name == name:
                    return endpoint
        raise ConfigException(f"BUG: node {self.node_id} has no controller listener")

    def protocol_of(self, listener_name: str) -> str:
        """The security protocol of listener ``listener_name`` (``PLAINTEXT``, ``SSL``...)."""
        return self.security_protocols[listener_name]

    @property
    def controller_protocol(self) -> str:
        """The security protocol a node speaks to the controllers: the first controller
        listener's, as Kafka's brokers use the first of ``controller.listener.names``."""
        return self.protocol_of(self.controller_listener_names[0])

    @property
    def broker_endpoints(self) -> tuple[Endpoint, ...]:
        """The listeners a broker serves clients on (every one not a controller listener)."""
        return tuple(
            e for e in self.listeners if e.listener_name not in self.controller_listener_names
        )

    @property
    def controller_addresses(self) -> tuple[tuple[str, int], ...]:
        """Where a broker finds the controllers: the voters' addresses, else the bootstrap
        servers."""
        if self.voters:
            return tuple((v.host, v.port) for v in self.voters)
        return self.bootstrap_servers

    @property
    def voter_ids(self) -> frozenset[int]:
        return frozenset(v.node_id for v in self.voters)

    def server_limits(self) -> ServerLimits:
        """What each listener allows its clients (:class:`~rackwise.net.ServerLimits`)."""
        return _server_limits(self.properties)

    def controller_config(self) -> ControllerConfig:
        """The controller's settings (:meth:`ControllerConfig.from_properties`)."""
        return _controller_config(self.properties)

    @staticmethod
    def from_properties(props: Mapping[str, str]) -> NodeConfig:
        """The checked configuration of ``props`` (raises :class:`ConfigException`)."""
        return _build(props)


def load_node_config(
    path: str | os.PathLike[str], overrides: Mapping[str, str] | None = None
) -> NodeConfig:
    """The checked configuration in the ``.properties`` file at ``path``, with ``overrides``
    (``--override``, see :func:`parse_overrides`) winning over the file's keys."""
    return NodeConfig.from_properties(apply_overrides(load_properties(path), overrides or {}))


# ---- checking -------------------------------------------------------------------------------


def _missing(key: str, role: str) -> ConfigException:
    return ConfigException(f"Missing required configuration {key} for a {role}")


def _build(props: Mapping[str, str]) -> NodeConfig:
    role = _role(props)
    unknown = sorted(
        k
        for k in set(props) - ROLE_KEYS[role]
        if unprefixed(k) not in LISTENER_SCOPED_KEYS and not is_listener_sasl_key(unprefixed(k))
    )
    if unknown:
        key = unknown[0]
        other = BROKER_ROLE if role == CONTROLLER_ROLE else CONTROLLER_ROLE
        if key in ROLE_KEYS[other]:
            raise ConfigException(f"{key} is a {other}'s configuration, not a {role}'s")
        raise ConfigException(f"Unknown configuration {key} for a {role}")
    metrics_address(props)  # checked with the rest; served once the node starts
    node_id = _int(props, NODE_ID, None, minimum=0)
    names = tuple(n.upper() for n in parse_names(props.get(CONTROLLER_LISTENER_NAMES, "")))
    if not names:
        raise _missing(CONTROLLER_LISTENER_NAMES, role)
    protocols = listeners_config.security_protocol_map(props, names)
    listeners = parse_endpoints(LISTENERS, props.get(LISTENERS))
    listeners_config.check_listener_protocols(props, listeners, protocols, names)
    advertised = listeners_config.advertised_listeners(props, listeners)
    listeners_config.check_tls_settings(props, listeners, protocols)
    for endpoint in listeners:
        if uses_sasl(protocols[endpoint.listener_name]):
            try:
                listener_settings(props, endpoint.listener_name)
            except SaslConfigException as e:
                raise ConfigException(f"listener {endpoint.listener_name}: {e}") from None
    voters = parse_quorum_voters(props.get(QUORUM_VOTERS))
    bootstrap = parse_addresses(QUORUM_BOOTSTRAP_SERVERS, props.get(QUORUM_BOOTSTRAP_SERVERS))
    if not voters and not bootstrap:
        raise ConfigException(
            f"Missing required configuration {QUORUM_VOTERS} or {QUORUM_BOOTSTRAP_SERVERS} "
            f"for a {role}"
        )
    log_dirs = _log_dirs(props)
    metadata_log_dir = props.get(METADATA_LOG_DIR, "").strip()
    rack = props.get(BROKER_RACK, "").strip() or None
    _check_role(props, role, node_id, listeners, names, voters, log_dirs)
    inter_broker = None
    if role == BROKER_ROLE:
        inter_broker = listeners_config.inter_broker_listener(props, protocols, advertised, names)
    if role == CONTROLLER_ROLE and not metadata_log_dir:
        if not log_dirs:
            raise ConfigException(
                f"Missing required configuration {METADATA_LOG_DIR} (or {LOG_DIRS}) "
                "for a controller"
            )
        metadata_log_dir = str(log_dirs[0])
    if role == BROKER_ROLE:
        try:
            DataPathConfig.from_properties(props)
        except DataConfigException as e:
            raise ConfigException(str(e)) from None
    placer = props.get(REPLICA_PLACER_CONFIG, DEFAULT_REPLICA_PLACER).strip()
    if placer not in BUILT_IN and ":" not in placer:
        raise invalid_config(
            REPLICA_PLACER_CONFIG,
            placer,
            f"expected one of {', '.join(sorted(BUILT_IN))} or package.module:ClassName",
        )
    config = NodeConfig(
        node_id=node_id,
        role=role,
        listeners=listeners,
        advertised_listeners=advertised,
        security_protocols=MappingProxyType(protocols),
        controller_listener_names=names,
        voters=voters,
        bootstrap_servers=bootstrap,
        metadata_log_dir=Path(metadata_log_dir) if metadata_log_dir else None,
        log_dirs=log_dirs,
        rack=rack,
        replica_placer=placer,
        heartbeat_interval_ms=_int(props, HEARTBEAT_INTERVAL_MS, 2000, minimum=1),
        session_timeout_ms=_int(props, SESSION_TIMEOUT_MS, 9000, minimum=1),
        max_record_bytes_between_snapshots=_int(
            props,
            MAX_BYTES_BETWEEN_SNAPSHOTS,
            DEFAULT_MAX_RECORD_BYTES_BETWEEN_SNAPSHOTS,
            minimum=1,
        ),
        metadata_log_segment_bytes=_int(
            props, METADATA_LOG_SEGMENT_BYTES, DEFAULT_SEGMENT_BYTES, minimum=1024
        ),
        socket_request_max_bytes=_int(
            props, SOCKET_REQUEST_MAX_BYTES, DEFAULT_SOCKET_REQUEST_MAX_BYTES, minimum=1
        ),
        cluster_id=props.get(CLUSTER_ID, "").strip() or None,
        inter_broker_listener_name=inter_broker,
        properties=MappingProxyType(dict(props)),
    )
    _controller_config(props)  # the controller's own checks, for both roles
    _server_limits(props)
    return config


def _server_limits(props: Mapping[str, str]) -> ServerLimits:
    """Kafka's socket server limits; below 0, ``connections.max.idle.ms`` never closes and
    ``queued.max.request.bytes`` (also at 0) sets no pool, as in Kafka."""
    return ServerLimits(
        connections_max_idle_ms=_int(
            props, CONNECTIONS_MAX_IDLE_MS, DEFAULT_CONNECTIONS_MAX_IDLE_MS, minimum=-1
        ),
        queued_max_request_bytes=_int(
            props, QUEUED_MAX_REQUEST_BYTES, DEFAULT_QUEUED_MAX_REQUEST_BYTES, minimum=-1
        ),
        max_connections=_int(props, MAX_CONNECTIONS, UNLIMITED_CONNECTIONS, minimum=0),
        # Kafka allows 0 only with max.connections.per.ip.overrides, which rackwise lacks.
        max_connections_per_ip=_int(
            props, MAX_CONNECTIONS_PER_IP, UNLIMITED_CONNECTIONS, minimum=1
        ),
    )


def _controller_config(props: Mapping[str, str]) -> ControllerConfig:
    try:
        return ControllerConfig.from_properties(props)
    except InvalidConfigurationException as e:
        raise ConfigException(str(e)) from None


def _role(props: Mapping[str, str]) -> str:
    text = props.get(PROCESS_ROLES)
    if text is None or not text.strip():
        raise ConfigException(
            f"Missing required configuration {PROCESS_ROLES}: controller or broker"
        )
    roles = sorted({r.strip() for r in text.split(",") if r.strip()})
    if roles == [BROKER_ROLE, CONTROLLER_ROLE]:
        raise invalid_config(
            PROCESS_ROLES,
            text,
            "combined mode (broker,controller) is not supported; run a controller and a "
            "broker as separate processes",
        )
    if len(roles) != 1 or roles[0] not in (BROKER_ROLE, CONTROLLER_ROLE):
        raise invalid_config(PROCESS_ROLES, text, "expected controller or broker")
    return roles[0]


def _check_role(
    props: Mapping[str, str],
    role: str,
    node_id: int,
    listeners: tuple[Endpoint, ...],
    names: tuple[str, ...],
    voters: tuple[VoterEndpoint, ...],
    log_dirs: tuple[Path, ...],
) -> None:
    listener_names = [e.listener_name for e in listeners]
    voter_ids = {v.node_id for v in voters}
    if role == CONTROLLER_ROLE:
        if not any(n in listener_names for n in names):
            raise invalid_config(
                LISTENERS,
                props.get(LISTENERS, ""),
                f"a controller must listen on one of {CONTROLLER_LISTENER_NAMES} "
                f"({','.join(names)})",
            )
        extra = [n for n in listener_names if n not in names]
        if extra:
            raise invalid_config(
                LISTENERS,
                props[LISTENERS],
                f"listener {extra[0]} is not a controller listener "
                f"({CONTROLLER_LISTENER_NAMES}={','.join(names)}); a controller serves only "
                "controller listeners",
            )
        if voters and node_id not in voter_ids:
            raise invalid_config(
                NODE_ID,
                str(node_id),
                f"a controller's id must be one of the voters in {QUORUM_VOTERS} "
                f"({','.join(str(i) for i in sorted(voter_ids))})",
            )
        return
    if node_id in voter_ids:
        raise invalid_config(
            NODE_ID,
            str(node_id),
            f"node id {node_id} is a controller's (in {QUORUM_VOTERS}); controllers and "
            "brokers share one id space",
        )
    shared = [n for n in listener_names if n in names]
    if shared:
        raise invalid_config(
            LISTENERS,
            props.get(LISTENERS, ""),
            f"a broker may not listen on controller listener {shared[0]}",
        )
    if not listeners:
        raise _missing(LISTENERS, role)
    if not log_dirs:
        raise _missing(LOG_DIRS, role)


def _int(props: Mapping[str, str], key: str, default: int | None, *, minimum: int) -> int:
    text = props.get(key)
    if text is None:
        if default is None:
            raise ConfigException(f"Missing required configuration {key}")
        return default
    return parse_int_config(key, text, minimum=minimum, error=ConfigException)


def _log_dirs(props: Mapping[str, str]) -> tuple[Path, ...]:
    text = props.get(LOG_DIRS)
    if text is None:
        text = props.get(LOG_DIR)
    if text is None:
        return ()
    return tuple(Path(d) for d in parse_names(text))


# ---- --override KEY=VALUE: which role each key is for ----------------------------------------


def override_roles(key: str) -> frozenset[str]:
    """The roles a ``--override`` of ``key`` is for, from :data:`ROLE_KEYS`: a broker's key to
    brokers, a controller's to controllers, a common key to both. A key no role knows goes to
    every role, so that each node's check refuses it by name."""
    roles = frozenset(role for role, keys in ROLE_KEYS.items() if key in keys)
    return roles or frozenset(ROLE_KEYS)


def overrides_for_role(overrides: Mapping[str, str], role: str) -> dict[str, str]:
    """The ``overrides`` (in their order) that a node of ``role`` gets."""
    return {key: value for key, value in overrides.items() if role in override_roles(key)}
