"""Kafka's ACL operation codes and the authorized-operations bit set of KIP-430 (Kafka's
``org.apache.kafka.common.acl.AclOperation`` and ``Utils.to32BitField``)."""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum
from typing import Final


class AclOperation(IntEnum):
    """Kafka's ``AclOperation`` codes (3 to 12 are those the authorized-operations bit sets
    use; UNKNOWN, ANY and ALL only appear in ACLs and their filters)."""

    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


def operations_field(operations: Iterable[AclOperation]) -> int:
    """One bit per operation code (Kafka's ``Utils.to32BitField``)."""
    return sum(1 << op for op in set(operations))


OPERATIONS_NOT_ASKED: Final = -(2**31)
"""The schemas' default (``Int.MinValue``): authorized operations not asked for."""
