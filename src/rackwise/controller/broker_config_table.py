"""The broker configuration keys: every key Kafka 4's ``KafkaConfig`` defines, the three
dynamic-only broker quota keys of ``DynamicConfig.Broker``, and rackwise's own broker keys
(data only; :mod:`rackwise.controller.broker_configschema` reads it).

The table was generated from Kafka's ``ConfigDef`` definitions (``ServerConfigs``,
``ReplicationConfigs``, ``ServerLogConfigs`` and ``LogConfig.SERVER_CONFIG_DEF``,
``SocketServerConfigs``, ``KRaftConfigs``, ``QuorumConfig``, ``QuotaConfig``,
``GroupCoordinatorConfig``, ``ShareGroupConfig``, ``ShareCoordinatorConfig``,
``TransactionLogConfig``, ``TransactionStateManagerConfig``, ``CleanerConfig``,
``MetricConfigs``, ``BrokerSecurityConfigs``, ``DelegationTokenManagerConfigs``,
``RemoteLogManagerConfig``), less the ZooKeeper-era keys Kafka 4.0 removed, with the update
modes of ``DynamicBrokerConfig`` (Kafka's ``dynamicConfigUpdateModes``).

One key a line, ``|``-separated: name, ``ConfigDef.Type``, default, mode, validator.

* default: the value as ``ConfigDef.convertToString`` writes it; ``~`` is null, ``!`` means
  required (no default), ``*`` a value too long for a line (:data:`LONG_DEFAULTS`), and a
  leading ``$`` stands for ``org.apache.kafka.``;
* mode: ``R`` read-only, ``B`` per-broker, ``C`` cluster-wide (per broker or for the whole
  cluster), then flags: ``i`` internal (never listed by DescribeConfigs), ``d`` dynamic-only
  (not a ``KafkaConfig`` key: listed only once set), ``r`` rackwise's own key;
* validator: ``>=N`` (``Range.atLeast``), ``A..B`` (``Range.between``), ``in:a,b``
  (``ValidString.in`` / ``ValidList.in``), or nothing.
"""

from __future__ import annotations

from typing import Final

from rackwise.assignors.server_registry import DEFAULT_ASSIGNORS

KAFKA_PACKAGE: Final = "org.apache.kafka."
"""What a leading ``$`` of a default stands for."""

LONG_DEFAULTS: Final = {
    # Kafka 4's default is its built-in assignors by name, "uniform,range"; rackwise's offers
    # its own after them, and the default listed is the one the broker applies
    "group.consumer.assignors": ",".join(DEFAULT_ASSIGNORS),
    "listener.security.protocol.map": (
        "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"
    ),
    "remote.log.metadata.manager.class.name": (
        "$server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager"
    ),
}
"""Defaults too long for a line of :data:`TABLE`, by key (``$`` expanded as in the table)."""

