"""Kafka's ``sasl.jaas.config`` values: login modules with their options, read as Kafka's
``JaasConfig`` reads them, and what the SASL mechanisms take from them.

Goals
    ``org.apache.kafka.common.security.plain.PlainLoginModule required username="admin"
    password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`` is one
    entry: the module, its control flag and its options. On a server, PLAIN's users are the
    ``user_<name>`` options of the PlainLoginModule entry; on a client (and a broker logging in
    to others), ``username`` and ``password`` are its own credentials.

Constraints
    Kafka's messages for what it refuses (``Login module not specified in JAAS config``,
    ``JAAS config entry not terminated by semi-colon``, ``Value not specified for key 'k' in
    JAAS config``); values are words or double-quoted strings (backslash escapes the next
    character), and ``//`` and ``/* */`` comments are skipped, as Java's ``StreamTokenizer``.

Worked example
    ``plain_users(parse_jaas_config('x.PlainLoginModule required user_bob="b";'))`` is
    ``{"bob": "b"}``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

PLAIN_LOGIN_MODULE: Final = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE: Final = "org.apache.kafka.common.security.scram.ScramLoginModule"
CONTROL_FLAGS: Final = ("required", "requisite", "sufficient", "optional")
_TOKEN: Final = re.compile(
    r'\s+|//[^\n]*|/\*.*?\*/|"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<word>[A-Za-z0-9_$.\-]+)|(?P<char>.)',
    re.DOTALL,
)


class JaasConfigException(ValueError):
    """A ``sasl.jaas.config`` value Kafka would refuse (its message)."""


@dataclass(frozen=True, slots=True)
class LoginModuleEntry:
    """One entry: ``<module> <flag> key=value ... ;``."""

    login_module: str
    control_flag: str
    options: Mapping[str, str]


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for m in _TOKEN.finditer(text):
        if m["quoted"] is not None:
            out.append(("value", re.sub(r"\\(.)", r"\1", m["quoted"])))
        elif m["word"] is not None:
            out.append(("value", m["word"]))
        elif m["char"] is not None:
            out.append(("char", m["char"]))
    return out


def parse_jaas_config(text: str) -> tuple[LoginModuleEntry, ...]:
    """The entries of a ``sasl.jaas.config`` value (raises :class:`JaasConfigException`)."""
    tokens = _tokens(text)
    entries: list[LoginModuleEntry] = []
    i = 0
    while i < len(tokens):
        module = tokens[i][1]
        i += 1
        if i >= len(tokens):
            raise JaasConfigException("Login module control flag not specified in JAAS config")
        flag = tokens[i][1]
        if flag.lower() not in CONTROL_FLAGS:
            raise JaasConfigException(f"Invalid login module control flag '{flag}' in JAAS config")
        i += 1
        options: dict[str, str] = {}
        while i < len(tokens) and tokens[i] != ("char", ";"):
            key = tokens[i][1]
            if (
                i + 2 >= len(tokens)
                or tokens[i + 1] != ("char", "=")
                or tokens[i + 2][0] != "value"
            ):
                raise JaasConfigException(f"Value not specified for key '{key}' in JAAS config")
            options[key] = tokens[i + 2][1]
            i += 3
        if i >= len(tokens):
            raise JaasConfigException("JAAS config entry not terminated by semi-colon")
        i += 1
        entries.append(LoginModuleEntry(module, flag.lower(), MappingProxyType(options)))
    if not entries:
        raise JaasConfigException("Login module not specified in JAAS config")
    return tuple(entries)


def plain_users(entries: Sequence[LoginModuleEntry]) -> Mapping[str, str]:
    """PLAIN's users on a server: the ``user_<name>="<password>"`` options of its
    PlainLoginModule entry (Kafka's ``PlainServerCallbackHandler``)."""
    users: dict[str, str] = {}
    for entry in entries:
        if entry.login_module == PLAIN_LOGIN_MODULE:
            for key, value in entry.options.items():
                if key.startswith("user_") and len(key) > 5:
                    users[key[5:]] = value
    return MappingProxyType(users)


def login_credentials(entries: Sequence[LoginModuleEntry]) -> tuple[str, str] | None:
    """``(username, password)`` a client logs in with: the first entry that has both."""
    for entry in entries:
        username, password = entry.options.get("username"), entry.options.get("password")
        if username is not None and password is not None:
            return username, password
    return None
