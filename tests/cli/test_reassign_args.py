"""``rackwise reassign``'s arguments, checked as Kafka's ``validateAndParseArgs`` checks them:
the cases of Kafka's ``ReassignPartitionsCommandArgsTest``, with its messages."""

from __future__ import annotations

import pytest

from rackwise.cli.errors import CommandError
from rackwise.cli.main import main
from rackwise.cli.reassign import HELP_TEXT, check_options

MISSING_BOOTSTRAP = "Please specify either --bootstrap-server or --bootstrap-controller"


def given(*args: str) -> list[str]:
    """The options of an argument list, in order, as the command notes them."""
    return list(dict.fromkeys(a[2:] for a in args if a.startswith("--")))


@pytest.mark.parametrize(
    "args",
    [
        ("--bootstrap-server", "h:1", "--generate", "--broker-list", "101,102",
         "--topics-to-move-json-file", "f.json"),
        ("--bootstrap-server", "h:1", "--execute", "--reassignment-json-file", "f.json"),
        ("--bootstrap-server", "h:1", "--verify", "--reassignment-json-file", "f.json"),
        ("--bootstrap-server", "h:1", "--execute", "--throttle", "100",
         "--reassignment-json-file", "f.json"),
        ("--list", "--bootstrap-server", "h:1"),
        ("--cancel", "--bootstrap-server", "h:1", "--reassignment-json-file", "f.json",
         "--preserve-throttles"),
        ("--bootstrap-controller", "h:1", "--cancel", "--reassignment-json-file", "f.json"),
        ("--bootstrap-controller", "h:1", "--list"),
    ],
)  # fmt: skip
def test_valid_arguments(args: tuple[str, ...]) -> None:
    check_options(given(*args))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--bootstrap-server", "h:1", "--execute", "--verify", "--reassignment-json-file",
          "f.json"),
         "Command must include exactly one action: --generate, --execute, --verify, --cancel, "
         "--list"),
        (("--bootstrap-server", "h:1", "--reassignment-json-file", "f.json"),
         "Command must include exactly one action: --generate, --execute, --verify, --cancel, "
         "--list"),
        (("--bootstrap-server", "h:1", "--execute", "--reassignment-json-file", "f.json",
          "--topics-to-move-json-file", "f.json"),
         'Option "[topics-to-move-json-file]" can\'t be used with action "[execute]"'),
        (("--bootstrap-server", "h:1", "--execute", "--reassignment-json-file", "f.json",
          "--broker-list", "101,102"),
         'Option "[broker-list]" can\'t be used with action "[execute]"'),
        (("--bootstrap-server", "h:1", "--execute"),
         'Missing required argument "[reassignment-json-file]"'),
        (("--execute",), MISSING_BOOTSTRAP),
        (("--bootstrap-server", "h:1", "--generate"),
         'Missing required argument "[topics-to-move-json-file]"'),
        (("--bootstrap-server", "h:1", "--topics-to-move-json-file", "f.json", "--generate"),
         'Missing required argument "[broker-list]"'),
        (("--bootstrap-server", "h:1", "--broker-list", "101,102", "--generate"),
         'Missing required argument "[topics-to-move-json-file]"'),
        (("--bootstrap-server", "h:1", "--generate", "--broker-list", "101,102", "--throttle",
          "100", "--topics-to-move-json-file", "f.json"),
         'Option "[throttle]" can\'t be used with action "[generate]"'),
        (("--bootstrap-server", "h:1", "--generate", "--broker-list", "101,102",
          "--topics-to-move-json-file", "f.json", "--reassignment-json-file", "f.json"),
         'Option "[reassignment-json-file]" can\'t be used with action "[generate]"'),
        (("--bootstrap-server", "h:1", "--verify"),
         'Missing required argument "[reassignment-json-file]"'),
        (("--bootstrap-server", "h:1", "--verify", "--broker-list", "100,101",
          "--reassignment-json-file", "f.json"),
         'Option "[broker-list]" can\'t be used with action "[verify]"'),
        (("--bootstrap-server", "h:1", "--verify", "--throttle", "100",
          "--reassignment-json-file", "f.json"),
         'Option "[throttle]" can\'t be used with action "[verify]"'),
        (("--bootstrap-server", "h:1", "--verify", "--reassignment-json-file", "f.json",
          "--topics-to-move-json-file", "f.json"),
         'Option "[topics-to-move-json-file]" can\'t be used with action "[verify]"'),
        (("--cancel",), MISSING_BOOTSTRAP),
        (("--cancel", "--bootstrap-server", "h:1", "--preserve-throttles"),
         'Missing required argument "[reassignment-json-file]"'),
        (("--bootstrap-controller", "h:1", "--generate", "--broker-list", "101,102",
          "--topics-to-move-json-file", "f.json"),
         'Option "[bootstrap-controller]" can\'t be used with action "[generate]"'),
        (("--bootstrap-server", "h:1", "--bootstrap-controller", "h:1", "--generate",
          "--broker-list", "101,102", "--topics-to-move-json-file", "f.json"),
         "Please don't specify both --bootstrap-server and --bootstrap-controller"),
        (("--bootstrap-server", "h:1", "--execute", "--reassignment-json-file", "f.json",
          "--disable-rack-aware"),
         'Option "[disable-rack-aware]" can\'t be used with action "[execute]"'),
        (("--bootstrap-server", "h:1", "--list", "--additional"),
         'Option "[additional]" can\'t be used with action "[list]"'),
    ],
)  # fmt: skip
def test_refused_arguments(args: tuple[str, ...], message: str) -> None:
    with pytest.raises(CommandError) as caught:
        check_options(given(*args))
    assert str(caught.value) == message


def test_a_refusal_is_one_line_and_status_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reassign", "--bootstrap-server", "h:1", "--verify"]) == 1
    out, err = capsys.readouterr()
    assert (out, err) == ("", 'error: Missing required argument "[reassignment-json-file]"\n')


def test_no_arguments_print_kafkas_help_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reassign"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(HELP_TEXT + "\n")
    assert "--reassignment-json-file" in err


def test_a_bad_number_is_joptsimples_message(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["reassign", "--bootstrap-server", "h:1", "--execute", "--reassignment-json-file"]
    assert main([*args, "f.json", "--throttle", "1k"]) == 1
    assert capsys.readouterr().err == "error: Cannot parse argument '1k' of option throttle\n"


def test_a_missing_file_is_named_as_java_names_it(
    capsys: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    missing = f"{tmp_path}/nope.json"
    args = ["reassign", "--bootstrap-server", "127.0.0.1:1", "--verify"]
    assert main([*args, "--reassignment-json-file", missing]) == 1
    assert capsys.readouterr().out == f"Error: {missing}\n"
    assert main([*args, "--reassignment-json-file", missing, "--command-config", missing]) == 1
    assert capsys.readouterr().out == f"Error: {missing} (No such file or directory)\n"


def test_an_abbreviated_flag_counts_as_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["reassign", "--bootstrap-server", "h:1", "--verify", "--reassignment", "f.json"]
    assert main([*args, "--throttle", "5"]) == 1
    assert capsys.readouterr().err == (
        'error: Option "[throttle]" can\'t be used with action "[verify]"\n'
    )
