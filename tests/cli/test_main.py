"""The entry point's argument errors: one line, naming what was mistyped, pointing to the help
of the (sub)command it concerns."""

from __future__ import annotations

import pytest

from rackwise.cli.main import main


def _error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as raised:
        main(list(argv))
    assert raised.value.code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


def test_a_mistyped_optional_flag_points_to_the_subcommands_help(
    capsys: pytest.CaptureFixture[str],
) -> None:
    err = _error(
        capsys, "place", "--brokers", "b.json", "--partitions", "3", "--replication-factor", "2",
        "--sumary",
    )  # fmt: skip
    assert err == (
        "error: unrecognized arguments: --sumary (did you mean --summary?) "
        "(see rackwise place --help)\n"
    )


def test_a_nested_subcommand_is_named_in_full(capsys: pytest.CaptureFixture[str]) -> None:
    err = _error(capsys, "cluster", "up", "--brokrs", "3")
    assert err == (
        "error: unrecognized arguments: --brokrs (did you mean --brokers?) "
        "(see rackwise cluster up --help)\n"
    )


def test_a_mistyped_required_flag_is_named_beside_the_missing_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    err = _error(
        capsys, "place", "--brokers", "b.json", "--partitons", "3", "--replication-factor", "2"
    )
    assert err == (
        "error: unrecognized arguments: --partitons (did you mean --partitions?); the following "
        "arguments are required: --partitions (see rackwise place --help)\n"
    )


def test_values_abbreviations_and_stray_words(capsys: pytest.CaptureFixture[str]) -> None:
    # A negative number is a value, an abbreviation is argparse's own, a stray word is named.
    err = _error(capsys, "place", "--brokers", "b.json", "--start-index", "-1", "--part", "2")
    assert err == (
        "error: the following arguments are required: --replication-factor "
        "(see rackwise place --help)\n"
    )
    err = _error(
        capsys, "place", "--brokers", "b.json", "--partitions", "3", "--replication-factor", "2",
        "extra",
    )  # fmt: skip
    assert err == "error: unrecognized arguments: extra (see rackwise place --help)\n"
    assert (
        _error(capsys, "--bogus")
        == "error: unrecognized arguments: --bogus (see rackwise --help)\n"
    )
