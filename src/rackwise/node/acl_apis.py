"""The ACL APIs, pure: DescribeAcls answered from the image's ACLs, CreateAcls and DeleteAcls
read into bindings and filters and answered from the controller's outcomes; without an
authorizer, answered as Kafka answers them without one.

Goals
    * With ``authorizer.class.name`` set (:mod:`rackwise.node.authorization`): DescribeAcls
      lists the ACLs its filter matches, grouped by resource pattern; CreateAcls and DeleteAcls
      are the controller's (a broker forwards them), one result per creation or filter.
    * Without it, as a Kafka 4.1 cluster without ``authorizer.class.name`` answers (Kafka's
      ``AclApis``): SECURITY_DISABLED, with Kafka's messages, so that ``kafka-acls.sh`` and
      the admin clients report "No Authorizer is configured". Brokers and controllers answer
      alike (a controller whether it is active or not: no record is read or written).

Constraints
    * DescribeAcls carries one error for the whole answer ("No Authorizer is configured on the
      broker"); CreateAcls one result per creation and DeleteAcls one result per filter, each
      SECURITY_DISABLED with "No Authorizer is configured." (the requests'
      ``getErrorResponse``), in the order of the request.
    * A filter or creation naming an UNKNOWN (code 0) resource type, pattern type, operation or
      permission type is a request Kafka cannot parse (the requests' validation throws while
      the request is built): the connection is closed, as Kafka's socket server closes it. A
      code Kafka has no name for is INVALID_REQUEST for that item.

Worked example
    A CreateAcls v3 with two creations gets ``results`` of two entries, each
    ``error_code`` 54 and ``error_message`` "No Authorizer is configured." without an
    authorizer; with one, the controller writes an AccessControlEntryRecord per new ACL and
    both results are 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from rackwise.common.acl import AclOperation
from rackwise.common.error_codes import NONE, SECURITY_DISABLED
from rackwise.net.errors import CloseConnection
from rackwise.protocol import Response, response_to
from rackwise.security.acl import (
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclPermissionType,
    InvalidAcl,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)

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


# ---- with an authorizer -----------------------------------------------------------------------

_FILTER_FIELDS: Final = (
    "resource_type_filter",
    "pattern_type_filter",
    "operation",
    "permission_type",
)
_UNKNOWN_FILTER: Final = AclBindingFilter(
    ResourcePatternFilter(ResourceType.UNKNOWN, None, PatternType.UNKNOWN),
    AccessControlEntryFilter(None, None, AclOperation.UNKNOWN, AclPermissionType.UNKNOWN),
)


def filter_of(entry: Any) -> AclBindingFilter:
    """The filter of a DescribeAcls request or of one DeleteAcls filter; a code Kafka does not
    know makes the UNKNOWN filter (refused by the controller, matching nothing)."""
    pattern_type = getattr(entry, "pattern_type_filter", PatternType.LITERAL)
    try:
        return AclBindingFilter(
            ResourcePatternFilter(
                ResourceType(int(entry.resource_type_filter)),
                entry.resource_name_filter,
                PatternType(int(pattern_type)),
            ),
            AccessControlEntryFilter(
                entry.principal_filter,
                entry.host_filter,
                AclOperation(int(entry.operation)),
                AclPermissionType(int(entry.permission_type)),
            ),
        )
    except ValueError:
        return _UNKNOWN_FILTER


def creations_of(body: Any) -> list[AclBinding | InvalidAcl]:
    """The ACLs a CreateAcls asks for, an :class:`InvalidAcl` for one with a code Kafka does not
    know."""
    _refuse_unknown(
        "CreatableAcls",
        body.creations,
        ("resource_type", "resource_pattern_type", "operation", "permission_type"),
    )
    out: list[AclBinding | InvalidAcl] = []
    for c in body.creations:
        try:
            pattern = ResourcePattern(
                ResourceType(int(c.resource_type)),
                c.resource_name,
                PatternType(int(getattr(c, "resource_pattern_type", PatternType.LITERAL))),
            )
            entry = AccessControlEntry(
                c.principal,
                c.host,
                AclOperation(int(c.operation)),
                AclPermissionType(int(c.permission_type)),
            )
        except ValueError as e:
            out.append(InvalidAcl(str(e)))
            continue
        out.append(AclBinding(pattern, entry))
    return out


def filters_of(body: Any) -> list[AclBindingFilter]:
    """The filters of a DeleteAcls."""
    _refuse_unknown("Filters", body.filters, _FILTER_FIELDS)
    return [filter_of(f) for f in body.filters]


def _entry_values(entry: AccessControlEntry) -> dict[str, Any]:
    return {
        "principal": entry.principal,
        "host": entry.host,
        "operation": int(entry.operation),
        "permission_type": int(entry.permission),
    }


def binding_of_match(match: Any) -> AclBinding:
    """The ACL a DeleteAcls answer reports as deleted."""
    return AclBinding(
        ResourcePattern(
            ResourceType(int(match.resource_type)),
            match.resource_name,
            PatternType(int(match.pattern_type)),
        ),
        AccessControlEntry(
            match.principal,
            match.host,
            AclOperation(int(match.operation)),
            AclPermissionType(int(match.permission_type)),
        ),
    )


def describe_acls_from(body: Any, acls: Mapping[Any, AclBinding]) -> Response:
    """DescribeAcls with an authorizer: the ACLs the filter matches, by resource pattern
    (Kafka's ``DescribeAclsResponse.aclsResources``), patterns and entries in a stable order."""
    _refuse_unknown("DescribeAclsRequest", (body,), _FILTER_FIELDS)
    wanted = filter_of(body)
    grouped: dict[ResourcePattern, list[AccessControlEntry]] = {}
    for binding in acls.values():
        if wanted.matches(binding):
            grouped.setdefault(binding.pattern, []).append(binding.entry)
    resources = [
        {
            "resource_type": int(pattern.resource_type),
            "resource_name": pattern.name,
            "pattern_type": int(pattern.pattern_type),
            "acls": [_entry_values(e) for e in sorted(grouped[pattern])],
        }
        for pattern in sorted(grouped)
    ]
    return response_to(
        body,
        {"throttle_time": 0, "error_code": NONE, "error_message": None, "resources": resources},
    )


def describe_acls_error(body: Any, error_code: int, message: str | None) -> Response:
    return response_to(
        body,
        {"throttle_time": 0, "error_code": error_code, "error_message": message, "resources": []},
    )


def create_acls_response(body: Any, outcomes: Sequence[tuple[int, str | None]]) -> Response:
    results = [{"error_code": code, "error_message": message} for code, message in outcomes]
    return response_to(body, {"throttle_time": 0, "results": results})


def create_acls_error(body: Any, error_code: int, message: str | None) -> Response:
    return create_acls_response(body, [(error_code, message)] * len(body.creations))


def delete_acls_response(
    body: Any, results: Sequence[tuple[tuple[int, str | None], Sequence[AclBinding]]]
) -> Response:
    filter_results = [
        {
            "error_code": code,
            "error_message": message,
            "matching_acls": [
                {
                    "error_code": NONE,
                    "error_message": None,
                    "resource_type": int(b.pattern.resource_type),
                    "resource_name": b.pattern.name,
                    "pattern_type": int(b.pattern.pattern_type),
                    **_entry_values(b.entry),
                }
                for b in matched
            ],
        }
        for (code, message), matched in results
    ]
    return response_to(body, {"throttle_time": 0, "filter_results": filter_results})


def delete_acls_error(body: Any, error_code: int, message: str | None) -> Response:
    return delete_acls_response(body, [((error_code, message), [])] * len(body.filters))
