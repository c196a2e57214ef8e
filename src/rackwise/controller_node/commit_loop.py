"""The group commit of the controller process: the commands queued together run inside one
:meth:`Controller.group_commit <rackwise.controller.Controller.group_commit>` (one append, one
fsync), and are answered only then.

Goals
    Every command that may write goes through one queue; the commands waiting when a group
    starts are committed together, so that concurrent requests share an fsync (Kafka's
    controller pipelines its writes the same way).

Constraints
    * A group holds at most :data:`MAX_COMMANDS_PER_GROUP` commands; the node yields to the
      event loop between groups, so reads (placement, fetches) run between them and only
      ever see durable records.
    * A command's typed error (a :class:`~rackwise.common.errors.RackwiseError`) becomes its
      error response, inside the group. Any other exception is a bug: the group is rolled
      back, that command fails alone (its connection closes), the others run again without
      it.
    * The metadata log failing (a write or fsync error) fails every command of the group and
      is returned to the node, for which it is fatal.

Algorithm
    :func:`next_group`: wait for the first command, then take every one already queued, up
    to the bound. :func:`try_group`: run each command inside ``group_commit``; the outcome is
    the committed responses, the commands to run again after a bug, or the log's error.

Worked example
    Three CreateTopics arrive while a group is being written: the next group takes all three,
    appends their records with one fsync and answers all three; if the second raised a
    KeyError, the group is rolled back, the second's connection closes and the first and third
    are committed again as a group of two.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from rackwise.common.errors import RackwiseError
from rackwise.controller import ApiError, Controller

LOG: Final = logging.getLogger("rackwise.controller")
MAX_COMMANDS_PER_GROUP: Final = 64
"""The most commands one group commit runs before the loop serves others."""


@dataclass(slots=True)
class Command:
    """A command waiting for the next group commit: ``run`` returns the response message,
    ``fail`` builds the error response of a typed error."""

    run: Callable[[], Any]
    fail: Callable[[ApiError], Any]
    future: asyncio.Future[Any] = field(repr=False)


@dataclass(frozen=True, slots=True)
class GroupAttempt:
    """What :func:`try_group` did: ``outcomes`` (each command with its response) when the
    group committed, else None; ``retry``, the commands to run again; ``fatal``, the log's
    error when it failed."""

    outcomes: list[tuple[Command, Any]] | None
    retry: list[Command]
    fatal: Exception | None = None


class _RolledBack(Exception):
    """Aborts a group commit whose command failed with an untyped error."""


def fail(command: Command, error: BaseException) -> None:
    """Fail ``command``'s caller with ``error`` (unless it was answered)."""
    if not command.future.done():
        command.future.set_exception(error)


def answer(outcomes: list[tuple[Command, Any]]) -> None:
    """Give each command of a committed group its response."""
    for command, response in outcomes:
        if not command.future.done():
            command.future.set_result(response)


async def next_group(queue: asyncio.Queue[Command]) -> list[Command]:
    """The next group: the first command to arrive and every one queued behind it, at most
    :data:`MAX_COMMANDS_PER_GROUP`."""
    commands = [await queue.get()]
    while not queue.empty() and len(commands) < MAX_COMMANDS_PER_GROUP:
        commands.append(queue.get_nowait())
    return commands


def try_group(controller: Controller, commands: list[Command]) -> GroupAttempt:
    """Run and commit ``commands`` as one group (module docstring); the responses are not
    given yet."""
    outcomes: list[tuple[Command, Any]] = []
    culprit: tuple[int, Exception] | None = None
    try:
        with controller.group_commit():
            for i, command in enumerate(commands):
                try:
                    outcomes.append((command, command.run()))
                except RackwiseError as e:
                    outcomes.append((command, command.fail(ApiError.of(e))))
                except Exception as e:
                    culprit = (i, e)
                    raise _RolledBack from e
    except _RolledBack:
        assert culprit is not None
        index, error = culprit
        LOG.error("BUG: a command failed, its group is rolled back: %r", error)
        fail(commands[index], error)
        return GroupAttempt(None, commands[:index] + commands[index + 1 :])
    except Exception as e:
        for command in commands:
            fail(command, e)
        return GroupAttempt(None, [], e)
    return GroupAttempt(outcomes, [])
