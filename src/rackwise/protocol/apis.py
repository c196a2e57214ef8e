"""The APIs rackwise serves, on which listener, in which versions: what ApiVersions advertises
and what the request decoder accepts.

Goals
    Advertise what Kafka 4.1 advertises for each API we serve, so that clients pick the same
    versions they pick against Kafka and infer the same features, and accept exactly what
    Kafka 4.1 accepts. Real clients read the table as follows (their sources, at the versions
    named):

    ============================ ======= ============== ================ ===============
    API (key)                    range   kafka-python   librdkafka 2.15  aiokafka 0.14
                                         3.0.12 sends   sends            sends
    ============================ ======= ============== ================ ===============
    ApiVersions (18)             0-4     4              3                0
    Produce (0)                  3-13    9              10               7
    Fetch (1)                    4-18    12             16               11
    ListOffsets (2)              1-10    10             7                3
    OffsetForLeaderEpoch (23)    2-4     4              2                (never sends it)
    DeleteRecords (21)           0-2     2              2                2
    InitProducerId (22)          0-5     4              4                0
    FindCoordinator (10)         0-6     6              2                1
    OffsetCommit (8)             2-9     8              9                3
    OffsetFetch (9)              1-9     8              9                3
    ListGroups (16)              0-5     5              5                2
    DescribeGroups (15)          0-6     6              5                3
    DeleteGroups (42)            0-2     2              2                (no API for it)
    OffsetDelete (47)            0       0              0                (no API for it)
    Metadata (3)                 0-13    13             13 (10 for acls) 5
    DescribeCluster (60)         0-2     2              (uses Metadata)  (uses Metadata)
    CreateTopics (19)            2-7     7              4                3
    CreatePartitions (37)        0-3     3              2                1
    DeleteTopics (20)            1-6     6              4                3
    DescribeConfigs (32)         1-4     4              1                2
    DescribeAcls (29)            1-3     3              2                2
    ============================ ======= ============== ================ ===============

    (kafka-python caps Produce at 9 and Fetch at 12 in its producer and fetcher, InitProducerId
    at 4; librdkafka uses Produce from 3 once the broker has record batch v2, Fetch 13+ only
    with topic ids.) Two ranges are not the schemas' own: Produce is *advertised* as 0-13 and
    accepted from 3 (KAFKA-18659: librdkafka before 2.11.1 compresses only for a broker that
    lists Produce v0; Kafka 4.1 lists it, see :data:`ADVERTISED_MIN_VERSIONS`);
    InitProducerId stops at 5 because Kafka 4.1 marks v6 (KIP-939) unstable and does not
    advertise it. kio also has ListOffsets v11, which Kafka 4.1 lacks.

    kafka-python guesses the broker's release from the versions (``infer_broker_version_from_
    api_versions``) and gates features on the guess: ``create_topics`` with a default
    partition count or replication factor (-1) needs 2.4 or later, client-side throttling 2.0,
    idempotent producers and record batch v2 0.11. Produce v13 makes its guess 4.1, as against
    Kafka 4.1 (without the data path it was 3.3, from DescribeAcls v3, which is served,
    answering SECURITY_DISABLED (54) as a Kafka broker without an authorizer does); nothing it
    gates changes between the two. aiokafka 0.14 and librdkafka pick each request's version
    from the table alone; neither requires an API we do not serve for producing, consuming
    without a group, consuming in a group (the classic protocol: JoinGroup 0-9, SyncGroup,
    Heartbeat, LeaveGroup; JoinGroup v0 and v1 are back in Kafka 4.0.1 and 4.1, KAFKA-19444),
    committing offsets, or the admin operations. No transactional API is served: a
    producer with a ``transactional.id`` fails for good at its first request, FindCoordinator
    for its transactional id, answered TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53), as Kafka
    answers a client not allowed the id; InitProducerId with a transactional id is refused too
    (see :mod:`rackwise.broker.producer_ids`).

Constraints
    Every range is intersected with the versions kio 0.6.5 has classes for (the effective
    table is checked by a test, so a kio upgrade cannot silently shrink it); a range with a hole
    is a bug. Kafka's ApiVersions rule: a request for any ApiVersions version is accepted (an
    unsupported one gets UNSUPPORTED_VERSION in a v0 response); every other API accepts only
    its range, on the listeners it is served on.

Algorithm
    Two listeners, as KRaft has: ``broker`` (clients: the data path, and the admin APIs,
    forwarded by the broker to the active controller when they write) and ``controller``
    (brokers: registration, heartbeats, partition leaders' ISR changes (AlterPartition 2-3:
    Kafka 4 dropped 0-1, which named topics by name), blocks of producer ids
    (AllocateProducerIds 0), the metadata log as Raft observers (Fetch 1 and FetchSnapshot 59,
    beside the voters' Vote, BeginQuorumEpoch and EndQuorumEpoch), and the forwarded admin writes;
    DescribeConfigs, IncrementalAlterConfigs and AlterConfigs, as Kafka's controller serves
    them to admin clients that bootstrap from it). rackwise's own APIs use keys from 1000, clear of
    Kafka's (0-92 as of Kafka 4.2; KIP-879's 68 is now ConsumerGroupHeartbeat's):

    * 1000 CreateReplicaPlacement (KIP-879), on both listeners.

    Clients ignore keys they do not know (kafka-python keeps them in its version map, and only
    ``KafkaAdminClient.api_versions()``, which maps every key to its ``ApiKey`` enum, fails on
    them, as it does against any broker newer than itself).

Worked example
    ``negotiate(ApiKey.CREATE_TOPICS, 0, 4)`` (librdkafka's range) is 4; against a peer offering
    0-1 it raises Kafka's ``The node does not support CREATE_TOPICS with version in range
    [2,7]. The supported range is [0,1].``
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from kio.index import load_request_schema, load_response_schema
from kio.schema.index import api_key_map, schema_name_map
from kio.static.constants import EntityType

from rackwise.protocol.errors import UnsupportedVersionException
from rackwise.protocol.header import request_header_version, response_header_version
from rackwise.protocol.specs import OWN_APIS


class ApiKey(enum.IntEnum):
    """The api keys rackwise serves, with Kafka's names."""

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    DELETE_GROUPS = 42
    OFFSET_DELETE = 47
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    ALTER_REPLICA_LOG_DIRS = 34
    DESCRIBE_LOG_DIRS = 35
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    CREATE_PARTITIONS = 37
    DESCRIBE_CLUSTER = 60
    DESCRIBE_PRODUCERS = 61
    BROKER_REGISTRATION = 62
    BROKER_HEARTBEAT = 63
    ALTER_PARTITION = 56
    ALLOCATE_PRODUCER_IDS = 67
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    VOTE = 52
    BEGIN_QUORUM_EPOCH = 53
    END_QUORUM_EPOCH = 54
    DESCRIBE_QUORUM = 55
    FETCH_SNAPSHOT = 59
    ASSIGN_REPLICAS_TO_DIRS = 73
    LIST_CONFIG_RESOURCES = 74
    DESCRIBE_TOPIC_PARTITIONS = 75
    SASL_HANDSHAKE = 17
    SASL_AUTHENTICATE = 36
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    CREATE_REPLICA_PLACEMENT = 1000


