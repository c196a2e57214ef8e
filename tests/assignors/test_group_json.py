"""Reading a consumer group from JSON: what is accepted and how errors name the bad value."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rackwise.assignors import DEFAULT_GENERATION, Member, PartitionInfo, group_from_json
from rackwise.common import InvalidFormatException, TopicPartition


def _doc(**overrides: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "partitions": {"orders": [["/dc1/r1", "/dc1/r2"], ["b", None], []]},
        "members": [
            {
                "member_id": "c1",
                "group_instance_id": "i1",
                "rack": "/dc1/r1",
                "topics": ["orders"],
                "owned": ["orders-0", ["orders", 2]],
                "generation": 3,
            },
            {"member_id": "c2", "topics": ["orders", "missing"]},
        ],
        "options": {"prefer_rack_aware_logic": True, "note": "kept"},
    }
    doc.update(overrides)
    return doc


def test_a_full_document() -> None:
    group = group_from_json(_doc(id="ignored", expected={"also": "ignored"}))
    assert group.partitions == {
        "orders": (
            PartitionInfo(("/dc1/r1", "/dc1/r2")),
            PartitionInfo(("b", None)),
            PartitionInfo((), has_leader=False),
        )
    }
    assert group.members == (
        Member(
            "c1",
            ("orders",),
            (TopicPartition("orders", 0), TopicPartition("orders", 2)),
            "/dc1/r1",
            "i1",
            3,
        ),
        Member("c2", ("orders", "missing")),
    )
    assert group.prefer_rack_aware_logic is True
    assert group.options == {"note": "kept"}
    assert group.partitions["orders"][1].leader_rack == "b"
    assert group.partitions["orders"][2].leader_rack is None


def test_defaults_are_kafkas() -> None:
    group = group_from_json({"partitions": {}, "members": [{"member_id": "c"}]})
    assert group.prefer_rack_aware_logic is False
    (member,) = group.members
    assert member.generation == DEFAULT_GENERATION
    assert (member.topics, member.owned, member.rack, member.group_instance_id) == (
        (),
        (),
        None,
        None,
    )


def test_owned_is_split_at_the_last_dash() -> None:
    doc = _doc(partitions={"my-topic-1": [["a"]] * 3})
    doc["members"] = [{"member_id": "c", "topics": ["my-topic-1"], "owned": ["my-topic-1-2"]}]
    assert group_from_json(doc).members[0].owned == (TopicPartition("my-topic-1", 2),)
    doc["members"][0]["owned"] = ["t--1"]
    assert group_from_json(doc).members[0].owned == (TopicPartition("t-", 1),)


def test_the_golden_cases_all_read() -> None:
    from pathlib import Path

    path = Path(__file__).parents[1] / "golden" / "kafka_assignor.jsonl"
    for line in path.read_text().splitlines():
        case = json.loads(line)
        group = group_from_json(case)
        assert [m.member_id for m in group.members] == [m["member_id"] for m in case["members"]]


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "at the top level: expected an object, got []"),
        ({"members": []}, "at partitions: missing"),
        ({"partitions": {}}, "at members: missing"),
        ({"partitions": {"t": "x"}, "members": []}, 'at partitions.t: expected an array, got "x"'),
        ({"partitions": {"t": [[1]]}, "members": []}, "at partitions.t[0][0]: expected a string"),
        (
            {"partitions": {}, "members": [{}]},
            "at members[0].member_id: expected a string, got null",
        ),
        ({"partitions": {}, "members": [{"member_id": ""}]}, "must not be empty"),
        (
            {"partitions": {}, "members": [{"member_id": "c", "rack": 7}]},
            "at members[0].rack: expected a string or null, got 7",
        ),
        (
            {"partitions": {}, "members": [{"member_id": "c", "owned": ["orders"]}]},
            'at members[0].owned[0]: expected "topic-N" or [topic, N], got "orders"',
        ),
        (
            {"partitions": {}, "members": [{"member_id": "c", "owned": ["t-0", "-3"]}]},
            'at members[0].owned[1]: expected "topic-N" or [topic, N], got "-3"',
        ),
        (
            {"partitions": {}, "members": [{"member_id": "c", "owned": [["t", -1]]}]},
            "at members[0].owned[0][1]: expected an integer from 0 to 2147483647, got -1",
        ),
        (
            {"partitions": {}, "members": [{"member_id": "c", "generation": -2}]},
            "at members[0].generation: expected an integer from -1 to 2147483647, got -2",
        ),
        (
            {"partitions": {}, "members": [{"member_id": "c", "generation": True}]},
            "got true",
        ),
        (
            {"partitions": {}, "members": [{"member_id": "c", "racks": "a"}]},
            "at members[0].racks: unknown member field",
        ),
        (
            {"partitions": {}, "members": [{"member_id": "c"}, {"member_id": "c"}]},
            'at members[1].member_id: duplicate member id "c"',
        ),
        (
            {"partitions": {}, "members": [], "options": {"prefer_rack_aware_logic": "yes"}},
            'at options.prefer_rack_aware_logic: expected true or false, got "yes"',
        ),
    ],
)
def test_errors_name_the_offending_value(document: object, message: str) -> None:
    with pytest.raises(InvalidFormatException) as raised:
        group_from_json(document)
    assert message in str(raised.value)
    assert str(raised.value).startswith("Invalid consumer group JSON at ")
    assert raised.value.error_code == 42
