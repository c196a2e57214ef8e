"""Processes: a controller or a broker, configured from a ``.properties`` file, serving
Kafka's protocol through :mod:`rackwise.net`.

* :mod:`~rackwise.node.config`: the ``.properties`` syntax and the keys each role accepts
  (:func:`load_node_config` -> :class:`NodeConfig`).
* :mod:`~rackwise.node.process`: what every process shares: logging to stderr, the ready line,
  signal handling.
* :mod:`~rackwise.node.controller`: the controller process (KIP-631) over a
  :class:`~rackwise.metalog.FileMetadataLog`; :mod:`~rackwise.node.controller_apis` turns wire
  requests into :mod:`rackwise.controller.messages` and replies back into wire responses.
"""