class Listener(enum.Enum):
    """Who a listener serves, as Kafka's ``ApiMessageType.ListenerType``."""

    BROKER = "broker"
    CONTROLLER = "controller"


BOTH: Final = frozenset({Listener.BROKER, Listener.CONTROLLER})
BROKER_ONLY: Final = frozenset({Listener.BROKER})
CONTROLLER_ONLY: Final = frozenset({Listener.CONTROLLER})

WANTED: Final[tuple[tuple[ApiKey, int, int, frozenset[Listener]], ...]] = (
    (ApiKey.API_VERSIONS, 0, 4, BOTH),
    (ApiKey.PRODUCE, 3, 13, BROKER_ONLY),
    (ApiKey.FETCH, 4, 18, BOTH),
    (ApiKey.LIST_OFFSETS, 1, 10, BROKER_ONLY),
    (ApiKey.OFFSET_FOR_LEADER_EPOCH, 2, 4, BROKER_ONLY),
    (ApiKey.DELETE_RECORDS, 0, 2, BROKER_ONLY),
    (ApiKey.INIT_PRODUCER_ID, 0, 5, BROKER_ONLY),
    (ApiKey.FIND_COORDINATOR, 0, 6, BROKER_ONLY),
    (ApiKey.OFFSET_COMMIT, 2, 9, BROKER_ONLY),
    (ApiKey.OFFSET_FETCH, 1, 9, BROKER_ONLY),
    (ApiKey.JOIN_GROUP, 0, 9, BROKER_ONLY),
    (ApiKey.HEARTBEAT, 0, 4, BROKER_ONLY),
    (ApiKey.LEAVE_GROUP, 0, 5, BROKER_ONLY),
    (ApiKey.SYNC_GROUP, 0, 5, BROKER_ONLY),
    (ApiKey.DESCRIBE_GROUPS, 0, 6, BROKER_ONLY),
    (ApiKey.LIST_GROUPS, 0, 5, BROKER_ONLY),
    (ApiKey.DELETE_GROUPS, 0, 2, BROKER_ONLY),
    (ApiKey.OFFSET_DELETE, 0, 0, BROKER_ONLY),
    (ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, 1, BROKER_ONLY),
    (ApiKey.CONSUMER_GROUP_DESCRIBE, 0, 1, BROKER_ONLY),
    (ApiKey.METADATA, 0, 13, BROKER_ONLY),
    (ApiKey.DESCRIBE_CLUSTER, 0, 2, BOTH),
    (ApiKey.DESCRIBE_PRODUCERS, 0, 0, BROKER_ONLY),
    (ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, 0, BROKER_ONLY),
    (ApiKey.LIST_CONFIG_RESOURCES, 0, 1, BROKER_ONLY),
    (ApiKey.CREATE_TOPICS, 2, 7, BOTH),
    (ApiKey.CREATE_PARTITIONS, 0, 3, BOTH),
    (ApiKey.DELETE_TOPICS, 1, 6, BOTH),
    (ApiKey.DESCRIBE_CONFIGS, 1, 4, BOTH),
    (ApiKey.ALTER_CONFIGS, 0, 2, BOTH),
    (ApiKey.ELECT_LEADERS, 0, 2, BOTH),
    (ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1, BOTH),
    (ApiKey.DESCRIBE_ACLS, 1, 3, BOTH),
    (ApiKey.CREATE_ACLS, 1, 3, BOTH),
    (ApiKey.DELETE_ACLS, 1, 3, BOTH),
    (ApiKey.ALTER_REPLICA_LOG_DIRS, 1, 2, BROKER_ONLY),
    (ApiKey.DESCRIBE_LOG_DIRS, 1, 4, BROKER_ONLY),
    (ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, 1, BOTH),
    (ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, 0, BOTH),
    (ApiKey.BROKER_REGISTRATION, 0, 4, CONTROLLER_ONLY),
    (ApiKey.BROKER_HEARTBEAT, 0, 1, CONTROLLER_ONLY),
    (ApiKey.ALTER_PARTITION, 2, 3, CONTROLLER_ONLY),
    (ApiKey.ALLOCATE_PRODUCER_IDS, 0, 0, CONTROLLER_ONLY),
    (ApiKey.VOTE, 0, 2, CONTROLLER_ONLY),
    (ApiKey.BEGIN_QUORUM_EPOCH, 0, 1, CONTROLLER_ONLY),
    (ApiKey.END_QUORUM_EPOCH, 0, 1, CONTROLLER_ONLY),
    (ApiKey.DESCRIBE_QUORUM, 0, 2, BOTH),
    (ApiKey.FETCH_SNAPSHOT, 0, 1, CONTROLLER_ONLY),
    (ApiKey.ASSIGN_REPLICAS_TO_DIRS, 0, 0, CONTROLLER_ONLY),
    (ApiKey.CREATE_REPLICA_PLACEMENT, 0, 0, BOTH),
    (ApiKey.SASL_HANDSHAKE, 0, 1, BOTH),
    (ApiKey.SASL_AUTHENTICATE, 0, 2, BOTH),
    (ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0, BOTH),
    (ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, 0, BOTH),
)
"""(api key, lowest, highest version, listeners) as Kafka 4.1 accepts them; the effective table
is this intersected with the versions that have classes."""

