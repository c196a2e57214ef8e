"""``rackwise``: the entry point. Subcommands are imported only when used, so that a quick
command never pays for a heavy one's imports."""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Final, NoReturn, TypeAlias

from rackwise import __version__
from rackwise.cli.errors import CommandError

SUBCOMMANDS = {
    "place": ("rackwise.cli.place", "place replicas of a topic and print reassignment JSON"),
    "assign": ("rackwise.cli.assign", "assign a consumer group's partitions, as a what-if"),
    "pipeline": (
        "rackwise.cli.pipeline",
        "audit and plan a cluster or a fleet (in process, on Spark)",
    ),
    "demo": ("rackwise.cli.demo", "rack-aware vs multi-level placement on a stretch cluster"),
    "metadata": ("rackwise.cli.metadata", "dump the metadata log's records and image"),
    "controller": ("rackwise.cli.controller", "run a controller process"),
    "broker": ("rackwise.cli.broker", "run a broker process"),
    "cluster": ("rackwise.cli.cluster", "start or stop a local cluster of processes"),
    "topics": ("rackwise.cli.topics", "create, list, describe, alter and delete topics"),
    "acls": ("rackwise.cli.acls", "add, remove and list ACLs (kafka-acls)"),
    "configs": (
        "rackwise.cli.configs",
        "describe and alter topic and broker configs (kafka-configs)",
    ),
    "placement": ("rackwise.cli.placement", "ask a cluster to place replicas (KIP-879)"),
    "reassign": (
        "rackwise.cli.reassign",
        "generate, execute, verify, cancel and list reassignments (kafka-reassign-partitions)",
    ),
    "rebalance": (
        "rackwise.cli.rebalance",
        "plan a running cluster and carry the plan out in safe, throttled batches",
    ),
    "log-dirs": ("rackwise.cli.log_dirs", "describe brokers' log directories (kafka-log-dirs)"),
    "consumer-groups": (
        "rackwise.cli.consumer_groups",
        "list, describe, delete and reset consumer groups (kafka-consumer-groups)",
    ),
    "metadata-quorum": (
        "rackwise.cli.metadata_quorum",
        "describe the controller quorum (kafka-metadata-quorum)",
    ),
    "get-offsets": ("rackwise.cli.get_offsets", "print partitions' offsets (kafka-get-offsets)"),
    "delete-records": (
        "rackwise.cli.delete_records",
        "delete partitions' records below an offset (kafka-delete-records)",
    ),
    "leader-election": (
        "rackwise.cli.leader_election",
        "elect preferred or unclean leaders (kafka-leader-election)",
    ),
    "console-producer": (
        "rackwise.cli.console_producer",
        "send lines of standard input as records (kafka-console-producer)",
    ),
    "console-consumer": (
        "rackwise.cli.console_consumer",
        "print a topic's records (kafka-console-consumer)",
    ),
    "dump-log": (
        "rackwise.cli.dump_log",
        "print segment files and indexes (kafka-dump-log)",
    ),
    "producer-perf-test": (
        "rackwise.cli.producer_perf",
        "measure producer throughput and latency (kafka-producer-perf-test.sh)",
    ),
    "consumer-perf-test": (
        "rackwise.cli.consumer_perf",
        "measure consumer throughput (kafka-consumer-perf-test.sh)",
    ),
}


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line and exit status 1, and point to the help of
    the (sub)command they concern. An unknown flag is named even when a required one is
    missing too (a mistyped required flag is both), with the nearest known flag."""

    _arguments: Sequence[str] = ()

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self._arguments = list(sys.argv[1:] if args is None else args)
        parsed, extras = super().parse_known_args(args, namespace)
        if not hasattr(parsed, PARSER_ATTRIBUTE):  # the innermost (sub)command parser wins
            setattr(parsed, PARSER_ATTRIBUTE, self)
        return parsed, extras

    def error(self, message: str) -> NoReturn:
        if message.startswith("the following arguments are required"):
            unknown = self.unknown_flags(self._arguments)
            if unknown:
                message = f"{self.describe_unknown(unknown)}; {message}"
        print(f"error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(1)

    def unknown_flags(self, arguments: Sequence[str]) -> list[str]:
        """The arguments that look like flags this parser does not know (abbreviations of a
        known flag count as known, as argparse reads them)."""
        known = list(self._option_string_actions)
        unknown = []
        for argument in arguments:
            if argument == "--":
                break
            if not argument.startswith("-") or argument == "-" or _is_number(argument):
                continue
            flag = argument.split("=", 1)[0]
            if flag not in known and not any(k.startswith(flag) for k in known if k[:2] == "--"):
                unknown.append(flag)
        return unknown

    def describe_unknown(self, flags: Sequence[str]) -> str:
        """``unrecognized arguments: --partitons (did you mean --partitions?)``."""
        known = [k for k in self._option_string_actions if k.startswith("--")]
        named = []
        for flag in flags:
            close = difflib.get_close_matches(flag, known, n=1) if flag.startswith("-") else []
            named.append(f"{flag} (did you mean {close[0]}?)" if close else flag)
        return f"unrecognized arguments: {' '.join(named)}"


PARSER_ATTRIBUTE: Final = "_rackwise_parser"
"""The namespace attribute naming the parser of the command that was run."""


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def build_parser() -> tuple[Parser, dict[str, Parser]]:
    parser = Parser(prog="rackwise", description="Topology-aware replica management for Kafka.")
    parser.add_argument("--version", action="version", version=f"rackwise {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    subparsers = {}
    for name, (_, summary) in SUBCOMMANDS.items():
        subparsers[name] = commands.add_parser(name, help=summary, description=summary)
    return parser, subparsers


def main(argv: Sequence[str] | None = None) -> int:
    """The command line's exit status (``argv``: the arguments, ``sys.argv`` by default).

    Run as a program, Ctrl-C while the command's modules load ends the process at once with
    one line and status 130 (:func:`_exit_interrupted`): a KeyboardInterrupt raised inside an
    import may be lost in one of importlib's callbacks, and the command would then go on."""
    program = argv is None and threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, _exit_interrupted) if program else None
    try:
        parser, subparsers = build_parser()
        args_list = list(sys.argv[1:] if argv is None else argv)
        name = next((a for a in args_list if not a.startswith("-")), None)
        if name in SUBCOMMANDS:
            module = importlib.import_module(SUBCOMMANDS[name][0])
            module.configure(subparsers[name])
    except KeyboardInterrupt:  # Ctrl-C before the command starts (while its modules load)
        return _interrupted(exit_now=program)
    return _run(parser, args_list, exit_now=program, restore=previous)


