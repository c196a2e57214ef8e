"""The ACL APIs as Kafka answers them with no authorizer configured (pure: request in, response
message out).

Goals
    rackwise has no authorizer, so DescribeAcls, CreateAcls and DeleteAcls are answered as a
    Kafka 4.1 cluster without ``authorizer.class.name`` answers them (Kafka's ``AclApis``):
    SECURITY_DISABLED, with Kafka's messages, so that ``kafka-acls.sh`` and the admin clients
    report "No Authorizer is configured" instead of an API the cluster does not know. Brokers
    and controllers answer alike (a controller whether it is active or not: no record is read
    or written).

Constraints
    * DescribeAcls carries one error for the whole answer ("No Authorizer is configured on the
      broker"); CreateAcls one result per creation and DeleteAcls one result per filter, each
      SECURITY_DISABLED with "No Authorizer is configured." (the requests'
      ``getErrorResponse``), in the order of the request.
    * A filter or creation naming an UNKNOWN (code 0) resource type, pattern type, operation or
      permission type is a request Kafka cannot parse (the requests' validation throws while
      the request is built): the connection is closed, as Kafka's socket server closes it.

Worked example
    A CreateAcls v3 with two creations gets ``results`` of two entries, each
    ``error_code`` 54 and ``error_message`` "No Authorizer is configured.".
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from rackwise.common.error_codes import SECURITY_DISABLED
from rackwise.net.errors import CloseConnection
from rackwise.protocol import Response, response_to

DESCRIBE_MESSAGE: Final = "No Authorizer is configured on the broker"
"""DescribeAcls's message (``AclApis.handleDescribeAcls``)."""
ALTER_MESSAGE: Final = "No Authorizer is configured."
"""CreateAcls's and DeleteAcls's (the ``SecurityDisabledException`` they are answered with)."""
UNKNOWN: Final = 0
"""The code of UNKNOWN in Kafka's ResourceType, PatternType, AclOperation and AclPermissionType."""


def _refuse_unknown(what: str, entries: Iterable[Any], fields: tuple[str, ...]) -> None:
    for entry in entries:
        unknown = [name for name in fields if int(getattr(entry, name)) == UNKNOWN]
        if unknown:
            raise CloseConnection(f"{what} contain UNKNOWN elements ({', '.join(unknown)})")


def describe_acls(body: Any) -> Response:
    """DescribeAcls: SECURITY_DISABLED for the whole answer."""
    _refuse_unknown(
        "DescribeAclsRequest",
        (body,),
        ("resource_type_filter", "pattern_type_filter", "operation", "permission_type"),
    )
    return response_to(
        body,
        {
            "throttle_time": 0,
            "error_code": SECURITY_DISABLED,
            "error_message": DESCRIBE_MESSAGE,
            "resources": [],
        },
    )


def create_acls(body: Any) -> Response:
    """CreateAcls: SECURITY_DISABLED for each creation."""
    _refuse_unknown(
        "CreatableAcls",
        body.creations,
        ("resource_type", "resource_pattern_type", "operation", "permission_type"),
    )
    result = {"error_code": SECURITY_DISABLED, "error_message": ALTER_MESSAGE}
    return response_to(
        body,
        {"throttle_time": 0, "results": [result for _ in body.creations]},
    )


def delete_acls(body: Any) -> Response:
    """DeleteAcls: SECURITY_DISABLED for each filter, with no matching ACL."""
    _refuse_unknown(
        "Filters",
        body.filters,
        ("resource_type_filter", "pattern_type_filter", "operation", "permission_type"),
    )
    result = {"error_code": SECURITY_DISABLED, "error_message": ALTER_MESSAGE, "matching_acls": []}
    return response_to(
        body,
        {"throttle_time": 0, "filter_results": [result for _ in body.filters]},
    )
