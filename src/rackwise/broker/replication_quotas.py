"""A broker's replication throttles: the leader's quota on what it sends to followers and the
follower's on what it fetches, each over the partitions its topics list (Kafka's
``QuotaManagers.leader`` and ``.follower``, set up by its ``TopicConfigHandler`` and
``BrokerConfigHandler``).

Goals
    * The rates are ``leader.replication.throttled.rate`` and
      ``follower.replication.throttled.rate``, read from the broker's current configuration at
      every check (its own dynamic value, else the cluster default, else the static one, else
      no throttle), so an IncrementalAlterConfigs applies as soon as the broker applies the
      image that carries it, without a restart.
    * The throttled partitions are those the topic configs ``leader.replication.throttled.
      replicas`` and ``follower.replication.throttled.replicas`` name for this broker
      (``partition:broker``, or ``*``), updated with each metadata image.
    * Only replicas outside the ISR are held back: the leader answers a throttled follower
      outside the ISR with no records while its quota is exceeded
      (``ReplicaManager.shouldLeaderThrottle``), and a follower whose log is behind the
      leader's high watermark leaves its throttled partitions out of its fetches while its
      quota is exceeded (``RemoteLeaderEndPoint.shouldFollowerThrottle``). Every throttled
      partition's bytes count, in sync or not (Kafka's ``sizeOfThrottledPartitions`` and
      ``processPartitionData``), so that replication in all stays within the rate.

Constraints
    Runs on the broker's request loop. Reading the topic lists costs a pass over the topics'
    configurations only when an image changes them (a topic's configuration that did not
    change is the same mapping in the next image, so it is skipped).

Worked example
    Broker 2 leads t-0 and broker 4 is being added to it: the topic has
    ``leader.replication.throttled.replicas=0:2`` and ``follower.replication.throttled.
    replicas=0:4``; both brokers have the rates at 2097152. Broker 4 fetches t-0 from its log
    end, and broker 2 answers with records while the bytes it sent of t-0 over the last
    eleven seconds stay within 2 MiB/s; beyond that it answers with none, and broker 4 waits
    the time the quota needs before asking again. Once broker 4 joins the ISR nothing holds
    it back.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from rackwise.image import MetadataImage
from rackwise.node.data_config import DataPathConfig
from rackwise.records.constants import TOPIC_RESOURCE
from rackwise.replica.manager import ReplicaManager
from rackwise.replica.quota import ReplicationQuota, throttled_partitions

LOG: Final = logging.getLogger("rackwise.broker.quotas")

LEADER_THROTTLED_REPLICAS: Final = "leader.replication.throttled.replicas"
FOLLOWER_THROTTLED_REPLICAS: Final = "follower.replication.throttled.replicas"
MIN_WAIT_S: Final = 0.01
"""The shortest wait of a held-back fetch: a quota on its bound is already acceptable."""


def monotonic_ms() -> int:
    return int(time.monotonic() * 1000)


class ReplicationQuotas:
    """The leader's and the follower's quotas of broker ``broker_id`` (module docstring);
    ``config()`` is the broker's current data-path configuration."""

    def __init__(
        self,
        broker_id: int,
        config: Callable[[], DataPathConfig],
        clock_ms: Callable[[], int] = monotonic_ms,
    ) -> None:
        static = config()
        windows = {
            "samples": static.replication_quota_window_num,
            "window_s": static.replication_quota_window_size_seconds,
        }
        self.broker_id = broker_id
        self.leader = ReplicationQuota(
            lambda: config().leader_replication_throttled_rate, clock_ms, **windows
        )
        self.follower = ReplicationQuota(
            lambda: config().follower_replication_throttled_rate, clock_ms, **windows
        )
        self._seen: dict[str, Mapping[str, str]] = {}
        self._configs: object = None

    def apply(self, image: MetadataImage) -> None:
        """Take the throttled-replica lists of ``image``'s topics."""
        if image.configs is self._configs:
            return
        self._configs = image.configs
        seen: dict[str, Mapping[str, str]] = {}
        for resource, keys in image.configs.items():
            if resource.resource_type != TOPIC_RESOURCE:
                continue
            seen[resource.name] = keys
            if self._seen.get(resource.name) is not keys:
                self._update_topic(resource.name, keys)
        for topic in self._seen.keys() - seen.keys():
            self.leader.remove_throttle(topic)
            self.follower.remove_throttle(topic)
        self._seen = seen

    def _update_topic(self, topic: str, keys: Mapping[str, str]) -> None:
        for key, quota in (
            (LEADER_THROTTLED_REPLICAS, self.leader),
            (FOLLOWER_THROTTLED_REPLICAS, self.follower),
        ):
            value = keys.get(key, "")
            if value:
                quota.mark_throttled(topic, throttled_partitions(value, self.broker_id))
            else:
                quota.remove_throttle(topic)


class LeaderThrottle:
    """The leader's side of the throttle in the Fetch path of a follower."""

    def __init__(self, quota: ReplicationQuota, replicas: ReplicaManager) -> None:
        self.quota = quota
        self.replicas = replicas

    def holds_back(self, key: tuple[str, int], replica_id: int) -> bool:
        """Kafka's ``shouldLeaderThrottle``: the follower is outside the ISR, the partition
        is throttled and the quota is exceeded."""
        if not self.quota.is_throttled(*key):
            return False
        partition = self.replicas.partitions.get(key)
        if partition is not None and replica_id in partition.state.isr:
            return False
        return self.quota.is_exceeded()

    def wait_s(self, keys: Iterable[tuple[str, int]], replica_id: int, max_wait_s: float) -> float:
        """How long a follower's fetch with too few bytes waits: ``max_wait_s``, or less when
        a partition of it is held back, the time the quota needs to be acceptable again."""
        if not any(self.holds_back(key, replica_id) for key in keys):
            return max_wait_s
        return min(max_wait_s, max(self.quota.throttle_time_ms() / 1000, MIN_WAIT_S))

    def record(self, results: Iterable[tuple[tuple[str, int], Any, int, Any]]) -> None:
        """Count the bytes of the throttled partitions in a Fetch answer to a follower."""
        size = sum(
            len(result.records)
            for key, _, _, result in results
            if result is not None and self.quota.is_throttled(*key)
        )
        self.quota.record(size)


def follower_wait_s(quota: ReplicationQuota, backoff_s: float) -> float:
    """How long a follower whose every partition is held back waits before it asks again:
    the time its quota needs, at most ``replica.fetch.backoff.ms`` (Kafka waits that long)."""
    return min(backoff_s, max(quota.throttle_time_ms() / 1000, MIN_WAIT_S))
