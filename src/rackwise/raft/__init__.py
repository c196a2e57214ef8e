"""The controller quorum's Raft, as a pure state machine (KIP-595 as KRaft runs it, with
KIP-996's pre-vote): messages and time in, messages, log writes and commits out.

:class:`RaftClient` is one voter; :mod:`rackwise.raft.messages` holds what it reads and writes;
:class:`QuorumConfig` its timings under Kafka's names.
"""

from rackwise.raft.client import NotLeaderException, RaftClient
from rackwise.raft.config import QuorumConfig, VoterEndpoint
from rackwise.raft.log import RaftLog, Snapshot
from rackwise.raft.messages import LeaderChangeMark
from rackwise.raft.roles import Role

__all__ = [
    "LeaderChangeMark",
    "NotLeaderException",
    "QuorumConfig",
    "RaftClient",
    "RaftLog",
    "Role",
    "Snapshot",
    "VoterEndpoint",
]
