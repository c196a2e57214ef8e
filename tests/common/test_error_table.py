"""Kafka's error codes: the table against Kafka's ``Errors`` enum, word for word."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from rackwise.common import error_codes
from rackwise.common.error_table import ERRORS, KafkaError, describe
from rackwise.protocol import error_name

GOLDEN = [
    (
        -1,
        "UNKNOWN_SERVER_ERROR",
        False,
        "UnknownServerException",
        "The server experienced an unexpected error when processing the request.",
    ),
    (0, "NONE", False, None, None),
    (
        1,
        "OFFSET_OUT_OF_RANGE",
        False,
        "OffsetOutOfRangeException",
        "The requested offset is not within the range of offsets maintained by the server.",
    ),
    (
        2,
        "CORRUPT_MESSAGE",
        True,
        "CorruptRecordException",
        "This message has failed its CRC checksum, exceeds the valid size, has a null key for a "
        "compacted topic, or is otherwise corrupt.",
    ),
    (
        3,
        "UNKNOWN_TOPIC_OR_PARTITION",
        True,
        "UnknownTopicOrPartitionException",
        "This server does not host this topic-partition.",
    ),
    (
        6,
        "NOT_LEADER_OR_FOLLOWER",
        True,
        "NotLeaderOrFollowerException",
        "For requests intended only for the leader, this error indicates that the broker is not "
        "the current leader. For requests intended for any replica, this error indicates that "
        "the broker is not a replica of the topic partition.",
    ),
    (7, "REQUEST_TIMED_OUT", True, "TimeoutException", "The request timed out."),
    (
        9,
        "REPLICA_NOT_AVAILABLE",
        True,
        "ReplicaNotAvailableException",
        "The replica is not available for the requested topic-partition. Produce/Fetch requests "
        "and other requests intended only for the leader or follower return "
        "NOT_LEADER_OR_FOLLOWER if the broker is not a replica of the topic-partition.",
    ),
    (
        10,
        "MESSAGE_TOO_LARGE",
        False,
        "RecordTooLargeException",
        "The request included a message larger than the max message size the server will accept.",
    ),
    (
        13,
        "NETWORK_EXCEPTION",
        True,
        "NetworkException",
        "The server disconnected before a response was received.",
    ),
    (
        14,
        "COORDINATOR_LOAD_IN_PROGRESS",
        True,
        "CoordinatorLoadInProgressException",
        "The coordinator is loading and hence can't process requests.",
    ),
    (
        16,
        "NOT_COORDINATOR",
        True,
        "NotCoordinatorException",
        "This is not the correct coordinator.",
    ),
    (
        17,
        "INVALID_TOPIC_EXCEPTION",
        False,
        "InvalidTopicException",
        "The request attempted to perform an operation on an invalid topic.",
    ),
    (
        20,
        "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
        True,
        "NotEnoughReplicasAfterAppendException",
        "Messages are written to the log, but to fewer in-sync replicas than required.",
    ),
    (
        27,
        "REBALANCE_IN_PROGRESS",
        False,
        "RebalanceInProgressException",
        "The group is rebalancing, so a rejoin is needed.",
    ),
    (
        35,
        "UNSUPPORTED_VERSION",
        False,
        "UnsupportedVersionException",
        "The version of API is not supported.",
    ),
    (
        37,
        "INVALID_PARTITIONS",
        False,
        "InvalidPartitionsException",
        "Number of partitions is below 1.",
    ),
    (
        38,
        "INVALID_REPLICATION_FACTOR",
        False,
        "InvalidReplicationFactorException",
        "Replication factor is below 1 or larger than the number of available brokers.",
    ),
    (40, "INVALID_CONFIG", False, "InvalidConfigurationException", "Configuration is invalid."),
    (
        41,
        "NOT_CONTROLLER",
        True,
        "NotControllerException",
        "This is not the correct controller for this cluster.",
    ),
    (
        42,
        "INVALID_REQUEST",
        False,
        "InvalidRequestException",
        "This most likely occurs because of a request being malformed by the client library or "
        "the message was sent to an incompatible broker. See the broker logs for more details.",
    ),
    (
        51,
        "CONCURRENT_TRANSACTIONS",
        True,
        "ConcurrentTransactionsException",
        "The producer attempted to update a transaction while another concurrent operation on "
        "the same transaction was ongoing.",
    ),
    (
        56,
        "KAFKA_STORAGE_ERROR",
        True,
        "KafkaStorageException",
        "Disk error when trying to access log file on the disk.",
    ),
    (
        64,
        "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED",
        False,
        "UnsupportedByAuthenticationException",
        "Delegation Token requests are not allowed on PLAINTEXT/1-way SSL channels and on "
        "delegation token authenticated channels.",
    ),
    (68, "NON_EMPTY_GROUP", False, "GroupNotEmptyException", "The group is not empty."),
    (
        74,
        "FENCED_LEADER_EPOCH",
        True,
        "FencedLeaderEpochException",
        "The leader epoch in the request is older than the epoch on the broker.",
    ),
    (77, "STALE_BROKER_EPOCH", False, "StaleBrokerEpochException", "Broker epoch has changed."),
    (
        78,
        "OFFSET_NOT_AVAILABLE",
        True,
        "OffsetNotAvailableException",
        "The leader high watermark has not caught up from a recent leader election so the "
        "offsets cannot be guaranteed to be monotonically increasing.",
    ),
    (
        84,
        "ELECTION_NOT_NEEDED",
        True,
        "ElectionNotNeededException",
        "Leader election not needed for topic partition.",
    ),
    (
        87,
        "INVALID_RECORD",
        False,
        "InvalidRecordException",
        "This record has failed the validation on broker and hence will be rejected.",
    ),
    (
        99,
        "POSITION_OUT_OF_RANGE",
        False,
        "PositionOutOfRangeException",
        "Requested position is not greater than or equal to zero, and less than the size of the "
        "snapshot.",
    ),
    (
        100,
        "UNKNOWN_TOPIC_ID",
        True,
        "UnknownTopicIdException",
        "This server does not host this topic ID.",
    ),
    (
        101,
        "DUPLICATE_BROKER_REGISTRATION",
        False,
        "DuplicateBrokerRegistrationException",
        "This broker ID is already in use.",
    ),
    (
        103,
        "INCONSISTENT_TOPIC_ID",
        True,
        "InconsistentTopicIdException",
        "The log's topic ID did not match the topic ID in the request.",
    ),
    (
        108,
        "NEW_LEADER_ELECTED",
        False,
        "NewLeaderElectedException",
        "The AlterPartition request successfully updated the partition state but the leader has "
        "changed.",
    ),
    (
        119,
        "INVALID_REGISTRATION",
        False,
        "InvalidRegistrationException",
        "The controller has considered the broker registration to be invalid.",
    ),
    (
        128,
        "INVALID_REGULAR_EXPRESSION",
        False,
        "InvalidRegularExpression",
        "The regular expression is not valid.",
    ),
    (
        133,
        "SHARE_SESSION_LIMIT_REACHED",
        True,
        "ShareSessionLimitReachedException",
        "The limit of share sessions has been reached.",
    ),
]


@pytest.mark.parametrize(("code", "name", "retriable", "exception", "message"), GOLDEN)
def test_kafkas_values(
    code: int, name: str, retriable: bool, exception: str | None, message: str | None
) -> None:
    assert describe(code) == KafkaError(code, name, retriable, exception, message)
    assert getattr(error_codes, name) == code


def test_every_code_and_name_once_in_kafkas_order() -> None:
    codes = [error.code for error in ERRORS]
    assert codes == sorted(set(codes))
    assert codes == list(range(-1, 134))
    assert len({error.name for error in ERRORS}) == len(ERRORS)


def test_every_constant_is_a_row_of_the_table() -> None:
    constants = {
        name: value
        for name, value in vars(error_codes).items()
        if name.isupper() and isinstance(value, int)
    }
    assert constants == {error.name: error.code for error in ERRORS}


def test_only_none_lacks_an_exception_and_a_message() -> None:
    bare = [error.name for error in ERRORS if error.exception is None or error.message is None]
    assert bare == ["NONE"]


def test_names_and_flags_match_the_protocol_for_every_code_kio_knows() -> None:
    for code in ErrorCode:
        error = describe(code.value)
        assert error is not None, code
        assert error.name == error_name(code.value) == code.name.upper()
        assert error.retriable == code.retriable, error.name


def test_a_code_kafka_does_not_define() -> None:
    assert describe(134) is None
    assert describe(-2) is None
    assert error_name(134) == "UNKNOWN_ERROR_CODE"
