"""``rackwise consumer-groups``, Kafka's ``kafka-consumer-groups.sh``: its refusals in Kafka's
words, its tables character for character, a member's assignment read from bytes an
independent encoder (kafka-python's) wrote, the reset computations, and the group calls
against a fake transport; then the whole command against a real ``rackwise cluster up`` with a
confluent-kafka consumer in the group."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment

from rackwise.cli._consumer_groups_reset import export_csv, parse_duration_ms, parse_reset_plan
from rackwise.cli.errors import CommandError
from rackwise.cli.main import main
from rackwise.client import group_reports as reports
from rackwise.client.consumer_protocol import (
    EMPTY_ASSIGNMENT,
    InvalidAssignmentError,
    decode_assignment,
)
from rackwise.client.groups import (
    GroupDescription,
    GroupsAdmin,
    GroupsError,
    MemberDescription,
    Node,
)
from rackwise.common import TopicPartition as T
from rackwise.formats import consumer_groups as tables
from rackwise.protocol import ApiKey, make, response_class
from tests.command_line import rackwise, running_cluster

BOOTSTRAP = ("--bootstrap-server", "127.0.0.1:1")


def _error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(["consumer-groups", *argv])
    captured = capsys.readouterr()
    assert code == 1
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert lines[-1].startswith("error: "), captured.err
    return lines[-1].removeprefix("error: ")


# ---- the command line's checks ------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--list",), 'Missing required argument "[bootstrap-server]"'),
        (
            (*BOOTSTRAP,),
            "Command must include exactly one action: --list, --describe, --delete, "
            "--reset-offsets, --delete-offsets",
        ),
        (
            (*BOOTSTRAP, "--list", "--describe", "--group", "g"),
            'Option "[group]" can\'t be used with option "[list]"',
        ),
        (
            (*BOOTSTRAP, "--list", "--delete", "--all-groups"),
            "Command must include exactly one action: --list, --describe, --delete, "
            "--reset-offsets, --delete-offsets",
        ),
        (
            (*BOOTSTRAP, "--describe"),
            "Option [describe] takes one of these options: [group], [all-groups]",
        ),
        (
            (*BOOTSTRAP, "--describe", "--group", "g", "--members", "--state"),
            "Option [describe] takes at most one of these options: [members], [offsets], [state]",
        ),
        (
            (*BOOTSTRAP, "--describe", "--group", "g", "--state", "stable"),
            "Option [describe] does not take a value for [state]",
        ),
        (
            (*BOOTSTRAP, "--list", "--members"),
            "Option(s) [members] are unavailable given other options on the command line",
        ),
        (
            (*BOOTSTRAP, "--delete", "--group", "g", "--verbose", "--offsets"),
            "Option(s) [verbose, offsets] are unavailable given other options on the command line",
        ),
        (
            (*BOOTSTRAP, "--describe", "--group", "g", "--type"),
            "Option(s) [type] are unavailable given other options on the command line",
        ),
        (
            (*BOOTSTRAP, "--delete"),
            "Option [delete] takes one of these options: [group], [all-groups]",
        ),
        (
            (*BOOTSTRAP, "--delete", "--group", "g", "--topic", "t"),
            "The consumer does not support topic-specific offset deletion from a consumer group.",
        ),
        (
            (*BOOTSTRAP, "--delete-offsets", "--group", "g"),
            "Option [delete-offsets] takes the following options: [group], [topic]",
        ),
        (
            (*BOOTSTRAP, "--reset-offsets", "--group", "g", "--dry-run", "--execute"),
            "Option [reset-offsets] only accepts one of [execute] and [dry-run]",
        ),
        (
            (*BOOTSTRAP, "--reset-offsets", "--dry-run", "--to-earliest"),
            "Option [reset-offsets] takes one of these options: [group], [all-groups]",
        ),
        (
            (
                *BOOTSTRAP,
                "--reset-offsets",
                "--group",
                "g",
                "--dry-run",
                "--to-earliest",
                "--shift-by",
                "2",
            ),
            'Option "[to-earliest]" can\'t be used with option "[shift-by]"',
        ),
        (
            (
                *BOOTSTRAP,
                "--reset-offsets",
                "--group",
                "g",
                "--dry-run",
                "--to-offset",
                "1",
                "--to-latest",
            ),
            'Option "[to-offset]" can\'t be used with option "[to-latest]"',
        ),
        (
            (*BOOTSTRAP, "--describe", "--group", "g", "--all-groups"),
            'Option "[group]" can\'t be used with option "[all-groups]"',
        ),
        (
            (*BOOTSTRAP, "--describe", "--group", "g", "--topic", "t"),
            'Option "[topic]" can\'t be used with option "[describe]"',
        ),
        (
            (
                *BOOTSTRAP,
                "--reset-offsets",
                "--group",
                "g",
                "--dry-run",
                "--from-file",
                "x.csv",
                "--to-current",
            ),
            'Option "[to-current]" can\'t be used with option "[from-file]"',
        ),
    ],
)
def test_refusals_are_kafkas(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], message: str
) -> None:
    assert _error(capsys, *argv) == message


def test_a_reset_without_execute_warns_as_kafka_does(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ("--reset-offsets", "--group", "g", "--to-earliest", "--shift-by", "1")
    assert _error(capsys, *BOOTSTRAP, *argv) == (
        'Option "[to-earliest]" can\'t be used with option "[shift-by]"'
    )
    main(["consumer-groups", *BOOTSTRAP, *argv])
    warning = capsys.readouterr().err.splitlines()[0]
    assert warning == (
        "WARN: No action will be performed as the --execute option is missing.In a future major "
        "release, the default behavior of this command will be to prompt the user before "
        "executing the reset rather than doing a dry run. You should add the --dry-run option "
        "explicitly if you are scripting this command and want to keep the current default "
        "behavior without prompting."
    )


def test_numbers_and_lists_are_checked(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["consumer-groups", *BOOTSTRAP, "--reset-offsets", "--group", "g", "--to-offset", "x"])
    assert "Cannot parse argument 'x' of option to-offset" in capsys.readouterr().err
    from rackwise.cli._consumer_groups_options import parse_states, parse_types

    assert parse_states("stable, EMPTY,stable") == ["Stable", "Empty"]
    with pytest.raises(CommandError) as refused:
        parse_states("stable,sleepy")
    assert str(refused.value) == (
        "Invalid state list 'stable,sleepy'. Valid states are: PreparingRebalance, "
        "CompletingRebalance, Stable, Dead, Empty, Assigning, Reconciling"
    )
    assert parse_types("Classic,consumer") == ["Classic", "Consumer"]
    with pytest.raises(CommandError) as refused:
        parse_types("classic,Simple")
    assert str(refused.value) == (
        "Invalid types list 'classic,Simple'. Valid types are: Consumer, Classic, Share"
    )


def test_command_config_is_read_or_refused_by_name(tmp_path: Path) -> None:
    from rackwise.client.command_config import CommandConfigError, read_command_config

    plain = tmp_path / "plain.properties"
    plain.write_text("client.id=ops\nsecurity.protocol=plaintext\nrequest.timeout.ms=2000\n")
    assert read_command_config(str(plain), "consumer-groups")["client.id"] == "ops"
    sasl = tmp_path / "sasl.properties"
    sasl.write_text("security.protocol=SASL_SSL\nsasl.kerberos.service.name=kafka\n")
    with pytest.raises(CommandConfigError) as refused:
        read_command_config(str(sasl), "consumer-groups")
    assert str(refused.value).startswith(
        f"--command-config {sasl}: not served: sasl.kerberos.service.name (rackwise "
    )


# ---- the tables ---------------------------------------------------------------------------


def _row(
    group: str, tp: T | None, offset: int | None, end: int | None, member: str | None
) -> tables.PartitionAssignmentState:
    return tables.PartitionAssignmentState(
        group,
        None if tp is None else tp.topic,
        None if tp is None else tp.partition,
        offset,
        end,
        None if offset is None or end is None else end - offset,
        member,
        None if member is None else "/127.0.0.1",
        None if member is None else "rdkafka",
    )


def test_the_offsets_table_is_kafkas_printf() -> None:
    member = "rdkafka-5f0c0c0e-6a3b-4a5b-9b63-0a4e2d9f2c11"
    rows = [
        _row("billing", T("orders", 1), 4, 10, member),
        _row("billing", T("orders", 0), None, 7, member),
        tables.PartitionAssignmentState(
            "billing", "refunds-with-a-long-name", 0, 3, 3, 0, "-", "-", "-"
        ),
    ]
    assert tables.offsets_text(rows) == (
        "\n"
        "GROUP           TOPIC                    PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG "
        "            CONSUMER-ID                                  HOST            CLIENT-ID\n"
        "billing         orders                   1          4               10              6   "
        "            rdkafka-5f0c0c0e-6a3b-4a5b-9b63-0a4e2d9f2c11 /127.0.0.1      rdkafka\n"
        "billing         orders                   0          -               7               -   "
        "            rdkafka-5f0c0c0e-6a3b-4a5b-9b63-0a4e2d9f2c11 /127.0.0.1      rdkafka\n"
        "billing         refunds-with-a-long-name 0          3               3               0   "
        "            -                                            -               -\n"
    )
    assert tables.offsets_json(rows[1:2]) == [
        {
            "group": "billing",
            "topic": "orders",
            "partition": 0,
            "current_offset": None,
            "log_end_offset": 7,
            "lag": None,
            "consumer_id": member,
            "host": "/127.0.0.1",
            "client_id": "rdkafka",
        }
    ]


def _member(
    consumer: str, partitions: tuple[T, ...], instance: str = ""
) -> tables.MemberAssignmentState:
    return tables.MemberAssignmentState(
        "billing", consumer, "/10.0.0.7", "c", instance, len(partitions), partitions
    )


def test_the_members_table_pads_every_cell_and_lists_the_assignment() -> None:
    rows = [_member("c-1", (T("orders", 2), T("orders", 0), T("audit", 1))), _member("c-2", ())]
    assert tables.members_text(rows, verbose=False) == (
        "\n"
        "GROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS     \n"
        "billing         c-1             /10.0.0.7       c               3               \n"
        "billing         c-2             /10.0.0.7       c               0               \n"
    )
    assert tables.members_text(rows, verbose=True) == (
        "\n"
        "GROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS     "
        "ASSIGNMENT\n"
        "billing         c-1             /10.0.0.7       c               3               "
        "audit(1), orders(0,2)\n"
        "billing         c-2             /10.0.0.7       c               0               -\n"
    )
    static = [_member("c-1", (T("orders", 0),), instance="billing-a")]
    assert tables.members_text(static, verbose=False) == (
        "\n"
        "GROUP           CONSUMER-ID     GROUP-INSTANCE-ID HOST            CLIENT-ID       "
        "#PARTITIONS     \n"
        "billing         c-1             billing-a         /10.0.0.7       c               "
        "1               \n"
    )
    assert tables.members_text([], verbose=False) == (
        "\nGROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS     \n"
    )
    assert tables.assignment_text([T("t", 10), T("t", 2)]) == "t(2,10)"


def test_the_state_table_keeps_kafkas_layout() -> None:
    state = tables.GroupState("billing", "127.0.0.1", 9092, 1, "range", "Stable", 2)
    assert tables.state_text(state) == (
        "\n"
        "GROUP                     COORDINATOR (ID)          ASSIGNMENT-STRATEGY  STATE"
        "           #MEMBERS\n"
        "billing                   127.0.0.1:9092  (1)       range                Stable"
        "          2\n"
    )
    wide = tables.GroupState("g", "broker-1.example.internal", 19092, 1001, "", "Empty", 0)
    coordinator = "broker-1.example.internal:19092  (1001)"  # 39 characters: GROUP's width
    assert tables.state_text(wide).splitlines()[2] == (
        "g" + " " * 38 + " " + coordinator + " " + " " * 20 + " " + "Empty" + " " * 10 + " 0"
    )


def test_the_listing_and_the_reports() -> None:
    listings = [
        tables.GroupListing("billing", "Classic", "Stable"),
        tables.GroupListing("a-group-id-of-twenty", "Classic", "Empty"),
    ]
    assert tables.listing_text(listings, include_type=False, include_state=False) == (
        "billing\na-group-id-of-twenty\n"
    )
    assert tables.listing_text(listings, include_type=False, include_state=True) == (
        "GROUP                          STATE               \n"
        "billing                        Stable              \n"
        "a-group-id-of-twenty           Empty               \n"
    )
    assert tables.listing_text([], include_type=True, include_state=True) == (
        "GROUP                     TYPE                 STATE               \n"
    )
    plan = {"billing": [(T("orders", 1), 0), (T("orders", 0), 12)], "idle": []}
    assert tables.reset_plan_text(plan) == (
        "\n"
        "GROUP                          TOPIC                          PARTITION  NEW-OFFSET     \n"
        "billing                        orders                         1          0              \n"
        "billing                        orders                         0          12             \n"
    )
    assert tables.reset_plan_text({}) == "\n"
    results = {T("t", 10): None, T("t", 2): "Boom: bad", T("gone", -1): "Missing: no"}
    assert tables.delete_offsets_text(results) == (
        "\n"
        "TOPIC                          PARTITION       STATUS         \n"
        "gone                           Not Provided    Error: :Missing: no\n"
        "t                              10              Successful     \n"
        "t                              2               Error: :Boom: bad\n"
    )
    assert export_csv(plan, single_group=True) == "orders,1,0\norders,0,12\n"
    exported = export_csv(plan, single_group=False)
    assert parse_reset_plan(exported, ["billing", "idle"]) == {
        "billing": {T("orders", 1): 0, T("orders", 0): 12}
    }
    assert parse_reset_plan("orders,1,0\norders,0,12\n\n", ["billing"]) == {
        "billing": {T("orders", 1): 0, T("orders", 0): 12}
    }
    with pytest.raises(CommandError, match="not group,topic,partition,offset: 'orders,x,0'"):
        parse_reset_plan("orders,x,0", ["billing"])
    assert export_csv({"a,b": [(T("t", 0), 5)]}, single_group=False) == '"a,b",t,0,5\n'


# ---- a member's assignment ------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_an_assignment_reads_back_from_kafka_pythons_bytes(version: int) -> None:
    written = ConsumerProtocolAssignment(
        assigned_partitions=[
            ConsumerProtocolAssignment.TopicPartition(topic="orders", partitions=[2, 0]),
            ConsumerProtocolAssignment.TopicPartition(topic="répertoire", partitions=[7]),
        ],
        user_data=b"\x00sticky",
    ).encode(version=version)
    read = decode_assignment(written)
    assert read.version == version
    assert read.partitions == (T("orders", 2), T("orders", 0), T("répertoire", 7))
    assert read.user_data == b"\x00sticky"
    no_data = ConsumerProtocolAssignment(assigned_partitions=[], user_data=None)
    assert decode_assignment(no_data.encode(version=version)).user_data is None


def test_odd_assignments() -> None:
    assert decode_assignment(b"") == EMPTY_ASSIGNMENT
    future = b"\x00\x09" + b"\x00\x00\x00\x01\x00\x01t\x00\x00\x00\x01\x00\x00\x00\x05"
    assert decode_assignment(future + b"\xff\xff\xff\xff" + b"new fields").partitions == (
        T("t", 5),
    )
    with pytest.raises(InvalidAssignmentError, match="Unsupported assignment version: -1"):
        decode_assignment(b"\xff\xff\x00\x00\x00\x00\xff\xff\xff\xff")
    with pytest.raises(InvalidAssignmentError, match="the number of partitions of topic 't'"):
        decode_assignment(future[:-8] + b"\x00\x00\x00\x09")
    with pytest.raises(InvalidAssignmentError, match="the length of the user data"):
        decode_assignment(future)


# ---- the rows and the reset computations ----------------------------------------------------


def _description(state: str, *members: MemberDescription) -> GroupDescription:
    return GroupDescription("billing", state, "range", members, Node(1, "127.0.0.1", 9092))


def test_describe_rows_follow_kafkas_order_and_lag() -> None:
    one = MemberDescription("m-1", None, "c", "/127.0.0.1", (T("t", 0), T("t", 1), T("t", 2)))
    two = MemberDescription("m-2", "i-2", "c", "/127.0.0.2", (T("t", 3),))
    idle = MemberDescription("m-3", None, "c", "/127.0.0.3", ())
    committed: dict[T, int | None] = {T("t", 0): 5, T("t", 3): 1, T("old", 0): 9, T("t", 1): None}
    log_ends: dict[T, int | None] = {T("t", p): 10 for p in range(4)} | {T("old", 0): None}
    description = _description("Stable", two, idle, one)
    assert reports.partitions_to_describe(description, committed) == [
        T("t", 3), T("t", 0), T("t", 1), T("t", 2), T("old", 0),
    ]  # fmt: skip
    rows = reports.offset_rows(description, committed, log_ends)
    # The member with most partitions first; its partitions as a HashMap orders them
    # (TopicPartition("t", p).hashCode() puts t-2 before t-1 before t-0).
    assert [(r.consumer_id, r.topic, r.partition, r.offset, r.lag) for r in rows] == [
        ("m-1", "t", 2, None, None),
        ("m-1", "t", 1, None, None),
        ("m-1", "t", 0, 5, 5),
        ("m-2", "t", 3, 1, 9),
        (None, "old", 0, 9, None),
    ]
    members = reports.member_rows(description)
    assert [(m.consumer_id, m.group_instance_id, m.num_partitions) for m in members] == [
        ("m-2", "i-2", 1),
        ("m-3", "", 0),
        ("m-1", "", 3),
    ]
    assert reports.state_row(description) == tables.GroupState(
        "billing", "127.0.0.1", 9092, 1, "range", "Stable", 3
    )
    assert reports.tree_order(["b", "B", "a", "b"]) == ["B", "a", "b"]


def test_reset_offsets_are_kafkas() -> None:
    starts: dict[T, int | None] = {T("t", 0): 5, T("t", 1): 0, T("t", 2): None}
    ends: dict[T, int | None] = {T("t", 0): 50, T("t", 1): 8, T("t", 2): None}
    offsets, warnings = reports.clamp_offsets(
        {T("t", 0): 2, T("t", 1): 9, T("t", 2): 7}, starts, ends
    )
    assert offsets == {T("t", 0): 5, T("t", 1): 8, T("t", 2): 7}
    assert warnings == [
        "New offset (2) is lower than earliest offset for topic partition t-0. Value will be set "
        "to 5",
        "New offset (9) is higher than latest offset for topic partition t-1. Value will be set "
        "to 8",
    ]
    committed: dict[T, int | None] = {T("t", 0): 10, T("t", 1): None}
    assert reports.shifted_offsets([T("t", 0)], committed, -3) == {T("t", 0): 7}
    with pytest.raises(reports.ResetError) as refused:
        reports.shifted_offsets([T("t", 1)], committed, 1)
    assert str(refused.value) == (
        "Cannot shift offset for partition t-1 since there is no current committed offset"
    )
    assert reports.current_offsets([T("t", 0), T("t", 1)], committed, {T("t", 1): 8}) == {
        T("t", 0): 10,
        T("t", 1): 8,
    }
    with pytest.raises(
        reports.ResetError, match=r"^Error getting ending offset of topic partition: t-1$"
    ):
        reports.current_offsets([T("t", 1)], committed, {})
    assert reports.parse_topic_partitions("t:0,2") == [T("t", 0), T("t", 2)]
    with pytest.raises(reports.ResetError) as refused:
        reports.parse_topic_partitions("t:0,x")
    assert str(refused.value) == "Invalid partition 'x' specified in topic arg 't:0,x''"
    with pytest.raises(reports.ResetError, match="expected topic name and partitions"):
        reports.parse_topic_partitions("t:0:1")


def test_datetimes_and_durations_are_read_as_java_reads_them() -> None:
    assert reports.parse_datetime("2024-05-01T12:00:00.250") == 1714564800250
    assert reports.parse_datetime("2024-05-01T12:00:00.250Z") == 1714564800250
    assert reports.parse_datetime("2024-05-01T14:30:00.250+02:30") == 1714564800250
    assert reports.parse_datetime("2024-05-01T07:00:00.250-05") == 1714564800250
    with pytest.raises(reports.ResetError) as refused:
        reports.parse_datetime("2024-05-01 12:00:00.000")
    assert "It does not contain a 'T' according to ISO8601 format" in str(refused.value)
    with pytest.raises(reports.ResetError) as refused:
        reports.parse_datetime("2024-02-30T12:00:00.000")
    assert str(refused.value) == (
        'java.text.ParseException: Unparseable date: "2024-02-30T12:00:00.000Z"'
    )
    assert parse_duration_ms("PT1H30M") == 5_400_000
    assert parse_duration_ms("P1DT0.5S") == 86_400_500
    assert parse_duration_ms("-PT-2M") == 120_000
    for bad in ("PT", "P", "1H", "PT1.5H"):
        with pytest.raises(CommandError, match="Text cannot be parsed to a Duration"):
            parse_duration_ms(bad)


# ---- the group calls against a fake transport -----------------------------------------------


class FakeTransport:
    """Answers each API from a queue of response values; records what was asked of whom."""

    def __init__(self, answers: Mapping[int, list[dict[str, Any]]]) -> None:
        self.answers = {key: list(values) for key, values in answers.items()}
        self.sent: list[tuple[int | None, int, dict[str, Any]]] = []

    async def send(
        self,
        node: Node | None,
        api_key: int,
        values: Mapping[str, Any],
        *,
        min_version: int = 0,
        max_version: int | None = None,
    ) -> Any:
        self.sent.append((None if node is None else node.id, api_key, dict(values)))
        versions = {
            ApiKey.FIND_COORDINATOR: 4,
            ApiKey.OFFSET_FETCH: 8,
            ApiKey.CONSUMER_GROUP_DESCRIBE: 1,
        }
        version = versions.get(ApiKey(api_key), 5)
        answer = {"throttle_time": 0, **self.answers[api_key].pop(0)}
        return make(response_class(api_key, max(version, min_version)), answer)


def _run_admin(transport: FakeTransport, call: Any) -> Any:
    async def sleep(_: float) -> None:
        return None

    admin = GroupsAdmin(transport, timeout_ms=1000, sleep=sleep)
    return asyncio.run(call(admin))


def _coordinator(group: str, node: int = 2, code: int = 0) -> dict[str, Any]:
    return {"key": group, "node_id": node, "host": f"b{node}", "port": 9092,
            "error_code": code, "error_message": None}  # fmt: skip


def _not_a_consumer_group(group: str) -> dict[str, Any]:
    return {"error_code": 69, "error_message": None, "group_id": group, "group_state": "Dead",
            "group_epoch": -1, "assignment_epoch": -1, "assignor_name": "", "members": [],
            "authorized_operations": 0}  # fmt: skip


def test_describe_finds_the_coordinator_again_when_it_moved() -> None:
    assignment = ConsumerProtocolAssignment(
        assigned_partitions=[ConsumerProtocolAssignment.TopicPartition(topic="t", partitions=[1])],
        user_data=None,
    ).encode(version=0)
    member = {
        "member_id": "m",
        "group_instance_id": None,
        "client_id": "c",
        "client_host": "/1.2.3.4",
        "member_metadata": b"",
        "member_assignment": assignment,
    }
    group = {
        "error_code": 0,
        "group_id": "g",
        "group_state": "Stable",
        "protocol_type": "consumer",
        "protocol_data": "range",
        "members": [member],
        "authorized_operations": 0,
    }
    moved = {**group, "error_code": 16, "group_state": "", "members": []}
    gone = {**group, "group_id": "h", "group_state": "Dead", "error_code": 69, "members": []}
    transport = FakeTransport(
        {
            ApiKey.FIND_COORDINATOR: [
                {"coordinators": [_coordinator("g"), _coordinator("h", code=15)]},
                {"coordinators": [_coordinator("h")]},
                {"coordinators": [_coordinator("g", node=3)]},
            ],
            ApiKey.DESCRIBE_GROUPS: [{"groups": [moved, gone]}, {"groups": [group]}],
            ApiKey.CONSUMER_GROUP_DESCRIBE: [{"groups": [_not_a_consumer_group("h")]}],
        }
    )
    described = _run_admin(transport, lambda admin: admin.describe_groups(["g", "h"]))
    assert described["g"] == GroupDescription(
        "g", "Stable", "range", (MemberDescription("m", None, "c", "/1.2.3.4", (T("t", 1),)),),
        Node(3, "b3", 9092),
    )  # fmt: skip
    assert described["h"].state == "Dead"
    asked = [(node, ApiKey(key).name, values.get("groups")) for node, key, values in transport.sent]
    assert asked == [
        (None, "FIND_COORDINATOR", None),
        (None, "FIND_COORDINATOR", None),
        (2, "DESCRIBE_GROUPS", ["g", "h"]),
        (None, "FIND_COORDINATOR", None),
        (3, "DESCRIBE_GROUPS", ["g"]),
        (2, "CONSUMER_GROUP_DESCRIBE", None),  # a Dead group may be a consumer-protocol one
    ]


def test_listing_keeps_consumer_groups_and_errors_carry_kafkas_text() -> None:
    brokers = [{"node_id": n, "host": f"b{n}", "port": 9092, "rack": None} for n in (2, 1)]
    listed = [
        {"group_id": g, "protocol_type": p, "group_state": s, "group_type": "classic"}
        for g, p, s in (("g", "consumer", "Stable"), ("conn", "connect", "Stable"),
                        ("simple", "", "Empty"))
    ]  # fmt: skip
    metadata = {"brokers": brokers, "cluster_id": "c", "controller_id": 1, "topics": []}
    transport = FakeTransport(
        {
            ApiKey.METADATA: [metadata],
            ApiKey.LIST_GROUPS: [
                {"error_code": 0, "groups": listed},
                {"error_code": 0, "groups": []},
            ],
        }
    )
    groups = _run_admin(transport, lambda admin: admin.list_groups(["Stable"]))
    assert [(g.group_id, g.state, g.type) for g in groups] == [
        ("g", "Stable", "classic"),
        ("simple", "Empty", "classic"),
    ]
    assert [node for node, key, _ in transport.sent if key == ApiKey.LIST_GROUPS] == [1, 2]
    assert GroupsError(68).java_text == (
        "org.apache.kafka.common.errors.GroupNotEmptyException: The group is not empty."
    )


class FakeCluster:
    """One broker (1) leading topic ``t`` (partitions 0-2, log ends 5, 3, 4, starts 0), and
    two groups: ``g`` Stable with one member owning ``t``, ``e`` Empty; a stand-in for
    :class:`rackwise.client.connections.Connections`."""

    assignment = ConsumerProtocolAssignment(
        assigned_partitions=[
            ConsumerProtocolAssignment.TopicPartition(topic="t", partitions=[0, 1, 2])
        ],
        user_data=None,
    ).encode(version=1)
    states: Mapping[str, str] = {"g": "Stable", "e": "Empty"}
    committed: Mapping[str, Mapping[int, int]] = {"g": {0: 2, 1: 3}, "e": {2: 1}}
    log_ends: Mapping[int, int] = {0: 5, 1: 3, 2: 4}

    def __init__(self, *_: Any, **__: Any) -> None:
        self.commits: list[dict[str, Any]] = []

    async def close(self) -> None:
        return None

    def _groups(self, values: Mapping[str, Any]) -> list[dict[str, Any]]:
        described = []
        for g in values["groups"]:
            state = self.states.get(g, "Dead")
            member = {"member_id": "c-1-abc", "group_instance_id": None, "client_id": "c-1",
                      "client_host": "/127.0.0.1", "member_metadata": b"",
                      "member_assignment": self.assignment}  # fmt: skip
            described.append(
                {"error_code": 69 if state == "Dead" else 0, "group_id": g, "group_state": state,
                 "protocol_type": "consumer", "protocol_data": "range" if state == "Stable" else "",
                 "members": [member] if state == "Stable" else [], "authorized_operations": 0}
            )  # fmt: skip
        return described

    def _answer(self, key: ApiKey, values: Mapping[str, Any]) -> dict[str, Any]:
        node = {"node_id": 1, "host": "127.0.0.1", "port": 9092}
        if key == ApiKey.METADATA:
            partitions = [
                {"error_code": 0, "partition_index": p, "leader_id": 1, "leader_epoch": 0,
                 "replica_nodes": [1], "isr_nodes": [1], "offline_replicas": []}
                for p in range(3)
            ]  # fmt: skip
            topics = [
                {"error_code": 0 if t["name"] == "t" else 3, "name": t["name"],
                 "is_internal": False, "partitions": partitions if t["name"] == "t" else []}
                for t in values["topics"] or []
            ]  # fmt: skip
            return {"brokers": [{**node, "rack": None}], "cluster_id": "c", "controller_id": 1,
                    "topics": topics}  # fmt: skip
        if key == ApiKey.FIND_COORDINATOR:
            keys = values["coordinator_keys"]
            found = [{"key": k, **node, "error_code": 0, "error_message": None} for k in keys]
            return {"coordinators": found}
        if key == ApiKey.DESCRIBE_GROUPS:
            return {"groups": self._groups(values)}
        if key == ApiKey.CONSUMER_GROUP_DESCRIBE:
            return {"groups": [_not_a_consumer_group(g) for g in values["group_ids"]]}
        if key == ApiKey.LIST_GROUPS:
            listed = [
                {"group_id": g, "protocol_type": "consumer", "group_state": state,
                 "group_type": "classic"}
                for g, state in sorted(self.states.items())
            ]  # fmt: skip
            return {"error_code": 0, "groups": listed}
        if key == ApiKey.OFFSET_FETCH:
            return {"groups": [
                {"group_id": g["group_id"], "error_code": 0, "topics": [
                    {"name": "t", "partitions": [
                        {"partition_index": p, "committed_offset": o, "committed_leader_epoch": -1,
                         "metadata": "", "error_code": 0}
                        for p, o in self.committed.get(g["group_id"], {}).items()]}]}
                for g in values["groups"]
            ]}  # fmt: skip
        if key == ApiKey.LIST_OFFSETS:
            return {"topics": [
                {"name": t["name"], "partitions": [
                    {"partition_index": p["partition_index"], "error_code": 0, "timestamp": -1,
                     "leader_epoch": 0,
                     "offset": 0 if p["timestamp"] == -2 else self.log_ends[p["partition_index"]]}
                    for p in t["partitions"]]}
                for t in values["topics"]
            ]}  # fmt: skip
        if key == ApiKey.OFFSET_COMMIT:
            self.commits.append(dict(values))
            return {"topics": [
                {"name": t["name"], "partitions": [
                    {"partition_index": p["partition_index"], "error_code": 0}
                    for p in t["partitions"]]}
                for t in values["topics"]
            ]}  # fmt: skip
        if key == ApiKey.DELETE_GROUPS:
            return {"results": [
                {"group_id": g, "error_code": 68 if self.states.get(g) == "Stable" else 0}
                for g in values["groups_names"]
            ]}  # fmt: skip
        assert key == ApiKey.OFFSET_DELETE
        return {"error_code": 0, "topics": [
            {"name": t["name"], "partitions": [
                {"partition_index": p["partition_index"],
                 "error_code": 86 if values["group_id"] == "g" else 0}
                for p in t["partitions"]]}
            for t in values["topics"]
        ]}  # fmt: skip

    async def send(
        self,
        node: Node | None,
        api_key: int,
        values: Mapping[str, Any],
        *,
        min_version: int = 0,
        max_version: int | None = None,
    ) -> Any:
        key = ApiKey(api_key)
        version = {ApiKey.FIND_COORDINATOR: 4, ApiKey.OFFSET_FETCH: 8, ApiKey.OFFSET_DELETE: 0,
                   ApiKey.DELETE_GROUPS: 2,
                   ApiKey.CONSUMER_GROUP_DESCRIBE: 1}.get(key, 5)  # fmt: skip
        return make(response_class(key, version), {"throttle_time": 0, **self._answer(key, values)})


@pytest.fixture
def fake_cluster(monkeypatch: pytest.MonkeyPatch) -> list[FakeCluster]:
    from rackwise.client import connections

    made: list[FakeCluster] = []

    def connect(*args: Any, **kwargs: Any) -> FakeCluster:
        made.append(FakeCluster(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(connections, "Connections", connect)
    return made


def _command(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["consumer-groups", "--bootstrap-server", "127.0.0.1:9092", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_describe_prints_each_group_as_kafka_does(
    fake_cluster: list[FakeCluster], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _command(capsys, "--describe", "--all-groups")
    assert (code, err) == (0, "\nConsumer group 'e' has no active members.\n")
    header = (
        "GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG         "
        "    CONSUMER-ID     HOST            CLIENT-ID"
    )
    assert out == (
        f"\n{header}\n"
        "e               t               2          1               4               3           "
        "    -               -               -\n"
        f"\n{header}\n"
        "g               t               2          -               4               -           "
        "    c-1-abc         /127.0.0.1      c-1\n"
        "g               t               1          3               3               0           "
        "    c-1-abc         /127.0.0.1      c-1\n"
        "g               t               0          2               5               3           "
        "    c-1-abc         /127.0.0.1      c-1\n"
    )
    code, out, _ = _command(capsys, "--describe", "--group", "nope", "--group", "e", "--state")
    assert code == 1
    assert out.startswith("\nGROUP   ")  # e, then nope: a TreeMap's order
    assert out.endswith("  Empty           0\n\nError: Consumer group 'nope' does not exist.\n")
    code, out, _ = _command(capsys, "--list", "--type", "--state", "--json")
    assert json.loads(out) == [
        {"group": "e", "type": "Classic", "state": "Empty"},
        {"group": "g", "type": "Classic", "state": "Stable"},
    ]


def test_reset_delete_and_delete_offsets_report_as_kafka_does(
    fake_cluster: list[FakeCluster], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _command(
        capsys, "--reset-offsets", "--all-groups", "--topic", "t:0,2", "--to-offset", "4",
        "--execute",
    )  # fmt: skip
    assert (code, err) == (1, "")
    assert out == (
        "\nError: Assignments can only be reset if the group 'g' is inactive, but the current "
        "state is Stable.\n"
        "\nGROUP                          TOPIC                          PARTITION  NEW-OFFSET     "
        "\ne                              t                              2          4              "
        "\ne                              t                              0          4              "
        "\n"
    )
    (commit,) = fake_cluster[-1].commits
    assert (commit["group_id"], commit["generation_id_or_member_epoch"]) == ("e", -1)
    assert sorted(
        (p["partition_index"], p["committed_offset"]) for p in commit["topics"][0]["partitions"]
    ) == [(0, 4), (2, 4)]
    code, out, _ = _command(capsys, "--delete", "--group", "e", "--group", "g")
    assert (code, out) == (
        1,
        "\nError: Deletion of some consumer groups failed:\n"
        "* Group 'g' could not be deleted due to: "
        "org.apache.kafka.common.errors.GroupNotEmptyException: The group is not empty.\n"
        "\nThese consumer groups were deleted successfully: 'e'\n",
    )
    code, out, _ = _command(capsys, "--delete-offsets", "--group", "g", "--topic", "t:1")
    assert code == 1
    assert out.splitlines() == [
        "",
        "Error: Encounter some partition level error, see the follow-up details:",
        "",
        "TOPIC                          PARTITION       STATUS         ",
        "t                              1               Error: :org.apache.kafka.common.errors."
        "GroupSubscribedToTopicException: Deleting offsets of a topic is forbidden while the "
        "consumer group is actively subscribed to it.",
    ]


# ---- against a real cluster ---------------------------------------------------------------


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_cluster(tmp_path_factory.mktemp("groups-cluster"), "--brokers", "2") as servers:
        yield servers


class Ran:
    """One run of ``rackwise consumer-groups`` in this process: exit status, stdout, stderr."""

    def __init__(self, capsys: pytest.CaptureFixture[str], bootstrap: str, *args: str) -> None:
        self.returncode = main(["consumer-groups", "--bootstrap-server", bootstrap, *args])
        captured = capsys.readouterr()
        self.stdout, self.stderr = captured.out, captured.err


@pytest.mark.slow(reason="a cluster of three processes and a librdkafka consumer in a group")
def test_a_live_group_is_listed_described_reset_and_deleted(
    bootstrap: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from confluent_kafka import Consumer, Producer
    from confluent_kafka import TopicPartition as CkTopicPartition

    topic, group = f"cg-{uuid.uuid4().hex[:6]}", f"billing-{uuid.uuid4().hex[:6]}"
    created = rackwise(
        "topics", "--bootstrap-server", bootstrap, "--create", "--topic", topic,
        "--partitions", "3", "--replication-factor", "2",
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for partition, count in ((0, 5), (1, 3), (2, 4)):
        for i in range(count):
            producer.produce(topic, f"{partition}-{i}".encode(), partition=partition)
    assert producer.flush(30) == 0
    del producer
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": "cg-test",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 1000,
        }
    )
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 30
        while len(consumer.assignment()) < 3:
            assert time.monotonic() < deadline, consumer.assignment()
            consumer.poll(0.2)
        consumer.commit(
            offsets=[CkTopicPartition(topic, 0, 2), CkTopicPartition(topic, 1, 3)],
            asynchronous=False,
        )
        listed = Ran(capsys, bootstrap, "--list")
        assert listed.returncode == 0, listed.stderr
        assert group in listed.stdout.splitlines()
        stable = Ran(capsys, bootstrap, "--list", "--state", "stable", "--json")
        assert {"group": group, "state": "Stable"} in json.loads(stable.stdout)

        described = Ran(capsys, bootstrap, "--describe", "--group", group)
        assert described.returncode == 0, described.stderr
        lines = described.stdout.splitlines()
        assert lines[0] == ""
        assert lines[1].split() == [
            "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
            "CONSUMER-ID", "HOST", "CLIENT-ID",
        ]  # fmt: skip
        cells = {int(line.split()[2]): line.split() for line in lines[2:]}
        assert {p: c[3:6] for p, c in cells.items()} == {
            0: ["2", "5", "3"],
            1: ["3", "3", "0"],
            2: ["-", "4", "-"],
        }
        assert all(c[6].startswith("cg-test-") and c[8] == "cg-test" for c in cells.values())
        members = Ran(capsys, bootstrap, "--describe", "--group", group, "--members", "--verbose")
        assert members.returncode == 0, members.stderr
        (member,) = members.stdout.splitlines()[2:]
        assert member.split()[4:] == ["3", f"{topic}(0,1,2)"]
        state = Ran(capsys, bootstrap, "--describe", "--group", group, "--state")
        assert state.returncode == 0, state.stderr
        row = state.stdout.splitlines()[2].split()
        assert (row[0], row[3], row[4], row[5]) == (group, "range", "Stable", "1")
        to_earliest = ("--reset-offsets", "--group", group, "--to-earliest", "--execute")
        refused = Ran(capsys, bootstrap, *to_earliest, "--all-topics")
        assert refused.returncode == 1
        assert (
            f"Error: Assignments can only be reset if the group '{group}' is inactive, but the "
            "current state is Stable."
        ) in refused.stdout
    finally:
        consumer.close()  # leaves the group (its offsets were committed above)

    def state_now() -> str:
        ran = Ran(capsys, bootstrap, "--describe", "--group", group, "--state", "--json")
        return str(json.loads(ran.stdout)[0]["state"])

    deadline = time.monotonic() + 20
    while state_now() != "Empty":
        assert time.monotonic() < deadline, "the group did not become Empty"
        time.sleep(0.2)
    reset = Ran(capsys, bootstrap, *to_earliest, "--topic", topic)
    assert reset.returncode == 0, reset.stderr
    assert sorted(reset.stdout.splitlines()[2:]) == [
        f"{group:<30} {topic:<30} {p:<10} {0:<15}" for p in range(3)
    ]
    after = Ran(capsys, bootstrap, "--describe", "--group", group, "--json")
    assert after.returncode == 0, after.stderr
    assert f"Consumer group '{group}' has no active members." in after.stderr
    rows = sorted(json.loads(after.stdout), key=lambda r: r["partition"])
    seen = [(r["current_offset"], r["log_end_offset"], r["lag"], r["consumer_id"]) for r in rows]
    assert seen == [(0, 5, 5, None), (0, 3, 3, None), (0, 4, 4, None)]
    dropped = Ran(capsys, bootstrap, "--delete-offsets", "--group", group, "--topic", f"{topic}:2")
    assert dropped.returncode == 0, dropped.stderr
    assert dropped.stdout.splitlines()[0] == (
        f"Request succeed for deleting offsets with topic {topic}:2 group {group}"
    )
    assert dropped.stdout.splitlines()[3].split() == [topic, "2", "Successful"]
    deleted = Ran(capsys, bootstrap, "--delete", "--group", group)
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stdout == f"Deletion of requested consumer groups ('{group}') was successful.\n"
    gone = Ran(capsys, bootstrap, "--describe", "--group", group)
    assert gone.returncode == 1
    assert gone.stdout == f"\nError: Consumer group '{group}' does not exist.\n"
