"""Kafka's JSON file formats and Java's ``.properties``, read and written exactly, plus
rackwise's broker list.

Every reader is ``parse_<format>(text: str)`` and returns frozen values; every writer is
``format_<format>(value) -> str`` and prints what Kafka's tools print, byte for byte where they
print the format at all. Nothing here touches files: callers read and write the text.
Malformed input and unknown versions raise
:class:`~rackwise.common.errors.InvalidFormatException`, whose message names the format, the
offending field by position (``partitions[3].replicas``) and the offending value.

* :mod:`~rackwise.formats.reassignment`: ``kafka-reassign-partitions.sh``'s reassignment and
  topics-to-move documents.
* :mod:`~rackwise.formats.brokers`: rackwise's own broker list (ids, racks, fencing).
* :mod:`~rackwise.formats.registration`: a ZooKeeper-mode broker's registration (KIP-36,
  version 3 written, versions 1 and up read).
* :mod:`~rackwise.formats.properties`: ``server.properties`` and ``meta.properties``, as
  ``java.util.Properties`` reads and writes them.
"""

from rackwise.formats.brokers import BrokerEntry, format_broker_list, parse_broker_list
from rackwise.formats.reassignment import (
    ANY_LOG_DIR,
    REASSIGNMENT_VERSION,
    TOPICS_TO_MOVE_VERSION,
    PartitionReassignment,
    Reassignment,
    format_reassignment,
    format_topics_to_move,
    parse_reassignment,
    parse_topics_to_move,
)
from rackwise.formats.registration import (
    SECURITY_PROTOCOLS,
    WRITTEN_VERSION,
    BrokerRegistration,
    format_broker_registration,
    parse_broker_registration,
)

__all__ = [
    "ANY_LOG_DIR",
    "REASSIGNMENT_VERSION",
    "SECURITY_PROTOCOLS",
    "TOPICS_TO_MOVE_VERSION",
    "WRITTEN_VERSION",
    "BrokerEntry",
    "BrokerRegistration",
    "PartitionReassignment",
    "Reassignment",
    "format_broker_list",
    "format_broker_registration",
    "format_reassignment",
    "format_topics_to_move",
    "parse_broker_list",
    "parse_broker_registration",
    "parse_reassignment",
    "parse_topics_to_move",
]
