"""The group coordinator's driver on a broker (Kafka's ``group-coordinator`` module around the
pure state machines of :mod:`rackwise.groups`): the partitions of ``__consumer_offsets`` it
loads and writes, its timers, and the group APIs it serves.

* :mod:`~rackwise.coordinator.group_coordinator`: loading, appending, FindCoordinator; it writes
  through a :class:`~rackwise.coordinator.group_coordinator.PartitionWriter` the broker gives it.
* :mod:`~rackwise.coordinator.membership`: joins, syncs, heartbeats and leaves of classic groups
  on the event loop, with its timers and clock (:mod:`~rackwise.coordinator.timers`); their rules,
  given the time and returning :mod:`~rackwise.coordinator.effects`, are
  :mod:`~rackwise.coordinator.joins`' and :mod:`~rackwise.coordinator.rebalance`'s, over the
  values of :mod:`~rackwise.coordinator.answers`.
* :mod:`~rackwise.coordinator.group_apis`: the wire requests in, the answers out.
"""
