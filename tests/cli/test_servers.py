"""``--bootstrap-server`` checked as Kafka's ``ClientUtils.parseAndValidateAddresses`` checks
``bootstrap.servers``."""

from __future__ import annotations

import pytest

from rackwise.cli._servers import check_bootstrap_servers
from rackwise.cli.errors import CommandError


@pytest.mark.parametrize(
    "text",
    [
        "localhost:9092",
        "127.0.0.1:1,127.0.0.1:2",
        " a.example.com:9092 , ,b-2.example.com:65535",
        "[::1]:9092",
        "PLAINTEXT://broker-1:9092",
    ],
)
def test_host_and_port_pass(text: str) -> None:
    assert check_bootstrap_servers(text) == text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("localhost", "Invalid url in bootstrap.servers: localhost"),
        ("127.0.0.1:9092,localhost", "Invalid url in bootstrap.servers: localhost"),
        ("localhost:", "Invalid url in bootstrap.servers: localhost:"),
        ("host:port", "Invalid url in bootstrap.servers: host:port"),
        ("bad host:9092", "Invalid url in bootstrap.servers: bad host:9092"),
        ("localhost:65536", "Invalid port in bootstrap.servers: localhost:65536"),
        (" , ", "No resolvable bootstrap urls given in bootstrap.servers"),
    ],
)
def test_kafkas_refusals_with_kafkas_words(text: str, message: str) -> None:
    with pytest.raises(CommandError) as raised:
        check_bootstrap_servers(text)
    assert str(raised.value) == message
