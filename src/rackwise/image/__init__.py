"""The in-memory metadata image, built only by replaying records (pure).

* :mod:`~rackwise.image.model`: :class:`MetadataImage` and its parts, immutable, and
  :meth:`MetadataImage.to_records`, the image as a snapshot holds it.
* :mod:`~rackwise.image.delta`: :class:`MetadataDelta`, the one replay dispatch, and
  :func:`replay`.
"""

from rackwise.image.delta import MetadataDelta, ReplayError, replay
from rackwise.image.model import (
    BrokerRegistration,
    ConfigResource,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
    endpoint_on,
)

__all__ = [
    "BrokerRegistration",
    "ConfigResource",
    "MetadataDelta",
    "MetadataImage",
    "PartitionRegistration",
    "ReplayError",
    "TopicImage",
    "endpoint_on",
    "replay",
]