ADVERTISED_MIN_VERSIONS: Final[Mapping[ApiKey, int]] = MappingProxyType({ApiKey.PRODUCE: 0})
"""The one lowest version Kafka 4.1 advertises below what it accepts: Produce 0 (KAFKA-18659,
Kafka's ``PRODUCE_API_VERSIONS_RESPONSE_MIN_VERSION``; on the broker listener, the only one
Produce is served on). A Produce of version 0-2 is still refused."""


@dataclass(frozen=True, slots=True)
class ApiSpec:
    """One API as served: its versions (inclusive), listeners, and where its classes are."""

    api_key: int
    name: str
    min_version: int
    max_version: int
    listeners: frozenset[Listener]
    advertised_min_version: int | None = None
    """The lowest version ApiVersions lists when it is not ``min_version`` (Produce: 0)."""

    @property
    def advertised_range(self) -> tuple[int, int]:
        """``(lowest, highest)`` as ApiVersions lists them."""
        if self.advertised_min_version is None:
            return self.min_version, self.max_version
        return self.advertised_min_version, self.max_version

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version

    @property
    def versions(self) -> range:
        return range(self.min_version, self.max_version + 1)

    def request_class(self, version: int) -> type:
        """The request class of ``version`` (which must be supported)."""
        self._check(version)
        return _message_class(self.api_key, version, "request")

    def response_class(self, version: int) -> type:
        """The response class of ``version`` (which must be supported)."""
        self._check(version)
        return _message_class(self.api_key, version, "response")

    @property
    def first_flexible_version(self) -> int | None:
        """The first flexible version of the API (flexible versions run to the end)."""
        return _first_flexible(self.api_key, self.min_version, self.max_version)

    def request_header_version(self, version: int) -> int:
        return request_header_version(self._first_flexible_for(version), version)

    def response_header_version(self, version: int) -> int:
        return response_header_version(self.api_key, self._first_flexible_for(version), version)

    def _first_flexible_for(self, version: int) -> int | None:
        """What the header versions of ``version`` need of :attr:`first_flexible_version`,
        from the class of that version alone where there is one (flexible versions run to the
        end, so a version past the highest is as flexible as the highest): a broker's first
        request of each kind loads one version's classes, not every version's up to the
        first flexible one (a first Produce request waited about 100 ms for those)."""
        if version < self.min_version:
            return self.first_flexible_version
        nearest = min(version, self.max_version)
        flexible = _message_class(self.api_key, nearest, "request").__flexible__  # type: ignore[attr-defined]
        return nearest if flexible else None

    def _check(self, version: int) -> None:
        if not self.supports(version):
            raise UnsupportedVersionException(
                f"{self.name} version {version} is not supported; the supported range is "
                f"[{self.min_version},{self.max_version}]"
            )


