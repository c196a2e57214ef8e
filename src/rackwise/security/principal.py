"""Kafka's ``KafkaPrincipal``: a type and a name, written ``User:alice``.

Worked example
    ``KafkaPrincipal.parse("User:CN=broker-1,OU=dc1")`` is the principal of type ``User`` named
    ``CN=broker-1,OU=dc1`` (only the first colon separates); ``str()`` of it gives the text
    back, and a connection that has not authenticated is :data:`ANONYMOUS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

USER_TYPE: Final = "User"


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    """A principal as Kafka's authorizer compares them: by type and name, exactly."""

    principal_type: str
    name: str

    @classmethod
    def parse(cls, text: str) -> KafkaPrincipal:
        """``Type:name`` as Kafka's ``SecurityUtils.parseKafkaPrincipal`` reads it."""
        kind, sep, name = text.partition(":")
        if not sep or not kind or not name:
            raise ValueError(
                f"expected a string in format principalType:principalName but got {text!r}"
            )
        return cls(kind, name)

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"


ANONYMOUS: Final = KafkaPrincipal(USER_TYPE, "ANONYMOUS")
"""The principal of a connection that has not authenticated (PLAINTEXT, or SSL without a
client certificate)."""
