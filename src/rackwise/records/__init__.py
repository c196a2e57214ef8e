"""Metadata records: schemas first, then classes, a codec, framing and batches (pure).

* ``schemas/*.json``: one file per record type, in Kafka's message-spec JSON, with Kafka's api
  keys, versions, tags and defaults.
* :mod:`~rackwise.records.spec` parses a schema; :mod:`~rackwise.records.classes` builds one
  frozen dataclass per version that kio's ``entity_writer`` / ``entity_reader`` accept;
  :mod:`~rackwise.records.codec` compiles a faster codec for the same classes, byte-identical
  to kio's and tolerant of unknown tagged fields; :mod:`~rackwise.records.registry` loads
  them all; :mod:`~rackwise.records.metadata` names the classes (``PartitionRecord`` is the
  latest version, ``PartitionRecordV0`` a given one).
* :mod:`~rackwise.records.frame` frames one record as Kafka's ``MetadataRecordSerde``;
  :mod:`~rackwise.records.batch` packs frames into Kafka's v2 record batches
  (:mod:`~rackwise.records.batch_v2`, shared with the brokers' logs);
  :mod:`~rackwise.records.control` holds KRaft's control records (leader change, snapshot
  header and footer).
* :mod:`~rackwise.records.jsonform` prints records as Kafka's dump tool does.
"""

from rackwise.common.errors import CorruptRecordException
from rackwise.records.batch import (
    BatchHeader,
    RecordBatch,
    check_batch,
    decode_records,
    encode_batch,
    encode_control_batch,
    encode_frames,
    encode_records,
    iter_batches,
)
from rackwise.records.classes import ZERO_UUID
from rackwise.records.control import (
    LeaderChangeMessage,
    RawControlRecord,
    SnapshotFooterRecord,
    SnapshotHeaderRecord,
    is_control_record,
)
from rackwise.records.errors import (
    MetadataParseException,
    RecordEncodeError,
    SchemaError,
)
from rackwise.records.frame import FRAME_VERSION, decode_record, encode_record
from rackwise.records.jsonform import kafka_uuid, parse_kafka_uuid, record_json
from rackwise.records.metadata import (
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    FeatureLevelRecord,
    FenceBrokerRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
)
from rackwise.records.registry import RECORD_TYPES, RECORD_TYPES_BY_NAME, RecordType, record_type_of

__all__ = [
    "FRAME_VERSION",
    "RECORD_TYPES",
    "RECORD_TYPES_BY_NAME",
    "ZERO_UUID",
    "BatchHeader",
    "BrokerRegistrationChangeRecord",
    "ConfigRecord",
    "CorruptRecordException",
    "FeatureLevelRecord",
    "FenceBrokerRecord",
    "LeaderChangeMessage",
    "MetadataParseException",
    "NoOpRecord",
    "PartitionChangeRecord",
    "PartitionRecord",
    "ProducerIdsRecord",
    "RawControlRecord",
    "RecordBatch",
    "RecordEncodeError",
    "RecordType",
    "RegisterBrokerRecord",
    "RemoveTopicRecord",
    "SchemaError",
    "SnapshotFooterRecord",
    "SnapshotHeaderRecord",
    "TopicRecord",
    "UnfenceBrokerRecord",
    "UnregisterBrokerRecord",
    "check_batch",
    "decode_record",
    "decode_records",
    "encode_batch",
    "encode_control_batch",
    "encode_frames",
    "encode_record",
    "encode_records",
    "is_control_record",
    "iter_batches",
    "kafka_uuid",
    "parse_kafka_uuid",
    "record_json",
    "record_type_of",
]
