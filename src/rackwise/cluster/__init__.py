"""The local-cluster tool, ``rackwise cluster up`` and ``down``: a cluster of real processes on
127.0.0.1, planned on paper (:mod:`~rackwise.cluster.plan`: nodes, ports, racks, each node's
``.properties`` and ``cluster.json``), its nodes' files on disk (:mod:`~rackwise.cluster.configs`),
its processes and the signals that stop ``up`` (:mod:`~rackwise.cluster.processes`), and started,
supervised and stopped (:mod:`~rackwise.cluster.local`). It starts processes; it imports neither
the broker nor the controller.
"""
