"""rackwise's broker list JSON."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rackwise.common import InvalidFormatException
from rackwise.formats import BrokerEntry, format_broker_list, parse_broker_list


def test_documented_example() -> None:
    text = '[{"id":0,"rack":"/dc1/r1","fenced":false},{"id":1,"rack":"/dc1/r2"},{"id":2}]'
    brokers = parse_broker_list(text)
    assert brokers == (
        BrokerEntry(0, "/dc1/r1"),
        BrokerEntry(1, "/dc1/r2"),
        BrokerEntry(2),
    )
    assert format_broker_list(brokers) == (
        '[{"id":0,"rack":"/dc1/r1","fenced":false},'
        '{"id":1,"rack":"/dc1/r2","fenced":false},'
        '{"id":2,"rack":null,"fenced":false}]'
    )


def test_file_order_is_kept_and_null_rack_is_no_rack() -> None:
    text = '[ {"fenced": true, "id": 9, "rack": null}, {"id": 3} ]'
    assert parse_broker_list(text) == (BrokerEntry(9, None, fenced=True), BrokerEntry(3))
    assert parse_broker_list("[]") == ()
    assert format_broker_list([]) == "[]"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[{]",
            "broker list JSON: not valid JSON: Expecting property name enclosed in double "
            "quotes (line 1, column 3)",
        ),
        ('{"id":0}', 'broker list JSON: expected a JSON array, got {"id":0}'),
        ("[0]", "broker list JSON: [0]: expected a JSON object, got 0"),
        ('[{"rack":"r"}]', 'broker list JSON: [0]: missing required field "id"'),
        ('[{"id":"0"}]', 'broker list JSON: [0].id: expected an integer, got "0"'),
        ('[{"id":1.5}]', "broker list JSON: [0].id: expected an integer, got 1.5"),
        ('[{"id":true}]', "broker list JSON: [0].id: expected an integer, got true"),
        ('[{"id":0},{"id":-1}]', "broker list JSON: [1].id: must be at least 0, got -1"),
        (
            '[{"id":4294967296}]',
            "broker list JSON: [0].id: 4294967296 does not fit in a 32-bit signed integer",
        ),
        (
            '[{"id":1},{"id":2},{"id":1}]',
            "broker list JSON: [2].id: broker id 1 is already used by [0]",
        ),
        ('[{"id":1,"rack":7}]', "broker list JSON: [0].rack: expected a string or null, got 7"),
        (
            '[{"id":1,"rack":["a"]}]',
            'broker list JSON: [0].rack: expected a string or null, got ["a"]',
        ),
        (
            '[{"id":1,"fenced":"no"}]',
            'broker list JSON: [0].fenced: expected true or false, got "no"',
        ),
        (
            '[{"id":1,"fenced":null}]',
            "broker list JSON: [0].fenced: expected true or false, got null",
        ),
        (
            '[{"id":1,"fence":true}]',
            'broker list JSON: [0].fence: unknown member "fence"; expected only "id", "rack" and '
            '"fenced"',
        ),
    ],
)
def test_errors_name_the_field_and_value(text: str, message: str) -> None:
    with pytest.raises(InvalidFormatException) as caught:
        parse_broker_list(text)
    assert str(caught.value) == message


def test_entries_refuse_bad_values() -> None:
    with pytest.raises(InvalidFormatException, match=r"broker -1\.id: must be at least 0, got -1"):
        BrokerEntry(-1)
    with pytest.raises(InvalidFormatException, match=r"broker True\.id: expected an integer"):
        BrokerEntry(True)
    with pytest.raises(InvalidFormatException, match=r"broker 1\.fenced: expected true or false"):
        BrokerEntry(1, fenced=0)  # type: ignore[arg-type]


def test_writer_refuses_duplicate_ids() -> None:
    with pytest.raises(
        InvalidFormatException, match=r"\[1\]\.id: broker id 5 is already used by \[0\]"
    ):
        format_broker_list([BrokerEntry(5), BrokerEntry(5, "r")])


_broker_lists = st.lists(
    st.builds(
        BrokerEntry,
        id=st.integers(0, 2**31 - 1),
        rack=st.none() | st.text(max_size=10),
        fenced=st.booleans(),
    ),
    max_size=8,
    unique_by=lambda broker: broker.id,
)


@given(_broker_lists)
def test_write_then_read_gives_the_same_value(brokers: list[BrokerEntry]) -> None:
    assert parse_broker_list(format_broker_list(brokers)) == tuple(brokers)


@given(_broker_lists)
def test_read_then_write_gives_the_same_bytes(brokers: list[BrokerEntry]) -> None:
    canonical = format_broker_list(brokers)
    assert format_broker_list(parse_broker_list(canonical)) == canonical
