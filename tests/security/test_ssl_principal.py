"""ssl.principal.mapping.rules as Kafka's SslPrincipalMapper reads and applies them: the cases
of Kafka's SslPrincipalMapperTest, and the distinguished name of a certificate."""

from __future__ import annotations

import datetime

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from hypothesis import given
from hypothesis import strategies as st

from rackwise.security import KafkaPrincipal
from rackwise.security.ssl_principal import (
    NoMatchingRule,
    SslPrincipalMapper,
    distinguished_name,
)

RULES = (
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,"
    "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,"
    "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U,"
    "DEFAULT"
)


@pytest.mark.parametrize(
    ("name", "mapped"),
    [
        ("CN=Duke,OU=ServiceUsers,O=Org,C=US", "Duke"),
        ("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US", "duke@sme"),
        ("cn=duke,ou=JavaSoft,o=Sun Microsystems", "DUKE"),
        ("OU=JavaSoft,O=Sun Microsystems,C=US", "OU=JavaSoft,O=Sun Microsystems,C=US"),
    ],
)
def test_kafkas_rules(name: str, mapped: str) -> None:
    assert SslPrincipalMapper.from_rules(RULES).name(name) == mapped


def test_valid_rule_lists_parse() -> None:
    for rules in (
        "DEFAULT",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/U",
        "RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
        "RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
    ):
        SslPrincipalMapper.from_rules(rules)


@pytest.mark.parametrize(
    "rules",
    [
        "DEFAULT,RULE:xxx",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
    ],
)
def test_invalid_rules_are_refused(rules: str) -> None:
    with pytest.raises(ValueError, match="Invalid rule"):
        SslPrincipalMapper.from_rules(rules)


def test_back_references_past_the_groups_stay_literal() -> None:
    mapper = SslPrincipalMapper.from_rules("RULE:^CN=(.*)$/$1-$2-\\$1/")
    assert mapper.name("CN=x") == "x-$2-$1"
    # $12 with one group is group 1 followed by "2", as Java shortens it.
    assert SslPrincipalMapper.from_rules("RULE:^CN=(.*)$/$12/").name("CN=x") == "x2"


def test_no_matching_rule() -> None:
    mapper = SslPrincipalMapper.from_rules("RULE:^CN=(.*)$/$1/")
    with pytest.raises(NoMatchingRule, match="No rules apply to O=acme"):
        mapper.principal("O=acme")
    assert mapper.principal("CN=a") == KafkaPrincipal("User", "a")


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40))
def test_default_gives_any_name_back(name: str) -> None:
    assert SslPrincipalMapper.from_rules(None).name(name) == name


def test_a_certificates_distinguished_name_reads_last_rdn_first() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.COUNTRY_NAME, "US"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Acme, Inc"),
            x509.NameAttribute(NameOID.COMMON_NAME, "broker-1"),
        ]
    )
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    der = certificate.public_bytes(serialization.Encoding.DER)
    assert distinguished_name(der) == "CN=broker-1,O=Acme\\, Inc,C=US"
