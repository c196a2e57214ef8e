"""A partition's replicas on a broker: leader and follower state, the high watermark and the
ISR (:mod:`~rackwise.replica.partition`), this broker's partitions following the metadata image
(:mod:`~rackwise.replica.hosting`) and the requests they serve
(:mod:`~rackwise.replica.serving`), both behind :mod:`~rackwise.replica.manager`, requests
waiting on a condition
(:mod:`~rackwise.replica.purgatory`) and the replica selectors for consumers fetching from
followers (:mod:`~rackwise.replica.selector`). No sockets: the broker process wires them to
the network (:mod:`rackwise.broker.data_apis`, :mod:`rackwise.broker.replica_fetcher`)."""
