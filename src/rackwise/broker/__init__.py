"""The broker process (Kafka's ``BrokerServer`` and ``KafkaApis``): one dispatch table of API
key to handler, its data, admin and ACL APIs, forwarding to the controller, replica fetching,
moves between log directories and following the metadata log.

* :mod:`~rackwise.broker.server`: the process: its listeners, registration, heartbeats and
  shutdown; :mod:`~rackwise.broker.requests`, its dispatch table.
* :mod:`~rackwise.broker.metadata_apis`, :mod:`~rackwise.broker.describe_configs`,
  :mod:`~rackwise.broker.config_resources`, :mod:`~rackwise.broker.topic_partitions`,
  :mod:`~rackwise.broker.describe_producers`: what a broker answers from its image.
* :mod:`~rackwise.broker.data_apis`: Produce, Fetch, ListOffsets and the log-directory APIs;
  :mod:`~rackwise.broker.data_plane` wires the logs, replicas and fetchers
  (:mod:`~rackwise.broker.replica_fetcher`, :mod:`~rackwise.broker.isr`,
  :mod:`~rackwise.broker.log_dirs`).
* :mod:`~rackwise.broker.forwarding`, :mod:`~rackwise.broker.alter_configs`,
  :mod:`~rackwise.broker.auto_create`, :mod:`~rackwise.broker.producer_ids`: requests the
  controller answers, over :mod:`~rackwise.broker.controller_channel`.
* :mod:`~rackwise.broker.metadata_follower`: the metadata log, followed from the quorum's
  leader as an observer (:mod:`~rackwise.broker.metadata_fetcher`, its Fetch loop).
"""
