"""The group coordinator's driver on a broker (Kafka's ``group-coordinator`` module around the
pure state machines of :mod:`rackwise.groups`): the partitions of ``__consumer_offsets`` it
loads and writes, its timers, and the group APIs it serves.

* :mod:`~rackwise.coordinator.group_coordinator`: loading, appending, FindCoordinator; it writes
  through a :class:`~rackwise.coordinator.group_coordinator.PartitionWriter` the broker gives it.
* :mod:`~rackwise.coordinator.membership`: the driver of the classic groups' pure coordinator
  (:mod:`rackwise.groups.classic_coordinator`): its waiters, timers and clock
  (:mod:`~rackwise.coordinator.timers`) on the event loop, its records appended.
* :mod:`~rackwise.coordinator.group_apis`, :mod:`~rackwise.coordinator.membership_apis`: the
  wire requests in, the answers out; :mod:`~rackwise.coordinator.consumer_classic` and
  :mod:`~rackwise.coordinator.migration`: classic members in a consumer group, and a group
  changing protocol.
"""
