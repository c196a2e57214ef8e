"""``kafka-configs.sh``'s syntax and checks, as :mod:`rackwise.client.configs` reads them: the
``--add-config`` pairs (square brackets for list values), the keys, the entity checks and
``--command-config``, each refused in Kafka's words naming the bad value; and the lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from rackwise.client import config_args, configs
from rackwise.client.command_config import CommandConfigError, read_command_config
from rackwise.client.config_args import ConfigsArgumentError
from rackwise.client.configs import ConfigsFailure, Entry


@pytest.mark.parametrize(
    ("text", "pairs"),
    [
        ("a=1", {"a": "1"}),
        ("a=1,b=2", {"a": "1", "b": "2"}),
        ("cleanup.policy=[compact,delete],b=2", {"cleanup.policy": "compact,delete", "b": "2"}),
        (" a = 1 , b=[x, y] ", {"a": "1", "b": "x, y"}),
        ("ssl.endpoint.identification.algorithm=", {"ssl.endpoint.identification.algorithm": ""}),
        ("a=1,", {"a": "1"}),  # Java's split drops a trailing empty entry
        ("a=1,a=2", {"a": "2"}),
        ("k=[a=b,c]", {"k": "a=b,c"}),
    ],
)
def test_add_config_is_read_as_kafka_reads_it(text: str, pairs: dict[str, str]) -> None:
    assert config_args.parse_add_config(text) == pairs


@pytest.mark.parametrize(
    ("text", "bad"), [("a=1,b", "b"), ("k=v=w", "k=v=w"), ("", ""), (",a=1", "")]
)
def test_a_malformed_entry_is_refused_in_kafkas_words_and_named(text: str, bad: str) -> None:
    with pytest.raises(ConfigsArgumentError) as raised:
        config_args.parse_add_config(text)
    assert str(raised.value) == (
        "requirement failed: Invalid entity config: all configs to be added must be in the "
        f"format \"key=val\". Bad entry: '{bad}'"
    )


def test_keys_come_from_the_file_then_the_flag_and_are_checked() -> None:
    text = "# a comment\nretention.ms = 1000\nsegment.bytes=1\n"
    assert config_args.configs_to_add("segment.bytes=2", text) == {
        "retention.ms": "1000",
        "segment.bytes": "2",
    }
    with pytest.raises(
        ConfigsArgumentError, match=r"^Invalid character found for config key: a/b$"
    ):
        config_args.configs_to_add("a/b=1", None)
    assert config_args.configs_to_delete(["a, b", "c"]) == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("types", "message"),
    [
        (["topics", "topics"], "Duplicate entity type(s) specified: topics"),
        (
            ["topic"],
            "Invalid entity type topic, the entity type must be one of topics, clients, users, "
            "brokers, ips, broker-loggers, client-metrics, groups with a --bootstrap-server or "
            "--bootstrap-controller argument",
        ),
        ([], "At least one entity type must be specified"),
        (
            ["topics", "brokers"],
            "Only 'users' and 'clients' entity types may be specified together",
        ),
        (
            ["groups"],
            "Entity type groups is not served: rackwise configs handles topics, brokers and users",
        ),
    ],
)
def test_entity_types_are_checked_in_kafkas_order(types: list[str], message: str) -> None:
    with pytest.raises(ConfigsArgumentError) as raised:
        config_args.check_entity_types(types)
    assert str(raised.value) == message


def test_specific_entity_flags_come_after_the_generic_ones() -> None:
    assert config_args.entities(["topics"], ["a"], topic="b") == (["topics", "topics"], ["a", "b"])
    assert config_args.entities([], [], broker="1", broker_defaults=True) == (
        ["brokers", "brokers"],
        ["1", ""],
    )
    assert config_args.entities([], [], topic="t") == (["topics"], ["t"])
    config_args.check_entity_types(["topics"])
    with pytest.raises(ConfigsArgumentError) as raised:
        config_args.check_entity_types(["topics"], mixed=True)
    assert str(raised.value) == (
        "--entity-{type,name,default} should not be used in conjunction with specific entity flags"
    )


@pytest.mark.parametrize(
    ("entity_type", "names", "alter", "message"),
    [
        (
            "brokers",
            ["one"],
            False,
            "The entity name for brokers must be a valid integer broker id, but it is: one",
        ),
        ("topics", [""], False, "--entity-default must not be specified with --describe of topics"),
        ("topics", [], True, "An entity name must be specified with --alter of topics"),
        (
            "brokers",
            [],
            True,
            "An entity-name or default entity must be specified with --alter of users, clients, "
            "brokers or ips",
        ),
    ],
)
def test_entity_names_are_checked(
    entity_type: str, names: list[str], alter: bool, message: str
) -> None:
    with pytest.raises(ConfigsArgumentError) as raised:
        config_args.check_entity_names(entity_type, names, alter=alter)
    assert str(raised.value) == message
    config_args.check_entity_names("brokers", ["", "2", "+3"], alter=True)
    for not_an_int in (" 2", "1_000", "2147483648"):
        with pytest.raises(ConfigsArgumentError, match=f"but it is: {not_an_int}$"):
            config_args.check_entity_names("brokers", [not_an_int], alter=False)
    with pytest.raises(ConfigsArgumentError, match="for every entity type"):
        config_args.check_one_name(["", "2"])


def test_a_topic_name_is_checked_as_kafkas_topic_validate() -> None:
    with pytest.raises(ConfigsFailure) as raised:
        configs.validate_topic("a b")
    assert raised.value.java_text == (
        'org.apache.kafka.common.errors.InvalidTopicException: Topic name "a b" is illegal, it '
        "contains a character other than ASCII alphanumerics, '.', '_' and '-'"
    )
    configs.validate_topic("orders.v1_x-y")


def test_command_config_serves_the_client_keys_it_names(tmp_path: Path) -> None:
    plain, sasl, soon = (tmp_path / f"{n}.properties" for n in ("plain", "sasl", "soon"))
    plain.write_text("client.id=ops\nsecurity.protocol=PLAINTEXT\nrequest.timeout.ms=5000\n")
    assert read_command_config(str(plain), "configs")["client.id"] == "ops"
    sasl.write_text("security.protocol=KERBEROS\nsasl.kerberos.service.name=kafka\n")
    with pytest.raises(CommandConfigError) as raised:
        read_command_config(str(sasl), "configs")
    assert str(raised.value) == (
        f"--command-config {sasl}: not served: security.protocol=KERBEROS, "
        "sasl.kerberos.service.name (rackwise configs reads only bootstrap.servers, "
        "client.id, default.api.timeout.ms, request.timeout.ms, retry.backoff.ms, "
        "sasl.jaas.config, sasl.mechanism, security.protocol and ssl.*)"
    )
    soon.write_text("request.timeout.ms=soon\n")
    with pytest.raises(CommandConfigError, match=r"a number of ms: soon$"):
        read_command_config(str(soon), "configs")
    soon.write_text("retry.backoff.ms=-1\n")
    with pytest.raises(CommandConfigError, match=r"retry.backoff.ms must be a number of ms: -1$"):
        read_command_config(str(soon), "configs")


def test_the_lines_are_kafkas() -> None:
    entry = Entry(
        "log.cleaner.threads",
        "3",
        False,
        "DYNAMIC_BROKER_CONFIG",
        (
            ("DYNAMIC_BROKER_CONFIG", "log.cleaner.threads", "3"),
            ("DEFAULT_CONFIG", "log.cleaner.threads", "1"),
        ),
    )
    assert configs.entry_line(entry) == (
        "  log.cleaner.threads=3 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:"
        "log.cleaner.threads=3, DEFAULT_CONFIG:log.cleaner.threads=1}"
    )
    secret = Entry("ssl.key.password", None, True, "STATIC_BROKER_CONFIG", ())
    assert configs.entry_line(secret) == "  ssl.key.password=null sensitive=true synonyms={}"
    assert configs.header("topics", "t", describe_all=False) == "Dynamic configs for topic t are:"
    assert configs.header("brokers", "1", describe_all=True) == "All configs for broker 1 are:"
    assert configs.header("brokers", "", describe_all=True) == (
        "Default configs for brokers in the cluster are:"
    )
    assert configs.completed_line("topics", "t") == "Completed updating config for topic t."
    assert configs.completed_line("brokers", "") == (
        "Completed updating default config for brokers in the cluster."
    )


def test_command_config_logs_in_with_the_jaas_configuration(tmp_path: Path) -> None:
    from rackwise.net.sasl_client import clear_logins, default_login

    scram, gssapi, nobody = (tmp_path / f"{n}.properties" for n in ("scram", "gssapi", "nobody"))
    scram.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="alice" password="alice-secret";\n'
    )
    gssapi.write_text("security.protocol=SASL_PLAINTEXT\n")  # Kafka's default mechanism
    nobody.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config="
        "org.apache.kafka.common.security.plain.PlainLoginModule required;\n"
    )
    try:
        read_command_config(str(scram), "configs")
        login = default_login()
        assert login is not None
        assert (login.mechanism, login.username, login.password) == (
            "SCRAM-SHA-512",
            "alice",
            "alice-secret",
        )
    finally:
        clear_logins()
    with pytest.raises(CommandConfigError, match=r"GSSAPI is not served"):
        read_command_config(str(gssapi), "configs")
    with pytest.raises(CommandConfigError, match=r"has no username and password to log in"):
        read_command_config(str(nobody), "configs")


@pytest.mark.parametrize(
    ("add", "delete", "message"),
    [
        ({"SCRAM-SHA-512": "[iterations=100,password=x]".strip("[]")}, [],
         "Iterations 100 is less than the minimum 4096 required for SCRAM-SHA-512"),
        ({"SCRAM-SHA-256": "iterations=x,password=y"}, [],
         "Invalid credential property SCRAM_SHA_256=iterations=x,password=y"),
        ({"producer_byte_rate": "1024"}, [],
         "Only quota and SCRAM credential configs can be added for 'users' using "
         "--bootstrap-server. Unexpected config names: Set(producer_byte_rate) (rackwise "
         "serves no quota configs)"),
        ({}, ["scram-sha-512"],
         "Only quota and SCRAM credential configs can be deleted for 'users' using "
         "--bootstrap-server. Unexpected config names: Set(scram-sha-512) (rackwise serves "
         "no quota configs)"),
    ],
)  # fmt: skip
def test_user_configs_are_checked_as_kafka_checks_them(
    add: dict[str, str], delete: list[str], message: str
) -> None:
    from rackwise.client.user_configs import check_user_configs

    with pytest.raises(ConfigsArgumentError) as raised:
        check_user_configs("alice", add, delete)
    assert str(raised.value) == message


def test_user_configs_default_to_kafkas_iterations() -> None:
    from rackwise.client.user_configs import check_user_configs
    from rackwise.security.scram import ScramMechanism

    pairs = config_args.parse_add_config(
        "SCRAM-SHA-512=[iterations=8192,password=alice-secret],SCRAM-SHA-256=[password=p,w]"
    )
    upsertions, deletions = check_user_configs("alice", pairs, ["SCRAM-SHA-256"])
    assert [(u.mechanism, u.iterations, u.password) for u in upsertions] == [
        (ScramMechanism.SCRAM_SHA_512, 8192, "alice-secret"),
        (ScramMechanism.SCRAM_SHA_256, 4096, "p,w"),
    ]
    assert deletions == [ScramMechanism.SCRAM_SHA_256]
    with pytest.raises(ConfigsArgumentError, match="--entity-default or --user-defaults"):
        check_user_configs("", pairs, [])
