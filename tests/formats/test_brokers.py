"""rackwise's broker list JSON."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rackwise.common import InvalidFormatException
from rackwise.formats.brokers import (
    BrokerEntry,
    BrokerLogDir,
    format_broker_list,
    parse_broker_list,
)


def test_documented_example() -> None:
    text = (
        '[{"id":0,"rack":"/dc1/r1","fenced":false,'
        '"log_dirs":[{"path":"/data/d1","total_bytes":4000000000000},'
        '{"path":"/data/d2","total_bytes":4000000000000,"is_live":false}]},'
        '{"id":1,"rack":"r2"},{"id":2}]'
    )
    brokers = parse_broker_list(text)
    assert brokers == (
        BrokerEntry(
            0,
            "/dc1/r1",
            log_dirs=(
                BrokerLogDir("/data/d1", 4_000_000_000_000),
                BrokerLogDir("/data/d2", 4_000_000_000_000, is_live=False),
            ),
        ),
        BrokerEntry(1, "r2"),
        BrokerEntry(2),
    )
    assert format_broker_list(brokers) == (
        '[{"id":0,"rack":"/dc1/r1","fenced":false,'
        '"log_dirs":[{"path":"/data/d1","total_bytes":4000000000000,"is_live":true},'
        '{"path":"/data/d2","total_bytes":4000000000000,"is_live":false}]},'
        '{"id":1,"rack":"r2","fenced":false},'
        '{"id":2,"rack":null,"fenced":false}]'
    )


def test_file_order_is_kept_and_null_rack_is_no_rack() -> None:
    text = '[ {"fenced": true, "id": 9, "rack": null}, {"id": 3} ]'
    assert parse_broker_list(text) == (BrokerEntry(9, None, fenced=True), BrokerEntry(3))
    assert parse_broker_list("[]") == ()
    assert format_broker_list([]) == "[]"


def test_empty_log_dirs_is_the_same_as_none() -> None:
    assert parse_broker_list('[{"id":1,"log_dirs":[]}]') == (BrokerEntry(1),)
    assert format_broker_list([BrokerEntry(1, log_dirs=())]) == (
        '[{"id":1,"rack":null,"fenced":false}]'
    )


def test_windows_and_unc_paths_are_absolute() -> None:
    text = (
        '[{"id":1,"log_dirs":[{"path":"C:\\\\kafka","total_bytes":1},'
        '{"path":"\\\\\\\\srv\\\\share","total_bytes":0}]}]'
    )
    (broker,) = parse_broker_list(text)
    assert [d.path for d in broker.log_dirs] == ["C:\\kafka", "\\\\srv\\share"]


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
            'broker list JSON: [0].fence: unknown member "fence"; expected only "id", "rack", '
            '"fenced" and "log_dirs"',
        ),
        (
            '[{"id":1,"log_dirs":{"path":"/d"}}]',
            'broker list JSON: [0].log_dirs: expected a JSON array, got {"path":"/d"}',
        ),
        (
            '[{"id":1,"log_dirs":["/d"]}]',
            'broker list JSON: [0].log_dirs[0]: expected a JSON object, got "/d"',
        ),
        (
            '[{"id":1,"log_dirs":[{"total_bytes":1}]}]',
            'broker list JSON: [0].log_dirs[0]: missing required field "path"',
        ),
        (
            '[{"id":1,"log_dirs":[{"path":"/d"}]}]',
            'broker list JSON: [0].log_dirs[0]: missing required field "total_bytes"',
        ),
        (
            '[{"id":1,"log_dirs":[{"path":"data/d1","total_bytes":1}]}]',
            'broker list JSON: [0].log_dirs[0].path: "data/d1" is not an absolute path',
        ),
        (
            '[{"id":1,"log_dirs":[{"path":"/d","total_bytes":-1}]}]',
            "broker list JSON: [0].log_dirs[0].total_bytes: must be at least 0, got -1",
        ),
        (
            '[{"id":1,"log_dirs":[{"path":"/d","total_bytes":9223372036854775808}]}]',
            "broker list JSON: [0].log_dirs[0].total_bytes: 9223372036854775808 does not fit "
            "in a 64-bit signed integer",
        ),
        (
            '[{"id":1,"log_dirs":[{"path":"/d","total_bytes":1e12}]}]',
            "broker list JSON: [0].log_dirs[0].total_bytes: expected an integer, got "
            "1000000000000.0",
        ),
        (
            '[{"id":1,"log_dirs":[{"path":"/d","total_bytes":1,"is_live":"yes"}]}]',
            'broker list JSON: [0].log_dirs[0].is_live: expected true or false, got "yes"',
        ),
        (
            '[{"id":1,"log_dirs":[{"path":"/d","total_bytes":1,"size":2}]}]',
            'broker list JSON: [0].log_dirs[0].size: unknown member "size"; expected only '
            '"path", "total_bytes" and "is_live"',
        ),
        (
            '[{"id":1,"log_dirs":[{"path":"/d","total_bytes":1},{"path":"/d","total_bytes":2}]}]',
            'broker list JSON: [0].log_dirs[1].path: "/d" is already listed at [0].log_dirs[0]',
        ),
    ],
)
def test_errors_name_the_field_and_value(text: str, message: str) -> None:
    with pytest.raises(InvalidFormatException) as caught:
        parse_broker_list(text)
    assert str(caught.value) == message


def test_on_invalid_sets_bad_entries_aside_and_keeps_the_rest() -> None:
    text = (
        '[{"id":1,"rack":"/a"},{"id":"two"},{"id":1},'
        '{"id":3,"log_dirs":[{"path":"rel","total_bytes":1}]},{"id":4}]'
    )
    set_aside: list[tuple[object, str]] = []
    brokers = parse_broker_list(text, on_invalid=lambda item, e: set_aside.append((item, str(e))))
    assert brokers == (BrokerEntry(1, "/a"), BrokerEntry(4))
    assert set_aside == [
        ({"id": "two"}, 'broker list JSON: [1].id: expected an integer, got "two"'),
        ({"id": 1}, "broker list JSON: [2].id: broker id 1 is already used by [0]"),
        (
            {"id": 3, "log_dirs": [{"path": "rel", "total_bytes": 1}]},
            'broker list JSON: [3].log_dirs[0].path: "rel" is not an absolute path',
        ),
    ]


def test_on_invalid_does_not_excuse_a_document_that_is_not_a_list() -> None:
    with pytest.raises(InvalidFormatException, match="expected a JSON array"):
        parse_broker_list('{"id":1}', on_invalid=lambda item, e: None)


def test_entries_refuse_bad_values() -> None:
    with pytest.raises(InvalidFormatException, match=r"broker -1\.id: must be at least 0, got -1"):
        BrokerEntry(-1)
    with pytest.raises(InvalidFormatException, match=r"broker True\.id: expected an integer"):
        BrokerEntry(True)
    with pytest.raises(InvalidFormatException, match=r"broker 1\.fenced: expected true or false"):
        BrokerEntry(1, fenced=0)  # type: ignore[arg-type]
    with pytest.raises(InvalidFormatException, match=r"'d'\.path: \"d\" is not an absolute path"):
        BrokerLogDir("d", 1)
    with pytest.raises(InvalidFormatException, match=r"total_bytes: must be at least 0, got -5"):
        BrokerLogDir("/d", -5)
    with pytest.raises(
        InvalidFormatException, match=r"broker 1\.log_dirs\[1\]\.path: \"/d\" is already listed"
    ):
        BrokerEntry(1, log_dirs=(BrokerLogDir("/d", 1), BrokerLogDir("/d", 2)))
    with pytest.raises(
        InvalidFormatException, match=r"broker 1\.log_dirs\[0\]: not a BrokerLogDir"
    ):
        BrokerEntry(1, log_dirs=("/d",))  # type: ignore[arg-type]


def test_writer_refuses_duplicate_ids() -> None:
    with pytest.raises(
        InvalidFormatException, match=r"\[1\]\.id: broker id 5 is already used by \[0\]"
    ):
        format_broker_list([BrokerEntry(5), BrokerEntry(5, "r")])


_paths = st.builds(lambda name: "/" + name, st.text(max_size=6))
_log_dirs = st.lists(
    st.builds(
        BrokerLogDir, path=_paths, total_bytes=st.integers(0, 2**63 - 1), is_live=st.booleans()
    ),
    max_size=3,
    unique_by=lambda d: d.path,
).map(tuple)
_broker_lists = st.lists(
    st.builds(
        BrokerEntry,
        id=st.integers(0, 2**31 - 1),
        rack=st.none() | st.text(max_size=10),
        fenced=st.booleans(),
        log_dirs=_log_dirs,
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
