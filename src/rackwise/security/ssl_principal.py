"""The principal of a TLS peer: its certificate's distinguished name, mapped by
``ssl.principal.mapping.rules`` as Kafka's ``SslPrincipalMapper`` maps it.

Goals
    :func:`distinguished_name` gives a certificate subject as Kafka's principal builder reads it
    (RFC 2253 text, last RDN first: ``CN=broker-1,OU=dc1,O=rackwise``);
    :class:`SslPrincipalMapper` applies the rules to it, ``User:`` the result.

Constraints
    * The rules are Kafka's: comma-separated ``DEFAULT`` (the name unchanged) and
      ``RULE:pattern/replacement/`` with an optional ``L`` or ``U`` (lower or upper case the
      result); the first rule whose pattern matches the whole name gives the principal; with
      none matching, the mapping fails (Kafka's ``NoMatchingRule``), and the connection with it.
    * A replacement's ``$n`` is a back-reference, as Java's ``replaceAll`` reads it; one past the
      pattern's groups is kept literally, as Kafka keeps it.

Worked example
    ``SslPrincipalMapper.from_rules("RULE:^CN=(.*?),OU=(.*?)$/$1@$2/L,DEFAULT")`` maps
    ``CN=Broker-1,OU=DC1`` to ``broker-1@dc1`` and ``O=acme`` (no match) to ``O=acme``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from cryptography import x509

from rackwise.security.principal import USER_TYPE, KafkaPrincipal

DEFAULT_RULES: Final = "DEFAULT"
_RULE: Final = r"(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_SPLITTER: Final = re.compile(r"\s*(" + _RULE + r")\s*(?:,\s*|$)")
_PARSER: Final = re.compile(_RULE)
_BACK_REFERENCE: Final = re.compile(r"\$(\d+)")


class NoMatchingRule(ValueError):
    """No rule of ``ssl.principal.mapping.rules`` applies to a distinguished name."""


def distinguished_name(certificate_der: bytes) -> str:
    """The subject of the DER certificate ``certificate_der``, as RFC 2253 text."""
    return x509.load_der_x509_certificate(certificate_der).subject.rfc4514_string()


@dataclass(frozen=True, slots=True)
class Rule:
    """One mapping rule; ``pattern`` None is ``DEFAULT``."""

    pattern: re.Pattern[str] | None
    replacement: str = ""
    case: str = ""
    """``L``, ``U`` or empty."""

    def apply(self, name: str) -> str | None:
        """The mapped name, or None when the pattern does not match all of ``name``."""
        if self.pattern is None:
            return name
        if self.pattern.fullmatch(name) is None:
            return None
        result = self.pattern.sub(_python_replacement(self.replacement, self.pattern.groups), name)
        if self.case == "L":
            return result.lower()
        if self.case == "U":
            return result.upper()
        return result

    def __str__(self) -> str:
        if self.pattern is None:
            return "DEFAULT"
        return f"RULE:{self.pattern.pattern}/{self.replacement}" + (
            f"/{self.case}" if self.case else ""
        )


def _python_replacement(replacement: str, groups: int) -> str:
    """Java's ``replaceAll`` replacement as :func:`re.sub`'s: ``$n`` a group (shortened, as
    Java shortens it, to a group that exists, else literal), ``\\x`` the character x."""
    out: list[str] = []
    i = 0
    while i < len(replacement):
        ch = replacement[i]
        if ch == "\\" and i + 1 < len(replacement):
            out.append(replacement[i + 1].replace("\\", "\\\\"))
            i += 2
            continue
        match = _BACK_REFERENCE.match(replacement, i) if ch == "$" else None
        if match is None:
            out.append("\\\\" if ch == "\\" else ch)
            i += 1
            continue
        digits = match.group(1)
        number, used = int(digits[0]), 1
        while used < len(digits) and number * 10 + int(digits[used]) <= groups:
            number, used = number * 10 + int(digits[used]), used + 1
        if number > groups:
            out.append("$" + digits)
        else:
            out.append(f"\\g<{number}>" + digits[used:])
        i = match.end()
    return "".join(out)


class SslPrincipalMapper:
    """``ssl.principal.mapping.rules``, parsed (see the module docstring)."""

    def __init__(self, rules: tuple[Rule, ...]) -> None:
        self.rules = rules

    @classmethod
    def from_rules(cls, text: str | None) -> SslPrincipalMapper:
        """The mapper of ``text`` (None: ``DEFAULT``); raises ValueError with Kafka's
        ``Invalid rule`` message for a rule it cannot read."""
        text = DEFAULT_RULES if text is None else text
        rules: list[Rule] = []
        for rule in (m.group(1) for m in _SPLITTER.finditer(text.strip())):
            match = _PARSER.match(rule)
            if match is None:
                raise ValueError(f"Invalid rule: {rule}")
            if match.end() != len(rule):
                raise ValueError(
                    f"Invalid rule: `{rule}`, unmatched substring: `{rule[match.end() :]}`"
                )
            if match.group(1) is not None:
                rules.append(Rule(None))
            elif match.group(2) is not None:
                try:
                    pattern = re.compile(match.group(2))
                except re.error as e:
                    raise ValueError(f"Invalid rule: `{rule}`: {e}") from None
                rules.append(Rule(pattern, match.group(3), match.group(4)))
            elif match.group(5):
                raise ValueError(f"Invalid rule: {rule}")
        return cls(tuple(rules))

    def name(self, distinguished: str) -> str:
        """The name the first rule that applies gives ``distinguished``."""
        for rule in self.rules:
            mapped = rule.apply(distinguished)
            if mapped is not None:
                return mapped
        rules = ", ".join(str(r) for r in self.rules)
        raise NoMatchingRule(f"No rules apply to {distinguished}, rules [{rules}]")

    def principal(self, distinguished: str) -> KafkaPrincipal:
        """``User:`` the mapped name of ``distinguished``."""
        return KafkaPrincipal(USER_TYPE, self.name(distinguished))

    def __str__(self) -> str:
        return f"SslPrincipalMapper(rules = [{', '.join(str(r) for r in self.rules)}])"
