"""rackwise: topology-aware replica management for Kafka-style clusters."""

__version__ = "0.1.0"
