"""The quorum's election state on disk: Kafka's ``quorum-state`` file in the metadata log
directory (``FileQuorumStateStore``).

Goals
    A voter's epoch, its vote in that epoch and the leader it knows survive any crash, and are
    on stable storage before the voter acts on them (a vote is answered only afterwards), so a
    voter never votes twice in one epoch.

Constraints
    Kafka's format, so that a Kafka operator reads it as they would Kafka's: one line of JSON,
    ``QuorumStateData`` version 0 (static voters, ``controller.quorum.voters``) with its
    ``data_version`` field; ``-1`` for no leader and no vote. Replacement is atomic.

Algorithm
    Write: the line to ``quorum-state.tmp``, fsync, rename over ``quorum-state``, fsync the
    directory. Crash points: :data:`CRASH_POINTS` (before the rename the old state is read; after
    it, the new one). Read: no file is epoch 0 with no vote and no leader; a file that does not
    parse, or of a ``data_version`` other than 0 or 1, raises :class:`QuorumStateException`.

Worked example
    Voter 2 of 1, 2, 3 votes for voter 1 in epoch 4: the file holds
    ``{"clusterId":"","leaderId":-1,"leaderEpoch":4,"votedId":1,"appliedOffset":0,
    "currentVoters":[{"voterId":1},{"voterId":2},{"voterId":3}],"data_version":0}``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

from rackwise.common.errors import RackwiseError
from rackwise.metalog.snapshots import fsync_directory
from rackwise.raft.messages import NO_LEADER, NO_VOTE, ElectionState

QUORUM_STATE_FILE: Final = "quorum-state"
TMP_SUFFIX: Final = ".tmp"
DATA_VERSION: Final = 0
SUPPORTED_DATA_VERSIONS: Final = (0, 1)
CRASH_POINTS: Final = ("after-tmp-write", "after-rename")
"""Where a test may stop a write (see :attr:`FileQuorumStateStore.crash_hook`)."""


class QuorumStateException(RackwiseError):
    """The quorum-state file cannot be read: the voter must not guess its vote."""


class FileQuorumStateStore:
    """``quorum-state`` in ``directory``."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.path = Path(directory) / QUORUM_STATE_FILE
        self.crash_hook: Callable[[str], None] = lambda point: None

    def read(self) -> ElectionState:
        """The persisted state; epoch 0 with no vote and no leader if none was written."""
        if not self.path.exists():
            return ElectionState(0)
        line = self.path.read_text(encoding="utf-8").split("\n", 1)[0]
        try:
            data = json.loads(line)
            version = int(data["data_version"])
            if version not in SUPPORTED_DATA_VERSIONS:
                raise QuorumStateException(
                    f"data_version ({version}) is not within the min (0) and max (1) "
                    f"supported version in {self.path}"
                )
            return ElectionState(
                int(data["leaderEpoch"]),
                int(data.get("votedId", NO_VOTE)),
                int(data.get("leaderId", NO_LEADER)),
            )
        except (ValueError, KeyError, TypeError) as e:
            raise QuorumStateException(
                f"Error while reading the Quorum status from the file {self.path}: {e}"
            ) from e

    def write(self, state: ElectionState, voters: Sequence[int]) -> None:
        """Replace the persisted state with ``state``, durably and atomically."""
        line = json.dumps(_as_json(state, voters), separators=(",", ":"))
        tmp = self.path.with_name(self.path.name + TMP_SUFFIX)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, line.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        self.crash_hook("after-tmp-write")
        os.replace(tmp, self.path)
        self.crash_hook("after-rename")
        fsync_directory(self.path.parent)


def _as_json(state: ElectionState, voters: Sequence[int]) -> dict[str, Any]:
    return {
        "clusterId": "",
        "leaderId": state.leader_id,
        "leaderEpoch": state.epoch,
        "votedId": state.voted_id,
        "appliedOffset": 0,
        "currentVoters": [{"voterId": v} for v in sorted(voters)],
        "data_version": DATA_VERSION,
    }
