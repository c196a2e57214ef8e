"""Consumer groups' state, pure: committed offsets and the records of ``__consumer_offsets``
that hold them (:mod:`rackwise.groups.offsets`); classic groups' members, states and
generations (:mod:`rackwise.groups.classic`), the record that stores them
(:mod:`rackwise.groups.group_metadata`), and the coordinator's rules for JoinGroup, SyncGroup,
Heartbeat, LeaveGroup and their timers (:mod:`rackwise.groups.classic_coordinator`, over
:mod:`rackwise.groups.classic_joins` and :mod:`rackwise.groups.classic_rebalance`); a group
changing protocol, empty (:mod:`rackwise.groups.migration`) or online
(:mod:`rackwise.groups.online_migration`, with the classic members a consumer group serves
meanwhile, :mod:`rackwise.groups.consumer_classic`, and their embedded protocol,
:mod:`rackwise.groups.consumer_protocol`); and KIP-848 consumer groups: their
members and reconciliation (:mod:`rackwise.groups.consumer_member`), their state as their
records build it (:mod:`rackwise.groups.consumer_group`,
:mod:`rackwise.groups.consumer_records`), and the coordinator's rules for heartbeats, timers and
target assignments (:mod:`rackwise.groups.consumer_coordinator`)."""
