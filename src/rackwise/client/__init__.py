"""Plug-ins for third-party Kafka clients."""
