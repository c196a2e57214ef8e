"""``rackwise consumer-groups``' flags and Kafka's checks of them
(``ConsumerGroupCommandOptions.checkArgs`` and the action count of ``ConsumerGroupCommand``),
with Kafka's messages.

joptsimple prints an option as ``[name]``; where Kafka names a ``HashSet`` of options (whose
order Java leaves to identity hashes) they come in the order Kafka declares them. A flag that
needs another (``--members`` without ``--describe``) is refused as joptsimple's
``availableIf`` refuses it. Pure: a namespace in, the action or a
:class:`~rackwise.cli.errors.CommandError` out.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Final

from rackwise.cli.errors import CommandError

DRY_RUN_WARNING: Final = (
    "WARN: No action will be performed as the --execute option is missing.In a future major "
    "release, the default behavior of this command will be to prompt the user before executing "
    "the reset rather than doing a dry run. You should add the --dry-run option explicitly if "
    "you are scripting this command and want to keep the current default behavior without "
    "prompting."
)


ACTIONS: Final = ("list", "describe", "delete", "reset_offsets", "delete_offsets")
"""The actions, exactly one of which a command line names."""
SCENARIOS: Final = (
    "to_offset", "shift_by", "to_datetime", "by_duration", "to_earliest", "to_latest",
    "to_current", "from_file",
)  # fmt: skip
"""The reset scenarios, in Kafka's order (``allResetOffsetScenarioOpts``)."""
SCENARIO_CHECKS: Final = (
    "to_offset", "to_datetime", "by_duration", "to_earliest", "to_latest", "to_current",
    "shift_by", "from_file",
)  # fmt: skip
"""The order in which Kafka's ``checkArgs`` checks each scenario against the others."""
NO_VALUE: Final = object()
"""``--state`` or ``--type`` given without a value."""
DEFAULT_TIMEOUT_MS: Final = 5000
VALID_STATES: Final = (
    "PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty", "Assigning",
    "Reconciling",
)  # fmt: skip
"""Kafka's ``ConsumerGroupState`` values but UNKNOWN, in its order."""
VALID_TYPES: Final = ("Consumer", "Classic", "Share")
"""Kafka's ``GroupType`` values but UNKNOWN, in its order."""
_SUBVIEWS: Final = ("members", "verbose", "offsets")


def _long(option: str) -> Callable[[str], int]:
    """A Java ``Long`` argument, refused in joptsimple's words."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"Cannot parse argument '{text}' of option {option}"
            ) from None
        if not -(2**63) <= value < 2**63:
            raise argparse.ArgumentTypeError(f"Cannot parse argument '{text}' of option {option}")
        return value

    return parse


def add_options(parser: argparse.ArgumentParser) -> None:
    """Kafka's flags (``ConsumerGroupCommandOptions``), and ``--json``."""
    add = parser.add_argument
    add("--bootstrap-server", metavar="HOST:PORT", help="REQUIRED: the server(s) to connect to")
    add("--group", action="append", metavar="GROUP", help="a consumer group (repeatable)")
    add("--topic", action="append", metavar="TOPIC[:P,...]", help="a topic (repeatable)")
    add("--all-topics", action="store_true", help="every topic of the group (--reset-offsets)")
    add("--list", action="store_true", help="list all consumer groups")
    add("--describe", action="store_true", help="describe groups: offsets and lag")
    add("--all-groups", action="store_true", help="apply to all consumer groups")
    add("--delete", action="store_true", help="delete groups and their offsets")
    add("--timeout", type=_long("timeout"), default=DEFAULT_TIMEOUT_MS, metavar="MS",
        help=f"bound on each call to the cluster (default {DEFAULT_TIMEOUT_MS})")  # fmt: skip
    add("--command-config", metavar="FILE", help="admin client properties (see --help)")
    add("--reset-offsets", action="store_true", help="reset a group's offsets (inactive groups)")
    add("--delete-offsets", action="store_true", help="delete a group's offsets of topics")
    add("--dry-run", action="store_true", help="only show the new offsets (the default)")
    add("--execute", action="store_true", help="commit the new offsets")
    add("--export", action="store_true", help="print the new offsets as CSV")
    add("--to-offset", type=_long("to-offset"), metavar="OFFSET", help="reset to this offset")
    add("--from-file", metavar="CSV", help="reset to the offsets of a CSV file (--export's)")
    add("--to-datetime", metavar="DATETIME", help="reset to 'YYYY-MM-DDTHH:mm:SS.sss'")
    add("--by-duration", metavar="DURATION", help="reset to now less 'PnDTnHnMnS'")
    add("--to-earliest", action="store_true", help="reset to the earliest offset")
    add("--to-latest", action="store_true", help="reset to the latest offset")
    add("--to-current", action="store_true", help="reset to the current offset")
    add("--shift-by", type=_long("shift-by"), metavar="N", help="shift the current offset by N")
    add("--members", action="store_true", help="with --describe: the members")
    add("--verbose", action="store_true", help="with --describe --members: the assignment")
    add("--offsets", action="store_true", help="with --describe: offsets and lag (the default)")
    add("--state", nargs="?", const=NO_VALUE, metavar="STATES",
        help="with --describe: the state; with --list: states, e.g. stable,empty")  # fmt: skip
    add("--type", nargs="?", const=NO_VALUE, metavar="TYPES",
        help="with --list: the types, or types to list, e.g. classic,consumer")  # fmt: skip
    add("--json", action="store_true", help="print the table's rows as one JSON document")