def message_class(api_key: int, version: int, kind: str) -> type:
    """The ``kind`` ("request" or "response") class of any version of any API there is a class
    for (kio's for Kafka's APIs, our own), whether or not we serve it; raises
    :class:`UnsupportedVersionException` if there is none."""
    if kind not in ("request", "response"):
        raise ValueError(f"BUG: a message is a request or a response, not {kind!r}")
    if version not in available_versions(api_key):
        raise UnsupportedVersionException(
            f"there is no {kind} class for {api_name(api_key)} version {version}"
        )
    return _message_class(api_key, version, kind)


@functools.cache
def _message_class(api_key: int, version: int, kind: str) -> type:
    own = OWN_APIS.get(api_key)
    if own is not None:
        classes = own.request_classes if kind == "request" else own.response_classes
        return classes[version]
    if kind == "request":
        return load_request_schema(api_key, version)
    return load_response_schema(api_key, version)


@functools.cache
def _first_flexible(api_key: int, lowest: int, highest: int) -> int | None:
    for version in range(lowest, highest + 1):
        if _message_class(api_key, version, "request").__flexible__:  # type: ignore[attr-defined]
            return version
    return None


@functools.cache
def available_versions(api_key: int) -> frozenset[int]:
    """The versions of ``api_key`` that have classes (kio's, or our own schemas')."""
    own = OWN_APIS.get(api_key)
    if own is not None:
        return frozenset(own.request_classes) & frozenset(own.response_classes)
    name = api_key_map.get(api_key)
    if name is None:
        return frozenset()
    return frozenset(
        version
        for version, entities in schema_name_map[name].items()
        if EntityType.request in entities and EntityType.response in entities
    )