TABLE: Final = """\
add.partitions.to.txn.retry.backoff.max.ms|INT|100|R|>=0
add.partitions.to.txn.retry.backoff.ms|INT|20|R|>=1
advertised.listeners|STRING|~|R
alter.config.policy.class.name|CLASS|~|R
alter.log.dirs.replication.quota.window.num|INT|11|R|>=1
alter.log.dirs.replication.quota.window.size.seconds|INT|1|R|>=1
authorizer.class.name|STRING||R
auto.create.topics.enable|BOOLEAN|true|R
auto.leader.rebalance.enable|BOOLEAN|true|R
background.threads|INT|10|C|>=1
broker.heartbeat.interval.ms|INT|2000|R
broker.id|INT|-1|R
broker.rack|STRING|~|R
broker.replica.placer|STRING|striped|Rr
broker.session.timeout.ms|INT|9000|R
client.quota.callback.class|CLASS|~|R
cluster.id|STRING|~|Rr
compression.gzip.level|INT|-1|C
compression.lz4.level|INT|9|C
compression.type|STRING|producer|C
compression.zstd.level|INT|3|C
connection.failed.authentication.delay.ms|INT|100|R|>=0
connections.max.idle.ms|LONG|600000|R
connections.max.reauth.ms|LONG|0|R
controlled.shutdown.enable|BOOLEAN|true|R
controlled.shutdown.max.retries|INT|3|R
controlled.shutdown.retry.backoff.ms|LONG|5000|R
controller.listener.names|LIST|~|R
controller.quorum.append.linger.ms|INT|25|R
controller.quorum.bootstrap.servers|LIST||R
controller.quorum.election.backoff.max.ms|INT|1000|R
controller.quorum.election.timeout.ms|INT|1000|R
controller.quorum.fetch.timeout.ms|INT|2000|R
controller.quorum.request.timeout.ms|INT|2000|R
controller.quorum.retry.backoff.ms|INT|20|R
controller.quorum.voters|LIST||R
controller.quota.window.num|INT|11|R|>=1
controller.quota.window.size.seconds|INT|1|R|>=1
controller.socket.timeout.ms|INT|30000|R
cordoned.log.dirs|LIST||C
create.topic.policy.class.name|CLASS|~|R
default.leaders.preference|STRING|none|Cr
default.replication.factor|INT|1|R
delegation.token.expiry.check.interval.ms|LONG|3600000|R|>=1
delegation.token.expiry.time.ms|LONG|86400000|R|>=1
delegation.token.max.lifetime.ms|LONG|604800000|R|>=1
delegation.token.secret.key|PASSWORD|~|R
delete.records.purgatory.purge.interval.requests|INT|1|R
delete.topic.enable|BOOLEAN|true|R
early.start.listeners|STRING|~|R
eligible.leader.replicas.enable|BOOLEAN|false|R
fetch.max.bytes|INT|57671680|R|>=1024
fetch.purgatory.purge.interval.requests|INT|1000|R
follower.replication.throttled.rate|LONG|9223372036854775807|Cd|>=0
group.consumer.assignors|LIST|*|R
group.consumer.heartbeat.interval.ms|INT|5000|R|>=1
group.consumer.leader.rack.change.delay.ms|INT|30000|Rr|>=0
group.consumer.max.heartbeat.interval.ms|INT|15000|R|>=1
group.consumer.max.session.timeout.ms|INT|60000|R|>=1
group.consumer.max.size|INT|2147483647|R|>=1
group.consumer.migration.policy|STRING|bidirectional|Ri
group.consumer.min.heartbeat.interval.ms|INT|5000|R|>=1
group.consumer.min.session.timeout.ms|INT|45000|R|>=1
group.consumer.session.timeout.ms|INT|45000|R|>=1
group.coordinator.append.linger.ms|INT|10|R|>=0
group.coordinator.rebalance.protocols|LIST|classic,consumer|R
group.coordinator.threads|INT|1|R|>=1
group.initial.rebalance.delay.ms|INT|3000|R
group.max.session.timeout.ms|INT|1800000|R
group.max.size|INT|2147483647|R|>=1
group.min.session.timeout.ms|INT|6000|R
group.share.delivery.count.limit|INT|5|R|2..10
group.share.enable|BOOLEAN|false|Ri
group.share.heartbeat.interval.ms|INT|5000|R|>=1
group.share.max.groups|SHORT|10|R|1..100
group.share.max.heartbeat.interval.ms|INT|15000|R|>=1
group.share.max.record.lock.duration.ms|INT|60000|R|30000..3600000
group.share.max.session.timeout.ms|INT|60000|R|>=1
group.share.max.size|INT|200|R|10..1000
group.share.min.heartbeat.interval.ms|INT|5000|R|>=1
group.share.min.record.lock.duration.ms|INT|15000|R|1000..30000
group.share.min.session.timeout.ms|INT|45000|R|>=1
group.share.partition.max.record.locks|INT|200|R|100..10000
group.share.record.lock.duration.ms|INT|30000|R|1000..3600000
group.share.session.timeout.ms|INT|45000|R|>=1
initial.broker.registration.timeout.ms|INT|60000|R
inter.broker.listener.name|STRING|~|R
kafka.metrics.polling.interval.secs|INT|10|R|>=1
kafka.metrics.reporters|LIST||R
leader.imbalance.check.interval.seconds|LONG|300|R|>=1
leader.imbalance.per.broker.percentage|INT|10|R
leader.replication.throttled.rate|LONG|9223372036854775807|Cd|>=0
listener.security.protocol.map|STRING|*|B
listeners|STRING|PLAINTEXT://:9092|B
log.cleaner.backoff.ms|LONG|15000|C|>=0
log.cleaner.dedupe.buffer.size|LONG|134217728|C
log.cleaner.delete.retention.ms|LONG|86400000|C|>=0
log.cleaner.enable|BOOLEAN|true|R
log.cleaner.io.buffer.load.factor|DOUBLE|0.9|C
log.cleaner.io.buffer.size|INT|524288|C|>=0
log.cleaner.io.max.bytes.per.second|DOUBLE|1.7976931348623157E308|C
log.cleaner.max.compaction.lag.ms|LONG|9223372036854775807|C|>=1
log.cleaner.min.cleanable.ratio|DOUBLE|0.5|C|0..1
log.cleaner.min.compaction.lag.ms|LONG|0|C|>=0
log.cleaner.threads|INT|1|C|>=0
log.cleanup.policy|LIST|delete|C|in:compact,delete
log.dir.failure.timeout.ms|LONG|30000|R|>=1
log.dirs|LIST|~|R
log.dir|STRING|/tmp/kafka-logs|R
log.flush.interval.messages|LONG|9223372036854775807|C|>=1
log.flush.interval.ms|LONG|~|C
log.flush.offset.checkpoint.interval.ms|INT|60000|R|>=0
log.flush.scheduler.interval.ms|LONG|9223372036854775807|R
log.flush.start.offset.checkpoint.interval.ms|INT|60000|R|>=0
log.index.interval.bytes|INT|4096|C|>=0
log.index.size.max.bytes|INT|10485760|C|>=4
log.initial.task.delay.ms|LONG|30000|Ri|>=0
log.local.retention.bytes|LONG|-2|C|>=-2
log.local.retention.ms|LONG|-2|C|>=-2
log.message.timestamp.after.max.ms|LONG|9223372036854775807|C|>=0
log.message.timestamp.before.max.ms|LONG|9223372036854775807|C|>=0
log.message.timestamp.type|STRING|CreateTime|C|in:CreateTime,LogAppendTime
log.preallocate|BOOLEAN|false|C
log.retention.bytes|LONG|-1|C
log.retention.check.interval.ms|LONG|300000|R|>=1
log.retention.hours|INT|168|R
log.retention.minutes|INT|~|R
log.retention.ms|LONG|~|C
log.roll.hours|INT|168|R|>=1
log.roll.jitter.hours|INT|0|R|>=0
log.roll.jitter.ms|LONG|~|C
log.roll.ms|LONG|~|C
log.segment.bytes|INT|1073741824|C|>=14
log.segment.delete.delay.ms|LONG|60000|C|>=0
max.connection.creation.rate|INT|2147483647|C|>=0
max.connections.per.ip.overrides|STRING||C
max.connections.per.ip|INT|2147483647|C|>=0
max.connections|INT|2147483647|C|>=0
max.incremental.fetch.session.cache.slots|INT|1000|R|>=0
max.request.partition.size.limit|INT|2000|R|>=1
message.max.bytes|INT|1048588|C|>=0
metadata.log.dir|STRING|~|R
metadata.log.max.record.bytes.between.snapshots|LONG|20971520|R|>=1
metadata.log.max.snapshot.interval.ms|LONG|3600000|R|>=0
metadata.log.segment.bytes|INT|1073741824|R
metadata.log.segment.min.bytes|INT|8388608|Ri
metadata.log.segment.ms|LONG|604800000|R
metadata.max.idle.interval.ms|INT|500|R|>=0
metadata.max.retention.bytes|LONG|104857600|R
metadata.max.retention.ms|LONG|604800000|R
metric.reporters|LIST|$common.metrics.JmxReporter|C
metrics.num.samples|INT|2|R|>=1
metrics.recording.level|STRING|INFO|R
metrics.sample.window.ms|LONG|30000|R|>=1
min.insync.racks|INT|1|Cr|>=1
min.insync.racks.level|INT|1|Cr|>=1
min.insync.replicas|INT|1|C|>=1
node.id|INT|!|R|>=0
num.io.threads|INT|8|C|>=1
num.network.threads|INT|3|C|>=1
num.partitions|INT|1|R|>=1
num.recovery.threads.per.data.dir|INT|1|C|>=1
num.replica.alter.log.dirs.threads|INT|~|R
num.replica.fetchers|INT|1|C
offset.metadata.max.bytes|INT|4096|R
offsets.commit.timeout.ms|INT|5000|R|>=1
offsets.load.buffer.size|INT|5242880|R|>=1
offsets.retention.check.interval.ms|LONG|600000|R|>=1
offsets.retention.minutes|INT|10080|R|>=1
offsets.topic.compression.codec|INT|0|R
offsets.topic.num.partitions|INT|50|R|>=1
offsets.topic.replication.factor|SHORT|3|R|>=1
offsets.topic.segment.bytes|INT|104857600|R|>=1
principal.builder.class|CLASS|$common.security.authenticator.DefaultKafkaPrincipalBuilder|B
process.roles|LIST|!|R|in:broker,controller
producer.id.expiration.check.interval.ms|INT|600000|Ri|>=1
producer.id.expiration.ms|INT|86400000|C|>=1
producer.purgatory.purge.interval.requests|INT|1000|R
queued.max.request.bytes|LONG|-1|R
queued.max.requests|INT|500|R|>=1
quota.window.num|INT|11|R|>=1
quota.window.size.seconds|INT|1|R|>=1
remote.fetch.max.wait.ms|INT|500|C|>=1
remote.list.offsets.request.timeout.ms|LONG|30000|C|>=1
remote.log.index.file.cache.total.size.bytes|LONG|1073741824|C|>=1
remote.log.manager.copier.thread.pool.size|INT|-1|C
remote.log.manager.copy.max.bytes.per.second|LONG|9223372036854775807|C|>=1
remote.log.manager.copy.quota.window.num|INT|11|R|>=1
remote.log.manager.copy.quota.window.size.seconds|INT|1|R|>=1
remote.log.manager.expiration.thread.pool.size|INT|-1|C
remote.log.manager.fetch.max.bytes.per.second|LONG|9223372036854775807|C|>=1
remote.log.manager.fetch.quota.window.num|INT|11|R|>=1
remote.log.manager.fetch.quota.window.size.seconds|INT|1|R|>=1
remote.log.manager.task.interval.ms|LONG|30000|R|>=1
remote.log.manager.task.retry.backoff.max.ms|LONG|30000|Ri|>=1
remote.log.manager.task.retry.backoff.ms|LONG|500|Ri|>=1
remote.log.manager.task.retry.jitter|DOUBLE|0.2|Ri|0..0.5
remote.log.manager.thread.pool.size|INT|10|R|>=1
remote.log.metadata.custom.metadata.max.bytes|INT|128|R|>=0
remote.log.metadata.manager.class.name|STRING|*|R
remote.log.metadata.manager.class.path|STRING|~|R
remote.log.metadata.manager.impl.prefix|STRING|rlmm.config.|R
remote.log.metadata.manager.listener.name|STRING|~|R
remote.log.reader.max.pending.tasks|INT|100|R|>=1
remote.log.reader.threads|INT|10|C|>=1
remote.log.storage.manager.class.name|STRING|~|R
remote.log.storage.manager.class.path|STRING|~|R
remote.log.storage.manager.impl.prefix|STRING|rsm.config.|R
remote.log.storage.system.enable|BOOLEAN|false|R
replica.alter.log.dirs.io.max.bytes.per.second|LONG|9223372036854775807|Cd|>=0
replica.fetch.backoff.ms|INT|1000|R|>=0
replica.fetch.max.bytes|INT|1048576|R|>=0
replica.fetch.min.bytes|INT|1|R
replica.fetch.response.max.bytes|INT|10485760|R|>=0
replica.fetch.wait.max.ms|INT|500|R
replica.high.watermark.checkpoint.interval.ms|LONG|5000|R
replica.lag.time.max.ms|LONG|30000|R
replica.selector.class|STRING|~|R
replica.socket.receive.buffer.bytes|INT|65536|R
replica.socket.timeout.ms|INT|30000|R
replication.quota.window.num|INT|11|R|>=1
replication.quota.window.size.seconds|INT|1|R|>=1
request.timeout.ms|INT|30000|R
sasl.client.callback.handler.class|CLASS|~|R
sasl.enabled.mechanisms|LIST|GSSAPI|B
sasl.jaas.config|PASSWORD|~|B
sasl.kerberos.kinit.cmd|STRING|/usr/bin/kinit|B
sasl.kerberos.min.time.before.relogin|LONG|60000|B
sasl.kerberos.principal.to.local.rules|LIST|DEFAULT|B
sasl.kerberos.service.name|STRING|~|B
sasl.kerberos.ticket.renew.jitter|DOUBLE|0.05|B
sasl.kerberos.ticket.renew.window.factor|DOUBLE|0.8|B
sasl.login.callback.handler.class|CLASS|~|R
sasl.login.class|CLASS|~|R
sasl.login.connect.timeout.ms|INT|~|R
sasl.login.read.timeout.ms|INT|~|R
sasl.login.refresh.buffer.seconds|SHORT|300|B
sasl.login.refresh.min.period.seconds|SHORT|60|B
sasl.login.refresh.window.factor|DOUBLE|0.8|B
sasl.login.refresh.window.jitter|DOUBLE|0.05|B
sasl.login.retry.backoff.max.ms|LONG|10000|R
sasl.login.retry.backoff.ms|LONG|100|R
sasl.mechanism.controller.protocol|STRING|GSSAPI|R
sasl.mechanism.inter.broker.protocol|STRING|GSSAPI|B
sasl.oauthbearer.clock.skew.seconds|INT|30|R
sasl.oauthbearer.expected.audience|LIST|~|R
sasl.oauthbearer.expected.issuer|STRING|~|R
sasl.oauthbearer.jwks.endpoint.refresh.ms|LONG|3600000|R
sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms|LONG|10000|R
sasl.oauthbearer.jwks.endpoint.retry.backoff.ms|LONG|100|R
sasl.oauthbearer.jwks.endpoint.url|STRING|~|R
sasl.oauthbearer.scope.claim.name|STRING|scope|R
sasl.oauthbearer.sub.claim.name|STRING|sub|R
sasl.oauthbearer.token.endpoint.url|STRING|~|R
sasl.server.callback.handler.class|CLASS|~|R
sasl.server.max.receive.size|INT|524288|R
security.inter.broker.protocol|STRING|PLAINTEXT|R
security.providers|STRING|~|R
server.max.startup.time.ms|LONG|9223372036854775807|Ri|>=0
share.coordinator.append.linger.ms|INT|10|R|>=0
share.coordinator.load.buffer.size|INT|5242880|R|>=1
share.coordinator.snapshot.update.records.per.snapshot|INT|500|R|>=0
share.coordinator.state.topic.compression.codec|INT|0|R
share.coordinator.state.topic.min.isr|SHORT|2|R|>=1
share.coordinator.state.topic.num.partitions|INT|50|R|>=1
share.coordinator.state.topic.replication.factor|SHORT|3|R|>=1
share.coordinator.state.topic.segment.bytes|INT|104857600|R|>=1
share.coordinator.threads|INT|1|R|>=1
share.coordinator.write.timeout.ms|INT|5000|R|>=1
share.fetch.max.fetch.records|INT|2147483647|Ri
share.fetch.purgatory.purge.interval.requests|INT|1000|R
socket.connection.setup.timeout.max.ms|LONG|30000|R
socket.connection.setup.timeout.ms|LONG|10000|R
socket.listen.backlog.size|INT|50|R|>=1
socket.receive.buffer.bytes|INT|102400|R
socket.request.max.bytes|INT|104857600|R|>=1
socket.send.buffer.bytes|INT|102400|R
ssl.allow.dn.changes|BOOLEAN|false|R
ssl.allow.san.changes|BOOLEAN|false|R
ssl.cipher.suites|LIST||B
ssl.client.auth|STRING|none|B
ssl.enabled.protocols|LIST|TLSv1.2,TLSv1.3|B
ssl.endpoint.identification.algorithm|STRING|https|B
ssl.engine.factory.class|CLASS|~|B
ssl.key.password|PASSWORD|~|B
ssl.keymanager.algorithm|STRING|SunX509|B
ssl.keystore.certificate.chain|PASSWORD|~|B
ssl.keystore.key|PASSWORD|~|B
ssl.keystore.location|STRING|~|B
ssl.keystore.password|PASSWORD|~|B
ssl.keystore.type|STRING|JKS|B
ssl.principal.mapping.rules|STRING|DEFAULT|R
ssl.protocol|STRING|TLSv1.3|B
ssl.provider|STRING|~|B
ssl.secure.random.implementation|STRING|~|B
ssl.trustmanager.algorithm|STRING|PKIX|B
ssl.truststore.certificates|PASSWORD|~|B
ssl.truststore.location|STRING|~|B
ssl.truststore.password|PASSWORD|~|B
ssl.truststore.type|STRING|JKS|B
telemetry.max.bytes|INT|1048576|R|>=1
transaction.abort.timed.out.transaction.cleanup.interval.ms|INT|10000|R|>=1
transaction.max.timeout.ms|INT|900000|R|>=1
transaction.partition.verification.enable|BOOLEAN|true|C
transaction.remove.expired.transaction.cleanup.interval.ms|INT|3600000|R|>=1
transaction.state.log.load.buffer.size|INT|5242880|R|>=1
transaction.state.log.min.isr|INT|2|R|>=1
transaction.state.log.num.partitions|INT|50|R|>=1
transaction.state.log.replication.factor|SHORT|3|R|>=1
transaction.state.log.segment.bytes|INT|104857600|R|>=1
transactional.id.expiration.ms|INT|604800000|R|>=1
unclean.leader.election.enable|BOOLEAN|false|C
unclean.leader.election.interval.ms|LONG|300000|Ri|>=1
unstable.api.versions.enable|BOOLEAN|false|Ri
unstable.feature.versions.enable|BOOLEAN|false|Ri
"""
