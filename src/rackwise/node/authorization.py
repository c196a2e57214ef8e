"""A node's authorizer: its configuration keys, the authorizer built from the image's ACLs, and
the check a request is judged by (who sent it, from where, with which ACLs).

Goals
    ``authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer`` turns
    authorization on (:class:`~rackwise.security.authorizer.Authorizer`'s semantics), with
    ``super.users`` and ``allow.everyone.if.no.acl.found``; without it every request is
    allowed and the ACL APIs answer SECURITY_DISABLED, as Kafka without an authorizer.

Constraints
    * The authorizer is rebuilt only when the image's ACL map changes (the image keeps the same
      map object until an ACL record is replayed), so a request pays for a lookup, never for
      an index.
    * The principal and host are the current connection's
      (:func:`rackwise.net.current_connection`): ``User:ANONYMOUS`` until a listener's
      authentication sets another.
    * Any other ``authorizer.class.name`` is a configuration error naming the value (no other
      authorizer exists here).

Worked example
    With ``super.users=User:admin``, ``Authorization(settings).check(image)`` inside a handler
    of a connection authenticated as ``User:admin`` gives a :class:`Check` whose ``may`` is
    true for anything; for ``User:ANONYMOUS`` it answers from the image's ACLs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from rackwise.common.acl import AclOperation, operations_field
from rackwise.image import MetadataImage
from rackwise.net import current_connection
from rackwise.node.properties_file import ConfigException
from rackwise.security import ANONYMOUS
from rackwise.security.acl import CLUSTER_NAME, ResourceType
from rackwise.security.authorizer import AUTHORIZER_CLASS, Authorizer, parse_super_users

AUTHORIZER_CLASS_NAME: Final = "authorizer.class.name"
SUPER_USERS: Final = "super.users"
ALLOW_EVERYONE_IF_NO_ACL_FOUND: Final = "allow.everyone.if.no.acl.found"
AUTHORIZER_KEYS: Final = frozenset(
    {AUTHORIZER_CLASS_NAME, SUPER_USERS, ALLOW_EVERYONE_IF_NO_ACL_FOUND}
)
"""The keys of the authorizer, both roles'."""
AUTHORIZATION_FAILED: Final = "Authorization failed."
"""The message Kafka gives a topic refused by the authorizer."""

TOPIC_OPERATIONS: Final = (
    AclOperation.READ,
    AclOperation.WRITE,
    AclOperation.CREATE,
    AclOperation.DELETE,
    AclOperation.ALTER,
    AclOperation.DESCRIBE,
    AclOperation.DESCRIBE_CONFIGS,
    AclOperation.ALTER_CONFIGS,
)
CLUSTER_OPERATIONS: Final = (
    AclOperation.CREATE,
    AclOperation.CLUSTER_ACTION,
    AclOperation.DESCRIBE_CONFIGS,
    AclOperation.ALTER_CONFIGS,
    AclOperation.IDEMPOTENT_WRITE,
    AclOperation.ALTER,
    AclOperation.DESCRIBE,
)
GROUP_OPERATIONS: Final = (
    AclOperation.READ,
    AclOperation.DESCRIBE,
    AclOperation.DELETE,
    AclOperation.DESCRIBE_CONFIGS,
    AclOperation.ALTER_CONFIGS,
)


@dataclass(frozen=True, slots=True)
class AuthorizerSettings:
    super_users: frozenset[str]
    allow_everyone_if_no_acl_found: bool

    @staticmethod
    def from_properties(props: Mapping[str, str]) -> AuthorizerSettings | None:
        """The settings, or None when ``authorizer.class.name`` is unset or empty."""
        name = props.get(AUTHORIZER_CLASS_NAME, "").strip()
        if not name:
            return None
        if name != AUTHORIZER_CLASS:
            raise ConfigException(
                f"Invalid value {name} for configuration {AUTHORIZER_CLASS_NAME}: the only "
                f"authorizer is {AUTHORIZER_CLASS}"
            )
        everyone = props.get(ALLOW_EVERYONE_IF_NO_ACL_FOUND, "false").strip().lower()
        if everyone not in ("true", "false"):
            raise ConfigException(
                f"Invalid value {everyone} for configuration {ALLOW_EVERYONE_IF_NO_ACL_FOUND}: "
                "Expected value to be either true or false"
            )
        return AuthorizerSettings(parse_super_users(props.get(SUPER_USERS)), everyone == "true")


@dataclass(frozen=True, slots=True)
class Check:
    """One request's judge: the authorizer with the caller's principal and host."""

    authorizer: Authorizer
    principal: str
    host: str

    def may(self, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        return self.authorizer.authorize(self.principal, self.host, operation, resource_type, name)

    def may_cluster(self, operation: AclOperation) -> bool:
        return self.may(operation, ResourceType.CLUSTER, CLUSTER_NAME)

    def may_topic(self, operation: AclOperation) -> Callable[[str], bool]:
        """Whether the caller may do ``operation`` on a topic, by name."""
        return lambda name: self.may(operation, ResourceType.TOPIC, name)

    def may_create_topic(self, name: str) -> bool:
        """CREATE on the cluster or on the topic (Kafka's rule for creating topics)."""
        return self.may_cluster(AclOperation.CREATE) or self.may(
            AclOperation.CREATE, ResourceType.TOPIC, name
        )

    def operations(
        self, resource_type: ResourceType, name: str, operations: Iterable[AclOperation]
    ) -> int:
        """KIP-430's bit set of those of ``operations`` the caller may do on the resource."""
        allowed = self.authorizer.authorized_operations(
            self.principal, self.host, resource_type, name, operations
        )
        return operations_field(allowed)

    @property
    def is_trusted(self) -> bool:
        """CLUSTER_ACTION on the cluster: a broker, a controller, a super user."""
        return self.may_cluster(AclOperation.CLUSTER_ACTION)


class Authorization:
    """A node's authorizer, rebuilt from the image's ACLs when they change."""

    def __init__(self, settings: AuthorizerSettings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._built: tuple[object, Authorizer] | None = None

    def authorizer(self, image: MetadataImage) -> Authorizer:
        built = self._built
        acls = image.acls
        if built is not None and built[0] is acls:
            return built[1]
        with self._lock:
            authorizer = Authorizer.build(
                acls.values(),
                super_users=self.settings.super_users,
                allow_everyone_if_no_acl_found=self.settings.allow_everyone_if_no_acl_found,
            )
            self._built = (acls, authorizer)
        return authorizer

    def check(self, image: MetadataImage) -> Check:
        """The check of the request the calling task handles."""
        connection = current_connection()
        if connection is None:
            return Check(self.authorizer(image), str(ANONYMOUS), "")
        return Check(self.authorizer(image), str(connection.principal), connection.ip)


def authorization_of(props: Mapping[str, str]) -> Authorization | None:
    """The node's authorization, or None without ``authorizer.class.name``."""
    settings = AuthorizerSettings.from_properties(props)
    return None if settings is None else Authorization(settings)
