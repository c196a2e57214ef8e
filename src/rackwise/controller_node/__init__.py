"""The controller process (KIP-631): the pure :mod:`rackwise.controller` over the metadata log,
served on the controller listener, alone or as the leader of a Raft quorum (:mod:`rackwise.raft`).

* :mod:`~rackwise.controller_node.server`: the process, its commit loop and snapshots.
* :mod:`~rackwise.controller_node.quorum_controller`: the controller in a quorum of voters;
  :mod:`~rackwise.controller_node.quorum_driver` runs the Raft state machine over Kafka's own
  APIs (:mod:`~rackwise.controller_node.quorum_wire`).
* :mod:`~rackwise.controller_node.requests`: the listener's dispatch table;
  :mod:`~rackwise.controller_node.apis` turns wire requests into
  :mod:`rackwise.controller.messages` and replies back into wire responses.
"""
