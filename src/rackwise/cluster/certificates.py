"""The private certificate authority of a secured local cluster and the certificates it signs,
made with ``cryptography``: one per node (a PKCS12 key store) and one for the admin client
(PEM), each naming 127.0.0.1 and localhost.

Goals
    :func:`ensure_ca` makes the CA once (:func:`save_ca` writes ``DIR/tls/ca.pem``, its key
    beside it, readable by the user only) and loads it afterwards; :func:`write_node_keystore` and
    :func:`write_client_pem` sign a certificate for a node or the admin and write it.

Constraints
    * Keys are EC P-256 (fast handshakes; every client this project tests speaks it).
    * A node's certificate serves both ends (server and client authentication), as a broker
      is a client of the controllers and of other brokers; the admin's authenticates a client.
    * Files holding a private key are created with mode 0600; the store password is the
      cluster's (``DIR/tls/store.password``), made once.

Worked example
    ``ca = ensure_ca(Path("c"))``; ``write_node_keystore(ca, Path("c/broker-1/tls/keystore.p12"),
    "broker-1", password)`` writes a key store whose certificate's subject is
    ``CN=broker-1,OU=rackwise-cluster`` (the principal ``User:broker-1`` under the cluster's
    mapping rule).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

TLS_DIR: Final = "tls"
ORGANIZATIONAL_UNIT: Final = "rackwise-cluster"
"""The OU of every certificate the cluster's CA signs (its principal mapping rule strips it)."""
CA_DAYS: Final = 3650
LEAF_DAYS: Final = 825


@dataclass(frozen=True, slots=True)
class Authority:
    """The cluster's CA: its certificate and key, where its PEM lives, and the password of
    the stores it writes."""

    certificate: x509.Certificate
    key: ec.EllipticCurvePrivateKey
    pem_path: Path
    password: str
    saved: bool = True
    """Whether its files exist (a new CA is written by :func:`save_ca`, with the nodes')."""


def _write_private(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, ORGANIZATIONAL_UNIT),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)


def save_ca(ca: Authority) -> None:
    """Write a new CA's files (nothing if they exist)."""
    if ca.saved:
        return
    tls = ca.pem_path.parent
    _write_private(
        tls / "ca.key",
        ca.key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )
    _write_private(tls / "store.password", ca.password.encode() + b"\n")
    ca.pem_path.write_bytes(ca.certificate.public_bytes(serialization.Encoding.PEM))


def ensure_ca(directory: Path) -> Authority:
    """The cluster's CA in ``directory/tls``, made (in memory: :func:`save_ca` writes it) the
    first time."""
    tls = directory / TLS_DIR
    pem, key_path, password_path = tls / "ca.pem", tls / "ca.key", tls / "store.password"
    if pem.exists() and key_path.exists() and password_path.exists():
        key = serialization.load_pem_private_key(key_path.read_bytes(), None)
        assert isinstance(key, ec.EllipticCurvePrivateKey)
        certificate = x509.load_pem_x509_certificate(pem.read_bytes())
        return Authority(certificate, key, pem, password_path.read_text().strip())
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "rackwise local cluster CA")])
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(_now())
        .not_valid_after(_now() + datetime.timedelta(days=CA_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return Authority(certificate, key, pem, secrets.token_urlsafe(18), saved=False)


def sign(
    ca: Authority,
    common_name: str,
    *,
    server: bool,
    hosts: tuple[str, ...] = ("127.0.0.1", "localhost"),
    days: int = LEAF_DAYS,
    issuer_key: ec.EllipticCurvePrivateKey | None = None,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A new key and its certificate for ``common_name``, signed by ``ca`` (by
    ``issuer_key`` instead, for a certificate no trust store accepts), naming ``hosts``."""
    key = ec.generate_private_key(ec.SECP256R1())
    usages = [ExtendedKeyUsageOID.CLIENT_AUTH] + ([ExtendedKeyUsageOID.SERVER_AUTH] * server)
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    certificate = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(ca.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(_now())
        .not_valid_after(_now() + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(issuer_key or ca.key, hashes.SHA256())
    )
    return certificate, key


def write_node_keystore(ca: Authority, path: Path, common_name: str, password: str) -> None:
    """A PKCS12 key store at ``path``: a key and certificate for a node, with the CA's."""
    certificate, key = sign(ca, common_name, server=True)
    data = pkcs12.serialize_key_and_certificates(
        common_name.encode(),
        key,
        certificate,
        [ca.certificate],
        serialization.BestAvailableEncryption(password.encode()),
    )
    _write_private(path, data)


def write_client_pem(
    ca: Authority,
    path: Path,
    common_name: str,
    password: str,
    issuer_key: ec.EllipticCurvePrivateKey | None = None,
) -> None:
    """A PEM key store at ``path``: the client's key (PKCS8, encrypted with ``password``, as
    Kafka's PEM key stores hold it) and its certificate."""
    certificate, key = sign(ca, common_name, server=False, issuer_key=issuer_key)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(password.encode()),
    )
    _write_private(path, key_pem + certificate.public_bytes(serialization.Encoding.PEM))
