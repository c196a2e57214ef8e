"""Schema parsing: the shipped schemas load, and mistakes in a schema are refused by name."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rackwise.records import RECORD_TYPES, SchemaError
from rackwise.records.registry import build_record_types
from rackwise.records.spec import Versions, parse_message_spec, snake_case

KAFKA_API_KEYS = {
    "RegisterBrokerRecord": 0,
    "UnregisterBrokerRecord": 1,
    "TopicRecord": 2,
    "PartitionRecord": 3,
    "ConfigRecord": 4,
    "PartitionChangeRecord": 5,
    "FenceBrokerRecord": 7,
    "UnfenceBrokerRecord": 8,
    "RemoveTopicRecord": 9,
    "FeatureLevelRecord": 12,
    "ProducerIdsRecord": 15,
    "BrokerRegistrationChangeRecord": 17,
    "AccessControlEntryRecord": 18,
    "RemoveAccessControlEntryRecord": 19,
    "NoOpRecord": 20,
    "UserScramCredentialRecord": 11,
    "RemoveUserScramCredentialRecord": 22,
}


def test_shipped_schemas_use_kafkas_api_keys_and_versions() -> None:
    assert {t.name: t.api_key for t in RECORD_TYPES.values()} == KAFKA_API_KEYS
    versions = {t.name: sorted(t.classes) for t in RECORD_TYPES.values()}
    assert versions["RegisterBrokerRecord"] == [0, 1, 2, 3]
    assert versions["PartitionRecord"] == [0, 1, 2]
    assert versions["PartitionChangeRecord"] == [0, 1, 2]
    assert versions["BrokerRegistrationChangeRecord"] == [0, 1, 2]
    assert RECORD_TYPES[3].type_name == "PARTITION_RECORD"


def test_every_field_has_about_and_a_version_range() -> None:
    for record_type in RECORD_TYPES.values():
        for f in record_type.spec.fields:
            assert f.about and not f.versions.is_empty(), (record_type.name, f.name)


@pytest.mark.parametrize(
    ("text", "expected"), [("0+", (0, None)), ("0-2", (0, 2)), ("3", (3, 3)), ("none", (1, 0))]
)
def test_version_ranges(text: str, expected: tuple[int, int | None]) -> None:
    versions = Versions.parse(text)
    assert (versions.lowest, versions.highest) == expected
    assert str(versions) == text


def test_snake_case() -> None:
    assert [snake_case(n) for n in ("BrokerId", "LastKnownElr", "IsMigratingZkBroker", "Isr")] == [
        "broker_id",
        "last_known_elr",
        "is_migrating_zk_broker",
        "isr",
    ]


def _schema(**changes: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "apiKey": 90,
        "type": "metadata",
        "name": "SampleRecord",
        "validVersions": "0-1",
        "flexibleVersions": "0+",
        "fields": [{"name": "Id", "type": "int32", "versions": "0+", "about": "An id."}],
    }
    schema.update(changes)
    return schema


def _field(**changes: Any) -> dict[str, Any]:
    field = {"name": "Extra", "type": "int32", "versions": "0+", "about": "Something."}
    field.update(changes)
    return field


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (_schema(color="red"), r"unknown key\(s\) color"),
        (_schema(type="request"), "type must be 'metadata'"),
        (_schema(validVersions="0+"), "validVersions must be a closed"),
        (_schema(fields=[_field(about="")]), r"fields\[0\] \(Extra\): about must say"),
        (_schema(fields=[_field(versions="2+")]), "versions 2\\+ are outside validVersions 0-1"),
        (_schema(fields=[_field(type="int33")]), "unknown type 'int33'"),
        (_schema(fields=[_field(tag=0)]), "a tag needs taggedVersions"),
        (_schema(fields=[_field(taggedVersions="0+")]), "taggedVersions needs a tag"),
        (
            _schema(flexibleVersions="1+", fields=[_field(taggedVersions="0+", tag=0)]),
            "must be flexible versions",
        ),
        (_schema(fields=[_field(nullableVersions="0+")]), "only strings, bytes and arrays"),
        (_schema(fields=[_field(default="x")]), "default 'x' is not an integer"),
        (_schema(fields=[_field(type="int8", default="300")]), "outside the range of int8"),
        (_schema(fields=[_field(default="null")]), "default null needs nullableVersions"),
        (
            _schema(
                fields=[
                    _field(taggedVersions="0+", tag=1),
                    _field(name="Other", taggedVersions="0+", tag=1),
                ]
            ),
            "tag 1 is used by Extra and Other",
        ),
        (_schema(fields=[_field(), _field()]), "field Extra is repeated"),
        (_schema(fields=[_field(type="Thing")]), r"a struct field must be an array \(\[\]Thing\)"),
        (_schema(name="bad_name"), "name must be CamelCase"),
    ],
)
def test_schema_mistakes_are_refused(schema: dict[str, Any], message: str) -> None:
    with pytest.raises(SchemaError, match=message):
        parse_message_spec(json.dumps(schema), "Sample.json")


def test_comment_lines_are_allowed() -> None:
    text = "// A comment.\n" + json.dumps(_schema()) + "\n// trailing\n"
    assert parse_message_spec(text).name == "SampleRecord"


def test_registry_refuses_duplicates_and_misnamed_files() -> None:
    text = json.dumps(_schema())
    with pytest.raises(SchemaError, match="api key 90 is also SampleRecord's"):
        build_record_types(
            {"SampleRecord.json": text, "Zample.json": json.dumps(_schema(name="ZampleRecord"))}
        )
    with pytest.raises(SchemaError, match=r"must be named SampleRecord\.json"):
        build_record_types({"Other.json": text})


def test_a_built_class_is_what_kio_expects() -> None:
    types = build_record_types({"SampleRecord.json": json.dumps(_schema())})
    cls = types[90].classes[1]
    assert (cls.__version__, cls.__api_key__, cls.__flexible__) == (1, 90, True)
    instance = cls(id=5)
    with pytest.raises(AttributeError):
        instance.id = 6
    assert types[90].codecs[1].encode(instance) == bytes.fromhex("00000005 00")
