"""What rackwise's command-line tools do as clients of a cluster, below the argument parsing
and printing of :mod:`rackwise.cli`.

* Kafka's tools over rackwise's own connections: the consumer group calls of Kafka's admin
  client and the rows and plans ``kafka-consumer-groups.sh`` makes of them (``groups``,
  ``group_values``, ``group_reports``, ``consumer_protocol``), the requests and report of
  ``kafka-log-dirs.sh`` (``log_dirs``), of ``kafka-metadata-quorum.sh`` (``quorum``) and of
  ``kafka-configs.sh`` (``config_args``, ``configs``), and the per-broker connections they
  go through (``connections``); those of ``kafka-get-offsets.sh``, ``kafka-delete-records.sh``
  and ``kafka-leader-election.sh`` (``partition_tools``), and ``--command-config``, read alike
  by every tool (``command_config``).
* Third-party Kafka clients: kafka-python's admin client for ``rackwise topics`` and
  ``rackwise placement`` (``admin``), rackwise's assignors as kafka-python assignment
  strategies (``kafka_python``), and Kafka's producer and consumer perf tools on
  confluent-kafka (``producer_perf``, ``consumer_perf``, ``perf_config``, ``perf_librdkafka``,
  ``perf_output``). Before such a client is built, ``bootstrap`` refuses at once bootstrap
  servers that all refuse connections, which the client would retry until its timeout.
"""