def is_known_api(api_key: int) -> bool:
    """Whether ``api_key`` is one of Kafka's (as kio knows them) or one of rackwise's own."""
    return api_key in OWN_APIS or api_key in api_key_map


def api_name(api_key: int) -> str:
    """Kafka's CamelCase name of an API (``CreateTopics``), or ``Unknown(<key>)``."""
    own = OWN_APIS.get(api_key)
    if own is not None:
        return own.name
    name = api_key_map.get(api_key)
    if name is None:
        return f"Unknown({api_key})"
    return "".join(part.capitalize() for part in str(name).split("_"))


def _effective(api_key: ApiKey, lowest: int, highest: int, on: frozenset[Listener]) -> ApiSpec:
    have = sorted(v for v in available_versions(api_key) if lowest <= v <= highest)
    if not have or have != list(range(have[0], have[-1] + 1)):
        raise RuntimeError(f"BUG: {api_key.name} has versions {have} within {lowest}-{highest}")
    return ApiSpec(
        int(api_key), api_name(api_key), have[0], have[-1], on, ADVERTISED_MIN_VERSIONS.get(api_key)
    )


SUPPORTED: Final[Mapping[int, ApiSpec]] = MappingProxyType(
    {int(key): _effective(key, low, high, on) for key, low, high, on in WANTED}
)
"""Every API rackwise serves, by api key (on at least one listener)."""


def apis_for(listener: Listener) -> Mapping[int, ApiSpec]:
    """The APIs served on ``listener``, by api key."""
    return _BY_LISTENER[listener]


_BY_LISTENER: Final = MappingProxyType(
    {
        listener: MappingProxyType(
            {key: spec for key, spec in SUPPORTED.items() if listener in spec.listeners}
        )
        for listener in Listener
    }
)


def negotiate(api_key: int, peer_min: int, peer_max: int) -> int:
    """The highest version of ``api_key`` both we and a peer offering ``peer_min``-``peer_max``
    support (Kafka's ``NodeApiVersions.latestUsableVersion``)."""
    spec = SUPPORTED.get(api_key)
    if spec is None:
        raise ValueError(f"BUG: api key {api_key} is not one rackwise speaks")
    low = max(spec.min_version, peer_min)
    high = min(spec.max_version, peer_max)
    if low > high:
        raise UnsupportedVersionException(
            f"The node does not support {_constant(spec.name)} with version in range "
            f"[{spec.min_version},{spec.max_version}]. The supported range is "
            f"[{peer_min},{peer_max}]."
        )
    return high


def negotiate_with(api_key: int, advertised: Mapping[int, tuple[int, int]]) -> int:
    """:func:`negotiate` against a peer's ApiVersions map (api key -> (min, max))."""
    spec = SUPPORTED.get(api_key)
    if spec is not None and api_key not in advertised:
        raise UnsupportedVersionException(f"The node does not support {_constant(spec.name)}")
    peer_min, peer_max = advertised.get(api_key, (0, -1))
    return negotiate(api_key, peer_min, peer_max)


def constant_name(api_key: int) -> str:
    """Kafka's ``ApiKeys`` constant of an API (``CREATE_TOPICS``), as its messages print it."""
    return _constant(api_name(api_key))


def _constant(name: str) -> str:
    """``CreateTopics`` -> ``CREATE_TOPICS``, as Kafka's ``ApiKeys`` prints."""
    out = []
    for i, char in enumerate(name):
        if char.isupper() and i > 0:
            out.append("_")
        out.append(char.upper())
    return "".join(out)
