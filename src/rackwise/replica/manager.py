"""This broker's replicas as the request handlers and the broker's loops use them (Kafka's
``ReplicaManager``, without its network side): one object over the partitions hosted,
following the metadata image (:mod:`rackwise.replica.hosting`), and the requests they serve
(:mod:`rackwise.replica.serving`).

:class:`ReplicaManager` holds one of each part and offers their methods as its own: bound at
construction, so that a call costs what a call to the part costs (a Fetch reads each of its
partitions through it). Its state (:attr:`ReplicaManager.partitions`, ``followed``,
``offline``, ``dirs_to_assign``, ``image``) is the hosted replicas'.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from rackwise.image import MetadataImage
from rackwise.replica.hosting import HostedReplicas, ReplicaConfig, TopicPartition, TopicSettings
from rackwise.replica.partition import Partition
from rackwise.replica.serving import ReplicaRequests
from rackwise.storage.manager import LogManager


class ReplicaManager:
    """This broker's partitions and the requests they serve (module docstring)."""

    def __init__(
        self,
        config: ReplicaConfig,
        logs: LogManager,
        settings: Callable[[MetadataImage, str], TopicSettings],
        clock: Callable[[], int],
    ) -> None:
        hosted = HostedReplicas(config, logs, settings, clock)
        requests = ReplicaRequests(hosted)
        self.hosted = hosted
        self.requests = requests
        self.config = config
        self.broker_id = config.broker_id
        self.logs = logs
        # Following the image (HostedReplicas)
        self.apply_image = hosted.apply_image
        self.take_offline = hosted.take_offline
        self.get = hosted.get
        self.leader_of = hosted.leader_of
        self.isr_wanted = hosted.isr_wanted
        self.maybe_increment_high_watermarks = hosted.maybe_increment_high_watermarks
        self.topic_name = hosted.topic_name
        self.topic_id = hosted.topic_id
        # Serving requests (ReplicaRequests)
        self.append = requests.append
        self.acks_all_outcome = requests.acks_all_outcome
        self.append_as_follower = requests.append_as_follower
        self.truncate = requests.truncate
        self.reset_to = requests.reset_to
        self.read = requests.read
        self.bytes_available = requests.bytes_available
        self.list_offset = requests.list_offset
        self.end_offset_for_epoch = requests.end_offset_for_epoch
        self.delete_records = requests.delete_records
        self.low_watermark = requests.low_watermark

    @property
    def partitions(self) -> dict[TopicPartition, Partition]:
        """The replicas hosted here, by (topic, partition)."""
        return self.hosted.partitions

    @property
    def followed(self) -> dict[TopicPartition, int]:
        """The leader each follower partition fetches from."""
        return self.hosted.followed

    @property
    def offline(self) -> set[TopicPartition]:
        """Partitions assigned here whose log directory is offline."""
        return self.hosted.offline

    @property
    def dirs_to_assign(self) -> dict[TopicPartition, tuple[uuid.UUID, uuid.UUID]]:
        """(topic id, directory id) of replicas whose directory the image does not know yet."""
        return self.hosted.dirs_to_assign

    @property
    def image(self) -> MetadataImage:
        """The image last applied."""
        return self.hosted.image

    @property
    def topic_settings(self) -> dict[str, TopicSettings]:
        """The settings of each topic hosted here, as of the image last applied."""
        return self.hosted.topic_settings
