"""``rackwise configs`` run as a person runs it against one small cluster (a controller and a
broker, shared by the module): a topic's and a broker's configs described, altered, deleted,
the broker default, ``--add-config-file``, the example in docs/admin.md, and Kafka's refusals."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from rackwise.cli.main import main
from tests.command_line import rackwise, running_cluster

PAGE = (Path(__file__).resolve().parents[2] / "docs" / "admin.md").read_text()


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_cluster(tmp_path_factory.mktemp("configs"), "--brokers", "1") as servers:
        created = rackwise(
            "topics", "--bootstrap-server", servers, "--create", "--topic", "orders",
            "--partitions", "1", "--replication-factor", "1",
        )  # fmt: skip
        assert created.returncode == 0, created.stderr
        yield servers


def configs(bootstrap: str, *args: str) -> tuple[int, str, str]:
    result = rackwise("configs", "--bootstrap-server", bootstrap, *args)
    return result.returncode, result.stdout, result.stderr


def test_the_documented_example(bootstrap: str) -> None:
    section = PAGE[PAGE.index("## Configs: `rackwise configs`") :]
    block = section.split("```\n")[1]
    commands = re.split(r"^\$ rackwise configs --bootstrap-server \$BOOTSTRAP ", block, flags=re.M)
    assert len(commands) == 3, block
    for command in commands[1:]:
        line, _, expected = command.partition("\n")
        assert configs(bootstrap, *line.split()) == (0, expected, "")


def test_a_topic_config_set_described_and_deleted(bootstrap: str) -> None:
    topic = ("--entity-type", "topics", "--entity-name", "orders")
    assert configs(bootstrap, *topic, "--alter", "--add-config", "segment.ms=100000") == (
        0,
        "Completed updating config for topic orders.\n",
        "",
    )
    code, out, _ = configs(bootstrap, *topic, "--describe")
    assert code == 0
    assert out.startswith("Dynamic configs for topic orders are:\n")
    assert (
        "  segment.ms=100000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:segment.ms=100000"
        in out
    )
    # Kafka's --topic is --entity-type topics --entity-name.
    assert configs(bootstrap, "--topic", "orders", "--alter", "--delete-config", "segment.ms") == (
        0,
        "Completed updating config for topic orders.\n",
        "",
    )
    assert "segment.ms" not in configs(bootstrap, *topic, "--describe")[1]
    # A key that is not set is refused before anything changes, in Kafka's words.
    assert configs(bootstrap, *topic, "--alter", "--delete-config", "segment.ms") == (
        1,
        "",
        "error: Invalid config(s): segment.ms\n",
    )


def test_an_unknown_key_is_refused_with_kafkas_message(bootstrap: str) -> None:
    args = (
        "--entity-type",
        "topics",
        "--entity-name",
        "orders",
        "--alter",
        "--add-config",
        "bogus.key=1",
    )
    code, out, err = configs(bootstrap, *args)
    assert (code, out) == (1, "")
    assert err == (
        f"error: Error while executing config command with args '--bootstrap-server {bootstrap} "
        f"{' '.join(args)}': java.util.concurrent.ExecutionException: "
        "org.apache.kafka.common.errors.InvalidConfigurationException: Unknown topic config "
        "name: bogus.key\n"
    )


def test_the_broker_default_and_a_broker_from_a_file(bootstrap: str, tmp_path: Path) -> None:
    default = ("--entity-type", "brokers", "--entity-default")
    assert configs(bootstrap, *default, "--alter", "--add-config", "log.cleaner.threads=2") == (
        0,
        "Completed updating default config for brokers in the cluster.\n",
        "",
    )
    assert configs(bootstrap, *default, "--describe") == (
        0,
        "Default configs for brokers in the cluster are:\n"
        "  log.cleaner.threads=2 sensitive=false "
        "synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleaner.threads=2}\n",
        "",
    )
    properties = tmp_path / "broker.properties"
    properties.write_text("# per broker\nlog.cleaner.threads = 3\n")
    broker = ("--entity-type", "brokers", "--entity-name", "1")
    assert configs(bootstrap, *broker, "--alter", "--add-config-file", str(properties)) == (
        0,
        "Completed updating config for broker 1.\n",
        "",
    )
    code, out, _ = configs(bootstrap, *broker, "--describe")
    assert (code, out) == (
        0,
        "Dynamic configs for broker 1 are:\n"
        "  log.cleaner.threads=3 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:"
        "log.cleaner.threads=3, DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleaner.threads=2, "
        "DEFAULT_CONFIG:log.cleaner.threads=1}\n",
    )
    code, out, _ = configs(bootstrap, *broker, "--describe", "--all")
    lines = out.splitlines()
    assert code == 0 and lines[0] == "All configs for broker 1 are:"
    names = [line.split("=")[0] for line in lines[1:]]
    assert names == sorted(names) and len(names) > 100
    assert "  log.dirs=" in out and any(
        line.startswith("  log.cleaner.threads=3 ") for line in lines
    )


def test_every_topic_described_with_a_client_config(bootstrap: str, tmp_path: Path) -> None:
    client = tmp_path / "client.properties"
    client.write_text("client.id=ops\nsecurity.protocol=PLAINTEXT\n")
    code, out, err = configs(
        bootstrap, "--command-config", str(client), "--entity-type", "topics", "--describe"
    )
    assert (code, err) == (0, "")
    assert "Dynamic configs for topic orders are:" in out.splitlines()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--describe", "--entity-type", "topics", "--add-config", "a=1"],
            'Option "[describe]" can\'t be used with option "[add-config]"',
        ),
        (
            ["--describe", "--entity-type", "topics"],
            "One of the required --bootstrap-server or --bootstrap-controller arguments must be "
            "specified",
        ),
        (
            ["--bootstrap-server", "localhost", "--describe", "--entity-type", "topics"],
            "Invalid url in bootstrap.servers: localhost",
        ),
        (
            ["--bootstrap-server", "h:1", "--alter", "--entity-type", "topics",
             "--entity-name", "t", "--add-config", "a=1", "--add-config-file", "f"],
            "Only one of --add-config or --add-config-file must be specified",
        ),
        (
            ["--bootstrap-server", "h:1", "--alter", "--entity-type", "topics",
             "--entity-name", "t"],
            "At least one of --add-config, --add-config-file, or --delete-config must be "
            "specified with --alter",
        ),
        (
            ["--bootstrap-server", "h:1", "--alter", "--entity-type", "brokers",
             "--entity-name", "1", "--entity-default", "--delete-config", "a"],
            "An entity name must be specified for every entity type",
        ),
        (
            ["--bootstrap-server", "h:1", "--describe", "--entity-name", "x",
             "--topic", "t"],
            "--entity-{type,name,default} should not be used in conjunction with specific "
            "entity flags",
        ),
    ],
)  # fmt: skip
def test_kafkas_checks_come_in_its_order(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["configs", *args]) == 1
    assert capsys.readouterr() == ("", f"error: {message}\n")
