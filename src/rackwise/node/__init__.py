"""What every server process shares, broker or controller.

* :mod:`~rackwise.node.config`: the keys each role accepts and their checks
  (:func:`load_node_config` -> :class:`NodeConfig`); :mod:`~rackwise.node.properties_file`,
  the ``.properties`` file loaded with its ``--override`` settings;
  :mod:`~rackwise.node.addresses`, the listeners', voters' and bootstrap servers' addresses;
  :mod:`~rackwise.node.data_config` and :mod:`~rackwise.node.dynamic_config`, the data path's
  keys and the ones that change at run time.
* :mod:`~rackwise.node.meta_properties`: ``meta.properties`` in each log directory.
* :mod:`~rackwise.node.process`: logging to stderr, the ready line, signal handling;
  :mod:`~rackwise.node.loop_thread`, an event loop on a thread of its own.
* :mod:`~rackwise.node.acl_apis`: the ACL APIs as both listeners answer them without an
  authorizer.
* :mod:`~rackwise.node.quorum_wire`: the Raft messages on Kafka's Fetch, FetchSnapshot, Vote,
  BeginQuorumEpoch and EndQuorumEpoch, which the voters exchange and a broker fetches with.

The processes themselves have packages of their own: :mod:`rackwise.broker`,
:mod:`rackwise.controller_node`, the group coordinator's :mod:`rackwise.coordinator`, and the
local-cluster tool :mod:`rackwise.cluster`.
"""
