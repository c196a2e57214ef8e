"""The Java client's security keys (``security.protocol``, ``sasl.*``, ``ssl.*``, as a
``client.properties`` holds them) turned into librdkafka's, for the commands that run
confluent-kafka (the console and perf tools).

Constraints
    * ``sasl.jaas.config`` becomes ``sasl.username`` and ``sasl.password`` (PlainLoginModule or
      ScramLoginModule); a PEM trust store becomes ``ssl.ca.location``; a PKCS12 key store is
      passed as librdkafka's ``ssl.keystore.*``, a PEM one (key and certificate in one file) as
      ``ssl.key.location`` and ``ssl.certificate.location``.
    * What librdkafka cannot read as the Java client would (a PKCS12 or JKS trust store,
      inline certificates) is refused naming the key, never dropped.

Worked example
    ``security.protocol=SASL_SSL``, ``sasl.mechanism=SCRAM-SHA-512``, ``sasl.jaas.config=...
    ScramLoginModule required username="admin" password="p";``,
    ``ssl.truststore.location=/c/ca.pem`` give ``{"security.protocol": "SASL_SSL",
    "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "admin", "sasl.password": "p",
    "ssl.ca.location": "/c/ca.pem"}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from rackwise.common.errors import RackwiseError

SECURITY_KEYS: Final = frozenset(
    {
        "security.protocol",
        "sasl.mechanism",
        "sasl.jaas.config",
        "ssl.truststore.type",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.keystore.type",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.key.password",
        "ssl.endpoint.identification.algorithm",
        "ssl.enabled.protocols",
        "ssl.protocol",
    }
)
"""The Java keys served."""


class SecurityConfigError(RackwiseError):
    """A security key librdkafka cannot honour as the Java client would."""


def librdkafka_security(java: Mapping[str, str]) -> dict[str, str]:
    """librdkafka's settings for the security keys of ``java`` (the others are ignored)."""
    from rackwise.security.jaas import (  # noqa: PLC0415
        JaasConfigException,
        login_credentials,
        parse_jaas_config,
    )

    out: dict[str, str] = {}
    if "security.protocol" in java:
        out["security.protocol"] = java["security.protocol"].strip().upper()
    if "sasl.mechanism" in java:
        out["sasl.mechanism"] = java["sasl.mechanism"].strip()
    if "sasl.jaas.config" in java:
        try:
            credentials = login_credentials(parse_jaas_config(java["sasl.jaas.config"]))
        except JaasConfigException as e:
            raise SecurityConfigError(f"sasl.jaas.config: {e}") from None
        if credentials is None:
            raise SecurityConfigError("sasl.jaas.config has no username and password")
        out["sasl.username"], out["sasl.password"] = credentials
    _trust_store(java, out)
    _key_store(java, out)
    algorithm = java.get("ssl.endpoint.identification.algorithm")
    if algorithm is not None:
        out["ssl.endpoint.identification.algorithm"] = algorithm.strip().lower() or "none"
    return out


def with_librdkafka_security(props: Mapping[str, str]) -> dict[str, str]:
    """``props`` with its Java security keys replaced by librdkafka's."""
    plain = {k: v for k, v in props.items() if k not in SECURITY_KEYS}
    return {**plain, **librdkafka_security(props)}


def _trust_store(java: Mapping[str, str], out: dict[str, str]) -> None:
    location = java.get("ssl.truststore.location")
    if location is None:
        return
    kind = java.get("ssl.truststore.type", "JKS").strip().upper()
    if kind != "PEM":
        raise SecurityConfigError(
            f"ssl.truststore.type={kind}: librdkafka reads a PEM trust store only "
            "(ssl.truststore.type=PEM)"
        )
    out["ssl.ca.location"] = location


def _key_store(java: Mapping[str, str], out: dict[str, str]) -> None:
    location = java.get("ssl.keystore.location")
    if location is None:
        return
    kind = java.get("ssl.keystore.type", "JKS").strip().upper()
    if kind == "PKCS12":
        out["ssl.keystore.location"] = location
        out["ssl.keystore.password"] = java.get("ssl.keystore.password", "")
    elif kind == "PEM":
        out["ssl.key.location"] = out["ssl.certificate.location"] = location
        if "ssl.key.password" in java:
            out["ssl.key.password"] = java["ssl.key.password"]
    else:
        raise SecurityConfigError(
            f"ssl.keystore.type={kind}: librdkafka reads PKCS12 or PEM key stores only"
        )
