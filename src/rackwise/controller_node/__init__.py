"""The controller process (KIP-631): the pure :mod:`rackwise.controller` over the metadata log,
served on the controller listener as the leader of a Raft quorum (:mod:`rackwise.raft`) of one
voter, three or five.

* :mod:`~rackwise.controller_node.server`: the process; :mod:`~rackwise.controller_node.node`
  the controller node it serves, with its group commit
  (:mod:`~rackwise.controller_node.commit_loop`), its snapshot worker
  (:mod:`~rackwise.controller_node.snapshots`), the active controller's timers
  (:mod:`~rackwise.controller_node.timers`) and the requests it answers itself
  (:mod:`~rackwise.controller_node.handlers`).
* :mod:`~rackwise.controller_node.quorum_driver` runs the node's Raft state machine over
  Kafka's own APIs (:mod:`~rackwise.node.quorum_wire`).
* :mod:`~rackwise.controller_node.requests`: the listener's dispatch table;
  :mod:`~rackwise.controller_node.apis` turns wire requests into
  :mod:`rackwise.controller.messages` and replies back into wire responses.
"""