SignalHandler: TypeAlias = Callable[[int, FrameType | None], object] | int | signal.Handlers | None
"""What ``signal.signal`` takes and gives back: a function, SIG_DFL or SIG_IGN, or None for a
handler not set from Python."""


def _exit_interrupted(_signum: int, _frame: object) -> None:
    os.write(2, b"error: interrupted\n")
    os._exit(130)


def _interrupted(*, exit_now: bool) -> int:
    """Ctrl-C: one line and status 130. Run as a program (``exit_now``), the process ends here:
    a KeyboardInterrupt that passed through an import can leave the interpreter reporting the
    run as killed by SIGINT (status -2) whatever ``main`` returns; the command's own clean-up
    has run by now, as the exception came up through it."""
    print("error: interrupted", file=sys.stderr, flush=True)
    if exit_now:
        sys.stdout.flush()
        os._exit(130)
    return 130


def _run(
    parser: Parser, args_list: list[str], *, exit_now: bool = False, restore: SignalHandler = None
) -> int:
    """Parse and run; ``restore``, if given, is the SIGINT handler the command runs under (it
    may install its own: asyncio does only over Python's default one)."""
    try:
        args, extras = parser.parse_known_args(args_list)
    except KeyboardInterrupt:
        return _interrupted(exit_now=exit_now)
    if extras:
        owner: Parser = getattr(args, PARSER_ATTRIBUTE, parser)
        owner.error(owner.describe_unknown(extras))
    if args.command is None:
        parser.print_help()
        return 1
    from rackwise.common import RackwiseError  # noqa: PLC0415

    if restore is not None:
        signal.signal(signal.SIGINT, restore)
    try:
        code: int = args.run(args)
    except BrokenPipeError:
        # The reader went away (`rackwise ... | head`): stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except (RackwiseError, CommandError, OSError, ValueError) as e:
        print(f"error: {_one_line(e)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return _interrupted(exit_now=exit_now)
    return code


def _one_line(error: BaseException) -> str:
    if isinstance(error, OSError) and error.filename is not None:
        return f"{error.strerror}: {error.filename}"
    return " ".join(str(error).split())


if __name__ == "__main__":
    raise SystemExit(main())