# ---- checks (pure) -----------------------------------------------------------------------------


def _given(args: argparse.Namespace, option: str) -> bool:
    return getattr(args, option) not in (None, False)


def _spec(option: str) -> str:
    """An option as joptsimple prints it: ``[all-groups]``."""
    return f"[{option.replace('_', '-')}]"


def _specs(*options: str) -> str:
    return ", ".join(_spec(o) for o in options)


def check_args(args: argparse.Namespace, *, warn: Callable[[str], None]) -> str:
    """The one action asked for, after Kafka's checks, in Kafka's order (the parser's
    ``availableIf``, ``checkArgs``, then the count of actions); ``warn`` gets Kafka's warning
    for a reset without ``--execute`` or ``--dry-run``."""
    unavailable = [o for o in _SUBVIEWS if _given(args, o) and not args.describe]
    if args.state is not None and not (args.describe or args.list):
        unavailable.append("state")
    if args.type is not None and not args.list:
        unavailable.append("type")
    if unavailable:
        raise CommandError(
            f"Option(s) [{', '.join(unavailable)}] are unavailable given other options on the "
            "command line"
        )
    if not args.bootstrap_server:
        raise CommandError('Missing required argument "[bootstrap-server]"')
    scope = _given(args, "group") or args.all_groups
    if args.describe:
        if not scope:
            raise CommandError(
                f"Option [describe] takes one of these options: {_specs('group', 'all_groups')}"
            )
        if sum(_given(args, o) for o in ("members", "offsets", "state")) > 1:
            raise CommandError(
                "Option [describe] takes at most one of these options: "
                + _specs("members", "offsets", "state")
            )
        if args.state is not None and args.state is not NO_VALUE:
            raise CommandError("Option [describe] does not take a value for [state]")
    if args.delete:
        if not scope:
            raise CommandError(
                f"Option [delete] takes one of these options: {_specs('group', 'all_groups')}"
            )
        if _given(args, "topic"):
            raise CommandError(
                "The consumer does not support topic-specific offset deletion from a consumer "
                "group."
            )
    if args.delete_offsets and not (_given(args, "group") and _given(args, "topic")):
        raise CommandError(
            f"Option [delete-offsets] takes the following options: {_specs('group', 'topic')}"
        )
    if args.reset_offsets:
        _check_reset(args, scope, warn)
    _check_invalid(args, "group", ("all_groups",))
    _check_invalid(args, "group", ("list",))
    _check_invalid(args, "topic", ("list", "describe"))
    chosen = [a for a in ACTIONS if getattr(args, a)]
    if len(chosen) != 1:
        raise CommandError(
            "Command must include exactly one action: --list, --describe, --delete, "
            "--reset-offsets, --delete-offsets"
        )
    return chosen[0]


def _check_reset(args: argparse.Namespace, scope: bool, warn: Callable[[str], None]) -> None:
    if args.dry_run and args.execute:
        raise CommandError("Option [reset-offsets] only accepts one of [execute] and [dry-run]")
    if not (args.dry_run or args.execute):
        warn(DRY_RUN_WARNING)
    if not scope:
        raise CommandError(
            f"Option [reset-offsets] takes one of these options: {_specs('group', 'all_groups')}"
        )
    for option in SCENARIO_CHECKS:
        _check_invalid(args, option, tuple(o for o in SCENARIOS if o != option))


def _check_invalid(args: argparse.Namespace, used: str, invalid: Sequence[str]) -> None:
    """Kafka's ``CommandLineUtils.checkInvalidArgs``."""
    if _given(args, used):
        for other in invalid:
            if _given(args, other):
                raise CommandError(
                    f'Option "{_spec(used)}" can\'t be used with option "{_spec(other)}"'
                )


def parse_states(text: str) -> list[str]:
    """``--list --state stable,empty`` as Kafka's state names (``Stable``, ``Empty``)."""
    by_name = {s.upper(): s for s in VALID_STATES}
    states = [by_name.get(s.strip().upper()) for s in text.split(",")]
    if None in states:
        raise CommandError(
            f"Invalid state list '{text}'. Valid states are: {', '.join(VALID_STATES)}"
        )
    return list(dict.fromkeys(s for s in states if s is not None))


def parse_types(text: str) -> list[str]:
    """``--list --type classic`` as Kafka's type names (``Classic``)."""
    by_name = {t.lower(): t for t in VALID_TYPES}
    types = [by_name.get(t.strip()) for t in text.lower().split(",")]
    if None in types:
        raise CommandError(
            f"Invalid types list '{text}'. Valid types are: {', '.join(VALID_TYPES)}"
        )
    return list(dict.fromkeys(t for t in types if t is not None))


def scenario(args: argparse.Namespace) -> str:
    """The reset scenario asked for, or Kafka's refusal when there is none."""
    for option in SCENARIOS:
        if _given(args, option):
            return option
    raise CommandError(
        f"Option '[reset-offsets]' requires one of the following scenarios: [{_specs(*SCENARIOS)}]"
    )
